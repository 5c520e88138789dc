"""Integer division with an explicit quotient and remainder, and the floor, ceil and align_up built on it.

Encoding: L = S*q + m with 0 <= m < S, q and m fresh variables.

Every builder takes a ``name``; the fresh variables it introduces are named ``{name}.q`` and ``{name}.m``,
so a model reads back with stable names. Callers keep names unique within one query. With a Python-int
divisor the facts are linear (decidable); a symbolic divisor makes them nonlinear.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from cpgraph.spec.logic import And, Or
from cpgraph.spec.terms import BoolTerm, Defined, IntLike, IntTerm, int_term, literal, mul


@dataclass(frozen=True)
class DivMod:
    """``dividend = divisor * quotient + remainder`` with ``0 <= remainder < divisor`` (when ``holds``)."""

    dividend: IntTerm
    divisor: IntTerm
    quotient: IntTerm
    remainder: IntTerm
    holds: BoolTerm


def divmod_by(dividend: IntLike, divisor: IntLike, name: str) -> DivMod:
    """Floor division of ``dividend`` by a positive ``divisor`` as an explicit quotient and remainder.

    Two literals (Python ints or z3 numerals) fold to numerals (no variables, facts true). The divisor must be positive: a Python int < 1 raises
    ValueError; a symbolic divisor's positivity is the caller's hypothesis.
    """
    if isinstance(divisor, int) and not isinstance(divisor, bool) and divisor < 1:
        raise ValueError(f"divisor must be a positive int or a z3 term, got {divisor}")
    a, b = literal(dividend), literal(divisor)
    if a is not None and b is not None:
        if b < 1:
            raise ValueError(f"divisor must be positive, got {b}")
        q, m = divmod(a, b)
        return DivMod(z3.IntVal(a), z3.IntVal(b), z3.IntVal(q), z3.IntVal(m), z3.BoolVal(True))
    n, d = int_term(dividend), int_term(divisor)
    q, m = z3.Int(f"{name}.q"), z3.Int(f"{name}.m")
    return DivMod(n, d, q, m, And(n == d * q + m, m >= 0, m < d))


def floor_div(value: IntLike, divisor: IntLike, name: str) -> Defined:
    """floor(value / divisor)."""
    split = divmod_by(value, divisor, name)
    return Defined(split.quotient, split.holds)


def ceil_div(value: IntLike, divisor: IntLike, name: str) -> Defined:
    """ceil(value / divisor) = floor((value + divisor - 1) / divisor)."""
    v, d = literal(value), literal(divisor)
    dividend = v + d - 1 if v is not None and d is not None else int_term(value) + int_term(divisor) - 1
    split = divmod_by(dividend, divisor, name)
    return Defined(split.quotient, split.holds)


def align_up(value: IntLike, align_size: IntLike, name: str) -> Defined:
    """The smallest multiple of ``align_size`` that is >= ``value``: align_size * ceil(value / align_size)."""
    up = ceil_div(value, align_size, name)
    return Defined(mul(align_size, up.value), up.holds)


def max_of(values: tuple[IntTerm, ...], name: str) -> Defined:
    """The largest of ``values`` as a fresh variable: >= each, equal to one (no nested If chain)."""
    if not values:
        raise ValueError(f"values must hold at least one term, got an empty tuple (name={name!r})")
    literals = [literal(v) for v in values]
    if all(x is not None for x in literals):
        return Defined(z3.IntVal(max(x for x in literals if x is not None)), z3.BoolVal(True))
    top = z3.Int(f"{name}.max")
    return Defined(top, And(And([top >= v for v in values]), Or([top == v for v in values])))
