"""cpgraph.proofs.check: three verdicts, deterministic resource limits, unknown carries its reason."""

import pytest
import z3

from cpgraph.proofs.check import Status, check


def test_a_valid_claim_is_proved() -> None:
    x = z3.Int("x")
    assert check(x * x >= 0).status is Status.PROVED


def test_a_false_claim_is_refuted_with_a_model_of_every_named_variable() -> None:
    x, y = z3.Ints("x y")
    verdict = check(x + y > 2, hypotheses=[x >= 0, y == x])
    assert verdict.status is Status.REFUTED
    assert set(verdict.model) == {"x", "y"} and verdict.model["x"] + verdict.model["y"] <= 2


def test_check_false_under_satisfiable_hypotheses_is_refuted_with_a_witness() -> None:
    x = z3.Int("x")
    verdict = check(False, hypotheses=[x > 5, x < 7])
    assert verdict.status is Status.REFUTED and verdict.model == {"x": 6}


def test_check_false_under_contradictory_hypotheses_is_proved_so_vacuity_is_visible() -> None:
    x = z3.Int("x")
    assert check(False, hypotheses=[x > 5, x < 5]).status is Status.PROVED


def test_an_exhausted_resource_limit_is_unknown_with_the_reason() -> None:
    x, y, z = z3.Ints("x y z")
    hard = z3.Implies(z3.And(x > 1, y > 1, z > 1), x * x * x + y * y * y != z * z * z)
    verdict = check(hard, rlimit=2_000)
    assert verdict.status is Status.UNKNOWN and not verdict.proved
    assert "rlimit=2000" in verdict.reason


def test_the_same_query_gets_the_same_verdict_and_model_every_time() -> None:
    x, y = z3.Ints("x y")
    verdicts = {tuple(sorted(check(x + 2 * y != 7, hypotheses=[x > 0, y > 0]).model.items())) for _ in range(3)}
    assert len(verdicts) == 1


def test_a_non_positive_rlimit_is_rejected_naming_it() -> None:
    with pytest.raises(ValueError, match="rlimit must be"):
        check(True, rlimit=0)
