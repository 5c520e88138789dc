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

Modules: this one wraps the calls (``bound``); stops.py holds what a stopped or wrongly typed call is,
timer.py the session and its timer, supervisor.py the command line's supervisor and the bounded import.
Every public name is importable from here.
"""

from __future__ import annotations

import inspect
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from cpgraph.check.batch import Batch
from cpgraph.check.protocol import Policy, RankAnswer, _as_int, _error
from cpgraph.reference.answers import rank_answer
from cpgraph.output import INTERRUPT
from cpgraph.check.stops import (
    HARD_STOP_FIRES as HARD_STOP_FIRES,
    PROTOCOL_REQUIRES as PROTOCOL_REQUIRES,
    REFIRE_S as REFIRE_S,
    TRACEBACK_FRAMES as TRACEBACK_FRAMES,
    CallStop as CallStop,
    CallTimeout as CallTimeout,
    PolicyStop as PolicyStop,
    _LAST,
    _batch_text,
    _check_answer,
    last_traceback as last_traceback,
    trimmed_traceback as trimmed_traceback,
)
from cpgraph.check.supervisor import (
    SUPERVISOR_GRACE_S as SUPERVISOR_GRACE_S,
    SUPERVISOR_POLL_S as SUPERVISOR_POLL_S,
    load_bounded as load_bounded,
    supervise as supervise,
)
from cpgraph.check.timer import _HEART, _METHODS, _STARTED, _STATE, _hard_stop, _board_line
from cpgraph.check.timer import real_interrupt as real_interrupt, session as session

__all__ = [
    "HARD_STOP_FIRES", "PROTOCOL_REQUIRES", "REFIRE_S", "SUPERVISOR_GRACE_S", "SUPERVISOR_POLL_S", "TRACEBACK_FRAMES",
    "KEEP_UNKNOWN", "CallStop", "CallTimeout", "PolicyStop", "RankAsker", "bound", "last_traceback", "load_bounded", "real_interrupt", "session",
    "supervise", "trimmed_traceback",
]


def _stop(name: str, method: str, rank: Any, kw: dict[str, Any], kind: str, detail: str, tb: str = "") -> PolicyStop:
    """The PolicyStop of a call (built on the error paths only)."""
    return PolicyStop(CallStop(kind, name, method, rank, _batch_text(kw), detail, tb))


def _call(name: str, m: int, fn: Callable[..., Any], kw: dict[str, Any], rank: Any, signed: list[bool]) -> Any:
    """``fn(**kw)``, the policy's ``_METHODS[m]`` call, bounded and judged: the signature is checked at the
    first call, the call is stamped for the timer and the supervisor, a stop or an exit becomes a
    PolicyStop, an exception is re-raised (the asker makes it an answer) with its trimmed traceback kept,
    and an answer of the wrong type is a protocol stop."""
    method = _METHODS[m]
    if not signed[m]:
        try:
            inspect.signature(fn).bind(**kw)
        except TypeError as exc:
            raise _stop(
                name, method, rank, kw, "protocol",
                f"cannot be called with the protocol's keywords ({exc}); the protocol calls "
                f"{method}({'bucket=..., ' if method == 'local_rows' else ''}**batch) with every argument by keyword: "
                f"{', '.join(kw)}",
            ) from None
        except ValueError:
            pass  # no signature to read (a builtin): the call itself will tell
        signed[m] = True
    state = _STATE
    board = state.board
    if board is not None and board[0] and os.getpid() == state.owner:
        _hard_stop(_board_line())  # a forked search process met a policy call it could not stop
    heart = state.heart
    slot = 0
    if heart is not None:  # tell the supervisor which call is running, from when (see supervise())
        slot = _HEART.size * (0 if os.getpid() == state.heart_pid else 1)
        state.seq += 1
        _HEART.pack_into(heart, slot, state.seq, time.monotonic(), m, -1 if rank is None else int(rank),
                         int(kw.get("cp_size", 0)), int(kw.get("num_tokens", 0)))
    timed = state.armed and threading.get_ident() == state.main_ident
    if timed:
        state.fires = 0
        state.in_call = (name, method, rank)  # formatted only on a hard stop
        state.started = time.monotonic()
    try:
        try:
            value = fn(**kw)
        finally:
            if timed:
                state.started = 0.0
            if heart is not None:
                _STARTED.pack_into(heart, slot + 8, 0.0)
    except CallTimeout:
        raise _stop(name, method, rank, kw, "timeout", f"did not return within {state.timeout_s:g} s (--call-timeout-s); the check stopped") from None
    except SystemExit as exc:
        tb = trimmed_traceback(exc.__traceback__, exc)
        raise _stop(name, method, rank, kw, "system_exit", f"raised SystemExit({exc.code!r}) (a policy must answer, not exit the process)", tb) from None
    except KeyboardInterrupt as exc:
        if INTERRUPT.real:
            raise
        tb = trimmed_traceback(exc.__traceback__, exc)
        raise _stop(name, method, rank, kw, "keyboard_interrupt", "raised KeyboardInterrupt (a policy must answer, not interrupt its caller)", tb) from None
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        _LAST[(method, rank)] = (text, trimmed_traceback(exc.__traceback__, exc))
        raise
    if m == 0:
        if value is True or value is False:  # the common answers, without _check_answer's call
            return value
    elif m == 1 and (value is None or type(value) is int):
        return value
    wrong, value = _check_answer(method, value)
    if wrong is not None:
        raise _stop(name, method, rank, kw, "protocol", f"{wrong}; the protocol requires {PROTOCOL_REQUIRES[method]}")
    return value


def _bounded(policy_name: str, m: int, fn: Callable[..., Any], signed: list[bool]) -> Callable[..., Any]:
    def call(**kw: Any) -> Any:
        return _call(policy_name, m, fn, kw, kw.get("cp_rank"), signed)

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    call.__cpgraph_bounded__ = True  # type: ignore[attr-defined]
    return call


KEEP_UNKNOWN: Any = object()  # RankAsker's ``want`` when the caller does not know the reference's decision


class RankAsker:
    """Every rank of a batch asked in one frame, each call through ``_call`` (the bound above) with no
    wrapper in between: what protocol.ask does for a bound policy, the same calls in the same order with
    the same keywords. Given the reference's decision (``want``, the live ``loads``, the bucket's
    ``capacity``: reference.judge.expected_bucket), it returns None instead of the answers when every
    rank's answers meet reference.judge.keeps_everything (no rule can fire), so no record is built."""

    __slots__ = ("name", "fns", "wrappers", "signed")

    def __init__(self, name: str, fns: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any] | None],
                 wrappers: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any] | None], signed: list[bool]) -> None:
        self.name, self.fns, self.wrappers, self.signed = name, fns, wrappers, signed

    def serves(self, policy: Policy) -> bool:
        """Are ``policy``'s functions still the ones this asker was made for (not replaced since)?"""
        w = self.wrappers
        return policy.admit is w[0] and policy.replay_bucket is w[1] and policy.local_rows is w[2]

    def __call__(self, batch: Batch, ranks: Sequence[int] | None, always: bool, want: Any = KEEP_UNKNOWN,
                 loads: Sequence[int] = (), capacity: int = 0) -> tuple[RankAnswer, ...] | None:
        name, signed = self.name, self.signed
        admit_fn, replay_fn, rows_fn = self.fns
        base = batch.kwargs()
        table = base.pop("bucket_local_tokens")
        keep = want is not KEEP_UNKNOWN
        out = []
        for rank in range(batch.cp_size) if ranks is None else ranks:
            kw = base.copy()
            kw["cp_rank"] = rank
            kw["bucket_local_tokens"] = table.copy()  # each rank its own copy: a write cannot reach another rank
            admit: bool | None
            admit_error = replay_error = rows_error = None
            rows: tuple[object, ...] | None = None
            try:
                admit = bool(_call(name, 0, admit_fn, kw, rank, signed))
            except Exception as exc:
                admit, admit_error = None, _error(exc)
            bucket: object = None
            asked = always or admit is True
            if asked:
                try:
                    bucket = _call(name, 1, replay_fn, kw, rank, signed)
                    if type(bucket) is not int:
                        bucket = _as_int(bucket)
                except Exception as exc:
                    bucket, replay_error = None, _error(exc)
            if rows_fn is not None and bucket is not None:
                rkw = {"bucket": bucket}
                rkw.update(kw)
                try:
                    rows = tuple(_as_int(r) for r in _call(name, 2, rows_fn, rkw, rank, signed))
                except Exception as exc:
                    rows_error = _error(exc)
            if keep:  # reference.judge.keeps_everything, rank by rank (tests hold the two equal)
                if want is None:
                    keep = admit is False and bucket is None
                elif admit is not True or type(bucket) is not int or bucket != want:
                    keep = False
                elif rows is not None or rows_error is not None:
                    keep = rows is not None and len(rows) == len(loads) and all(
                        type(r) is int and load <= r <= capacity for r, load in zip(rows, loads)
                    )
            out.append((rank, admit, admit_error, bucket, replay_error, rows, rows_error, asked))
        if keep:
            return None
        return tuple(rank_answer(*a) for a in out)


def bound(policy: Policy) -> Policy:
    """``policy`` with every protocol function bounded and judged (idempotent)."""
    if getattr(policy.admit, "__cpgraph_bounded__", False):
        return policy
    rows = policy.local_rows
    signed = [False, False, False]  # each method's signature checked at its first call, by either path
    wrappers = (
        _bounded(policy.name, 0, policy.admit, signed),
        _bounded(policy.name, 1, policy.replay_bucket, signed),
        None if rows is None else _bounded(policy.name, 2, rows, signed),
    )
    asker = RankAsker(policy.name, (policy.admit, policy.replay_bucket, rows), wrappers, signed)
    return replace(policy, admit=wrappers[0], replay_bucket=wrappers[1], local_rows=wrappers[2], asker=asker)
