"""What a prove run reports: a query that was not proved (``Failure``), one obligation at one parameter value
(``TaskResult``), one obligation over all of them (``ObligationResult``, made by ``summarise``) and one check of
the teeth pass (``Bite``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cpgraph.proofs.engine.check import Status, Value, Verdict
from cpgraph.proofs.engine.obligation import Obligation
from cpgraph.proofs.engine.opinions import Note, NoteKind
from cpgraph.proofs.engine.scope import Witnessed


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
    notes: tuple[Note, ...] = ()
    cross_checked: int = 0  # queries cvc5 proved too
    seed_runs: int = 0  # extra z3 runs under other seeds
    opinion_seconds: float = 0.0  # solver time of the second opinions
    witnesses: tuple[Witnessed, ...] = ()  # the scope's witnesses at this parameter (proofs/engine/witness.py)
    witness_seconds: float = 0.0  # CPU seconds of those checks


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
    parameters: tuple[int, ...] = ()  # every parameter run (cp_size, list length, 0: symbolic)
    witnesses: tuple[tuple[int, tuple[Witnessed, ...]], ...] = ()  # per parameter run with witnesses
    witness_seconds: float = 0.0

    def noted(self, kind: NoteKind) -> tuple[Note, ...]:
        return tuple(n for n in self.notes if n.kind is kind)

    @property
    def trusted(self) -> bool:
        """Proved, no second solver disagrees and no seed changes a verdict (cvc5 giving up is allowed)."""
        return self.status is Status.PROVED and not any(n.fails for n in self.notes)

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
        tuple(r.parameter for r in done),
        tuple((r.parameter, r.witnesses) for r in done if r.witnesses),
        sum(r.witness_seconds for r in done),
    )


@dataclass(frozen=True)
class Bite:
    """One check of the teeth pass (proofs/teeth/): the verdict it must keep and the one it got (a variant of a
    theorem, a hypothesis satisfiable at its edge, a declared scope run and witnessed, a guard raising past it)."""

    theorem: str
    variant: str
    description: str
    parameter: int
    expected: Status
    got: Status

    @property
    def ok(self) -> bool:
        return self.got is self.expected
