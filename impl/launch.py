"""``spawn``: one fresh process per rank, watched until every rank has answered or one has failed.

When a rank raises, exits without answering (``kill -9``, a crash) or the whole run outlives ``timeout_s``,
``spawn`` waits ``grace_s`` for the other ranks' own errors (a survivor of a dead peer usually fails within a
second), kills whatever still runs (a rank stopped with SIGSTOP included) and raises SpawnError naming each
rank's outcome: its exception, its exit signal or code, or that it was still running (and whether stopped).
"""

from __future__ import annotations

import math
import os
import queue as queue_module
import signal
import socket
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from cpgraph.impl.checks import check_int

_DEFAULT_START = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
_EXIT_SETTLE_S = 0.5  # a rank that exited has its answer in the pipe by then, or never sent one


class SpawnError(RuntimeError):
    """Some rank failed, died or hung. ``outcomes`` maps every rank that did not return to one line saying how."""

    def __init__(self, message: str, outcomes: dict[int, str]) -> None:
        super().__init__(message)
        self.outcomes = outcomes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _entry(rank: int, world: int, port: int, backend: str, pg_timeout_s: float, fn: Callable[..., Any],
           args: tuple[Any, ...], queue: Any) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=timedelta(seconds=pg_timeout_s))
        queue.put((rank, True, fn(rank, world, *args)))
    except BaseException:
        queue.put((rank, False, traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    return float(value)


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code} without returning a result or an error"


def _last_error(tb: str) -> str:
    """The traceback's final ``Type: message`` line, the type without its module path."""
    lines = tb.strip().splitlines()
    name, sep, rest = (lines[-1] if lines else "unknown error").partition(":")
    return name.rsplit(".", 1)[-1] + sep + rest


def _state(pid: int | None) -> str:
    """'stopped' for a process in state T (SIGSTOP/SIGTSTP), 'running' otherwise (Linux /proc; else unknown)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return "unknown"
    return "stopped (SIGSTOP)" if fields and fields[0] in ("T", "t") else "running"


def spawn(fn: Callable[..., Any], world_size: int, *args: Any, backend: str = "gloo", timeout_s: float = 120.0,
          pg_timeout_s: float | None = None, grace_s: float = 2.0, start_method: str = _DEFAULT_START) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` in one fresh process per rank; return the results by rank.

    ``pg_timeout_s`` is the process group's timeout: how long a collective waits for a silent peer (a rank
    stopped with SIGSTOP, say). By default min(60, timeout_s / 2), so the survivors' own timeout errors arrive
    before ``timeout_s``, which bounds the whole run. The default start method is "forkserver" where
    available (torch is imported once, by the server), else "spawn"; never "fork" (unsafe after threads or
    CUDA). ``fn`` must be importable (module level) and return picklable values. Raises SpawnError naming
    every rank that did not return: its error, its exit signal, or that it was still running (or stopped).
    """
    if not callable(fn):
        raise TypeError(f"fn must be a module-level callable, got {fn!r}")
    world = check_int("world_size", world_size, minimum=1)
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be gloo or nccl, got {backend!r}")
    timeout, grace = _positive("timeout_s", timeout_s), _positive("grace_s", grace_s)
    pg_timeout = min(60.0, timeout / 2) if pg_timeout_s is None else _positive("pg_timeout_s", pg_timeout_s)
    if start_method not in mp.get_all_start_methods() or start_method == "fork":
        allowed = [m for m in mp.get_all_start_methods() if m != "fork"]
        raise ValueError(f"start_method must be one of {allowed}, got {start_method!r}")
    ctx: Any = mp.get_context(start_method)
    if start_method == "forkserver":
        # The server imports torch once, before any thread or CUDA context exists; every rank forks from it.
        ctx.set_forkserver_preload(["cpgraph.impl.distributed", fn.__module__])
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_entry, args=(r, world, port, backend, pg_timeout, fn, args, queue))
             for r in range(world)]
    for proc in procs:
        proc.start()
    try:
        results, raised, died, timed_out = _watch(procs, queue, timeout, grace)
        states = {r: _state(p.pid) for r, p in enumerate(procs) if p.is_alive()}
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()  # SIGKILL also ends a stopped process
            proc.join(timeout=5)
    if len(results) == world:
        return [results[r] for r in range(world)]
    outcomes: dict[int, str] = {}
    for r in range(world):
        if r in raised:
            outcomes[r] = f"rank {r} raised {_last_error(raised[r])}"
        elif r in died:
            outcomes[r] = f"rank {r} died: {died[r]}"
        elif r not in results:
            why = f"did not finish within timeout_s={timeout:g}" if timed_out else \
                f"was still running {grace:g} s after the first failure"
            outcomes[r] = f"rank {r} {why}; spawn killed it (it was {states.get(r, 'gone')})"
    name = getattr(fn, "__name__", repr(fn))
    details = "".join(f"\n--- rank {r} traceback:\n{tb}" for r, tb in sorted(raised.items()))
    raise SpawnError(f"spawn({name}, world_size={world}) failed: " + "; ".join(outcomes.values()) + details, outcomes)


def _watch(procs: list[Any], queue: Any, timeout: float, grace: float
           ) -> tuple[dict[int, Any], dict[int, str], dict[int, str], bool]:
    """Collect answers until every rank has one, or ``grace`` after the first failure, or ``timeout``."""
    results: dict[int, Any] = {}
    raised: dict[int, str] = {}
    died: dict[int, str] = {}
    exited_at: dict[int, float] = {}
    deadline = time.monotonic() + timeout
    stop_at = math.inf
    while len(results) + len(raised) + len(died) < len(procs):
        now = time.monotonic()
        if now >= min(stop_at, deadline):
            return results, raised, died, now >= deadline and stop_at == math.inf
        try:
            rank, ok, value = queue.get(timeout=0.05)
        except queue_module.Empty:
            pass
        else:
            if ok:
                results[rank] = value
            else:
                raised[rank] = value
                stop_at = min(stop_at, time.monotonic() + grace)
            continue
        for r, proc in enumerate(procs):
            if r in results or r in raised or r in died or proc.exitcode is None:
                continue
            first_seen = exited_at.setdefault(r, time.monotonic())
            if time.monotonic() - first_seen > _EXIT_SETTLE_S:
                died[r] = _exit_text(proc.exitcode)
                stop_at = min(stop_at, time.monotonic() + grace)
    return results, raised, died, False
