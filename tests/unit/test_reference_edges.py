"""The reference at the edges its other tests did not pin (each test here kills a mutation the harness
found surviving): argument minimums, interleave headroom, zigzag block starts, headroom tightness for every
strategy, the judge's rank-consensus message and the expectation's wording."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cpgraph import reference
from cpgraph.check import make_batch
from cpgraph.reference.judge import expected, judge_answers
from cpgraph.reference.answers import RankAnswer
from cpgraph.reference.layout import zigzag_block_starts
from cpgraph.reference.strategies import STRATEGY_TABLE
from cpgraph.reference.validate import check_capture_list, check_padding_factor


def test_interleave_headroom_is_the_ceil_share_of_the_total() -> None:
    assert reference.headroom_bound(10, cp_size=4, max_requests=3, strategy="interleave") == 3
    assert reference.headroom_bound(12, cp_size=4, max_requests=3, strategy="interleave") == 3
    assert reference.headroom_bound(13, cp_size=4, max_requests=1, strategy="interleave") == 4


@pytest.mark.parametrize("strategy", [s for s, row in STRATEGY_TABLE.items() if row.request_excess is not None])
@pytest.mark.parametrize("cp_size", [2, 3, 4, 8])
def test_the_headroom_bound_is_attained_for_every_strategy_with_an_excess(strategy: str, cp_size: int) -> None:
    # Requests at each strategy's worst remainder make the busiest rank reach floor((N + R*e)/P) exactly:
    # DualChunkSwap's at L mod 2P = 1 once every chunk but the last is full (q >= 2P - 2), dcp's at the
    # longest prefill it copies to every rank, 2P(2P - 2) + 1.
    period = 2 * cp_size
    if strategy == "dual_chunk_swap_dcp":
        lengths = [period * (period - 2) + 1] * 3
    else:
        worst = {"zigzag": cp_size + 1, "contiguous": 1}.get(strategy, 1)
        quotients = (1, 2, 3) if strategy in ("zigzag", "contiguous") else (period - 2, period - 1, period)
        lengths = [period * q + worst for q in quotients]
    n = sum(lengths)
    bound = reference.headroom_bound(n, cp_size=cp_size, max_requests=len(lengths), strategy=strategy)
    assert max(reference.rank_loads(lengths, cp_size=cp_size, strategy=strategy)) == bound


def test_zigzag_block_starts_are_running_sums_of_the_block_lengths() -> None:
    assert reference.zigzag_block_lens(10, cp_size=2) == (3, 3, 2, 2)
    assert zigzag_block_starts(10, cp_size=2) == (0, 3, 6, 8)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: reference.rank_loads([4], cp_size=0), "cp_size must be an int >= 1, got 0"),
        (lambda: reference.build_layout([4], cp_size=2, rows=-1), "rows must be an int >= 0, got -1"),
        (lambda: reference.ReferenceRunner(cp_size=0, capture_num_tokens=[8]), "cp_size must be an int >= 1, got 0"),
        (lambda: check_padding_factor("max_padding_factor", 0), "max_padding_factor must be an int >= 1"),
        (lambda: check_padding_factor("max_padding_factor", Fraction(1, 2)), "must be an int >= 1 or a fractions.Fraction >= 1, got 1/2"),
    ],
)
def test_argument_minimums_are_exact(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]


def test_the_least_allowed_values_are_accepted() -> None:
    assert check_padding_factor("max_padding_factor", 1) == 1
    assert check_padding_factor("max_padding_factor", Fraction(3, 2)) == Fraction(3, 2)
    assert reference.build_layout([4], cp_size=2, rows=2).rows == 2
    assert reference.rank_loads([4], cp_size=1) == (4,)
    with pytest.raises(TypeError, match=r"c\[1\] must be a positive int, got 2.0"):
        check_capture_list("c", [1, 2.0])
    assert check_capture_list("c", [1, 2]) == (1, 2)


def test_a_headroom_capture_rule_defaults_to_one_request() -> None:
    rule = reference.CaptureRule("headroom")
    assert rule.max_requests == 1
    one = rule.capacities([64], cp_size=4, align_size=8)
    assert one == {64: reference.headroom_local_tokens(64, cp_size=4, align_size=8, max_requests=1)}


def _answer(rank: int, admit: bool, bucket: int | None) -> RankAnswer:
    return RankAnswer(rank, admit, None, bucket, None if bucket is not None else "eager", None, None)


def test_rank_consensus_groups_consecutive_ranks_and_shows_at_most_six_groups() -> None:
    batch = make_batch((64,), (64, 128), cp_size=8)
    two = [_answer(r, True, 64) for r in range(4)] + [_answer(r, True, 128) for r in range(4, 8)]
    why = next(f.why for f in judge_answers(batch, two) if f.invariant == "rank_consensus")
    assert "ranks 0-3: admit=True bucket=64" in why and "ranks 4-7: admit=True bucket=128" in why
    alternating = [_answer(r, True, 64 if r % 2 else 128) for r in range(8)]
    why = next(f.why for f in judge_answers(batch, alternating) if f.invariant == "rank_consensus")
    assert why.count("rank ") == 6 and why.endswith("; ...")


def test_the_expectation_says_whether_the_batch_is_cp_active() -> None:
    active = make_batch((1534, 161, 353), (2048, 2304, 2560), cp_size=4)
    inactive = make_batch((3,), (8, 16), cp_size=4)
    assert "not CP-active" not in expected(active).describe(active)
    assert "replay bucket 2304" in expected(active).describe(active)
    assert "not CP-active" in expected(inactive).describe(inactive)
