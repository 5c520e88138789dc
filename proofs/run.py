"""Running obligations in parallel workers, with progress, minimised counterexamples and replays.

Every query goes through `check`; a refuted query is minimised (smallest size: fewest tokens) and replayed through the reference.
With ``Opinions`` (``cpgraph prove --cross-check cvc5 --seeds N``) every proved query is also decided by cvc5
(`cross_check`) and every checked query is re-run under z3 seeds 1..N; each finding is a `Note`:
a disagreement (cvc5 refutes what z3 proved), a query cvc5 could not decide ("not cross-checked", with its
reason), or an unstable query (a seed changes z3's verdict).

The records are in proofs/engine/results.py and proofs/engine/opinions.py, minimisation and replay in
proofs/engine/counterexample.py; every name the prove command uses is importable from here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from cpgraph.proofs.engine import cache
from cpgraph.proofs.engine.check import Status, Verdict, check, cross_check, one_context
from cpgraph.proofs.engine.counterexample import failure_of, minimise
from cpgraph.proofs.engine.obligation import Obligation, Query
from cpgraph.proofs.engine.opinions import CROSS_CHECKERS, NO_OPINIONS, Note, NoteKind, Opinions
from cpgraph.proofs.registry import BY_NAME
from cpgraph.proofs.theorems.setting import shared_settings
from cpgraph.proofs.engine.results import Failure, ObligationResult, TaskResult, summarise
from cpgraph.proofs.engine.witness import witness_checks

__all__ = [
    "CROSS_CHECKERS", "NO_OPINIONS", "Failure", "Note", "NoteKind", "ObligationResult", "Opinions", "TaskResult",
    "default_jobs", "minimise", "run_obligations", "run_queries", "run_task", "run_with", "second_opinions", "summarise",
]


class _Second:
    """The accumulator of one task's second opinions (mutable while the task runs, then copied into the
    frozen TaskResult)."""

    def __init__(self) -> None:
        self.notes: list[Note] = []
        self.cross_checked = 0
        self.seed_runs = 0
        self.seconds = 0.0


def second_opinions(where: str, query: Query, verdict: Verdict, opinions: Opinions, into: _Second) -> None:
    """Cross-check a proved query with the second solver; re-run any checked query under seeds 1..N."""
    if opinions.cross_check is not None and verdict.proved:
        other = cross_check(query.claim, hypotheses=query.hypotheses, rlimit=opinions.cvc5_rlimit)
        into.seconds += other.seconds
        if other.status is Status.PROVED:
            into.cross_checked += 1
        elif other.status is Status.REFUTED:
            into.notes.append(Note(where, NoteKind.DISAGREEMENT, f"z3 proved it, {opinions.cross_check} refutes it"))
        else:
            into.notes.append(Note(where, NoteKind.NOT_CROSS_CHECKED, other.reason))
    flips: list[str] = []
    for seed in range(1, opinions.seeds + 1):
        again = check(query.claim, hypotheses=query.hypotheses, rlimit=query.rlimit, seed=seed)
        into.seconds += again.seconds
        into.seed_runs += 1
        if again.status is not verdict.status:
            why = f" ({again.reason})" if again.reason else ""
            flips.append(f"seed {seed}: {again.status.value}{why}")
    if flips:
        detail = f"seed 0: {verdict.status.value}; " + "; ".join(flips)
        into.notes.append(Note(where, NoteKind.UNSTABLE, detail))


def run_queries(
    name: str,
    parameter: int,
    queries: Sequence[Query],
    label: str,
    *,
    shrink: bool = True,
    opinions: Opinions = NO_OPINIONS,
    fresh: bool = True,
    verdict_only: bool = False,
) -> TaskResult:
    """Check ``queries`` in order; stop at the first that is not proved. With ``opinions``, every query
    checked also gets its second opinions (before minimisation, on the query as stated). The queries share
    one fresh context (``fresh``), or the enclosing ``one_context`` block's (``fresh=False``: the caller's
    block, which must always run the same checks before these). With ``verdict_only`` a failure carries its
    verdict alone: no model, so a refutation needs no second solver (proofs/engine/check.py), and no replay."""
    start = time.perf_counter()
    slowest = ("", 0.0)
    second = _Second()

    def result(failure: Failure | None) -> TaskResult:
        return TaskResult(
            name, parameter, len(queries), time.perf_counter() - start, slowest, failure,
            tuple(second.notes), second.cross_checked, second.seed_runs, second.seconds,
        )

    with one_context() if fresh else contextlib.nullcontext():  # one theorem at one parameter, always in this order
        for query in queries:
            verdict = check(
                query.claim, hypotheses=query.hypotheses, rlimit=query.rlimit, pipeline_first=True, model=not verdict_only
            )
            where = f"{label} {query.part}".strip()
            if verdict.seconds > slowest[1]:
                slowest = (where, verdict.seconds)
            if opinions.active:
                second_opinions(where, query, verdict, opinions, second)
            if not verdict.proved:
                return result(Failure(where, verdict) if verdict_only else failure_of(where, query, verdict, shrink=shrink))
    return result(None)


def run_task(
    obligation: Obligation, parameter: int, *, shrink: bool = True, opinions: Opinions = NO_OPINIONS,
    witnesses: bool = False,
) -> TaskResult:
    """Build and check one obligation at one parameter value; with ``witnesses``, once every query is proved,
    also the scope's witnesses on the same built queries (proofs/engine/witness.py: the teeth pass reads them),
    in the same fresh context: they always follow the same queries, so their cost still depends on this task
    alone, and the task pays for one context, not two."""
    start = time.perf_counter()
    queries = obligation.build(parameter)
    with one_context():
        result = run_queries(
            obligation.name, parameter, queries, obligation.label(parameter), shrink=shrink, opinions=opinions,
            fresh=False,
        )
        if witnesses and result.failure is None:
            begin = time.process_time()  # CPU seconds of this worker: what the checks add, whatever the load
            found = witness_checks(obligation.name, parameter, queries)
            result = dataclasses.replace(result, witnesses=found, witness_seconds=time.process_time() - begin)
    return dataclasses.replace(result, seconds=time.perf_counter() - start)


def _worker(task: tuple[tuple[str, ...], int, Opinions, bool]) -> list[TaskResult]:
    # One task = every obligation at one parameter value, so terms cached per parameter are shared.
    names, parameter, opinions, witnesses = task
    with shared_settings():  # one setting's sides built once for every theorem of the task (proofs/theorems/setting.py)
        return [run_task(BY_NAME[name], parameter, opinions=opinions, witnesses=witnesses) for name in names]


Job = tuple[str, Any]  # ("prove", a _worker task) or ("after", (index, an ``after`` task))


def _job(job: Job) -> tuple[str, Any]:
    """One task of the shared pool: a proof task (its TaskResults) or one of ``run_with``'s ``after`` calls
    (its index and what the call returned)."""
    kind, task = job
    if kind == "prove":
        return kind, _worker(task)
    index, (function, argument) = task
    return kind, (index, function(argument))


def _counted(job: Job) -> tuple[str, Any, cache.Tally]:
    """``_job`` in a pool worker, with the solver calls it solved and reused (the parent adds them to its tally)."""
    before = cache.tally()
    kind, payload = _job(job)
    return kind, payload, cache.tally() - before


def default_jobs() -> int:
    """Worker processes: the CPUs this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def run_obligations(
    obligations: Sequence[Obligation],
    *,
    cp_max: int,
    jobs: int | None = None,
    progress: Callable[[int, int, TaskResult], None] | None = None,
    opinions: Opinions = NO_OPINIONS,
    witnesses: bool = False,
) -> list[ObligationResult]:
    """Check every obligation at every parameter; ``progress(done, total, result)`` after each task;
    ``opinions``: the cross-check and seed sweep on every query; ``witnesses``: the scope's witnesses at
    every parameter (run_task)."""
    results, _ = run_with(obligations, cp_max=cp_max, jobs=jobs, progress=progress, opinions=opinions, witnesses=witnesses)
    return results


