"""Typed names for z3 terms and the two records every builder returns: a defined value and per-rank loads."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias

import z3

from cpgraph.spec.logic import And, If, Or, Sum

# z3 ships no type stubs; these aliases keep signatures readable (they are Any to mypy).
IntTerm: TypeAlias = z3.ArithRef
BoolTerm: TypeAlias = z3.BoolRef
IntLike: TypeAlias = "int | IntTerm"


def int_term(value: IntLike) -> IntTerm:
    """``value`` as a z3 integer term (Python ints become numerals)."""
    if isinstance(value, bool):
        raise TypeError(f"value must be an int or a z3 integer term, got bool {value!r}")
    return z3.IntVal(value) if isinstance(value, int) else value


def literals(*values: IntLike) -> tuple[int, ...] | None:
    """Every value as a Python int (see ``literal``), or None when any of them is symbolic."""
    folded = [literal(value) for value in values]
    ints = [value for value in folded if value is not None]
    return tuple(ints) if len(ints) == len(folded) else None


def literal(value: IntLike) -> int | None:
    """``value`` as a Python int when it is one or a z3 numeral, else None (a symbolic term).

    Builders fold literals (concrete inputs give numerals, not terms): the conformance harness evaluates the
    spec on concrete inputs, and z3's Python term construction is the slow part there.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, z3.IntNumRef):  # a class check: much cheaper than z3.is_int_value
        return int(value.as_long())
    return None


def check_index(argument: str, value: IntLike, size: int, of: str) -> None:
    """ValueError naming ``argument`` when ``value`` is a literal outside 0..size-1 (``of`` says what it
    indexes). A Python index of -1 would silently read the last entry, and a rank past P is no rank: a wrong
    answer, never an error, unless checked here. A symbolic value is the caller's to bound."""
    v = literal(value)
    if v is not None and not 0 <= v < size:
        raise ValueError(f"{argument} must be an int in 0..{size - 1} ({of}), got {v}")


def add(first: IntLike, second: IntLike) -> IntTerm:
    """first + second, folded to a numeral when both are literals."""
    a, b = literal(first), literal(second)
    if a is not None and b is not None:
        return z3.IntVal(a + b)
    return int_term(first) + int_term(second)


def sub(first: IntLike, second: IntLike) -> IntTerm:
    """first - second, folded to a numeral when both are literals."""
    a, b = literal(first), literal(second)
    if a is not None and b is not None:
        return z3.IntVal(a - b)
    return int_term(first) - int_term(second)


def mul(first: IntLike, second: IntLike) -> IntTerm:
    """first * second, folded to a numeral when both are literals."""
    a, b = literal(first), literal(second)
    if a is not None and b is not None:
        return z3.IntVal(a * b)
    return int_term(first) * int_term(second)


def all_of(facts: Iterable[BoolTerm]) -> BoolTerm:
    """Conjunction of ``facts`` (true when there are none)."""
    items = list(facts)
    return And(items) if items else z3.BoolVal(True)


def any_of(facts: Iterable[BoolTerm]) -> BoolTerm:
    """Disjunction of ``facts`` (false when there are none)."""
    items = list(facts)
    return Or(items) if items else z3.BoolVal(False)


def indicator(fact: BoolTerm | bool) -> IntTerm:
    """[fact]: 1 when ``fact`` holds, else 0 (a Python int for a Python bool, so ladders fold)."""
    if isinstance(fact, bool):
        return 1 if fact else 0
    return If(fact, z3.IntVal(1), z3.IntVal(0))


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

    def __post_init__(self) -> None:
        if not self.loads:
            raise ValueError("loads must hold one term per rank (cp_size >= 1), got none")

    @property
    def cp_size(self) -> int:
        return len(self.loads)

    def total(self) -> IntTerm:
        """The sum of the loads over ranks."""
        return Sum(list(self.loads))

    def plus(self, other: Loads) -> Loads:
        """Rank-wise sum: the loads of two batches laid out one after the other."""
        if other.cp_size != self.cp_size:
            raise ValueError(f"other must have cp_size={self.cp_size} ranks, got {other.cp_size}")
        return Loads(tuple(add(a, b) for a, b in zip(self.loads, other.loads)), And(self.holds, other.holds))
