"""One review: the design's invariants and cost, and optionally the old design's invariants and the diff."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from cpgraph.design.diff import Diff, diff_designs
from cpgraph.design.efficiency import Efficiency, efficiency
from cpgraph.design.review import InvariantResult, Lemma, review_invariants
from cpgraph.design.schema import Design


@dataclass(frozen=True)
class Review:
    """Everything ``cpgraph review`` reports for one design (and optionally the design it replaces)."""

    design: Design
    lemmas: tuple[Lemma, ...]
    invariants: tuple[InvariantResult, ...]
    efficiency: Efficiency
    old: tuple[Design, tuple[InvariantResult, ...]] | None = None
    diff: Diff | None = None
    seconds: float = 0.0

    @property
    def unknowns(self) -> tuple[str, ...]:
        """Every part that ended unknown, with why: invariants (of the design and the old one) and diff classes."""
        out = [f"invariant {r.invariant}: {r.note or r.scope}" for r in self.invariants if r.status == "unknown"]
        if self.old is not None:
            out += [
                f"old design {self.old[0].name}: invariant {r.invariant}: {r.note or r.scope}"
                for r in self.old[1]
                if r.status == "unknown"
            ]
        if self.diff is not None:
            out += [f"diff class {c.kind}: {c.note}" for c in self.diff.unknown]
        out += [f"lemma {x.name}: {x.status}" for x in self.lemmas if x.status != "proved"]
        return tuple(out)

    @property
    def exit_code(self) -> int:
        """3: some part is unknown (an invariant, the old design's, a diff class or a lemma: see ``unknowns``);
        else 1: some invariant refuted; else 0: every invariant proved."""
        if self.unknowns:
            return 3
        statuses = {r.status for r in self.invariants}
        if "refuted" in statuses:
            return 1
        return 0 if statuses == {"proved"} else 3


def review(design: Design, *, against: Design | None = None, progress: bool = False) -> Review:
    """Prove the design, cost it, and (with ``against``) review the old design and diff the two."""
    start = time.perf_counter()
    lemmas, results = review_invariants(design, progress=progress)
    if progress:
        print(f"  {design.name}: efficiency ...", file=sys.stderr, flush=True)
    cost = efficiency(design)
    old = None
    changes = None
    if against is not None:
        old = (against, review_invariants(against, progress=progress)[1])
        changes = diff_designs(against, design, progress=progress)
    return Review(design, lemmas, results, cost, old, changes, time.perf_counter() - start)
