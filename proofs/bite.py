"""One bite of the teeth pass: a check that must keep its verdict (a wrong variant refuted, a hypothesis
satisfiable at its edge, a guard raising past it), and the verdict it got."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import z3

from cpgraph.proofs.check import Status
from cpgraph.proofs.obligation import Obligation, Query
from cpgraph.proofs.registry import BY_NAME
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


Key = tuple[int, ...]


def _key(query: Query) -> Key | None:
    """The query's terms' ids in this process's main context (z3 shares equal terms: equal ids, equal query);
    None when some term is not a z3 term."""
    ids = [t.get_id() for t in (query.claim, *query.hypotheses) if isinstance(t, z3.ExprRef)]
    return tuple(ids) if len(ids) == 1 + len(query.hypotheses) else None


@functools.lru_cache(maxsize=8)
def _theorem_queries(obligation: Obligation, parameter: int) -> tuple[tuple[Query, ...], frozenset[Key]]:
    """The registered theorem's own queries at ``parameter`` (kept alive, so their ids stay theirs) and their
    keys; cached by the obligation itself, so a replaced registry entry is built afresh."""
    own = obligation.build(parameter)
    return own, frozenset(k for k in map(_key, own) if k is not None)


def split(theorem: str, parameter: int, queries: Sequence[Query]) -> tuple[tuple[Query, ...], tuple[Query, ...]]:
    """``queries`` (a variant of ``theorem`` at ``parameter``) as (changed, shared), each in its order: shared
    are the ones equal to a query of the theorem's own at ``parameter`` (the same terms), changed the rest."""
    _, own = _theorem_queries(BY_NAME[theorem], parameter)
    shared = [_key(q) in own for q in queries]
    return (tuple(q for q, s in zip(queries, shared) if not s), tuple(q for q, s in zip(queries, shared) if s))


def changed_first(theorem: str, parameter: int, queries: Sequence[Query]) -> tuple[Query, ...]:
    """``queries`` with those the variant changed first (``split``): a variant that must be refuted is refuted
    by one of them, since the shared ones are the theorem's own, which the proofs prove."""
    changed, shared = split(theorem, parameter, queries)
    return (*changed, *shared)


def bite(variant: Variant) -> Bite:
    """Run one variant (only the verdict matters: no model, no counterexample minimisation). A variant that
    must be refuted checks the queries it changed first (``changed_first``): the same verdict when those
    refute, without first proving again the queries it shares with the theorem."""
    queries = variant.build(variant.parameter)
    if variant.expected is Status.REFUTED:
        queries = changed_first(variant.theorem, variant.parameter, queries)
    result = run_queries(variant.theorem, variant.parameter, queries, "variant", verdict_only=True)
    got = Status.PROVED if result.failure is None else result.failure.verdict.status
    return Bite(variant.theorem, variant.name, variant.description, variant.parameter, variant.expected, got)
