"""Needed hypotheses, checked by the teeth pass: no bound a theorem assumes is implied by its other hypotheses.

A bound the other hypotheses already imply (``A >= 1`` beside a divisor's facts ``0 <= m < A``) changes
nothing the theorem says, so a weakened copy of it (``A >= 0``) proves just the same: the theorem cannot
tell its own statement from the mutated one. Such a bound is dead weight; the check makes it a failure, so it
is deleted, and a bound that is kept is one whose loss the solver would notice.

A *bound* is a comparison of arithmetic terms that a query lists on its own among its hypotheses (not
inside a conjunction such as a spec function's ``holds``, and not an earlier lemma of the same chain, which
the chain proves and then assumes on purpose). It is needed when, in some query that assumes it, the other
hypotheses have a model where it fails. It is flagged only if it is implied in every query that assumes it,
at the coverage parameter and at each of the theorem's parameters up to ``RECHECK_MAX`` (matched by the
query's part and the bound's place among its hypotheses): a bound needed only at P = 1 is needed.
"""

from __future__ import annotations

from collections.abc import Sequence

import z3

from cpgraph.proofs.engine.results import Bite
from cpgraph.proofs.engine.check import Status, check
from cpgraph.proofs.engine.obligation import Obligation, Query

RECHECK_MAX = 8  # a bound implied at the coverage parameter is rechecked at the theorem's parameters up to this

_COMPARISONS = (z3.Z3_OP_LE, z3.Z3_OP_GE, z3.Z3_OP_LT, z3.Z3_OP_GT, z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT)

Place = tuple[str, int, int]  # (the query's part, which query of that part, the bound's index among its hypotheses)


def is_bound(term: object) -> bool:
    """A comparison (<=, >=, <, >, ==, !=) between arithmetic terms."""
    return (isinstance(term, z3.BoolRef) and z3.is_app(term) and term.decl().kind() in _COMPARISONS
            and all(z3.is_arith(x) for x in term.children()))


def _implied(query: Query, index: int) -> bool:
    others = (*query.hypotheses[:index], *query.hypotheses[index + 1:])
    verdict = check(query.hypotheses[index], hypotheses=others, rlimit=query.rlimit, pipeline_first=True, model=False)
    return verdict.status is Status.PROVED


def _by_place(queries: Sequence[Query]) -> dict[tuple[str, int], Query]:
    """The queries by (part, which query of that part): two chains may share their labels."""
    seen: dict[str, int] = {}
    out = {}
    for q in queries:
        out[(q.part, seen.get(q.part, 0))] = q
        seen[q.part] = seen.get(q.part, 0) + 1
    return out


def _bounds(queries: Sequence[Query]) -> dict[int, list[Place]]:
    """Every bound the queries assume (by term id, lemmas of their chains left out), and where."""
    claims = {q.claim.get_id() for q in queries if isinstance(q.claim, z3.ExprRef)}  # one context: same term, same id
    out: dict[int, list[Place]] = {}
    for (part, which), q in _by_place(queries).items():
        for i, h in enumerate(q.hypotheses):
            if is_bound(h) and h.get_id() not in claims:
                out.setdefault(h.get_id(), []).append((part, which, i))
    return out


def _implied_everywhere(queries: Sequence[Query], places: Sequence[Place]) -> bool | None:
    """True when the bound is implied at every place it occupies in ``queries``; None when none of the
    places is a bound there (another parameter's queries are built differently)."""
    by_place = _by_place(queries)
    seen = False
    for part, which, i in places:
        q = by_place.get((part, which))
        if q is None or i >= len(q.hypotheses) or not is_bound(q.hypotheses[i]):
            continue
        seen = True
        if not _implied(q, i):
            return False
    return True if seen else None


def needed_bites(obligation: Obligation, parameter: int, queries: Sequence[Query]) -> tuple[Bite, ...]:
    """One Bite per bound of ``queries`` (built at ``parameter``): REFUTED expected (its negation has a model
    under the other hypotheses somewhere), PROVED got when it is implied everywhere it was checked."""
    by_place = _by_place(queries)
    bounds = list(_bounds(queries).values())
    implied = [_implied_everywhere(queries, places) is True for places in bounds]
    # Needed at another parameter (P = 1, a shorter list) is needed: each other parameter built once, and only
    # while some bound is still implied (in a passing run, none is).
    for other in (x for x in obligation.parameters(RECHECK_MAX) if x != parameter and x <= RECHECK_MAX):
        if not any(implied):
            break
        built = obligation.build(other)
        implied = [still and _implied_everywhere(built, places) is not False for still, places in zip(implied, bounds)]
    out = []
    for places, still in zip(bounds, implied):
        part, which, index = places[0]
        text = " ".join(str(by_place[part, which].hypotheses[index]).split())
        out.append(Bite(obligation.name, f"needed: {text} ({part})",
                        "the other hypotheses do not imply it (an implied bound is dead weight: delete it)", parameter,
                        Status.REFUTED, Status.PROVED if still else Status.REFUTED))
    return tuple(out)
