"""cpgraph.spec.arith and spec.terms: explicit quotient/remainder, ceil/floor/align_up, max, folding of literals."""

import pytest
import z3
from hypothesis import given
from hypothesis import strategies as st

from cpgraph.proofs.engine.check import Status, check
from cpgraph.proofs.engine.evaluate import value_of
from cpgraph.spec.arith import align_up, ceil_div, divmod_by, floor_div, max_of
from cpgraph.spec.terms import Loads, literal, literals


def test_divmod_by_folds_two_literals_to_numerals() -> None:
    split = divmod_by(17, 8, "x")
    assert (literal(split.quotient), literal(split.remainder)) == (2, 1)
    assert z3.is_true(split.holds)


def test_divmod_by_introduces_named_quotient_and_remainder() -> None:
    split = divmod_by(z3.Int("L"), 8, "blocks")
    assert str(split.quotient) == "blocks.q" and str(split.remainder) == "blocks.m"
    witness = check(False, hypotheses=[split.holds, z3.Int("L") == 29])  # refuted: a model of the facts
    assert witness.status is Status.REFUTED
    assert witness.model["blocks.q"] == 3 and witness.model["blocks.m"] == 5


@pytest.mark.parametrize("divisor", [0, -3])
def test_divmod_by_rejects_a_non_positive_divisor_naming_it(divisor: int) -> None:
    with pytest.raises(ValueError, match="divisor must be"):
        divmod_by(z3.Int("L"), divisor, "x")


@given(st.integers(-10_000, 10_000), st.integers(1, 300))
def test_symbolic_floor_ceil_and_align_up_evaluate_like_python(value: int, divisor: int) -> None:
    v = z3.Int("v")
    pin = v == value
    assert value_of(floor_div(v, divisor, "f").value, z3.And(pin, floor_div(v, divisor, "f").holds)) == value // divisor
    up = ceil_div(v, divisor, "c")
    assert value_of(up.value, z3.And(pin, up.holds)) == -(-value // divisor)
    if value >= 0:
        aligned = align_up(v, divisor, "a")
        assert value_of(aligned.value, z3.And(pin, aligned.holds)) == -(-value // divisor) * divisor


def test_max_of_is_a_fresh_variable_bounded_by_and_equal_to_one_value() -> None:
    xs = tuple(z3.Int(f"x{i}") for i in range(3))
    top = max_of(xs, "m")
    facts = z3.And(top.holds, xs[0] == 4, xs[1] == 9, xs[2] == -1)
    assert value_of(top.value, facts) == 9
    assert literal(max_of((z3.IntVal(3), z3.IntVal(7)), "m").value) == 7


def test_max_of_rejects_no_values() -> None:
    with pytest.raises(ValueError, match="at least one"):
        max_of((), "m")


def test_loads_plus_rejects_a_different_rank_count() -> None:
    a = Loads((z3.IntVal(1), z3.IntVal(2)), z3.BoolVal(True))
    with pytest.raises(ValueError, match="cp_size=2"):
        a.plus(Loads((z3.IntVal(1),), z3.BoolVal(True)))


def test_loads_refuse_no_ranks_and_literals_fold_all_or_none() -> None:
    with pytest.raises(ValueError, match="loads must hold one term per rank"):
        Loads((), z3.BoolVal(True))
    assert literals(3, z3.IntVal(4)) == (3, 4)
    assert literals(3, z3.Int("x")) is None and literals(z3.Int("x"), 3) is None


def test_a_value_no_reader_may_observe_is_free() -> None:
    """The capacity of a bucket with no recorded capacity and the bucket of an eager decision are free
    variables: a proof over them holds for every value they could take."""
    from cpgraph.spec.selection import NO_SELECTION, concrete_capture_list

    capture = concrete_capture_list((8, 16), {8: 4})
    assert [literal(c) for c in capture.capacities] == [4, None]
    assert z3.is_false(z3.simplify(capture.recorded[1])) and literal(NO_SELECTION.bucket) is None


def test_divmod_by_refuses_a_divisor_below_one_even_for_a_symbolic_dividend() -> None:
    import pytest

    with pytest.raises(ValueError, match="divisor must be a positive int or a z3 term, got 0"):
        divmod_by(z3.Int("L"), 0, "x")
    with pytest.raises(ValueError, match="got -2"):
        divmod_by(z3.Int("L"), -2, "x")
    assert literal(divmod_by(7, 1, "x").quotient) == 7
