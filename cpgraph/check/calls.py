"""Every call into a user policy, bounded and judged fairly.

``bound(policy)`` wraps a policy's protocol functions; ``session(call_timeout_s)`` arms them. Inside a
session each call runs under a per-call timeout, and what the policy does besides answering is judged:

- a call that does not return within the timeout stops the check (``PolicyStop``, kind 'timeout'),
  naming the call (method, rank) and the batch: a hung selector hangs a server;
- ``SystemExit`` / ``KeyboardInterrupt`` raised by the policy are findings (kinds 'system_exit',
  'keyboard_interrupt') that stop the check, never exits of cpgraph; a real Ctrl-C is told apart by the
  session's SIGINT handler and propagates as ``KeyboardInterrupt``;
- a signature that cannot take the protocol's keywords, or an answer of the wrong type (admit not a
  bool, replay_bucket not an int or None, local_rows not a sequence of ints) is a protocol error
  (kind 'protocol'; the CLI exits 2) naming the method, what it returned and what the protocol requires;
- any other exception stays an answer (the judge decides what it breaks), and its traceback, trimmed
  to the policy's own frames, is kept so the report can show it (``last_traceback``).

How a hung call is stopped: a thread cannot be killed, and running every call in another process would
cost an IPC round trip per call (the check asks hundreds of thousands of calls a minute). So a call
only stamps its start time, and one periodic interval timer per session (``setitimer(ITIMER_REAL)``,
every min(0.25 s, timeout / 4)) lets the SIGALRM handler, on the main thread, raise ``CallTimeout`` (a
``BaseException``, so a policy's ``except Exception`` cannot swallow it) in the frame of a call that
has run past its timeout, and again at every tick until the call gives up. That stops Python loops,
``time.sleep``, lock and socket waits and regular-expression backtracking. A policy that swallows
every ``BaseException`` in a loop is ended after ``HARD_STOP_FIRES`` more ticks when the session was
opened with ``hard_exit`` (the CLI does): the finding is printed and the process exits 1. Code that
never returns to the interpreter (one C call holding the GIL, e.g. ``sum(range(10**15))``) cannot be
reached from inside the process; on the command line ``supervise()`` forks first and the parent,
watching a shared heartbeat, ends the check with the finding. Calls made outside the main thread (or
outside a session) run unbounded. The check's second search process (a fork, see run.py) re-arms the
timer and reports a stop to the parent through its pipe, and the parent ends the check.
"""

from __future__ import annotations

import inspect
import mmap
import struct
import time
import multiprocessing
import operator
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import FrameType, TracebackType
from typing import Any

from cpgraph.check.protocol import Policy
from cpgraph.output import INTERRUPT

REFIRE_S = 0.25  # after the timeout, the timer fires again this often until the call gives up
HARD_STOP_FIRES = 8  # with hard_exit: after this many ignored fires the process exits 1
TRACEBACK_FRAMES = 8  # the policy's innermost frames kept in a report

PROTOCOL_REQUIRES = {
    "admit": "a bool (True: replay a graph; False: run eagerly)",
    "replay_bucket": "an int bucket from capture_num_tokens (raise, or return None, to refuse)",
    "local_rows": "a sequence of cp_size ints (the rows on each rank)",
}


@dataclass(frozen=True)
class CallStop:
    """Why a policy call stopped the check: which call, on which batch, what happened."""

    kind: str  # 'timeout' | 'system_exit' | 'keyboard_interrupt' | 'protocol'
    policy: str
    method: str
    rank: int | None
    batch: str  # the batch as keyword arguments
    detail: str
    policy_traceback: str = ""  # the policy's frames, when it raised

    @property
    def protocol_error(self) -> bool:
        return self.kind == "protocol"

    @property
    def call(self) -> str:
        return f"{self.method}(cp_rank={self.rank}, ...)" if self.rank is not None else f"{self.method}(...)"

    def line(self) -> str:
        """One line: the call, what happened, the batch."""
        return f"policy {self.policy}: {self.call} {self.detail}; batch: {self.batch}"

    def text(self) -> str:
        out = self.line()
        if self.policy_traceback:
            out += "\n" + self.policy_traceback
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "method": self.method,
            "cp_rank": self.rank,
            "batch": self.batch,
            "detail": self.detail,
            "policy_traceback": self.policy_traceback,
        }


