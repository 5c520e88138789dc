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

Modules: this one wraps a policy's calls (``bound``); asking.py holds the bounded call itself and the
asker of every rank of a batch in one frame; stops.py what a stopped or wrongly typed call is; timer.py
the session and its timer; supervisor.py the command line's supervisor and the bounded import. Every
public name is importable from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cpgraph.check.asking import KEEP_UNKNOWN as KEEP_UNKNOWN, RankAsker as RankAsker, _call
from cpgraph.check.protocol import Policy
from cpgraph.check.stops import (
    HARD_STOP_FIRES as HARD_STOP_FIRES,
    PROTOCOL_REQUIRES as PROTOCOL_REQUIRES,
    REFIRE_S as REFIRE_S,
    TRACEBACK_FRAMES as TRACEBACK_FRAMES,
    CallStop as CallStop,
    CallTimeout as CallTimeout,
    PolicyStop as PolicyStop,
    last_traceback as last_traceback,
    trimmed_traceback as trimmed_traceback,
)
from cpgraph.check.supervisor import (
    SUPERVISOR_GRACE_S as SUPERVISOR_GRACE_S,
    SUPERVISOR_POLL_S as SUPERVISOR_POLL_S,
    load_bounded as load_bounded,
    supervise as supervise,
)
from cpgraph.check.timer import _METHODS, real_interrupt as real_interrupt, session as session

__all__ = [
    "HARD_STOP_FIRES", "PROTOCOL_REQUIRES", "REFIRE_S", "SUPERVISOR_GRACE_S", "SUPERVISOR_POLL_S", "TRACEBACK_FRAMES",
    "KEEP_UNKNOWN", "CallStop", "CallTimeout", "PolicyStop", "RankAsker", "bound", "last_traceback", "load_bounded", "real_interrupt", "session",
    "supervise", "trimmed_traceback",
]


def _bounded(policy_name: str, m: int, fn: Callable[..., Any], signed: list[bool]) -> Callable[..., Any]:
    def call(**kw: Any) -> Any:
        return _call(policy_name, m, fn, kw, kw.get("cp_rank"), signed)

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    call.__cpgraph_bounded__ = True  # type: ignore[attr-defined]
    return call


def bound(policy: Policy) -> Policy:
    """``policy`` with every protocol function bounded and judged (idempotent)."""
    if getattr(policy.admit, "__cpgraph_bounded__", False):
        return policy
    rows = policy.local_rows
    signed = [False] * len(_METHODS)  # each method's signature checked at its first call, by either path
    wrappers = (
        _bounded(policy.name, 0, policy.admit, signed),
        _bounded(policy.name, 1, policy.replay_bucket, signed),
        None if rows is None else _bounded(policy.name, 2, rows, signed),
    )
    layout = policy.local_layout
    layout_wrapper = None if layout is None else _bounded(policy.name, _METHODS.index("local_layout"), layout, signed)
    asker = RankAsker(policy.name, (policy.admit, policy.replay_bucket, rows), wrappers, signed, layout, layout_wrapper)
    admitted = policy.admitted_bucket
    return replace(
        policy, admit=wrappers[0], replay_bucket=wrappers[1], local_rows=wrappers[2], asker=asker,
        admitted_bucket=None if admitted is None else _bounded(policy.name, 4, admitted, signed),
        local_layout=layout_wrapper,
    )
