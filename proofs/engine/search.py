"""Least models for the design review: satisfiability and lexicographic minimisation, through proofs/engine/check.py.

Every solver call goes through ``cpgraph.proofs.engine.check.check`` (the one place that runs a solver): a set
of facts is satisfiable iff ``check(False, hypotheses=facts)`` is refuted, and the refuting model is the
satisfying assignment. Minimisation is iterative tightening: take a model, then bisect each objective
between its known floor and the model's value, one satisfiability query per step, objectives in order
(fewest requests, then fewest tokens). Limits are z3's deterministic rlimit per query; an ``unknown``
anywhere makes the whole answer unknown (never read as "none").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import z3

from cpgraph.proofs.engine.check import Status, Value, check
from cpgraph.spec.terms import BoolTerm, IntTerm

DESIGN_RLIMIT = 150_000_000  # z3 resource units per query (deterministic): a few seconds on the hardest padded queries seen


@dataclass(frozen=True)
class Found:
    """``status``: found (``model`` set) | none (the facts are unsatisfiable) | unknown (``reason``)."""

    status: str
    model: Mapping[str, Value] = field(default_factory=dict)
    reason: str = ""
    queries: int = 0


def _objective_name(index: int) -> str:
    return f"objective.{index}"


def satisfy(facts: Sequence[BoolTerm], *, rlimit: int | None = None) -> Found:
    """A model of ``facts`` (found), proof there is none (none), or unknown with the solver's reason
    (``rlimit`` None: DESIGN_RLIMIT, read at call time)."""
    verdict = check(False, hypotheses=list(facts), rlimit=DESIGN_RLIMIT if rlimit is None else rlimit)
    if verdict.status is Status.REFUTED:
        return Found("found", verdict.model, queries=1)
    if verdict.status is Status.PROVED:
        return Found("none", queries=1)
    return Found("unknown", reason=verdict.reason, queries=1)


def least(
    facts: Sequence[BoolTerm],
    objectives: Sequence[tuple[IntTerm, int]],
    *,
    rlimit: int | None = None,
) -> Found:
    """A model of ``facts`` minimising ``objectives`` lexicographically; each objective comes with a floor
    it can never go below (a proved lower bound, e.g. 1 request). The model names each objective's value
    ``objective.i``."""
    named = [z3.Int(_objective_name(i)) == term for i, (term, _) in enumerate(objectives)]
    base = list(facts) + named
    first = satisfy(base, rlimit=rlimit)
    if first.status != "found":
        return first
    model, queries = first.model, 1
    for i, (_, floor) in enumerate(objectives):
        var = z3.Int(_objective_name(i))
        best = int(model[_objective_name(i)])
        low = floor
        while low < best:
            mid = (low + best) // 2
            step = satisfy(base + [var <= mid], rlimit=rlimit)
            queries += 1
            if step.status == "unknown":
                return Found("unknown", reason=f"minimising objective {i}: {step.reason}", queries=queries)
            if step.status == "found":
                model, best = step.model, int(step.model[_objective_name(i)])
            else:
                low = mid + 1
        base.append(var == best)
    return Found("found", model, queries=queries)


def value(model: Mapping[str, Value], name: str, default: int = 0) -> int:
    """An integer the model assigns (``default`` for a variable the solver left unconstrained)."""
    got = model.get(name, default)
    if isinstance(got, bool):
        raise TypeError(f"model value {name!r} is a bool, not an int")
    return int(got)