class PolicyStop(BaseException):
    """A policy call that ends the check (see CallStop). A BaseException so that ``ask``'s
    ``except Exception`` (a raising policy is an answer) lets it through."""

    def __init__(self, stop: CallStop) -> None:
        super().__init__(stop)
        self.stop = stop

    def __str__(self) -> str:
        return self.stop.line()


class CallTimeout(BaseException):
    """Raised by the session's SIGALRM handler inside a policy call that ran past its timeout."""


@dataclass
class _Session:
    timeout_s: float | None = None
    hard_exit: bool = False
    depth: int = 0
    armed: bool = False  # handlers installed in this process's main thread
    in_call: tuple[str, str, int | None] | None = None  # (policy, method, rank) of the running call
    started: float = 0.0  # time.monotonic() when the running call began; 0.0: none is running
    fires: int = 0
    main_ident: int = 0  # the thread the handlers run on
    tick_s: float = REFIRE_S
    owner: int = 0  # pid of the process that opened the session
    board: mmap.mmap | None = None  # shared with forked search processes: a hard stop's line
    heart: mmap.mmap | None = None  # shared with the supervisor (supervise()): the call now running
    heart_pid: int = 0  # the supervised process (slot 0); its forks write slot 1
    seq: int = 0


_STATE = _Session()
_LAST: dict[tuple[str, int | None], tuple[str, str]] = {}  # (method, rank) -> (error text, trimmed traceback)


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    started, limit = _STATE.started, _STATE.timeout_s
    if not started or limit is None or time.monotonic() - started < limit:
        return  # the periodic tick found no call past its timeout
    _STATE.fires += 1
    if _STATE.hard_exit and _STATE.fires > HARD_STOP_FIRES:
        name, method, rank = _STATE.in_call or ("?", "?", None)
        line = (
            f"policy {name}: {method}(cp_rank={rank}, ...) did not return within {_STATE.timeout_s:g} s and ignored every attempt to stop it "
            "(it catches BaseException); the check stopped"
        )
        if os.getpid() != _STATE.owner and _STATE.board is not None:
            # a forked search process: leave the line for the session's process, which stops at its next call
            data = line.encode()[: len(_STATE.board) - 1]
            _STATE.board[1 : 1 + len(data)] = data
            _STATE.board[0] = 1
            os._exit(1)
        _hard_stop(line)
    raise CallTimeout()


def _hard_stop(line: str) -> None:
    """End the process at once with the finding (exit 1): the policy cannot be stopped any other way."""
    if _STATE.heart is not None:  # this exit is the finding, not a policy ending the process
        _STARTED.pack_into(_STATE.heart, 8, 0.0)
    for child in multiprocessing.active_children():
        child.kill()
    try:
        sys.stdout.flush()
        sys.stderr.write(f"cpgraph check: FAILED - {line}\n")
        sys.stderr.flush()
    finally:
        os._exit(1)


def _board_line() -> str:
    board = _STATE.board
    if board is None or not board[0]:
        return ""
    return bytes(board[1:]).rstrip(b"\0").decode(errors="replace")


def _tick() -> None:
    """One periodic timer for the whole session (a policy call only stamps its start time, so bounding
    it costs no system call); timers are not inherited by a fork, so a forked search process re-arms it."""
    signal.setitimer(signal.ITIMER_REAL, _STATE.tick_s, _STATE.tick_s)


def _after_fork_in_child() -> None:
    if _STATE.armed:
        _tick()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    INTERRUPT.real = True
    raise KeyboardInterrupt


def real_interrupt() -> bool:
    """Did a real SIGINT (Ctrl-C) arrive (this session's handler or the command line's saw it)?"""
    return INTERRUPT.real


