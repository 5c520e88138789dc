"""The reference against hand-computed vectors and the seed example from docs/semantics.md."""

import pytest

from cpgraph.reference import (
    CaptureRule,
    FallbackReason,
    ReferenceRunner,
    align_up,
    build_layout,
    capture_local_tokens,
    headroom_local_tokens,
    rank_loads,
    required_local_tokens,
    select_replay_bucket,
    zigzag_block_lens,
)

SEED_LENS = (1534, 161, 353)


def test_seed_example_overflows_bucket_2048_and_selects_2304_on_every_rank() -> None:
    assert rank_loads(SEED_LENS, cp_size=4) == (513, 511, 512, 512)
    assert required_local_tokens(SEED_LENS, cp_size=4, align_size=8) == 520
    buckets = (2048, 2304, 2560)
    capacities = {b: capture_local_tokens(b, cp_size=4, align_size=8) for b in buckets}
    assert capacities == {2048: 512, 2304: 576, 2560: 640}
    picks = {
        select_replay_bucket(
            num_tokens=2048,
            required_local_tokens=required_local_tokens(SEED_LENS, cp_size=4, align_size=8),
            capture_num_tokens=buckets,
            bucket_local_tokens=capacities,
            max_padding_factor=2,
        )
        for _rank in range(4)
    }
    assert picks == {2304}


def test_padded_count_folded_into_last_request_needs_584_rows() -> None:
    padded = (1534, 161, 353 + 256)
    assert rank_loads(padded, cp_size=4) == (577, 575, 576, 576)
    assert required_local_tokens(padded, cp_size=4, align_size=8) == 584


@pytest.mark.parametrize(
    ("length", "cp_size", "blocks"),
    [(5, 2, (2, 1, 1, 1)), (8, 2, (2, 2, 2, 2)), (3, 2, (1, 1, 1, 0)), (11, 3, (2, 2, 2, 2, 2, 1)), (1, 1, (1, 0))],
)
def test_zigzag_blocks_put_the_remainder_on_leading_blocks(length: int, cp_size: int, blocks: tuple[int, ...]) -> None:
    assert zigzag_block_lens(length, cp_size=cp_size) == blocks


@pytest.mark.parametrize(
    ("lens", "cp_size", "strategy", "loads"),
    [
        ((5,), 2, "zigzag", (3, 2)),  # rank 0: blocks 0,3 = 2+1; rank 1: blocks 1,2 = 1+1
        ((11,), 3, "zigzag", (3, 4, 4)),  # blocks 2,2,2,2,2,1: r0 = b0+b5, r1 = b1+b4, r2 = b2+b3
        ((7,), 4, "zigzag", (1, 2, 2, 2)),  # blocks 1,1,1,1,1,1,1,0: rank 0 owns b0 and the empty b7
        ((5, 5), 2, "zigzag", (6, 4)),
        ((7,), 3, "interleave", (3, 2, 2)),
        ((4, 3), 3, "interleave", (3, 2, 2)),  # request boundaries do not matter
        ((5,), 2, "contiguous", (2, 3)),
        ((5, 7), 3, "contiguous", (3, 4, 5)),  # [1,2,2] + [2,2,3]
    ],
)
def test_rank_loads_match_hand_computed_vectors(
    lens: tuple[int, ...], cp_size: int, strategy: str, loads: tuple[int, ...]
) -> None:
    assert rank_loads(lens, cp_size=cp_size, strategy=strategy) == loads


def test_zigzag_layout_rows_run_block_r_then_block_2p_minus_1_minus_r() -> None:
    layout = build_layout((5,), cp_size=2, rows=4)
    # blocks of 5 over S=4: [0,1] [2] [3] [4]; rank 0 owns blocks 0 and 3, rank 1 blocks 1 and 2
    assert layout.rank_tokens == (((0, 0), (0, 1), (0, 4)), ((0, 2), (0, 3)))
    assert layout.token_at(1, 3) is None
    assert layout.locate(0, 4) == (0, 2)


def test_interleave_and_contiguous_layouts() -> None:
    assert build_layout((3, 2), cp_size=2, strategy="interleave").rank_tokens == (
        ((0, 0), (0, 2), (1, 1)),
        ((0, 1), (1, 0)),
    )
    assert build_layout((5,), cp_size=2, strategy="contiguous").rank_tokens == (
        ((0, 0), (0, 1)),
        ((0, 2), (0, 3), (0, 4)),
    )


def test_interleave_required_is_aligned_ceil_share() -> None:
    assert required_local_tokens((10, 3), cp_size=4, align_size=4, strategy="interleave") == 4
    assert required_local_tokens((10, 7), cp_size=4, align_size=4, strategy="interleave") == 8


@pytest.mark.parametrize(("value", "align", "out"), [(0, 8, 0), (1, 8, 8), (8, 8, 8), (9, 8, 16), (513, 8, 520)])
def test_align_up(value: int, align: int, out: int) -> None:
    assert align_up(value, align) == out


def test_headroom_capacity_examples() -> None:
    # floor((2048 + 4*3)/4) = 515 -> 520; one request: floor((2048+3)/4) = 512
    assert headroom_local_tokens(2048, cp_size=4, align_size=8, max_requests=4) == 520
    assert headroom_local_tokens(2048, cp_size=4, align_size=8, max_requests=1) == 512
    runner = ReferenceRunner(
        cp_size=4, capture_num_tokens=(2048, 2304, 2560), align_size=8, capture_rule=CaptureRule("headroom", 3)
    )
    plan = runner.plan(SEED_LENS)
    assert plan.bucket == 2048 and plan.bucket_local_tokens == 520


@pytest.mark.parametrize(
    ("lens", "num_tokens", "reason"),
    [
        ((300,), None, FallbackReason.TOO_FEW_TOKENS),
        ((4, 300), None, FallbackReason.SHORT_REQUEST),
        ((3000,), None, FallbackReason.TOO_MANY_TOKENS),
        ((1000,), None, FallbackReason.NO_BUCKET_WITHIN_PADDING_LIMIT),  # nothing captured in [1000, 2000]
        # 2048 has 500 rows < 512 needed; 2560 is in the window but has no recorded capacity
        ((2040,), 2041, FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT),
    ],
)
def test_runner_falls_back_with_the_reason(lens: tuple[int, ...], num_tokens: int | None, reason: FallbackReason) -> None:
    table = CaptureRule("table", table={512: 128, 2048: 500})
    runner = ReferenceRunner(cp_size=4, capture_num_tokens=(512, 2048, 2560), align_size=8, capture_rule=table)
    if reason is FallbackReason.TOO_FEW_TOKENS:
        plan = runner.plan((4,))
    else:
        plan = runner.plan(lens, num_tokens)
    assert plan.fallback is reason
    assert not plan.admitted and plan.bucket is None


def test_runner_with_one_rank_is_cp_disabled() -> None:
    runner = ReferenceRunner(cp_size=1, capture_num_tokens=(16, 32))
    assert runner.plan((10,)).fallback is FallbackReason.CP_DISABLED
