"""impl/decision.py and impl/policy.py: worked examples, boundaries, and every bad-input error."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from cpgraph.impl import decision, policy
from cpgraph.impl.decision import FallbackReason, Selector, plan_batch

from helpers import seed_batch


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


def test_policy_protocol_on_the_worked_example() -> None:
    assert policy.admit(**seed_batch())  # type: ignore[arg-type]
    assert policy.replay_bucket(**seed_batch()) == 2304  # type: ignore[arg-type]
    assert policy.local_rows(bucket=2304, **seed_batch()) == (520,) * 4  # type: ignore[arg-type]
    refused = seed_batch(capture_num_tokens=(2048,), bucket_local_tokens={2048: 512})
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
        policy.admit(**seed_batch(cp_rank=None))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bucket must be an int >= 1, got 0"):
        policy.local_rows(bucket=0, **seed_batch())  # type: ignore[arg-type]


# -- dual_chunk_swap (vLLM's DualChunkSwap), hand-computed ------------------------------------------------------


def test_dual_chunk_swap_rows_by_hand() -> None:
    # P = 4, 2P = 8 chunks of c = ceil(L/8): 1534 -> c = 192, chunks 192 x 7 + 190: rank 0 (chunks 0, 7) 382, the
    # others 384; 161 -> c = 21, 147 + 14: 35, 42; 353 -> c = 45, 315 + 38: 83, 90. Loads [500, 516, 516, 516].
    lengths = (1534, 161, 353)
    for strategy in ("dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp"):
        assert decision.rank_loads(lengths, cp_size=4, strategy=strategy) == (500, 516, 516, 516)
        assert decision.max_rank_load(lengths, cp_size=4, strategy=strategy) == 516
        assert decision.required_local_tokens(lengths, cp_size=4, align_size=1, strategy=strategy) == 516
    # The issue's examples: L = 300 -> c = 38, seven full chunks and 34: [72, 76, 76, 76]; L = 3 -> [1, 1, 1, 0].
    assert decision.rank_loads((300,), cp_size=4, strategy="dual_chunk_swap") == (72, 76, 76, 76)
    assert decision.rank_loads((3,), cp_size=4, strategy="dual_chunk_swap") == (1, 1, 1, 0)
    # One request of 5 tokens on 2 ranks: c = 2, chunks [2, 2, 1, 0]: rank 0 holds 2, rank 1 holds 3.
    assert decision.rank_loads((5,), cp_size=2, strategy="dual_chunk_swap") == (2, 3)
    assert decision.rank_loads((5, 0), cp_size=1, strategy="dual_chunk_swap") == (5,)


def test_dual_chunk_swap_dcp_copies_short_prefills_by_hand() -> None:
    # (2P-1) * ceil(L/2P) >= L: the last chunk is empty, and dcp copies the prefill to every rank.
    assert decision.rank_loads((3,), cp_size=4, strategy="dual_chunk_swap_dcp") == (3, 3, 3, 3)
    assert decision.rank_loads((49,), cp_size=4, strategy="dual_chunk_swap_dcp") == (49,) * 4  # (2P-1)^2, c = 7
    assert decision.rank_loads((50,), cp_size=4, strategy="dual_chunk_swap_dcp") == (8, 14, 14, 14)  # 7 x 7 + 1
    assert decision.rank_loads((3, 50, 0), cp_size=4, strategy="dual_chunk_swap_dcp") == (11, 17, 17, 17)
    assert decision.rank_loads((1,), cp_size=1, strategy="dual_chunk_swap_dcp") == (1,)


def test_decodes_by_hand() -> None:
    # P = 4: a prefill of 300 ([72, 76, 76, 76]) and five one-token decodes.
    lengths, flags = (300, 1, 1, 1, 1, 1), (True, False, False, False, False, False)
    # Dealt round-robin: decodes 0..4 on ranks 0, 1, 2, 3, 0.
    assert decision.rank_loads(lengths, cp_size=4, strategy="dual_chunk_swap", is_prefilling=flags) == (74, 77, 77, 77)
    # Copied to every rank.
    for strategy in ("dual_chunk_swap_replicated", "dual_chunk_swap_dcp"):
        assert decision.rank_loads(lengths, cp_size=4, strategy=strategy, is_prefilling=flags) == (77, 81, 81, 81)
        assert decision.max_rank_load(lengths, cp_size=4, strategy=strategy, is_prefilling=list(flags)) == 81
        assert decision.required_local_tokens(lengths, cp_size=4, align_size=8, strategy=strategy,
                                              is_prefilling=np.array(flags)) == 88
    # An empty decode is not dealt: the next one still goes to rank 1.
    assert decision.rank_loads((300, 1, 0, 1), cp_size=4, strategy="dual_chunk_swap",
                               is_prefilling=(True, False, False, False)) == (73, 77, 76, 76)
    # Every request a prefill is the batch without flags.
    assert decision.rank_loads((300, 7), cp_size=4, strategy="dual_chunk_swap", is_prefilling=[True, True]) == (
        decision.rank_loads((300, 7), cp_size=4, strategy="dual_chunk_swap"))


def test_dual_chunk_swap_alignment_capacity_and_headroom_by_hand() -> None:
    for strategy in ("dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp"):
        assert decision.default_align_size(cp_size=4, strategy=strategy) == 1  # align_factor 0: A = 1
        # one request of 2048: c = 256, eight full chunks, 512 a rank; 2049: c = 257, 257 + min(257, 2049 - 4*257).
        assert decision.capture_local_tokens(2048, cp_size=4, align_size=1, strategy=strategy) == 512
        assert decision.capture_local_tokens(2049, cp_size=4, align_size=1, strategy=strategy) == 514
    # headroom: floor((N + R(2P-1)) / P) = floor((2048 + 3*7) / 4) = 517; dcp's excess is (P-1)(2P-1)^2 = 147.
    assert decision.headroom_local_tokens(2048, cp_size=4, align_size=1, max_requests=3,
                                          strategy="dual_chunk_swap") == 517
    assert decision.headroom_local_tokens(2048, cp_size=4, align_size=1, max_requests=3,
                                          strategy="dual_chunk_swap_dcp") == (2048 + 3 * 147) // 4
    # and it holds the worst 3-request batch of 2048 tokens: three lengths of 8q+1 tokens.
    assert decision.max_rank_load((681, 681, 686), cp_size=4, strategy="dual_chunk_swap") <= 517


def test_dual_chunk_swap_long_batch_takes_the_vectorised_path_and_agrees_by_hand() -> None:
    # P = 4: 17 -> c = 3, chunks [3, 3, 3, 3, 3, 2, 0, 0]: [3, 3, 5, 6]; 16 -> 4 a rank; 1 -> [1, 0, 0, 0]; 0 -> none.
    lengths = [17, 16, 1, 0] * 50
    want = (400, 350, 450, 500)
    for form in (lengths, np.array(lengths)):
        assert decision.rank_loads(form, cp_size=4, strategy="dual_chunk_swap") == want
        assert decision.max_rank_load(form, cp_size=4, strategy="dual_chunk_swap") == 500
    flags = [True, True, False, True] * 50  # the 1-token requests as decodes: 50 dealt round-robin, 13/13/12/12
    assert decision.rank_loads(np.array(lengths), cp_size=4, strategy="dual_chunk_swap", is_prefilling=flags) == (
        400 - 50 + 13, 350 + 13, 450 + 12, 500 + 12)


def test_decodes_need_a_strategy_that_places_them() -> None:
    for strategy in ("zigzag", "interleave", "contiguous"):
        with pytest.raises(ValueError, match=rf"is_prefilling\[1\] is False but strategy '{strategy}' lays out "
                                             r"prefills only; a batch with decodes needs one of dual_chunk_swap, "
                                             r"dual_chunk_swap_replicated, dual_chunk_swap_dcp"):
            decision.rank_loads((40, 1), cp_size=4, strategy=strategy, is_prefilling=(True, False))
        with pytest.raises(ValueError, match=r"is_prefilling\[1\] is False"):
            decision.max_rank_load((40, 1), cp_size=4, strategy=strategy, is_prefilling=(True, False))


@pytest.mark.parametrize(
    ("flags", "error", "message"),
    [
        ((True,), ValueError, r"is_prefilling must hold one bool per request \(2\), got 1: \(True,\)"),
        ([True, False, True], ValueError, r"is_prefilling must hold one bool per request \(2\), got 3"),
        ((True, 1), TypeError, r"is_prefilling\[1\] must be a bool \(True: the request is a prefill\), got 1"),
        ("TF", TypeError, r"is_prefilling must be None or a sequence of 2 bools \(one per request\), got 'TF'"),
        (5, TypeError, r"is_prefilling must be None or a sequence of 2 bools"),
        (np.array([1, 0]), TypeError, r"is_prefilling must be None, a sequence of 2 bools .* or a 1-d bool numpy "
                                      r"array or CPU torch tensor; got dtype int64"),
        (np.array([[True, False]]), ValueError, r"is_prefilling must be a 1-d bool numpy array .*; got shape \(1, 2\)"),
        (np.array([True, False, True]), ValueError, r"is_prefilling must hold one bool per request \(2\), got 3"),
    ],
)
def test_bad_is_prefilling_names_argument_value_and_what_is_allowed(
    flags: object, error: type[Exception], message: str
) -> None:
    sel = Selector.build((64,), {64: 64})
    calls: list[Callable[[], object]] = [
        lambda: decision.rank_loads((40, 1), cp_size=4, strategy="dual_chunk_swap", is_prefilling=flags),
        lambda: decision.max_rank_load((40, 1), cp_size=4, strategy="dual_chunk_swap", is_prefilling=flags),
        lambda: decision.required_local_tokens((40, 1), cp_size=4, align_size=1, strategy="dual_chunk_swap",
                                               is_prefilling=flags),
        lambda: decision.plan_lengths([40, 1], cp_size=4, align_size=1, selector=sel, max_padding_factor=2,
                                      strategy="dual_chunk_swap", keying="local", is_prefilling=flags),
        lambda: decision.decider(cp_size=4, align_size=1, selector=sel, max_padding_factor=2,
                                 strategy="dual_chunk_swap")([40, 1], None, flags),
        lambda: policy.decide(strategy="dual_chunk_swap", is_prefilling=flags, **seed_batch(extend_seq_lens=(40, 1))),  # type: ignore[arg-type]
        lambda: policy.admit(strategy="dual_chunk_swap", keying="local", is_prefilling=flags,
                             **seed_batch(extend_seq_lens=(40, 1))),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(error, match=message):
            call()


# -- no silent default: an unknown strategy id is a ValueError naming the ids, everywhere ------------------------

UNKNOWN = ("strategy must be one of zigzag, interleave, contiguous, dual_chunk_swap, dual_chunk_swap_replicated, "
           "dual_chunk_swap_dcp; got 'ring'")


def test_unknown_strategy_is_refused_everywhere() -> None:
    sel = Selector.build((64,), {64: 16})
    calls: list[Callable[[], object]] = [
        lambda: decision.required_local_tokens((10,), cp_size=4, align_size=8, strategy="ring"),
        lambda: decision.max_rank_load((10, 20), cp_size=4, strategy="ring"),
        lambda: decision.rank_loads((10, 20), cp_size=4, strategy="ring"),
        lambda: decision.default_align_size(cp_size=4, strategy="ring"),
        lambda: decision.capture_local_tokens(64, cp_size=4, align_size=8, strategy="ring"),
        lambda: decision.headroom_local_tokens(64, cp_size=4, align_size=8, max_requests=2, strategy="ring"),
        lambda: decision.plan_batch((40,), num_tokens=40, cp_size=4, align_size=8, selector=sel, max_padding_factor=2,
                                    strategy="ring"),
        lambda: decision.plan_lengths([40], cp_size=4, align_size=8, selector=sel, max_padding_factor=2,
                                      strategy="ring"),
        lambda: policy.decide(strategy="ring", **seed_batch()),  # type: ignore[arg-type]
        lambda: policy.local_rows(bucket=2304, strategy="ring", **seed_batch()),  # type: ignore[arg-type]
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


# -- graph keying: global (sglang) and local (vLLM 0.29 on) -------------------------------------------------------

# vLLM's default cudagraph_capture_sizes: 1, 2, 4, 8..248 step 8, 256..512 step 16.
VLLM_SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))


def test_local_keying_worked_example_from_the_issue() -> None:
    """P = 4, [170, 161, 153]: loads [106, 126, 126, 126], so the key is 126 and the size 128 (vLLM 0.29+);
    0.28 dispatched by the global count 484 (size 496) and replayed under 126."""
    lengths = (170, 161, 153)
    assert decision.rank_loads(lengths, cp_size=4, strategy="dual_chunk_swap") == (106, 126, 126, 126)
    sel = Selector.build(VLLM_SIZES, {s: s for s in VLLM_SIZES})
    config = dict(cp_size=4, align_size=1, selector=sel, max_padding_factor=2, strategy="dual_chunk_swap")
    plan = decision.plan_lengths(list(lengths), keying="local", **config)  # type: ignore[arg-type]
    assert (plan.required_local_tokens, plan.bucket, plan.bucket_local_tokens, plan.fallback) == (126, 128, 128, None)
    assert plan_batch(lengths, num_tokens=484, keying="local", **config).bucket == 128  # type: ignore[arg-type]
    assert decision.decider(keying="local", **config)(np.array(lengths))[2] == (126, 128, 128, None)  # type: ignore[arg-type]
    batch = dict(cp_rank=2, cp_size=4, align_size=1, num_tokens=484, extend_seq_lens=lengths,
                 capture_num_tokens=VLLM_SIZES, bucket_local_tokens={}, max_padding_factor=2)
    assert policy.replay_bucket(strategy="dual_chunk_swap", keying="local", **batch) == 128  # type: ignore[arg-type]
    assert policy.local_rows(bucket=128, strategy="dual_chunk_swap", keying="local", **batch) == (126,) * 4  # type: ignore[arg-type]
    # The global count names another graph: the least size >= n = 484 is 496.
    assert min(s for s in VLLM_SIZES if s >= sum(lengths)) == 496


def test_local_keying_has_no_gate_and_no_window() -> None:
    sizes = (4, 8, 64, 512)
    sel = Selector.build(sizes, {s: s for s in sizes})
    local = decision.decider(cp_size=1, align_size=1, selector=sel, max_padding_factor=1, strategy="zigzag",
                             keying="local")
    assert local([3])[2] == (3, 4, 4, None)  # P = 1, n < 2P, a short request: all keyed
    assert local([9], 100)[2] == (9, 64, 64, None)  # num_tokens does not key; F = 1 bounds nothing
    assert local([513])[2] == (513, None, None, FallbackReason.TOO_MANY_TOKENS)  # above the largest size: eager
    glob = decision.decider(cp_size=1, align_size=1, selector=sel, max_padding_factor=1, strategy="zigzag")
    assert glob([3])[2][3] == FallbackReason.CP_DISABLED


def test_local_keying_skips_a_size_that_was_not_captured() -> None:
    sel = Selector.build((8, 16, 32), {8: 8, 32: 32})  # 16 failed to capture
    decide = decision.decider(cp_size=2, align_size=1, selector=sel, max_padding_factor=2, strategy="dual_chunk_swap",
                              keying="local")
    assert decide([20])[2] == (10, 32, 32, None)
    sel = Selector.build((8, 16), {8: 8})
    decide = decision.decider(cp_size=2, align_size=1, selector=sel, max_padding_factor=2, strategy="dual_chunk_swap",
                              keying="local")
    assert decide([20])[2] == (10, None, None, FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT)
    assert decide([40])[2] == (20, None, None, FallbackReason.TOO_MANY_TOKENS)


def test_local_keying_counts_decodes_in_the_key() -> None:
    sizes = (64, 72, 76, 80, 96)
    batch = dict(cp_rank=0, cp_size=4, align_size=8, num_tokens=305, extend_seq_lens=(300, 1, 1, 1, 1, 1),
                 capture_num_tokens=sizes, bucket_local_tokens={}, max_padding_factor=2)
    flags = (True, False, False, False, False, False)
    assert policy.replay_bucket(strategy="dual_chunk_swap", keying="local", **batch) == 80  # type: ignore[arg-type]  # 77: five 1-token prefills on rank 0
    assert policy.replay_bucket(strategy="dual_chunk_swap", keying="local", is_prefilling=flags, **batch) == 80  # type: ignore[arg-type]  # 77: dealt 2, 1, 1, 1
    assert policy.replay_bucket(strategy="dual_chunk_swap_replicated", keying="local", is_prefilling=flags,
                                **batch) == 96  # type: ignore[arg-type]  # 81
    plan = policy.decide(strategy="dual_chunk_swap_replicated", keying="local", is_prefilling=list(flags), **batch)  # type: ignore[arg-type]
    assert (plan.required_local_tokens, plan.bucket, plan.bucket_local_tokens) == (81, 96, 96)
    assert policy.local_rows(bucket=96, strategy="dual_chunk_swap_replicated", is_prefilling=flags,
                             **batch) == (88,) * 4  # type: ignore[arg-type]  # global: aligned to A = 8


UNKNOWN_KEYING = "keying must be one of global, local; got 'rank'"


def test_unknown_keying_is_refused_everywhere() -> None:
    from cpgraph.impl.dispatch import Dispatcher

    sel = Selector.build((64,), {64: 16})
    calls: list[Callable[[], object]] = [
        lambda: decision.decider(cp_size=4, align_size=8, selector=sel, max_padding_factor=2, keying="rank"),
        lambda: decision.decide_lengths([40], cp_size=4, align_size=8, selector=sel, max_padding_factor=2,
                                        keying="rank"),
        lambda: decision.plan_lengths([40], cp_size=4, align_size=8, selector=sel, max_padding_factor=2,
                                      keying="rank"),
        lambda: plan_batch((40,), num_tokens=40, cp_size=4, align_size=8, selector=sel, max_padding_factor=2,
                           keying="rank"),
        lambda: policy.decide(keying="rank", **seed_batch()),  # type: ignore[arg-type]
        lambda: policy.admit(keying="rank", **seed_batch()),  # type: ignore[arg-type]
        lambda: policy.replay_bucket(keying="rank", **seed_batch()),  # type: ignore[arg-type]
        lambda: policy.local_rows(bucket=2304, keying="rank", **seed_batch()),  # type: ignore[arg-type]
        lambda: Dispatcher(cp_size=4, align_size=8, strategy="zigzag", max_padding_factor=2, capture_num_tokens=(64,),
                           captured={64: 16}, keying="rank"),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=UNKNOWN_KEYING):
            call()
    for bad in (None, "GLOBAL", 1):
        with pytest.raises(ValueError, match=rf"keying must be one of global, local; got {bad!r}"):
            policy.admit(keying=bad, **seed_batch())  # type: ignore[arg-type]


def test_keying_ids_are_the_reference_keying_tables() -> None:
    from cpgraph.impl.checks import KEYING_IDS
    from cpgraph.reference.keying import KEYINGS

    assert KEYING_IDS == KEYINGS
