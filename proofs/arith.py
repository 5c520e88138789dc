"""Theorems about spec/arith.py, for a symbolic divisor (every divisor at once)."""

from __future__ import annotations

from collections.abc import Callable

import z3

from cpgraph.proofs.obligation import Query
from cpgraph.spec.arith import DivMod, align_up, divmod_by
from cpgraph.spec.terms import Defined, IntLike

DivModBy = Callable[[IntLike, IntLike, str], DivMod]
AlignUp = Callable[[IntLike, IntLike, str], Defined]


def divmod_quotient_and_remainder_are_unique(parameter: int, *, divide: DivModBy = divmod_by) -> tuple[Query, ...]:
    """For every divisor S >= 1 and every integer L, the explicit quotient and remainder (L = S*q + m,
    0 <= m < S) are unique, so every spec term built on them is a function of its inputs."""
    del parameter
    value, divisor = z3.Int("L"), z3.Int("S")
    first, second = divide(value, divisor, "first"), divide(value, divisor, "second")
    return (
        Query(
            "divmod",
            z3.And(first.quotient == second.quotient, first.remainder == second.remainder),
            (divisor >= 1, first.holds, second.holds),
        ),
    )


def align_up_is_least_multiple_at_or_above(parameter: int, *, align: AlignUp = align_up) -> tuple[Query, ...]:
    """For every alignment A >= 1 and value v >= 0, align_up(v, A) is a multiple of A, at least v, and less
    than v + A (the least such multiple)."""
    del parameter
    value, size, times = z3.Int("v"), z3.Int("A"), z3.Int("t")
    aligned = align(value, size, "aligned")
    return (
        Query(
            "align",
            z3.And(aligned.value >= value, aligned.value < value + size, aligned.value == size * times),
            (size >= 1, value >= 0, aligned.holds, times == aligned.value / size),
        ),
    )
