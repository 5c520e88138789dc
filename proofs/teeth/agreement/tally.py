"""The agreement stage's bookkeeping (proofs/teeth/agreement/stage.py, proofs/teeth/agreement/forms.py): comparisons counted
per function, each disagreement kept with paste-able inputs, and the spec's values read without a crash
escaping (a contradiction or an exception is the spec's answer, and so a disagreement)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import z3

from cpgraph.spec.logic import And
from cpgraph.proofs.engine.evaluate import SpecEvaluationError, values_of
from cpgraph.spec.terms import BoolTerm, IntTerm

BIG = 2**40  # a length or count past any sampled size


@dataclass(frozen=True)
class Disagreement:
    """One function on one input where the spec's value is not the reference's."""

    function: str
    inputs: str  # paste-able: the call with its arguments, lists by reference.lists.compact
    cp_size: int
    expected: object  # the reference's value
    actual: object  # the spec's value


@dataclass(frozen=True)
class Outcome:
    """One family's comparisons: how many per function, and every disagreement."""

    checked: dict[str, int]
    disagreements: tuple[Disagreement, ...]


class Tally:
    """Counts comparisons per function and keeps the disagreements."""

    def __init__(self) -> None:
        self.checked: dict[str, int] = {}
        self.found: list[Disagreement] = []

    def compare(self, function: str, inputs: Callable[[], str], cp_size: int, expected: object, actual: object) -> None:
        self.checked[function] = self.checked.get(function, 0) + 1
        if expected != actual or type(expected) is not type(actual):
            self.found.append(Disagreement(function, inputs(), cp_size, expected, actual))

    def outcome(self) -> Outcome:
        return Outcome(dict(self.checked), tuple(self.found))


def spec_values(terms: Sequence[IntTerm | BoolTerm], facts: Sequence[BoolTerm]) -> tuple[int | bool, ...] | str:
    """The spec's values of ``terms`` (or why they have none: a contradiction or a crash is a disagreement)."""
    try:
        return values_of(terms, And(*facts) if facts else z3.BoolVal(True))
    except (SpecEvaluationError, ValueError, TypeError, z3.Z3Exception) as exc:
        return f"spec raised {type(exc).__name__}: {str(exc)[:200]}"


def merged(parts: Sequence[Outcome]) -> Outcome:
    """Several outcomes as one family's: the counts per function and every disagreement."""
    checked: dict[str, int] = {}
    for part in parts:
        checked.update(part.checked)
    return Outcome(checked, tuple(d for part in parts for d in part.disagreements))
