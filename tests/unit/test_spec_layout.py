"""cpgraph.spec.zigzag, spec.strategies, spec.capacity evaluated on concrete inputs agree with the reference."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.proofs.engine.evaluate import (
    spec_capture_local_tokens,
    spec_headroom_local_tokens,
    spec_rank_loads,
    spec_required_local_tokens,
)
from cpgraph.reference.strategies import STRATEGY_TABLE
from cpgraph.spec.strategies import STRATEGIES, strategy

SEED_LENGTHS = (1534, 161, 353)


def test_seed_example_loads_rows_and_capacities_by_the_spec() -> None:
    assert spec_rank_loads(SEED_LENGTHS, cp_size=4) == (513, 511, 512, 512)
    assert spec_required_local_tokens(SEED_LENGTHS, cp_size=4, align_size=8) == 520
    assert [spec_capture_local_tokens(b, cp_size=4, align_size=8) for b in (2048, 2304, 2560)] == [512, 576, 640]


def test_padded_layout_hazard_from_semantics_by_the_spec() -> None:
    # 256 pad tokens folded into the last request: [577, 575, 576, 576] -> 584 rows > 576.
    padded = (1534, 161, 353 + 256)
    assert spec_rank_loads(padded, cp_size=4) == (577, 575, 576, 576)
    assert spec_required_local_tokens(padded, cp_size=4, align_size=8) == 584


def test_the_strategy_table_has_one_row_per_reference_strategy() -> None:
    assert tuple(STRATEGIES) == reference.STRATEGIES
    assert [strategy(k).align_size(4) for k in STRATEGIES] == [
        reference.default_align_size(cp_size=4, strategy=k) for k in STRATEGIES
    ]
    assert [strategy(k).decodes for k in STRATEGIES] == [STRATEGY_TABLE[k].decodes for k in STRATEGIES]
    assert "zigzag_pad" not in STRATEGIES
    with pytest.raises(ValueError, match="strategy must be one of"):
        strategy("ring")
    with pytest.raises(ValueError, match="strategy must be one of"):
        strategy("zigzag_pad")


@pytest.mark.parametrize(
    ("kind", "length", "cp_size", "loads"),
    [
        ("dual_chunk_swap", 300, 4, (72, 76, 76, 76)),  # the example: not 76 on every rank
        ("dual_chunk_swap", 3, 4, (1, 1, 1, 0)),
        ("dual_chunk_swap", 9, 4, (2, 2, 2, 3)),  # not the class form (3, 2, 2, 2)
        ("dual_chunk_swap_replicated", 300, 4, (72, 76, 76, 76)),  # prefills: the same layout
        ("dual_chunk_swap_dcp", 300, 4, (72, 76, 76, 76)),
        ("dual_chunk_swap_dcp", 3, 4, (3, 3, 3, 3)),  # too short to fill 8 chunks: copied to every rank
        ("dual_chunk_swap_dcp", 49, 4, (49, 49, 49, 49)),  # 2P(2P-2)+1: the longest prefill dcp copies
        ("dual_chunk_swap_dcp", 50, 4, (8, 14, 14, 14)),  # 50 fills all 8 chunks: split
        ("dual_chunk_swap", 5, 1, (5,)),
    ],
)
def test_dual_chunk_swap_loads_by_the_spec(kind: str, length: int, cp_size: int, loads: tuple[int, ...]) -> None:
    assert spec_rank_loads((length,), cp_size=cp_size, strategy=kind) == loads == reference.rank_loads(
        (length,), cp_size=cp_size, strategy=kind
    )


@pytest.mark.parametrize("kind", ["dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp"])
def test_dual_chunk_swap_loads_equal_the_reference_at_every_quotient_class_up_to_p8(kind: str) -> None:
    # Every length up to 2P(2P+1)+1: every remainder at every quotient below the split threshold and past it.
    for p in range(1, 9):
        for length in range(0, 2 * p * (2 * p + 1) + 2):
            assert spec_rank_loads((length,), cp_size=p, strategy=kind) == reference.rank_loads(
                (length,), cp_size=p, strategy=kind
            ), (p, length)


@given(
    st.integers(1, 12),
    st.sampled_from(reference.STRATEGIES),
    st.lists(st.integers(0, 500), min_size=1, max_size=3),
)
def test_spec_loads_and_rows_equal_the_reference(cp_size: int, kind: str, lengths: list[int]) -> None:
    a = reference.default_align_size(cp_size=cp_size, strategy=kind)
    assert spec_rank_loads(lengths, cp_size=cp_size, strategy=kind) == reference.rank_loads(
        lengths, cp_size=cp_size, strategy=kind
    )
    assert spec_required_local_tokens(lengths, cp_size=cp_size, align_size=a, strategy=kind) == (
        reference.required_local_tokens(lengths, cp_size=cp_size, align_size=a, strategy=kind)
    )


@given(st.integers(1, 16), st.integers(1, 5000), st.integers(1, 6))
def test_spec_headroom_capacity_equals_the_reference(cp_size: int, bucket: int, requests: int) -> None:
    a = 2 * cp_size
    assert spec_headroom_local_tokens(bucket, cp_size=cp_size, align_size=a, max_requests=requests) == (
        reference.headroom_local_tokens(bucket, cp_size=cp_size, align_size=a, max_requests=requests)
    )
