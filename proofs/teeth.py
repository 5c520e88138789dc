"""Teeth: a theorem counts as proved only if its deliberately wrong variants still get their verdicts.

A theorem whose statement has been weakened (a dropped conjunct, a loosened bound, a claim that holds by
construction) still proves; what gives it away is that the wrong formulas it used to refute now prove
too. ``cpgraph prove`` therefore runs, after the proofs, every variant of proofs/variants.py for the
theorems it checked, and fails (exit 1) when one gets the wrong verdict: that theorem has lost its
teeth. Variants run at their own small parameter; the whole pass takes a few seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from cpgraph.proofs.check import Status
from cpgraph.proofs.run import run_queries
from cpgraph.proofs.variants import VARIANTS, Variant


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
    """Run one variant (no counterexample minimisation: only the verdict matters)."""
    result = run_queries(variant.theorem, variant.parameter, variant.build(variant.parameter), "variant", shrink=False)
    got = Status.PROVED if result.failure is None else result.failure.verdict.status
    return Bite(variant.theorem, variant.name, variant.description, variant.parameter, variant.expected, got)


def teeth(theorems: Iterable[str]) -> tuple[tuple[Bite, ...], float]:
    """Every variant of ``theorems``, with the seconds it took."""
    wanted = set(theorems)
    start = time.perf_counter()
    bites = tuple(bite(v) for v in VARIANTS if v.theorem in wanted)
    return bites, time.perf_counter() - start


def toothless(bites: Iterable[Bite]) -> tuple[Bite, ...]:
    """The variants that got the wrong verdict (a refuted variant that now proves, or the reverse)."""
    return tuple(b for b in bites if not b.ok)
