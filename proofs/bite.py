"""One bite of the teeth pass: a check that must keep its verdict (a wrong variant refuted, a hypothesis
satisfiable at its edge, a guard raising past it), and the verdict it got."""

from __future__ import annotations

from dataclasses import dataclass


from cpgraph.proofs.check import Status
from cpgraph.proofs.run import run_queries
from cpgraph.proofs.variants import Variant


@dataclass(frozen=True)
class Bite:
    """One variant of one theorem: the verdict it must get and the one it got."""

    theorem: str
    variant: str
    description: str
    parameter: int
    expected: Status
    got: Status

    @property
    def ok(self) -> bool:
        return self.got is self.expected


def bite(variant: Variant) -> Bite:
    """Run one variant (only the verdict matters: no model, no counterexample minimisation)."""
    result = run_queries(variant.theorem, variant.parameter, variant.build(variant.parameter), "variant", verdict_only=True)
    got = Status.PROVED if result.failure is None else result.failure.verdict.status
    return Bite(variant.theorem, variant.name, variant.description, variant.parameter, variant.expected, got)
