"""Witness search for design proofs: a model minimising objectives (proofs.check.check decides claims).

Verdicts follow proofs/: proved (no model), refuted (a model), unknown (with the solver's reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import z3

DEFAULT_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class Verdict:
    """``status`` is proved | refuted | unknown; ``model`` is set when refuted."""

    status: str
    model: Any = None  # z3.ModelRef (z3 ships no stubs)
    reason: str = ""


def minimize(
    facts: z3.BoolRef, objectives: Sequence[z3.ArithRef], *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> Verdict:
    """A model of ``facts`` minimising ``objectives`` lexicographically (refuted = found, proved = none)."""
    opt = z3.Optimize()
    opt.set("timeout", timeout_ms)
    opt.add(facts)
    for objective in objectives:
        opt.minimize(objective)
    result = opt.check()
    if result == z3.unsat:
        return Verdict("proved")
    if result == z3.sat:
        return Verdict("refuted", opt.model())
    return Verdict("unknown", reason=opt.reason_unknown())


def maximize(facts: z3.BoolRef, objective: z3.ArithRef, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Verdict:
    """A model of ``facts`` maximising ``objective``."""
    opt = z3.Optimize()
    opt.set("timeout", timeout_ms)
    opt.add(facts)
    opt.maximize(objective)
    result = opt.check()
    if result == z3.unsat:
        return Verdict("proved")
    if result == z3.sat:
        return Verdict("refuted", opt.model())
    return Verdict("unknown", reason=opt.reason_unknown())


def int_value(model: Any, term: z3.ArithRef) -> int:
    """The model's value of an integer term (unconstrained terms read as 0)."""
    value = model.eval(term, model_completion=True)
    return int(value.as_long())
