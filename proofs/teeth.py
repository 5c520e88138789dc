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

from cpgraph.proofs.bite import Bite as Bite, bite as bite
from cpgraph.proofs.coverage import BOUNDARIES as BOUNDARIES, SCOPES as SCOPES, coverage as coverage, scope_edges as scope_edges
from cpgraph.proofs.guards import guards as guards, induction_base as induction_base
from cpgraph.proofs.registry import BY_NAME
from cpgraph.proofs.variants import VARIANTS


def teeth(theorems: Iterable[str]) -> tuple[tuple[Bite, ...], float]:
    """Every variant of ``theorems``, their coverage (non-vacuity and boundary points) and the spec's domain
    guards, with the seconds it took."""
    wanted = [t for t in dict.fromkeys(theorems)]
    start = time.perf_counter()
    bites = tuple(bite(v) for v in VARIANTS if v.theorem in set(wanted))
    covered = tuple(b for t in wanted if t in BY_NAME for b in coverage(t))
    edges = scope_edges() if any(t in SCOPES and t in BY_NAME and BY_NAME[t].over == "cp_size_sampled" for t in wanted) else ()
    return (*bites, *covered, *edges, *guards(), induction_base()), time.perf_counter() - start


def toothless(bites: Iterable[Bite]) -> tuple[Bite, ...]:
    """The variants that got the wrong verdict (a refuted variant that now proves, or the reverse)."""
    return tuple(b for b in bites if not b.ok)
