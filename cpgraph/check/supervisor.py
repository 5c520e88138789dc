"""The command line's supervisor (``supervise``) and the bounded import of a policy (``load_bounded``)."""

from __future__ import annotations

import mmap
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TypeVar

from cpgraph.output import INTERRUPT
from cpgraph.check.stops import HARD_STOP_FIRES, REFIRE_S, CallTimeout
from cpgraph.check.timer import _HEART, _METHODS, _STARTED, _STATE

SUPERVISOR_GRACE_S = 2.0 + REFIRE_S * HARD_STOP_FIRES  # past the timeout: the in-process stop had its chance
SUPERVISOR_POLL_S = 0.05
T = TypeVar("T")  # what a bounded load returns: a policy, or the object a target names


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
    interrupted = False

    def note_interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        interrupted = True

    # The child answers Ctrl-C (one line, exit 130). It is noted here too: a Ctrl-C that lands between a call's
    # heartbeat stamp and its try block leaves the stamp set, and the child's exit is then not the policy's doing.
    signal.signal(signal.SIGINT, note_interrupt)

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
            if started and not interrupted:  # the check's process ended inside a policy call: os._exit, a C crash
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


def load_bounded(load: Callable[[], T], target: str) -> T:
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