@contextmanager
def session(call_timeout_s: float | None = 10.0, *, hard_exit: bool = False) -> Iterator[None]:
    """Arm bounded policy calls for the duration (handlers installed on the main thread only; nested
    sessions keep the outer one's settings)."""
    if call_timeout_s is not None and (
        isinstance(call_timeout_s, bool) or not isinstance(call_timeout_s, (int, float))
        or not 0 < call_timeout_s < float("inf")
    ):
        raise ValueError(f"call_timeout_s must be a number of seconds > 0, got {call_timeout_s!r}")
    if _STATE.depth:
        _STATE.depth += 1
        try:
            yield
        finally:
            _STATE.depth -= 1
        return
    main = threading.current_thread() is threading.main_thread()
    _STATE.main_ident = threading.get_ident()
    saved = (signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT)) if main else None
    _STATE.timeout_s, _STATE.hard_exit, _STATE.depth = call_timeout_s, hard_exit, 1
    _STATE.fires, _STATE.in_call, _STATE.started = 0, None, 0.0
    INTERRUPT.real = False  # a Ctrl-C from here on is this session's
    _STATE.owner, _STATE.board = os.getpid(), mmap.mmap(-1, 2048) if hard_exit else None
    if main:
        signal.signal(signal.SIGALRM, _on_alarm)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)
        _STATE.armed = call_timeout_s is not None
        if call_timeout_s is not None:
            _STATE.tick_s = max(0.01, min(REFIRE_S, call_timeout_s / 4))
            _tick()
    try:
        yield
    finally:
        if main and saved is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, saved[0])
            signal.signal(signal.SIGINT, saved[1])
        _STATE.timeout_s, _STATE.depth, _STATE.armed, _STATE.in_call = None, 0, False, None
        if _STATE.board is not None:
            _STATE.board.close()
            _STATE.board = None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _batch_text(kw: Mapping[str, Any]) -> str:
    keys = [k for k in kw if k not in ("cp_rank", "bucket")]
    return ", ".join(f"{k}={dict(v) if isinstance(v, Mapping) else v!r}" for k, v in ((k, kw[k]) for k in keys))


def trimmed_traceback(tb: TracebackType | None, exc: BaseException, *, skip: int = 1) -> str:
    """The policy's own frames (``skip`` frames of this module dropped), innermost ``TRACEBACK_FRAMES``."""
    frames = traceback.extract_tb(tb)[skip:]
    if not frames:
        return ""
    kept = frames[-TRACEBACK_FRAMES:]
    lines = [f"  policy frames ({len(frames) - len(kept)} outer frames left out):" if len(kept) < len(frames) else "  policy frames:"]
    for entry in traceback.format_list(kept):
        lines.extend("  " + part for part in entry.rstrip("\n").split("\n"))
    lines.append("  " + "".join(traceback.format_exception_only(type(exc), exc)).strip())
    return "\n".join(lines)


def last_traceback(method: str, rank: int | None, error: str | None) -> str:
    """The trimmed traceback of the last exception ``method`` raised on ``rank`` in this process, when its
    text matches ``error`` (the answer's error string); '' otherwise."""
    if error is None:
        return ""
    found = _LAST.get((method, rank))
    if found is None or not error.startswith(found[0][:40]):
        return ""
    return found[1]


def _check_answer(method: str, value: object) -> tuple[str | None, object]:
    """What is wrong with ``value`` as ``method``'s answer (None: it is fine), and the value to pass on
    (local_rows' iterable read once into a tuple)."""
    if method == "admit":
        if isinstance(value, bool) or type(value).__name__ == "bool_":  # numpy.bool_ is a bool too
            return None, value
        return f"returned {_short(value)} ({type(value).__name__})", value
    if method == "replay_bucket":
        if value is None:
            return None, value
        if not isinstance(value, bool):
            try:
                operator.index(value)  # type: ignore[arg-type]
                return None, value
            except TypeError:
                pass
        return f"returned {_short(value)} ({type(value).__name__})", value
    if isinstance(value, (str, bytes, Mapping)):
        return f"returned {_short(value)} ({type(value).__name__})", value
    try:
        items: tuple[object, ...] = tuple(value)  # type: ignore[arg-type]
    except TypeError:
        return f"returned {_short(value)} ({type(value).__name__})", value
    for item in items:
        if isinstance(item, bool):
            return f"returned {_short(items)} (an item is a bool)", items
        try:
            operator.index(item)  # type: ignore[arg-type]
        except TypeError:
            return f"returned {_short(items)} (item {_short(item)} is a {type(item).__name__})", items
    return None, items


_HEART = struct.Struct("<qdiiiq")  # seq, started (monotonic; 0.0: no call), method, rank, cp_size, num_tokens
_STARTED = struct.Struct("<d")
_METHODS = ("admit", "replay_bucket", "local_rows", "import")
SUPERVISOR_GRACE_S = 2.0 + REFIRE_S * HARD_STOP_FIRES  # past the timeout: the in-process stop had its chance
SUPERVISOR_POLL_S = 0.05


