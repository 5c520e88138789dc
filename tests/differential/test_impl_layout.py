"""impl/layout.py (vectorised torch) against reference.build_layout: the same (request, token) in every row.

Every strategy id the reference exposes is compared (``cpgraph.reference.validate.STRATEGIES``); impl's index
builders are keyed by the same ids and must know each of them.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.impl.checks import STRATEGY_IDS
from cpgraph.impl.layout import BUILDERS, build_torch_layout, gather, shard
from cpgraph.reference.validate import STRATEGIES


def test_impl_builders_cover_every_reference_strategy() -> None:
    assert tuple(BUILDERS) == STRATEGY_IDS
    assert set(STRATEGIES) <= set(BUILDERS)


@st.composite
def layouts(draw: st.DrawFn) -> tuple[tuple[int, ...], int, str, int]:
    """Lengths, cp_size, strategy and extra padding rows, drawn next to each other so failures shrink small."""
    p = draw(st.integers(1, 8))
    lengths = tuple(draw(st.lists(st.integers(0, 90), min_size=1, max_size=8)))
    return lengths, p, draw(st.sampled_from(STRATEGIES)), draw(st.integers(0, 5))


@given(case=layouts())
@example(case=((1534, 161, 353), 4, "zigzag", 7))
@example(case=((0, 0), 3, "zigzag", 0))
@example(case=((5, 0, 13), 2, "zigzag_pad", 3))
def test_impl_layout_agrees_with_reference_row_by_row(case: tuple[tuple[int, ...], int, str, int]) -> None:
    lengths, p, strategy, extra = case
    ref = reference.build_layout(lengths, cp_size=p, strategy=strategy)
    got = build_torch_layout(lengths, cp_size=p, rows=ref.rows + extra, strategy=strategy)
    assert got.loads == ref.loads
    request_id, position = got.request_id.tolist(), got.position.tolist()
    for rank in range(p):
        want = [ref.token_at(rank, row) for row in range(ref.rows)] + [None] * extra
        have = [None if i < 0 else (i, k) for i, k in zip(request_id[rank], position[rank])]
        assert have == want, (lengths, p, strategy, rank)


@given(case=layouts())
def test_shard_then_gather_returns_every_token_in_order(case: tuple[tuple[int, ...], int, str, int]) -> None:
    lengths, p, strategy, extra = case
    layout = build_torch_layout(lengths, cp_size=p, strategy=strategy)
    layout = build_torch_layout(lengths, cp_size=p, rows=layout.rows + extra, strategy=strategy)
    hidden = torch.arange(sum(lengths) * 3, dtype=torch.float32).view(-1, 3) + 1
    per_rank = shard(hidden, layout)
    assert per_rank.shape == (p, layout.rows, 3)
    assert torch.equal(gather(per_rank, layout), hidden)
    padding = (layout.request_id < 0)
    assert torch.all(per_rank[padding] == 0)  # padding rows are zero, real rows all non-zero
    assert torch.all(per_rank[~padding] != 0)
    assert int((~padding).sum()) == sum(lengths)  # every token has a row, and only tokens


def test_layout_refuses_instead_of_truncating() -> None:
    with pytest.raises(ValueError, match=r"layout needs 513 rows on rank 0 .* but 512 rows are available"):
        build_torch_layout((1534, 161, 353), cp_size=4, rows=512)


def test_layout_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="extend_seq_lens must be a non-empty sequence"):
        build_torch_layout((), cp_size=2)
    with pytest.raises(ValueError, match="cp_size must be an int >= 1, got 0"):
        build_torch_layout((4,), cp_size=0)
    with pytest.raises(ValueError, match="strategy must be one of zigzag, interleave, contiguous, zigzag_pad; got 'ring'"):
        build_torch_layout((4,), cp_size=2, strategy="ring")
    with pytest.raises(ValueError, match="strategy must be one of .*; got None"):
        build_torch_layout((4,), cp_size=2, strategy=None)
    with pytest.raises(ValueError, match="rows must be an int >= 0, got -1"):
        build_torch_layout((4,), cp_size=2, rows=-1)
    layout = build_torch_layout((4, 4), cp_size=2)
    with pytest.raises(ValueError, match="hidden has 7 rows but the layout holds 8 tokens"):
        shard(torch.zeros(7, 2), layout)


def test_zigzag_pad_layout_by_hand() -> None:
    """P = 2, one request of 5 tokens: padded to 8, blocks of c = 2 rows [0,2) [2,4) [4,6) [6,8). Rank 0 owns blocks
    0 and 3 (tokens 0, 1, then 6, 7 which are padding); rank 1 owns blocks 1 and 2 (tokens 2, 3, 4, then 5: padding).
    Every rank holds 2c = 4 rows; the loads count the in-layout padding."""
    layout = build_torch_layout((5,), cp_size=2, strategy="zigzag_pad")
    assert layout.loads == (4, 4) and layout.rows == 4
    assert layout.request_id.tolist() == [[0, 0, -1, -1], [0, 0, 0, -1]]
    assert layout.position.tolist() == [[0, 1, 0, 0], [2, 3, 4, 0]]
    assert layout.dest.tolist() == [0, 1, 4, 5, 6]  # token k's flat row rank*rows + row


def test_zigzag_pad_layout_two_requests_and_an_empty_one_by_hand() -> None:
    """P = 2: requests of 3, 0 and 4 tokens. c = 1, 0, 1: each rank holds 2 rows of the first, none of the empty one,
    2 of the last; row order is request by request, block r before block 3-r."""
    layout = build_torch_layout((3, 0, 4), cp_size=2, strategy="zigzag_pad", rows=5)
    assert layout.loads == (4, 4)
    # rank 0: request 0 blocks 0,3 -> tokens 0, pad(3); request 2 blocks 0,3 -> tokens 0, 3; then alignment padding
    assert layout.request_id.tolist() == [[0, -1, 2, 2, -1], [0, 0, 2, 2, -1]]
    assert layout.position.tolist() == [[0, 0, 0, 3, 0], [1, 2, 1, 2, 0]]


def test_layout_takes_arrays_and_tensors_like_tuples() -> None:
    import numpy as np

    want = build_torch_layout((7, 30, 2), cp_size=3, strategy="zigzag_pad")
    for given in (np.array([7, 30, 2]), torch.tensor([7, 30, 2]), [7, 30, 2]):
        got = build_torch_layout(given, cp_size=3, strategy="zigzag_pad")
        assert got.extend_seq_lens == (7, 30, 2) and got.loads == want.loads
        assert torch.equal(got.request_id, want.request_id) and torch.equal(got.dest, want.dest)
