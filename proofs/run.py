"""Running obligations in parallel workers, with progress, minimised counterexamples and replays.

Every query goes through `check`; a refuted query is minimised (smallest size: fewest tokens) and replayed through the reference.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import z3

from cpgraph.proofs.check import Status, Value, Verdict, check
from cpgraph.proofs.obligation import Obligation, Query
from cpgraph.proofs.registry import BY_NAME


@dataclass(frozen=True)
class Failure:
    """A query that was not proved: its label, verdict, minimised model, shown terms and replay text."""

    label: str
    verdict: Verdict
    model: Mapping[str, Value] = field(default_factory=dict)
    shown: Mapping[str, str] = field(default_factory=dict)
    replay: str = ""

    def render(self) -> str:
        lines = [f"  {self.label}: {self.verdict.status.value}"]
        if self.verdict.reason:
            lines.append(f"    reason: {self.verdict.reason}")
        if self.model:
            lines.append("    minimal counterexample: " + ", ".join(f"{k}={v}" for k, v in self.model.items()))
        for name, value in self.shown.items():
            lines.append(f"    {name} = {value}")
        if self.replay:
            lines.append("    replayed through the reference:")
            lines.extend("      " + line for line in self.replay.splitlines())
        return "\n".join(lines)


@dataclass(frozen=True)
class TaskResult:
    """All queries of one obligation at one parameter value."""

    name: str
    parameter: int
    queries: int
    seconds: float  # build + solve, wall
    slowest: tuple[str, float]  # (label, solver seconds)
    failure: Failure | None


@dataclass(frozen=True)
class ObligationResult:
    name: str
    scope: str
    status: Status
    queries: int
    seconds: float
    slowest: tuple[str, float]
    failures: tuple[Failure, ...]


def _substitute(term: z3.ExprRef, model: Mapping[str, Value]) -> z3.ExprRef:
    pairs = [
        (z3.Bool(k) if isinstance(v, bool) else z3.Int(k), z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v))
        for k, v in model.items()
    ]
    return z3.simplify(z3.substitute(term, *pairs)) if pairs else z3.simplify(term)


def minimise(query: Query, verdict: Verdict, *, rounds: int = 40) -> Mapping[str, Value]:
    """The refuting model with the least ``query.size`` (binary search on an upper bound, each probe one
    `check`); the original model when the query has no size or a probe is unknown."""
    model = verdict.model
    if query.size is None or not model:
        return model
    current = _substitute(query.size, model)
    if not z3.is_int_value(current):
        return model
    low, high = -1, current.as_long()  # size <= low has no counterexample (or is unexplored below 0)
    probe_low = check(query.claim, hypotheses=(*query.hypotheses, query.size <= 0), rlimit=query.rlimit)
    if probe_low.status is Status.REFUTED:
        return probe_low.model
    low = 0
    for _ in range(rounds):
        if high - low <= 1:
            break
        mid = (low + high) // 2
        probe = check(query.claim, hypotheses=(*query.hypotheses, query.size <= mid), rlimit=query.rlimit)
        if probe.status is Status.REFUTED:
            high, model = mid, probe.model
        elif probe.status is Status.PROVED:
            low = mid
        else:
            break
    return model


def _failure(label: str, query: Query, verdict: Verdict, *, shrink: bool) -> Failure:
    if verdict.status is not Status.REFUTED:
        return Failure(label, verdict)
    model = minimise(query, verdict) if shrink else verdict.model
    shown = {name: str(_substitute(term, model)) for name, term in query.shown}
    replay = query.replay(model) if query.replay is not None else ""
    return Failure(label, verdict, model, shown, replay)


def run_queries(
    name: str, parameter: int, queries: Sequence[Query], label: str, *, shrink: bool = True
) -> TaskResult:
    """Check ``queries`` in order; stop at the first that is not proved."""
    start = time.perf_counter()
    slowest = ("", 0.0)
    for query in queries:
        verdict = check(query.claim, hypotheses=query.hypotheses, rlimit=query.rlimit)
        where = f"{label} {query.part}".strip()
        if verdict.seconds > slowest[1]:
            slowest = (where, verdict.seconds)
        if not verdict.proved:
            failure = _failure(where, query, verdict, shrink=shrink)
            return TaskResult(name, parameter, len(queries), time.perf_counter() - start, slowest, failure)
    return TaskResult(name, parameter, len(queries), time.perf_counter() - start, slowest, None)


def run_task(obligation: Obligation, parameter: int, *, shrink: bool = True) -> TaskResult:
    """Build and check one obligation at one parameter value."""
    start = time.perf_counter()
    queries = obligation.build(parameter)
    result = run_queries(obligation.name, parameter, queries, obligation.label(parameter), shrink=shrink)
    return TaskResult(
        result.name, parameter, result.queries, time.perf_counter() - start, result.slowest, result.failure
    )


def _worker(task: tuple[tuple[str, ...], int]) -> list[TaskResult]:
    # One task = every obligation at one parameter value, so terms cached per parameter are shared.
    names, parameter = task
    return [run_task(BY_NAME[name], parameter) for name in names]


def summarise(obligation: Obligation, cp_max: int, results: Iterable[TaskResult]) -> ObligationResult:
    """One row per obligation: proved only if every query at every parameter was."""
    done = sorted(results, key=lambda r: r.parameter)
    failures = tuple(r.failure for r in done if r.failure is not None)
    if not failures:
        status = Status.PROVED
    elif any(f.verdict.status is Status.REFUTED for f in failures):
        status = Status.REFUTED
    else:
        status = Status.UNKNOWN
    slowest = max((r.slowest for r in done), key=lambda s: s[1], default=("", 0.0))
    return ObligationResult(
        obligation.name,
        obligation.scope_for(cp_max),
        status,
        sum(r.queries for r in done),
        sum(r.seconds for r in done),
        slowest,
        failures,
    )


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
) -> list[ObligationResult]:
    """Check every obligation at every parameter; ``progress(done, total, result)`` after each task."""
    if cp_max < 1:
        raise ValueError(f"cp_max must be an int >= 1, got {cp_max}")
    groups: dict[tuple[str, int], list[str]] = {}
    for o in obligations:
        for p in o.parameters(cp_max):
            groups.setdefault((o.over, p), []).append(o.name)
    # Big parameters first: the slowest tasks start early and the pool ends evenly.
    tasks = sorted(((tuple(names), p) for (_, p), names in groups.items()), key=lambda t: (-t[1], t[0]))
    total = sum(len(names) for names, _ in tasks)
    workers = min(jobs if jobs is not None else default_jobs(), len(tasks)) or 1
    results: dict[str, list[TaskResult]] = {o.name: [] for o in obligations}
    done = 0

    def record(batch: list[TaskResult]) -> None:
        nonlocal done
        for result in batch:
            done += 1
            results[result.name].append(result)
            if progress is not None:
                progress(done, total, result)

    if workers == 1:
        for task in tasks:
            record(_worker(task))
    else:
        # spawn, not fork: z3 contexts are not fork-safe. Each worker imports z3 once.
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for batch in pool.imap_unordered(_worker, tasks):
                record(batch)
    return [summarise(o, cp_max, results[o.name]) for o in obligations]