def supervise(policy_name: str, call_timeout_s: float) -> None:
    """For a command-line run only (it forks and the parent never returns): the child returns at once
    and runs the check; this process waits for it and exits with its exit code. A policy call that
    neither returns nor yields to the in-process timer (C code that holds the GIL, e.g.
    ``sum(range(10**13))``) is seen here through a shared heartbeat: past the timeout plus a grace the
    supervisor prints the finding (the call, the rank, the batch's cp_size and num_tokens), kills the
    check and its search processes and exits 1. A Ctrl-C reaches the child, which exits 130."""
    if not hasattr(os, "fork"):
        return
    heart = mmap.mmap(-1, 2 * _HEART.size)
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        _STATE.heart, _STATE.heart_pid = heart, os.getpid()
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child answers Ctrl-C (one line, exit 130)

    def forward(signum: int, frame: FrameType | None) -> None:
        _kill_tree(child, signal.SIGTERM)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGHUP, forward)
    limit = call_timeout_s + SUPERVISOR_GRACE_S
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            code = code if code >= 0 else 128 - code
            _, started, method, rank, cp_size, num_tokens = _HEART.unpack_from(heart, 0)
            if started:  # the check's process ended inside a policy call: os._exit, a crash in C code
                name = _METHODS[method]
                if name == "import":
                    sys.stderr.write(f"cpgraph check: error: cannot load policy {policy_name!r}: importing it ended the "
                                     f"process (exit status {code})\n")
                    os._exit(2)
                sys.stderr.write(
                    f"cpgraph check: FAILED - policy {policy_name}: {name}(cp_rank={rank}, ...) ended the process "
                    f"(exit status {code}) instead of answering; the check stopped; batch: cp_size={cp_size}, "
                    f"num_tokens={num_tokens}\n"
                )
                os._exit(1)
            os._exit(code)
        now = time.monotonic()
        for slot in (0, _HEART.size):
            _, started, method, rank, cp_size, num_tokens = _HEART.unpack_from(heart, slot)
            if started and now - started > limit:
                _kill_tree(child, signal.SIGKILL)
                if _METHODS[method] == "import":  # as a hung import in-process: the policy cannot be loaded
                    sys.stderr.write(
                        f"cpgraph check: error: cannot load policy {policy_name!r}: importing it did not finish within "
                        f"{call_timeout_s:g} s (--call-timeout-s; it runs code that never yields to Python)\n"
                    )
                    sys.stderr.flush()
                    os._exit(2)
                call = f"{_METHODS[method]}(cp_rank={rank}, ...)" if rank >= 0 else f"{_METHODS[method]}(...)"
                sys.stderr.write(
                    f"cpgraph check: FAILED - policy {policy_name}: {call} did not return within {call_timeout_s:g} s and "
                    f"could not be interrupted (it runs in code that never yields to Python, e.g. a C loop holding "
                    f"the GIL); the check stopped; batch: cp_size={cp_size}, num_tokens={num_tokens}\n"
                )
                sys.stderr.flush()
                os._exit(1)
        time.sleep(SUPERVISOR_POLL_S)


def load_bounded(load: Callable[[], Policy], target: str) -> Policy:
    """``load()`` (importing the policy runs its module's code) under the session's timeout: an import
    that hangs, exits or raises KeyboardInterrupt becomes an ImportError saying so (a usage error: the
    policy cannot be loaded), never a hang or a silent exit."""
    timed = _STATE.armed and threading.get_ident() == _STATE.main_ident
    heart = _STATE.heart
    if timed:
        _STATE.fires, _STATE.in_call, _STATE.started = 0, (target, "import", None), time.monotonic()
    if heart is not None:
        _STATE.seq += 1
        _HEART.pack_into(heart, 0, _STATE.seq, time.monotonic(), _METHODS.index("import"), -1, 0, 0)
    try:
        try:
            return load()
        finally:
            _STATE.started = 0.0
            if heart is not None:
                _STARTED.pack_into(heart, 8, 0.0)
    except CallTimeout:
        raise ImportError(f"importing it did not finish within {_STATE.timeout_s:g} s (--call-timeout-s)") from None
    except SystemExit as exc:
        raise ImportError(f"importing it raised SystemExit({exc.code!r})") from None
    except KeyboardInterrupt:
        if INTERRUPT.real:
            raise
        raise ImportError("importing it raised KeyboardInterrupt") from None


