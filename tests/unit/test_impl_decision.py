"""impl/decision.py and impl/policy.py: worked examples, boundaries, and every bad-input error."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from cpgraph.impl import decision, policy
from cpgraph.impl.decision import FallbackReason, Selector, plan_batch


def test_worked_example_needs_520_rows_and_picks_2304() -> None:
    lengths = (1534, 161, 353)
    assert decision.max_rank_load(lengths, cp_size=4) == 513
    assert decision.required_local_tokens(lengths, cp_size=4, align_size=8) == 520
    caps = {b: decision.capture_local_tokens(b, cp_size=4, align_size=8) for b in (2048, 2304, 2560)}
    assert caps == {2048: 512, 2304: 576, 2560: 640}
    bucket = decision.select_replay_bucket(
        num_tokens=2048, required_local_tokens=520, capture_num_tokens=(2048, 2304, 2560),
        bucket_local_tokens=caps, max_padding_factor=2,
    )
    assert bucket == 2304


def test_padded_count_folded_into_last_request_needs_more_rows() -> None:
    # The hazard from docs/semantics.md: 256 pad tokens on the last request -> 584 rows, more than 576.
    assert decision.required_local_tokens((1534, 161, 353 + 256), cp_size=4, align_size=8) == 584


@pytest.mark.parametrize("strategy", ["zigzag", "interleave", "contiguous"])
def test_single_request_of_b_tokens_needs_ceil_b_over_p_rows(strategy: str) -> None:
    for p in (1, 2, 3, 4, 8):
        for b in range(1, 200):
            assert decision.max_rank_load((b,), cp_size=p, strategy=strategy) == -(-b // p)


def test_headroom_is_tight_at_lengths_congruent_to_p_plus_one() -> None:
    p, r = 4, 3
    lengths = (2 * p * 5 + p + 1,) * r
    n = sum(lengths)
    assert decision.max_rank_load(lengths, cp_size=p) == (n + r * (p - 1)) // p
    assert decision.headroom_local_tokens(n, cp_size=p, align_size=2 * p, max_requests=r) >= decision.required_local_tokens(
        lengths, cp_size=p, align_size=2 * p
    )


def test_headroom_caps_requests_at_tokens() -> None:
    assert decision.headroom_local_tokens(2, cp_size=4, align_size=1, max_requests=100) == (2 + 2 * 3) // 4


def test_selector_skips_absent_capacity_and_respects_both_window_ends() -> None:
    sel = Selector.build((8, 16, 24, 32), {8: 4, 16: None, 24: 100})
    assert not sel.monotone
    assert sel.select(8, 4, 2) == 8
    assert sel.select(9, 5, 2) is None  # window [9, 18] holds only 16, which has no capacity
    assert sel.select(12, 5, 2) == 24  # F*n = 24 is inclusive
    assert sel.select(13, 101, 2) is None
    assert sel.select(33, 1, 2) is None


def test_monotone_selector_bisects_to_the_same_bucket_as_a_scan() -> None:
    buckets = tuple(range(8, 400, 8))
    caps = {b: decision.capture_local_tokens(b, cp_size=4, align_size=8) for b in buckets}
    sel = Selector.build(buckets, caps)
    assert sel.monotone
    for n in range(1, 420, 3):
        for required in range(0, 120, 7):
            scan = next((b for b in buckets if n <= b <= 2 * n and caps[b] >= required), None)
            assert sel.select(n, required, 2) == scan, (n, required)


def test_plan_reports_reasons_in_order() -> None:
    sel = Selector.build((8, 64, 128), {8: 4, 64: 8, 128: 16})

    def reason(lengths: tuple[int, ...], p: int = 4, n: int | None = None) -> FallbackReason | None:
        return plan_batch(lengths, num_tokens=sum(lengths) if n is None else n, cp_size=p, align_size=2 * p,
                          selector=sel, max_padding_factor=2).fallback

    assert reason((100,), p=1) is FallbackReason.CP_DISABLED
    assert reason((7,)) is FallbackReason.TOO_FEW_TOKENS
    assert reason((7, 30)) is FallbackReason.SHORT_REQUEST
    assert reason((129,)) is FallbackReason.TOO_MANY_TOKENS
    assert reason((20,)) is FallbackReason.NO_BUCKET_WITHIN_PADDING_LIMIT
    assert reason((33, 33)) is FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT
    assert reason((64,)) is None


def test_fallback_reason_values_match_the_reference() -> None:
    from cpgraph import reference

    assert {r.value for r in FallbackReason} == {r.value for r in reference.FallbackReason}


def _batch(**overrides: object) -> dict[str, object]:
    batch: dict[str, object] = dict(
        cp_rank=0, cp_size=4, align_size=8, num_tokens=2048, extend_seq_lens=(1534, 161, 353),
        capture_num_tokens=(2048, 2304, 2560), bucket_local_tokens={2048: 512, 2304: 576, 2560: 640},
        max_padding_factor=2,
    )
    batch.update(overrides)
    return batch


def test_policy_protocol_on_the_worked_example() -> None:
    assert policy.admit(**_batch())  # type: ignore[arg-type]
    assert policy.replay_bucket(**_batch()) == 2304  # type: ignore[arg-type]
    assert policy.local_rows(bucket=2304, **_batch()) == (520,) * 4  # type: ignore[arg-type]
    refused = _batch(capture_num_tokens=(2048,), bucket_local_tokens={2048: 512})
    assert not policy.admit(**refused)  # type: ignore[arg-type]
    with pytest.raises(LookupError, match="no_capacity_within_padding_limit"):
        policy.replay_bucket(**refused)  # type: ignore[arg-type]


BAD_LENGTHS = [
    ((), ValueError, "empty batch"),
    ("abc", TypeError, "sequence of ints"),
    (5, TypeError, "sequence of ints"),
    ((4, -1), ValueError, r"extend_seq_lens\[1\] must be an int >= 0, got -1"),
    ((4, True), TypeError, r"extend_seq_lens\[1\] must be an int >= 0, got True \(bool\)"),
    ((4, 2.0), TypeError, r"extend_seq_lens\[1\] must be an int >= 0, got 2.0 \(float\)"),
]


@pytest.mark.parametrize(("lengths", "error", "message"), BAD_LENGTHS)
def test_required_local_tokens_rejects_bad_lengths(lengths: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        decision.required_local_tokens(lengths, cp_size=4, align_size=8)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(cp_size=0, align_size=8), ValueError, "cp_size must be an int >= 1, got 0"),
        (dict(cp_size=2.0, align_size=8), TypeError, r"cp_size must be an int >= 1, got 2.0 \(float\)"),
        (dict(cp_size=4, align_size=0), ValueError, "align_size must be an int >= 1, got 0"),
        (dict(cp_size=4, align_size=None), TypeError, "align_size must be an int >= 1, got None"),
        (dict(cp_size=4, align_size=8, strategy="ring"), ValueError, "strategy must be one of zigzag"),
    ],
)
def test_required_local_tokens_rejects_bad_scalars(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        decision.required_local_tokens((10, 20), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(capture_num_tokens=()), ValueError, "non-empty sorted"),
        (dict(capture_num_tokens=(64, 32)), ValueError, "sorted ascending; 64 comes before 32"),
        (dict(capture_num_tokens=(32, 32)), ValueError, "must not repeat a bucket; 32 appears twice"),
        (dict(capture_num_tokens=(0, 32)), ValueError, "must be a positive int, got 0"),
        (dict(capture_num_tokens="32"), TypeError, "sorted sequence of positive ints"),
        (dict(bucket_local_tokens=[1]), TypeError, "mapping bucket -> rows"),
        (dict(bucket_local_tokens={32: -1}), ValueError, r"bucket_local_tokens\[32\] must be an int >= 0, got -1"),
        (dict(bucket_local_tokens={"32": 1}), TypeError, "keys must be int buckets"),
        (dict(num_tokens=0), ValueError, "num_tokens must be an int >= 1, got 0"),
        (dict(required_local_tokens=-1), ValueError, "required_local_tokens must be an int >= 0"),
        (dict(max_padding_factor=0), ValueError, "max_padding_factor must be an int >= 1 or a fractions.Fraction >= 1, got 0"),
    ],
)
def test_select_replay_bucket_rejects_bad_input(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    args: dict[str, object] = dict(num_tokens=20, required_local_tokens=4, capture_num_tokens=(32, 64),
                                   bucket_local_tokens={32: 8, 64: 16}, max_padding_factor=2)
    args.update(kwargs)
    with pytest.raises(error, match=message):
        decision.select_replay_bucket(**args)  # type: ignore[arg-type]


def test_headroom_and_capture_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="max_requests must be an int >= 1, got 0"):
        decision.headroom_local_tokens(64, cp_size=4, align_size=8, max_requests=0)
    with pytest.raises(ValueError, match="num_tokens must be an int >= 1, got 0"):
        decision.capture_local_tokens(0, cp_size=4, align_size=8)
    with pytest.raises(TypeError, match="cp_rank must be an int >= 0"):
        policy.admit(**_batch(cp_rank=None))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bucket must be an int >= 1, got 0"):
        policy.local_rows(bucket=0, **_batch())  # type: ignore[arg-type]


# -- zigzag_pad (vLLM's prefill context-parallel layout), hand-computed -------------------------------------------


def test_zigzag_pad_rows_by_hand() -> None:
    # P = 4, 2P = 8: ceil(1534/8) = 192, ceil(161/8) = 21, ceil(353/8) = 45 -> every rank 2*(192+21+45) = 516 rows.
    assert decision.max_rank_load((1534, 161, 353), cp_size=4, strategy="zigzag_pad") == 516
    assert decision.required_local_tokens((1534, 161, 353), cp_size=4, align_size=8, strategy="zigzag_pad") == 520
    # P = 3, 2P = 6: lengths 6, 7, 0 -> 2*1 + 2*2 + 0 = 6 rows a rank; 3 ranks * 6 = 18 = 6 + 12 + 0 padded tokens.
    assert decision.max_rank_load((6, 7, 0), cp_size=3, strategy="zigzag_pad") == 6
    # One request of 5 tokens on 2 ranks: padded to 8, 4 rows a rank (zigzag would need ceil(5/2) = 3).
    assert decision.max_rank_load((5,), cp_size=2, strategy="zigzag_pad") == 4
    assert decision.max_rank_load((5,), cp_size=2, strategy="zigzag") == 3


def test_zigzag_pad_alignment_capacity_and_headroom_by_hand() -> None:
    assert decision.default_align_size(cp_size=4, strategy="zigzag_pad") == 8
    # capacity of bucket B = align_up(2*ceil(B/2P), 2P): 2048 -> 512; 2049 -> 2*257 = 514 -> 520.
    assert decision.capture_local_tokens(2048, cp_size=4, align_size=8, strategy="zigzag_pad") == 512
    assert decision.capture_local_tokens(2049, cp_size=4, align_size=8, strategy="zigzag_pad") == 520
    # headroom: floor((N + R(2P-1)) / P) = floor((2048 + 3*7) / 4) = 517 -> 520.
    assert decision.headroom_local_tokens(2048, cp_size=4, align_size=8, max_requests=3, strategy="zigzag_pad") == 520
    # and it holds the worst 3-request batch of 2048 tokens: three lengths of 8q+1 tokens.
    assert decision.required_local_tokens((681, 681, 686), cp_size=4, align_size=8, strategy="zigzag_pad") <= 520


def test_zigzag_pad_long_batch_takes_the_vectorised_path_and_agrees_by_hand() -> None:
    lengths = [17, 16, 1, 0] * 50  # P = 4: ceil(L/8) = 3, 2, 1, 0 -> 2*6 = 12 rows per 4 requests
    assert decision.max_rank_load(lengths, cp_size=4, strategy="zigzag_pad") == 12 * 50
    assert decision.max_rank_load(np.array(lengths), cp_size=4, strategy="zigzag_pad") == 12 * 50


# -- no silent default: an unknown strategy id is a ValueError naming the ids, everywhere ------------------------

UNKNOWN = "strategy must be one of zigzag, interleave, contiguous, zigzag_pad; got 'ring'"


def test_unknown_strategy_is_refused_everywhere() -> None:
    sel = Selector.build((64,), {64: 16})
    calls: list[Callable[[], object]] = [
        lambda: decision.required_local_tokens((10,), cp_size=4, align_size=8, strategy="ring"),
        lambda: decision.max_rank_load((10, 20), cp_size=4, strategy="ring"),
        lambda: decision.default_align_size(cp_size=4, strategy="ring"),
        lambda: decision.capture_local_tokens(64, cp_size=4, align_size=8, strategy="ring"),
        lambda: decision.headroom_local_tokens(64, cp_size=4, align_size=8, max_requests=2, strategy="ring"),
        lambda: decision.plan_batch((40,), num_tokens=40, cp_size=4, align_size=8, selector=sel, max_padding_factor=2,
                                    strategy="ring"),
        lambda: decision.plan_lengths([40], cp_size=4, align_size=8, selector=sel, max_padding_factor=2,
                                      strategy="ring"),
        lambda: policy.decide(strategy="ring", **_batch()),  # type: ignore[arg-type]
        lambda: policy.local_rows(bucket=2304, strategy="ring", **_batch()),  # type: ignore[arg-type]
        lambda: decision.formulas("ring"),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=UNKNOWN):
            call()
    with pytest.raises(ValueError, match="got None"):
        decision.formulas(None)


def test_formula_table_is_keyed_by_exactly_the_strategy_ids() -> None:
    from cpgraph.impl.checks import STRATEGY_IDS

    assert tuple(decision.FORMULAS) == STRATEGY_IDS
    assert all(row.id == sid for sid, row in decision.FORMULAS.items())


# -- fractional padding factors (exact rationals) --------------------------------------------------------------


def test_fractional_padding_factor_bounds_the_window_exactly() -> None:
    from fractions import Fraction

    sel = Selector.build((100, 150, 151), {100: 10, 150: 100, 151: 100})
    plan = decision.plan_lengths([50, 50], cp_size=2, align_size=4, selector=sel, max_padding_factor=Fraction(3, 2))
    assert plan.bucket == 150  # F*n = 150 exactly, inclusive; 151 is outside
    plan = decision.plan_lengths([50, 51], cp_size=2, align_size=4, selector=sel, max_padding_factor=Fraction(3, 2))
    assert plan.bucket == 150  # F*n = 151.5: 150 and 151 are inside, 150 is the least that fits
    with pytest.raises(TypeError, match=r"max_padding_factor must be an int >= 1 or a fractions.Fraction >= 1, got 1.5"):
        decision.select_replay_bucket(num_tokens=10, required_local_tokens=1, capture_num_tokens=(10,),
                                      bucket_local_tokens={10: 5}, max_padding_factor=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"max_padding_factor must be an int >= 1 or a fractions.Fraction >= 1, got 1/2"):
        decision.select_replay_bucket(num_tokens=10, required_local_tokens=1, capture_num_tokens=(10,),
                                      bucket_local_tokens={10: 5}, max_padding_factor=Fraction(1, 2))
