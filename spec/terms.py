"""Typed names for z3 terms and the two records every builder returns: a defined value and per-rank loads."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias

import z3

# z3 ships no type stubs; these aliases keep signatures readable (they are Any to mypy).
IntTerm: TypeAlias = z3.ArithRef
BoolTerm: TypeAlias = z3.BoolRef
IntLike: TypeAlias = "int | IntTerm"


def int_term(value: IntLike) -> IntTerm:
    """``value`` as a z3 integer term (Python ints become numerals)."""
    if isinstance(value, bool):
        raise TypeError(f"value must be an int or a z3 integer term, got bool {value!r}")
    return z3.IntVal(value) if isinstance(value, int) else value


def all_of(facts: Iterable[BoolTerm]) -> BoolTerm:
    """Conjunction of ``facts`` (true when there are none)."""
    items = list(facts)
    return z3.And(items) if items else z3.BoolVal(True)


def any_of(facts: Iterable[BoolTerm]) -> BoolTerm:
    """Disjunction of ``facts`` (false when there are none)."""
    items = list(facts)
    return z3.Or(items) if items else z3.BoolVal(False)


def indicator(fact: BoolTerm) -> IntTerm:
    """[fact]: 1 when ``fact`` holds, else 0."""
    return z3.If(fact, z3.IntVal(1), z3.IntVal(0))


@dataclass(frozen=True)
class Defined:
    """A value term together with the facts that define it (e.g. a fresh quotient's equation)."""

    value: IntTerm
    holds: BoolTerm


@dataclass(frozen=True)
class Loads:
    """Real tokens on each of the P ranks (index = rank), with the facts that define them."""

    loads: tuple[IntTerm, ...]
    holds: BoolTerm

    @property
    def cp_size(self) -> int:
        return len(self.loads)

    def total(self) -> IntTerm:
        """The sum of the loads over ranks."""
        return z3.Sum(list(self.loads)) if self.loads else z3.IntVal(0)

    def plus(self, other: Loads) -> Loads:
        """Rank-wise sum: the loads of two batches laid out one after the other."""
        if other.cp_size != self.cp_size:
            raise ValueError(f"other must have cp_size={self.cp_size} ranks, got {other.cp_size}")
        return Loads(tuple(a + b for a, b in zip(self.loads, other.loads)), z3.And(self.holds, other.holds))
