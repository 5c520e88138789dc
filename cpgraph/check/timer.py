"""The session's per-call timer (see calls.py): one periodic SIGALRM per session, the state a running call
stamps, the hard stop, and the heartbeat shared with the command line's supervisor (supervisor.py)."""

from __future__ import annotations

import mmap
import multiprocessing
import os
import signal
import struct
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from cpgraph.check.stops import HARD_STOP_FIRES, REFIRE_S, CallTimeout
from cpgraph.output import INTERRUPT

_HEART = struct.Struct("<qdiiiq")  # seq, started (monotonic; 0.0: no call), method, rank, cp_size, num_tokens
_STARTED = struct.Struct("<d")
_METHODS = ("admit", "replay_bucket", "local_rows", "import", "admitted_bucket", "captured", "answers_dp", "graphs", "answers",
            "chunk", "local_layout")  # captured, answers_dp: a graph-path driver's; graphs, answers, chunk: an EP driver's


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

