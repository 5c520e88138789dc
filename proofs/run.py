"""Running obligations in parallel workers, with progress, minimised counterexamples and replays.

Every query goes through `check`; a refuted query is minimised (smallest size: fewest tokens) and replayed through the reference.
With ``Opinions`` (``cpgraph prove --cross-check cvc5 --seeds N``) every proved query is also decided by cvc5
(`cross_check`) and every checked query is re-run under z3 seeds 1..N; each finding is a `Note`:
a disagreement (cvc5 refutes what z3 proved), a query cvc5 could not decide ("not cross-checked", with its
reason), or an unstable query (a seed changes z3's verdict).
"""

from __future__ import annotations

import dataclasses
import enum
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import z3

from cpgraph.proofs.check import DEFAULT_CVC5_RLIMIT, Status, Value, Verdict, check, cross_check
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


CROSS_CHECKERS = ("cvc5",)


@dataclass(frozen=True)
class Opinions:
    """Second opinions on every query: a second solver (``cross_check``: None or "cvc5", with its rlimit)
    and ``seeds`` extra z3 runs under random seeds 1..seeds (0 = off)."""

    cross_check: str | None = None
    seeds: int = 0
    cvc5_rlimit: int = DEFAULT_CVC5_RLIMIT

    def __post_init__(self) -> None:
        if self.cross_check is not None and self.cross_check not in CROSS_CHECKERS:
            raise ValueError(f"cross_check must be None or one of {', '.join(CROSS_CHECKERS)}; got {self.cross_check!r}")
        if not isinstance(self.seeds, int) or isinstance(self.seeds, bool) or self.seeds < 0:
            raise ValueError(f"seeds must be an int >= 0, got {self.seeds!r}")
        if not isinstance(self.cvc5_rlimit, int) or isinstance(self.cvc5_rlimit, bool) or self.cvc5_rlimit < 1:
            raise ValueError(f"cvc5_rlimit must be an int >= 1, got {self.cvc5_rlimit!r}")

    @property
    def active(self) -> bool:
        return self.cross_check is not None or self.seeds > 0


NO_OPINIONS = Opinions()


class NoteKind(str, enum.Enum):
    DISAGREEMENT = "disagreement"  # the second solver refutes a query z3 proved: a failure
    NOT_CROSS_CHECKED = "not_cross_checked"  # the second solver gave up (its reason): reported, not a failure
    UNSTABLE = "unstable"  # some z3 seed gives another verdict than seed 0: a failure


@dataclass(frozen=True)
class Note:
    """One second-opinion finding about one query (``label`` as in a Failure)."""

    label: str
    kind: NoteKind
    detail: str

    @property
    def fails(self) -> bool:
        return self.kind is not NoteKind.NOT_CROSS_CHECKED


@dataclass(frozen=True)
class TaskResult:
    """All queries of one obligation at one parameter value."""

    name: str
    parameter: int
    queries: int
    seconds: float  # build + solve, wall
    slowest: tuple[str, float]  # (label, solver seconds)
    failure: Failure | None
    notes: tuple[Note, ...] = ()
    cross_checked: int = 0  # queries cvc5 proved too
    seed_runs: int = 0  # extra z3 runs under other seeds
    opinion_seconds: float = 0.0  # solver time of the second opinions


@dataclass(frozen=True)
class ObligationResult:
    name: str
    scope: str
    status: Status
    queries: int
    seconds: float
    slowest: tuple[str, float]
    failures: tuple[Failure, ...]
    notes: tuple[Note, ...] = ()
    cross_checked: int = 0
    seed_runs: int = 0
    opinion_seconds: float = 0.0

    def noted(self, kind: NoteKind) -> tuple[Note, ...]:
        return tuple(n for n in self.notes if n.kind is kind)

    @property
    def trusted(self) -> bool:
        """Proved, no second solver disagrees and no seed changes a verdict (cvc5 giving up is allowed)."""
        return self.status is Status.PROVED and not any(n.fails for n in self.notes)


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
) -> TaskResult:
    """Check ``queries`` in order; stop at the first that is not proved. With ``opinions``, every query
    checked also gets its second opinions (before minimisation, on the query as stated)."""
    start = time.perf_counter()
    slowest = ("", 0.0)
    second = _Second()

    def result(failure: Failure | None) -> TaskResult:
        return TaskResult(
            name, parameter, len(queries), time.perf_counter() - start, slowest, failure,
            tuple(second.notes), second.cross_checked, second.seed_runs, second.seconds,
        )

    for query in queries:
        verdict = check(query.claim, hypotheses=query.hypotheses, rlimit=query.rlimit)
        where = f"{label} {query.part}".strip()
        if verdict.seconds > slowest[1]:
            slowest = (where, verdict.seconds)
        if opinions.active:
            second_opinions(where, query, verdict, opinions, second)
        if not verdict.proved:
            return result(_failure(where, query, verdict, shrink=shrink))
    return result(None)


def run_task(
    obligation: Obligation, parameter: int, *, shrink: bool = True, opinions: Opinions = NO_OPINIONS
) -> TaskResult:
    """Build and check one obligation at one parameter value."""
    start = time.perf_counter()
    queries = obligation.build(parameter)
    result = run_queries(
        obligation.name, parameter, queries, obligation.label(parameter), shrink=shrink, opinions=opinions
    )
    return dataclasses.replace(result, seconds=time.perf_counter() - start)


def _worker(task: tuple[tuple[str, ...], int, Opinions]) -> list[TaskResult]:
    # One task = every obligation at one parameter value, so terms cached per parameter are shared.
    names, parameter, opinions = task
    return [run_task(BY_NAME[name], parameter, opinions=opinions) for name in names]


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
        tuple(note for r in done for note in r.notes),
        sum(r.cross_checked for r in done),
        sum(r.seed_runs for r in done),
        sum(r.opinion_seconds for r in done),
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
    opinions: Opinions = NO_OPINIONS,
) -> list[ObligationResult]:
    """Check every obligation at every parameter; ``progress(done, total, result)`` after each task;
    ``opinions``: the cross-check and seed sweep on every query."""
    if cp_max < 1:
        raise ValueError(f"cp_max must be an int >= 1, got {cp_max}")
    groups: dict[tuple[str, int], list[str]] = {}
    for o in obligations:
        for p in o.parameters(cp_max):
            groups.setdefault((o.over, p), []).append(o.name)
    # Big parameters first: the slowest tasks start early and the pool ends evenly.
    tasks = sorted(
        ((tuple(names), p, opinions) for (_, p), names in groups.items()), key=lambda t: (-t[1], t[0])
    )
    total = sum(len(names) for names, _, _ in tasks)
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
