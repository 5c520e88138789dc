"""impl/decision.py and impl/policy.py: worked examples, boundaries, and every bad-input error."""

from __future__ import annotations

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
    # The hazard from SEMANTICS.md: 256 pad tokens on the last request -> 584 rows, more than 576.
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
