"""impl/layout.py (vectorised torch) against reference.build_layout: the same (request, token) in every row."""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.impl.checks import STRATEGIES
from cpgraph.impl.layout import build_torch_layout, gather, shard


@st.composite
def layouts(draw: st.DrawFn) -> tuple[tuple[int, ...], int, str, int]:
    """Lengths, cp_size, strategy and extra padding rows, drawn next to each other so failures shrink small."""
    p = draw(st.integers(1, 8))
    lengths = tuple(draw(st.lists(st.integers(0, 90), min_size=1, max_size=8)))
    return lengths, p, draw(st.sampled_from(STRATEGIES)), draw(st.integers(0, 5))


@given(case=layouts())
@example(case=((1534, 161, 353), 4, "zigzag", 7))
@example(case=((0, 0), 3, "zigzag", 0))
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


def test_layout_refuses_instead_of_truncating() -> None:
    with pytest.raises(ValueError, match=r"layout needs 513 rows on rank 0 .* but 512 rows are available"):
        build_torch_layout((1534, 161, 353), cp_size=4, rows=512)


def test_layout_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="extend_seq_lens must be a non-empty sequence"):
        build_torch_layout((), cp_size=2)
    with pytest.raises(ValueError, match="cp_size must be an int >= 1, got 0"):
        build_torch_layout((4,), cp_size=0)
    with pytest.raises(ValueError, match="strategy must be one of"):
        build_torch_layout((4,), cp_size=2, strategy="ring")
    with pytest.raises(ValueError, match="rows must be an int >= 0, got -1"):
        build_torch_layout((4,), cp_size=2, rows=-1)
    layout = build_torch_layout((4, 4), cp_size=2)
    with pytest.raises(ValueError, match="hidden has 7 rows but the layout holds 8 tokens"):
        shard(torch.zeros(7, 2), layout)
