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


def _interrupted(signum: int, frame: Any) -> None:
    INTERRUPT.real = True  # a real Ctrl-C, not a policy raising KeyboardInterrupt (no import here: a
    raise KeyboardInterrupt  # signal handler can run in the middle of an import)


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
    restore = None
    INTERRUPT.real = False
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        try:
            restore = signal.signal(signal.SIGINT, _interrupted)
        except ValueError:  # not the main thread
            restore = None
    try:
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
    except UsageError as exc:
        text = str(exc)
        _say(text if text.startswith("cpgraph") else f"{prog}: error: {text}")
        return USAGE
    except KeyboardInterrupt:
        _say(f"{prog}: interrupted")
        return INTERRUPTED
    except BrokenPipeError:  # stdout closed early (| head): nothing more to say
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except Exception:
            pass
        return 141
    except SystemExit as exc:  # a library below called sys.exit; keep its code but no traceback
        return exc.code if isinstance(exc.code, int) else INTERNAL
    except BaseException as exc:
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
    finally:
        if restore is not None:
            try:
                signal.signal(signal.SIGINT, restore)
            except (ValueError, TypeError):
                pass


if __name__ == "__main__":
    sys.exit(main())
