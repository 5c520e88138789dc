"""The ``cpgraph`` command line: one subcommand per job, each in cpgraph/commands/<name>.py.

Exit codes (cpgraph/output.py, the README's table): 0 all hold / proved; 1 a violation or refutation;
2 usage error; 3 unknown; 4 internal error (a cpgraph bug: one line, the traceback with --debug);
130 interrupted. No cpgraph traceback reaches a user without --debug.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from cpgraph.output import INTERNAL, INTERRUPT, INTERRUPTED, PROCESS, USAGE, UsageError

# Each module defines ``add_parser(subparsers) -> None`` (registering its parser with
# ``set_defaults(run=<callable(args) -> int>)``) and is imported lazily so that
# ``cpgraph check`` does not pay for torch and ``cpgraph prove`` does not pay for matplotlib.
COMMANDS = ("prove", "check", "review", "plan", "simulate")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2 through UsageError) and --debug on every subcommand."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("cpgraph")
    except Exception:  # not installed as a distribution (a plain checkout on sys.path)
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="cpgraph",
        description="Invariants, proofs and checkers for context-parallel prefill under CUDA graphs. "
        "Exit codes: 0 all hold/proved, 1 violation/refutation, 2 usage error, 3 unknown, 4 internal error, "
        "130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"cpgraph {_version()}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an internal error")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"cpgraph.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"cpgraph.commands.{name}":
                raise
            continue  # not built yet
        module.add_parser(subparsers)
    parser.set_defaults(_subparsers=subparsers.choices)
    for sub in subparsers.choices.values():
        if not any("--debug" in a.option_strings for a in sub._actions):
            sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show the traceback of an internal error")
    return parser


def _inside_finaliser(frame: Any) -> bool:
    """Is the interrupted code a finaliser (``__del__``, run by garbage collection) or the unraisable
    hook? An exception raised there is swallowed and printed as 'Exception ignored'."""
    depth = 0
    while frame is not None and depth < 16:
        if frame.f_code.co_name == "__del__" or frame.f_code in _DEFER_IN:
            return True
        frame, depth = frame.f_back, depth + 1
    return False


def _defer() -> bool:
    """Deliver the Ctrl-C again in 10 ms (a one-shot SIGALRM) when no check session owns that signal."""
    if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, _again):
        return False
    signal.signal(signal.SIGALRM, _again)
    signal.setitimer(signal.ITIMER_REAL, 0.01)
    return True


def _again(signum: int, frame: Any) -> None:
    if _inside_finaliser(frame):
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        return
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    raise KeyboardInterrupt


def _interrupted(signum: int, frame: Any) -> None:
    INTERRUPT.real = True  # a real Ctrl-C, not a policy raising KeyboardInterrupt (no import here: a
    # signal handler can run in the middle of an import). Raised inside a finaliser (z3's __del__ runs
    # during garbage collection) it would be swallowed; deliver it again once out of it.
    if _inside_finaliser(frame) and _defer():
        return
    raise KeyboardInterrupt


_DONE = threading.Event()  # main() has its exit code: a late Ctrl-C is dropped, not re-delivered


def _unraisable(previous: Any) -> Any:
    """A Ctrl-C swallowed in a finaliser is printed as 'Exception ignored': deliver it again where it
    stops the command; after a Ctrl-C, half-built objects complaining as they are collected are quiet."""

    def hook(unraisable: Any) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            if not _DONE.is_set():
                _defer()
            return
        if INTERRUPT.real:
            return
        previous(unraisable)

    _DEFER_IN.add(hook.__code__)
    return hook


_DEFER_IN: set[Any] = set()  # code objects a Ctrl-C must not be raised in (the unraisable hook)


def _say(line: str) -> None:
    try:
        sys.stdout.flush()
    except Exception:
        pass
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    PROCESS.standalone = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    command = next((a for a in argv if a in COMMANDS), "")
    prog = f"cpgraph {command}".strip()
    _DONE.clear()
    INTERRUPT.real = False
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _unraisable(previous_hook)
    restore = _catch_ctrl_c()
    try:
        return _dispatch(argv)
    except UsageError as exc:
        text = str(exc)
        _say(text if text.startswith("cpgraph") else f"{prog}: error: {text}")
        return USAGE
    except KeyboardInterrupt:
        _say(f"{prog}: interrupted")
        return INTERRUPTED
    except BrokenPipeError:  # stdout closed early (| head): nothing more to say
        _silence_stdout()
        return 141
    except SystemExit as exc:  # a library below called sys.exit; keep its code but no traceback
        return exc.code if isinstance(exc.code, int) else INTERNAL
    except BaseException as exc:
        return _internal_error(exc, prog, debug)
    finally:
        _wind_down(previous_hook, restore)


def _catch_ctrl_c() -> Any:
    """Route Ctrl-C through _interrupted when Python's default handler is in place; the handler it
    replaced, to restore afterwards (None: left alone, or not the main thread)."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return None
    try:
        return signal.signal(signal.SIGINT, _interrupted)
    except ValueError:  # not the main thread
        return None


def _dispatch(argv: list[str]) -> int:
    """Parse ``argv`` and run its subcommand: its exit code (2 with the help when none is named)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # name the subcommand whose usage was broken, not the top-level parser
        sub = getattr(args, "_subparsers", {}).get(getattr(args, "command", None), parser)
        sub.error(f"unrecognized arguments: {' '.join(extra)}")
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return USAGE
    code = run(args)
    if not isinstance(code, int):
        raise TypeError(f"subcommand {args.command!r} returned {code!r}, not an exit code")
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except Exception:
        pass


def _internal_error(exc: BaseException, prog: str, debug: bool) -> int:
    """Any other exception: a Ctrl-C in disguise (130), else a cpgraph bug in one line (4), the traceback
    with --debug. Called while ``exc`` is being handled."""
    if INTERRUPT.real:  # Ctrl-C surfaced as another exception (e.g. inside the solver)
        _say(f"{prog}: interrupted")
        return INTERRUPTED
    if debug:
        traceback.print_exc()
    message = str(exc).splitlines()[0] if str(exc) else ""
    _say(
        f"{prog}: internal error (a bug in cpgraph, please report it): {type(exc).__name__}"
        + (f": {message[:200]}" if message else "")
        + ("" if debug else "; rerun with --debug for the traceback")
    )
    return INTERNAL


def _wind_down(previous_hook: Any, restore: Any) -> None:
    """main() has its exit code: in a standalone process Ctrl-C is ignored from here on (a late one must
    not print a traceback on the way out); called in-process, the unraisable hook and SIGINT handler come back."""
    _DONE.set()
    if PROCESS.standalone:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:
            pass
        return
    sys.unraisablehook = previous_hook
    if restore is not None:
        try:
            signal.signal(signal.SIGINT, restore)
        except (ValueError, TypeError):
            pass


if __name__ == "__main__":
    sys.exit(main())
