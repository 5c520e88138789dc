"""The one checking helper: a claim under hypotheses gets one of three verdicts.

- proved: the hypotheses and the claim's negation are unsatisfiable;
- refuted: a model of the hypotheses that breaks the claim (every named variable, read back as ints/bools);
- unknown: the solver gave up, with its reason. Unknown is a failure, never a pass.

Limits are z3's deterministic ``rlimit`` (resource units), not wall-clock timeouts, so a verdict does not
depend on machine load. Non-vacuity uses the same helper: ``check(False, hypotheses=h)`` must be refuted,
and the refuting model is a witness that ``h`` is satisfiable.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import z3

from cpgraph.spec.terms import BoolTerm

DEFAULT_RLIMIT = 5_000_000  # the costliest proof here needs ~0.9M units (<0.1 s); a runaway query stops in ~1-4 s

Value = int | bool


class Status(str, enum.Enum):
    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Verdict:
    """The outcome of one ``check``: ``model`` for refuted, ``reason`` for unknown, ``seconds`` of solver time."""

    status: Status
    seconds: float
    model: Mapping[str, Value] = field(default_factory=dict)
    reason: str = ""

    @property
    def proved(self) -> bool:
        return self.status is Status.PROVED


def model_values(model: z3.ModelRef) -> dict[str, Value]:
    """Every constant the model assigns, by name, as a Python int or bool (sorted by name)."""
    out: dict[str, Value] = {}
    for decl in model.decls():
        if decl.arity() != 0:
            continue
        value = model[decl]
        if z3.is_int_value(value):
            out[decl.name()] = value.as_long()
        elif z3.is_true(value) or z3.is_false(value):
            out[decl.name()] = z3.is_true(value)
    return dict(sorted(out.items()))


def check(
    claim: BoolTerm | bool, *, hypotheses: Sequence[BoolTerm] = (), rlimit: int = DEFAULT_RLIMIT
) -> Verdict:
    """Decide ``hypotheses => claim`` for every value of its free variables."""
    if rlimit < 1:
        raise ValueError(f"rlimit must be an int >= 1 (z3 resource units), got {rlimit}")
    solver = z3.Solver()
    solver.set("rlimit", rlimit)
    solver.add(*hypotheses)
    solver.add(z3.Not(z3.BoolVal(claim) if isinstance(claim, bool) else claim))
    start = time.perf_counter()
    result = solver.check()
    seconds = time.perf_counter() - start
    if result == z3.unsat:
        return Verdict(Status.PROVED, seconds)
    if result == z3.sat:
        return Verdict(Status.REFUTED, seconds, model=model_values(solver.model()))
    return Verdict(Status.UNKNOWN, seconds, reason=f"{solver.reason_unknown()} (rlimit={rlimit})")
