"""One wrong variant's bite: the variant's queries run for their verdict alone, the ones it changed first.
The record a bite gives (``Bite``: the verdict a check must keep and the one it got) is in
proofs/engine/results.py, beside the proofs' records, since the proof workers' scope witnesses give bites too."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import z3

from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.engine.obligation import Obligation, Query
from cpgraph.proofs.engine.results import Bite
from cpgraph.proofs.registry import BY_NAME
from cpgraph.proofs.run import run_queries
from cpgraph.proofs.teeth.variants.catalogue import Variant


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
