"""Theorems about spec/arith.py, for a symbolic divisor (every divisor at once)."""

from __future__ import annotations

from collections.abc import Callable

import z3

from cpgraph.spec.logic import And
from cpgraph.proofs.engine.obligation import Query
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
            And(first.quotient == second.quotient, first.remainder == second.remainder),
            (first.holds, second.holds),  # S >= 1 follows from 0 <= m < S
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
            And(aligned.value >= value, aligned.value < value + size, aligned.value == size * times),
            (value >= 0, aligned.holds, times == aligned.value / size),  # A >= 1 follows from aligned.holds
        ),
    )


def folded_literals_equal_their_terms(cp_size: int, *, align: AlignUp = align_up) -> tuple[Query, ...]:
    """Every builder that folds concrete inputs to numerals (divmod, floor, ceil, align_up, max, add, sub,
    mul, and each strategy's per-request loads) gives the value its symbolic term takes on the same
    inputs, so the spec evaluated on concrete inputs (the conformance harness, the class encoding's
    per-class loads) is the spec that is proved. Checked at the edges of every clause: L in {0, 1, P-1, P,
    P+1, 2P-1, 2P, 2P+1, 3P+1, 4P-1, 4P} and A in {P, 2P}."""
    from cpgraph.spec.arith import ceil_div, floor_div, max_of
    from cpgraph.proofs.theorems.strategies import same_builder_groups
    from cpgraph.spec.strategies import STRATEGIES, rank_loads
    from cpgraph.spec.terms import add, mul, sub

    p = cp_size
    x, y = z3.Int("x"), z3.Int("y")
    queries: list[Query] = []
    # Each strategy's symbolic terms are built once (a builder two rows share: once) and compared with the
    # folded terms at every value.
    symbolic = [(sid, rank_loads((x,), p, f"sym{sid}", sid)) for sid, *_ in same_builder_groups(tuple(STRATEGIES))]
    for value in sorted({0, 1, p - 1, p, p + 1, 2 * p - 1, 2 * p, 2 * p + 1, 3 * p + 1, 4 * p - 1, 4 * p}):
        # The divisions, one query per divisor, labelled with it ("L=5, A=8"), so the coverage scope sees each A.
        for a in sorted({p, 2 * p}):
            divided: list[z3.BoolRef] = []
            divided_facts: list[z3.BoolRef] = [x == value]
            for build in (floor_div, ceil_div, align):
                folded, term = build(value, a, "lit"), build(x, a, f"sym{a}{getattr(build, '__name__', 'align')}")
                divided.append(term.value == folded.value)
                divided_facts.append(term.holds)
            split, term_split = divmod_by(value, a, "lit"), divmod_by(x, a, f"symdm{a}")
            divided += [term_split.quotient == split.quotient, term_split.remainder == split.remainder]
            divided_facts.append(term_split.holds)
            queries.append(Query(f"L={value}, A={a}", And(divided), tuple(divided_facts)))
        same: list[z3.BoolRef] = []
        facts: list[z3.BoolRef] = [x == value, y == value + 1]
        top, term_top = max_of((z3.IntVal(value), z3.IntVal(value + 1)), "lit"), max_of((x, y), "symmax")
        same += [term_top.value == top.value, add(value, p) == x + p, sub(value, p) == x - p, mul(value, p) == x * p]
        facts.append(term_top.holds)
        for sid, term_loads in symbolic:
            folded_loads = rank_loads((value,), p, "lit", sid)
            same += [t == f for t, f in zip(term_loads.loads, folded_loads.loads)]
            facts.append(term_loads.holds)
        queries.append(Query(f"L={value}", And(same), tuple(facts)))
    return tuple(queries)