After = tuple[Callable[[Any], Any], Any]  # (function, argument): a module-level function (pickled by name), run in a worker


def run_with(
    obligations: Sequence[Obligation],
    *,
    cp_max: int,
    jobs: int | None = None,
    progress: Callable[[int, int, TaskResult], None] | None = None,
    opinions: Opinions = NO_OPINIONS,
    witnesses: bool = False,
    after: Sequence[After] = (),
) -> tuple[list[ObligationResult], list[Any] | None]:
    """``run_obligations``, and in the same pool of workers the calls ``after`` (function, argument:
    ``function(argument)`` in a worker), started once every proof task has been handed out: one pool, so the
    calls fill the proofs' tail instead of waiting for a second pool to start. Returns the obligations'
    results and the calls' results in ``after``'s order, or None in their place when some obligation was
    not proved (the calls still running are then stopped: they are only read for a proved run)."""
    if cp_max < 1:
        raise ValueError(f"cp_max must be an int >= 1, got {cp_max}")
    groups: dict[tuple[str, int], list[str]] = {}
    for o in obligations:
        for p in o.parameters(cp_max):
            groups.setdefault((o.over, p), []).append(o.name)
    # Big parameters first: the slowest tasks start early and the pool ends evenly.
    tasks = sorted(
        ((tuple(names), p, opinions, witnesses) for (_, p), names in groups.items()), key=lambda t: (-t[1], t[0])
    )
    jobs_list: list[Job] = [("prove", t) for t in tasks] + [("after", (i, a)) for i, a in enumerate(after)]
    total = sum(len(task[0]) for task in tasks)
    workers = min(jobs if jobs is not None else default_jobs(), len(jobs_list)) or 1
    results: dict[str, list[TaskResult]] = {o.name: [] for o in obligations}
    extra: list[Any] = [None] * len(after)
    done = 0
    failed = False

    def record(kind: str, payload: Any) -> None:
        nonlocal done, failed
        if kind == "after":
            extra[payload[0]] = payload[1]
            return
        for result in payload:
            done += 1
            failed = failed or result.failure is not None
            results[result.name].append(result)
            if progress is not None:
                progress(done, total, result)

    if workers == 1:
        for job in jobs_list:
            if job[0] == "after" and failed:
                break
            record(*_job(job))
    else:
        # spawn, not fork: z3 contexts are not fork-safe. Each worker imports z3 once, and uses this process's
        # proof cache setting (proofs/engine/cache.py).
        spawn = multiprocessing.get_context("spawn")
        with spawn.Pool(workers, initializer=cache.configure, initargs=(cache.current(),)) as pool:
            proofs_left = len(tasks)
            for kind, payload, counts in pool.imap_unordered(_counted, jobs_list):
                cache.add(counts)
                record(kind, payload)
                proofs_left -= kind == "prove"
                if failed and not proofs_left:
                    break  # leaving the block terminates the calls still running
    return [summarise(o, cp_max, results[o.name]) for o in obligations], None if failed else extra
