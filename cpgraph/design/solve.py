"""Solver edge for design proofs: prove a claim, or find a model minimising/maximising objectives.

Verdicts follow proofs/check.py: proved, refuted (with a model), unknown (with the solver's reason);
unknown is never read as proved. Design queries are long If-chains over the capture list; simplifying
and eliminating the defining equations first (simplify, solve-eqs) makes them ~30x faster than z3's
default solver, so this module builds its solvers from that tactic. Optimisation gallops then bisects on
one objective at a time (lexicographic), each step a plain satisfiability check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import z3

# Deterministic resource units (z3 rlimit), not wall-clock: the same query gets the same verdict on
# a loaded CI machine. About 20M units is a few seconds of solving here.
DEFAULT_RLIMIT = 20_000_000


@dataclass(frozen=True)
class Verdict:
    """``status`` is proved | refuted | unknown; ``model`` is set when refuted."""

    status: str
    model: Any = None  # z3.ModelRef (z3 ships no stubs)
    reason: str = ""


def _solver(rlimit: int) -> Any:
    solver = z3.Then("simplify", "solve-eqs", "smt").solver()
    solver.set("rlimit", rlimit)
    return solver


def prove(facts: Sequence[z3.BoolRef], claim: z3.BoolRef, *, rlimit: int = DEFAULT_RLIMIT) -> Verdict:
    """Is ``claim`` true in every model of ``facts``?"""
    solver = _solver(rlimit)
    solver.add(*facts, z3.Not(claim))
    result = solver.check()
    if result == z3.unsat:
        return Verdict("proved")
    if result == z3.sat:
        return Verdict("refuted", solver.model())
    return Verdict("unknown", reason=solver.reason_unknown())


def _optimize(
    facts: z3.BoolRef, objectives: Sequence[tuple[z3.ArithRef, bool]], rlimit: int
) -> Verdict:
    solver = _solver(rlimit)
    solver.add(facts)
    result = solver.check()
    if result != z3.sat:
        return Verdict("proved") if result == z3.unsat else Verdict("unknown", reason=solver.reason_unknown())
    model = solver.model()
    for term, lowest in objectives:
        # Gallop away from the current best until a bound is infeasible, then bisect the bracket.
        # ``best`` is always attained by ``model``; values strictly beyond ``limit`` are infeasible.
        best = int_value(model, term)
        sign = 1 if lowest else -1
        gap, limit = 1, None
        while limit is None or abs(best - limit) > 1:
            target = best - sign * gap if limit is None else (best + limit) // 2 if lowest else -((-best - limit) // 2)
            solver.push()
            solver.add(term <= target if lowest else term >= target)
            result = solver.check()
            if result == z3.sat:
                model = solver.model()
                best = int_value(model, term)
                if limit is None:
                    gap *= 2
            elif result == z3.unsat:
                limit = target
            else:
                solver.pop()
                return Verdict("unknown", reason=solver.reason_unknown())
            solver.pop()
        solver.add(term == best)
    return Verdict("refuted", model)


def minimize(
    facts: z3.BoolRef, objectives: Sequence[z3.ArithRef], *, rlimit: int = DEFAULT_RLIMIT
) -> Verdict:
    """A model of ``facts`` minimising ``objectives`` lexicographically (refuted = found, proved = none)."""
    return _optimize(facts, [(o, True) for o in objectives], rlimit)


def maximize(facts: z3.BoolRef, objective: z3.ArithRef, *, rlimit: int = DEFAULT_RLIMIT) -> Verdict:
    """A model of ``facts`` maximising ``objective`` (which must be bounded above)."""
    return _optimize(facts, [(objective, False)], rlimit)


def int_value(model: Any, term: z3.ArithRef) -> int:
    """The model's value of an integer term (unconstrained terms read as 0)."""
    value = model.eval(term, model_completion=True)
    return int(value.as_long())
