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
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cpgraph.check.protocol import Policy
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
    "CallStop", "CallTimeout", "PolicyStop", "bound", "last_traceback", "load_bounded", "real_interrupt", "session",
    "supervise", "trimmed_traceback",
]


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
