"""proofs/teeth/needed.py: a bound the other hypotheses imply is a failing bite; a needed one passes, also when it is
needed at another parameter only; a chain's lemmas are not bounds."""

from __future__ import annotations

import pytest
import z3

from cpgraph.proofs.engine.check import Status, one_context
from cpgraph.proofs.teeth.needed import is_bound, needed_bites
from cpgraph.proofs.engine.obligation import Obligation, Query


def _theorem(build: object) -> Obligation:
    return Obligation("toy", "toy scope", "toy", "cp_size", build)  # type: ignore[arg-type]


def _verdicts(obligation: Obligation, parameter: int = 4) -> dict[str, Status]:
    with one_context():
        bites = needed_bites(obligation, parameter, obligation.build(parameter))
    assert all(b.expected is Status.REFUTED for b in bites)
    return {b.variant: b.got for b in bites}


def _divisor(p: int) -> tuple[Query, ...]:
    s, m = z3.Int("S"), z3.Int("m")
    return (Query("divmod", m <= s, (s >= 1, m >= 0, m < s)),)


def test_an_implied_bound_fails_and_names_itself_and_its_part() -> None:
    got = _verdicts(_theorem(_divisor))
    assert got["needed: S >= 1 (divmod)"] is Status.PROVED  # 0 <= m < S implies it: the bite fails
    assert got["needed: m >= 0 (divmod)"] is Status.REFUTED
    assert got["needed: m < S (divmod)"] is Status.REFUTED


def test_a_weakened_copy_of_an_implied_bound_is_still_flagged() -> None:
    def weakened(p: int) -> tuple[Query, ...]:
        s, m = z3.Int("S"), z3.Int("m")
        return (Query("divmod", m <= s, (s >= 0, m >= 0, m < s)),)

    assert _verdicts(_theorem(weakened))["needed: S >= 0 (divmod)"] is Status.PROVED


def test_a_bound_needed_only_at_another_parameter_is_needed() -> None:
    def at_one_only(p: int) -> tuple[Query, ...]:
        x = z3.Int("x")  # x >= 1 is implied by x >= p for p >= 1... except that at p = 1 it is the same bound
        return (Query("q", x >= 0, (x >= 1, x >= p - 1)),)

    # At P = 4, x >= 3 implies x >= 1; at P = 1 and 2 it does not: the bound is needed.
    assert _verdicts(_theorem(at_one_only))["needed: x >= 1 (q)"] is Status.REFUTED


def test_a_bound_needed_in_one_query_is_needed_in_all() -> None:
    def two(p: int) -> tuple[Query, ...]:
        x, y = z3.Int("x"), z3.Int("y")
        bound = x >= 0
        return (Query("a", x >= 1, (bound, x >= 5)), Query("b", x + y >= 0, (bound, y >= 0)))

    assert _verdicts(_theorem(two))["needed: x >= 0 (a)"] is Status.REFUTED


def test_a_chains_lemma_is_not_a_bound_to_check() -> None:
    def chain(p: int) -> tuple[Query, ...]:
        x = z3.Int("x")
        lemma = x >= 1
        return (Query("lemma", lemma, (x >= 2,)), Query("claim", x >= 0, (x >= 2, lemma)))

    got = _verdicts(_theorem(chain))
    assert set(got) == {"needed: x >= 2 (lemma)"}  # the lemma, proved then assumed, is left out
    assert got["needed: x >= 2 (lemma)"] is Status.REFUTED


def test_only_comparisons_of_numbers_are_bounds() -> None:
    x, b = z3.Int("x"), z3.Bool("b")
    assert is_bound(x >= 1) and is_bound(x == 2 * x) and is_bound(x != 3)
    assert not is_bound(z3.And(x >= 1, x <= 3)) and not is_bound(b) and not is_bound(b == z3.BoolVal(True))
    assert not is_bound("x >= 1")


def test_every_registered_theorem_needs_every_bound_it_assumes() -> None:
    from cpgraph.proofs.teeth.coverage import COVERAGE_PARAMETER
    from cpgraph.proofs.registry import BY_NAME

    for name in ("align_up_is_least_multiple_at_or_above", "ranks_sharing_their_capture_state_agree",
                 "dual_chunk_swap_long_requests_split_by_remainder"):
        obligation = BY_NAME[name]
        got = _verdicts(obligation, COVERAGE_PARAMETER[obligation.over])
        assert got and all(v is Status.REFUTED for v in got.values()), (name, got)


def test_two_queries_of_one_part_are_told_apart() -> None:
    # Two chains may share their labels (any capacities, captured capacities): a bound is looked up in its own
    # query, not in the last one of that label.
    def same_label(p: int) -> tuple[Query, ...]:
        x, y = z3.Int("x"), z3.Int("y")
        return (Query("step", x >= 1, (x >= 0, x >= 2)), Query("step", y >= 1, (y >= 2,)))

    got = _verdicts(_theorem(same_label))
    assert got["needed: x >= 0 (step)"] is Status.PROVED  # implied by x >= 2 in its own (the first) query
    assert got["needed: x >= 2 (step)"] is Status.REFUTED and got["needed: y >= 2 (step)"] is Status.REFUTED


def test_prove_exits_1_by_itself_on_an_implied_bound(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses

    from cpgraph.cli import main
    from cpgraph.proofs.registry import BY_NAME

    name = "align_up_is_least_multiple_at_or_above"
    build = BY_NAME[name].build
    # A >= 0 beside the divisor's facts 0 <= m < A: true, so everything still proves; and dead weight.
    planted = dataclasses.replace(BY_NAME[name], build=lambda p: tuple(
        dataclasses.replace(q, hypotheses=(*q.hypotheses, z3.Int("A") >= 0)) for q in build(p)))
    monkeypatch.setitem(BY_NAME, name, planted)
    code = main(["prove", "--only", name, "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"IMPLIED {name}: A >= 0 (align) follows from the query's other hypotheses" in out
    assert "proved, but some theorems lost their teeth" in out
