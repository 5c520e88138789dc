"""The result of a check: one Violation per broken invariant, rendered as <= 15 lines of text or JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cpgraph.check.batch import Batch
from cpgraph.check.invariants import CLAIMS, SAFETY, Spec
from cpgraph.check.protocol import RankAnswer

MAX_LINES = 15


@dataclass(frozen=True)
class Violation:
    """The minimised counterexample of one invariant: the batch, every rank's answers, the spec's verdict."""

    invariant: str
    batch: Batch
    answers: tuple[RankAnswer, ...]
    spec: Spec
    why: str
    phase: str
    found_after: int  # batches checked when it was first seen
    original: Batch  # the batch as first found, before minimising

    @property
    def detail(self) -> str:
        return self.why

    def text(self) -> str:
        """At most 15 lines: the invariant, the batch, what each rank answered, what the spec requires."""
        kind = "safety" if self.invariant in SAFETY else "efficiency"
        b = self.batch
        lines = [
            f"{self.invariant} violated ({kind}: {CLAIMS[self.invariant]})",
            f"  batch: cp_size={b.cp_size} align_size={b.align_size} num_tokens={b.num_tokens} "
            f"extend_seq_lens={list(b.extend_seq_lens)} max_padding_factor={b.max_padding_factor}",
            f"  capture_num_tokens={list(b.capture_num_tokens)} bucket_local_tokens="
            + "{" + ", ".join(f"{k}: {v}" for k, v in b.bucket_local_tokens) + "}"
            + f" ({b.table}; absent: {[k for k in b.capture_num_tokens if k not in b.capacities] or 'none'})",
        ]
        groups: list[tuple[list[int], str]] = []
        for a in self.answers:
            said = a.describe()
            if groups and groups[-1][1] == said:
                groups[-1][0].append(a.rank)
            else:
                groups.append(([a.rank], said))
        room = MAX_LINES - len(lines) - 3
        shown = groups if len(groups) <= room else groups[: room - 1]
        for ranks, said in shown:
            who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks[0]}-{ranks[-1]}"
            lines.append(f"  {who}: {said}")
        if len(shown) < len(groups):
            lines.append(f"  ... and {len(groups) - len(shown)} more groups of ranks answering differently")
        lines.append("  " + self.spec.describe(b))
        lines.append(f"  why: {self.why}")
        if self.original != self.batch:
            lines.append(
                f"  (minimised from {len(self.original.extend_seq_lens)} requests, {self.original.num_tokens} tokens, "
                f"cp_size={self.original.cp_size}; found after {self.found_after} batches, {self.phase})"
            )
        return "\n".join(lines[:MAX_LINES])

    def to_json(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "counterexample": self.batch.to_json(), "detail": self.why}


@dataclass(frozen=True)
class CheckReport:
    """Outcome of ``check_policy``: ``ok`` iff no checked invariant was broken within the budget."""

    policy: str
    violations: tuple[Violation, ...]
    cases: int
    seconds: float
    checked: tuple[str, ...]
    phases: tuple[tuple[str, int], ...]  # batches checked per input phase
    stopped: str  # why the search ended: 'budget', 'all violated', 'grace after violation', 'exhausted'

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def invariants(self) -> tuple[str, ...]:
        return tuple(v.invariant for v in self.violations)

    @property
    def rate_per_minute(self) -> float:
        return self.cases / self.seconds * 60.0 if self.seconds > 0 else 0.0

    def violation(self, invariant: str) -> Violation | None:
        return next((v for v in self.violations if v.invariant == invariant), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "violations": [v.to_json() for v in self.violations],
            "cases": self.cases,
            "seconds": round(self.seconds, 3),
        }

    def json(self) -> str:
        return json.dumps(self.to_json())

    def text(self) -> str:
        head = (
            f"cpgraph check {self.policy}: {'OK' if self.ok else 'FAILED'} - {self.cases} batches in "
            f"{self.seconds:.1f} s ({self.rate_per_minute:,.0f}/min; stopped: {self.stopped}); "
            f"checked {', '.join(self.checked)}"
        )
        if self.ok:
            return head
        return "\n\n".join([head] + [v.text() for v in self.violations])