def _kill_tree(pid: int, sig: int) -> None:
    """Signal ``pid`` and its children (the check's forked search process and boundary solver)."""
    children = []
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                        fields = handle.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) == pid:
                        children.append(int(entry))
                except (OSError, IndexError, ValueError):
                    continue
    except OSError:
        pass
    for target in [pid, *children]:
        try:
            os.kill(target, sig)
        except OSError:
            pass


def _bounded(policy_name: str, method: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    checked_signature = False

    def call(**kw: Any) -> Any:
        nonlocal checked_signature
        rank = kw.get("cp_rank")

        def stop(kind: str, detail: str, tb: str = "") -> PolicyStop:  # only built on the error paths
            return PolicyStop(CallStop(kind, policy_name, method, rank, _batch_text(kw), detail, tb))

        if not checked_signature:
            try:
                inspect.signature(fn).bind(**kw)
            except TypeError as exc:
                raise stop(
                    "protocol",
                    f"cannot be called with the protocol's keywords ({exc}); the protocol calls "
                    f"{method}({'bucket=..., ' if method == 'local_rows' else ''}**batch) with every argument by keyword: "
                    f"{', '.join(kw)}",
                ) from None
            except ValueError:
                pass  # no signature to read (a builtin): the call itself will tell
            checked_signature = True
        if _STATE.board is not None and _STATE.board[0] and os.getpid() == _STATE.owner:
            _hard_stop(_board_line())  # a forked search process met a policy call it could not stop
        heart = _STATE.heart
        slot = 0
        if heart is not None:  # tell the supervisor which call is running, from when (see supervise())
            slot = _HEART.size * (0 if os.getpid() == _STATE.heart_pid else 1)
            _STATE.seq += 1
            _HEART.pack_into(heart, slot, _STATE.seq, time.monotonic(), _METHODS.index(method),
                             -1 if rank is None else int(rank), int(kw.get("cp_size", 0)), int(kw.get("num_tokens", 0)))
        timed = _STATE.armed and threading.get_ident() == _STATE.main_ident
        if timed:
            _STATE.fires = 0
            _STATE.in_call = (policy_name, method, rank)  # formatted only on a hard stop
            _STATE.started = time.monotonic()
        try:
            try:
                value = fn(**kw)
            finally:
                if timed:
                    _STATE.started = 0.0
                if heart is not None:
                    _STARTED.pack_into(heart, slot + 8, 0.0)
        except CallTimeout:
            raise stop("timeout", f"did not return within {_STATE.timeout_s:g} s (--call-timeout-s); the check stopped") from None
        except SystemExit as exc:
            tb = trimmed_traceback(exc.__traceback__, exc)
            raise stop("system_exit", f"raised SystemExit({exc.code!r}) (a policy must answer, not exit the process)", tb) from None
        except KeyboardInterrupt as exc:
            if INTERRUPT.real:
                raise
            tb = trimmed_traceback(exc.__traceback__, exc)
            raise stop("keyboard_interrupt", "raised KeyboardInterrupt (a policy must answer, not interrupt its caller)", tb) from None
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            _LAST[(method, rank)] = (text, trimmed_traceback(exc.__traceback__, exc))
            raise
        wrong, value = _check_answer(method, value)
        if wrong is not None:
            raise stop("protocol", f"{wrong}; the protocol requires {PROTOCOL_REQUIRES[method]}")
        return value

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    call.__cpgraph_bounded__ = True  # type: ignore[attr-defined]
    return call


def bound(policy: Policy) -> Policy:
    """``policy`` with every protocol function bounded and judged (idempotent)."""
    if getattr(policy.admit, "__cpgraph_bounded__", False):
        return policy
    rows = policy.local_rows
    return replace(
        policy,
        admit=_bounded(policy.name, "admit", policy.admit),
        replay_bucket=_bounded(policy.name, "replay_bucket", policy.replay_bucket),
        local_rows=None if rows is None else _bounded(policy.name, "local_rows", rows),
    )
