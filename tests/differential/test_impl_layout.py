"""impl/layout.py (vectorised torch) against reference.build_layout: the same (request, token) in every row.

Every strategy id the reference exposes is compared (``cpgraph.reference.validate.STRATEGIES``); impl's index
builders are keyed by the same ids and must know each of them. Batches with decodes (``is_prefilling``) are drawn
for the strategies that place them (the dual_chunk_swap rows).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.impl.checks import STRATEGY_IDS
from cpgraph.impl.formulas import DECODE_STRATEGIES
from cpgraph.impl.layout import BUILDERS, build_torch_layout, gather, shard
from cpgraph.reference.strategies import DUAL_CHUNK_SWAP, STRATEGY_TABLE
from cpgraph.reference.validate import STRATEGIES


def test_impl_builders_cover_every_reference_strategy() -> None:
    assert tuple(BUILDERS) == STRATEGY_IDS
    assert set(STRATEGIES) <= set(BUILDERS)
    assert DECODE_STRATEGIES == DUAL_CHUNK_SWAP  # the same rows place decodes


Case = tuple[tuple[int, ...], int, str, int, "tuple[bool, ...] | None"]


@st.composite
def layouts(draw: st.DrawFn) -> Case:
    """Lengths, cp_size, strategy, extra padding rows and (for the strategies that place decodes, mostly) which
    requests are prefills, drawn next to each other so failures shrink small."""
    p = draw(st.integers(1, 8))
    lengths = tuple(draw(st.lists(st.integers(0, 90), min_size=1, max_size=8)))
    strategy = draw(st.sampled_from(STRATEGIES))
    flags = None
    if STRATEGY_TABLE[strategy].decodes is not None and draw(st.integers(0, 3)):
        flags = tuple(draw(st.lists(st.booleans(), min_size=len(lengths), max_size=len(lengths))))
    return lengths, p, strategy, draw(st.integers(0, 5)), flags


@given(case=layouts())
@example(case=((1534, 161, 353), 4, "zigzag", 7, None))
@example(case=((0, 0), 3, "zigzag", 0, None))
@example(case=((5, 0, 13), 2, "dual_chunk_swap", 3, None))
@example(case=((300, 1, 0, 1, 1, 3), 4, "dual_chunk_swap", 0, (True, False, False, False, False, True)))
@example(case=((300, 1, 0, 1, 1, 3), 4, "dual_chunk_swap_replicated", 1, (True, False, False, False, False, True)))
@example(case=((49, 50, 1, 3), 4, "dual_chunk_swap_dcp", 2, (True, True, False, True)))
def test_impl_layout_agrees_with_reference_row_by_row(case: Case) -> None:
    lengths, p, strategy, extra, flags = case
    ref = reference.build_layout(lengths, cp_size=p, strategy=strategy, is_prefilling=flags)
    got = build_torch_layout(lengths, cp_size=p, rows=ref.rows + extra, strategy=strategy, is_prefilling=flags)
    assert got.loads == ref.loads == reference.rank_loads(lengths, cp_size=p, strategy=strategy, is_prefilling=flags)
    request_id, position = got.request_id.tolist(), got.position.tolist()
    for rank in range(p):
        want = [ref.token_at(rank, row) for row in range(ref.rows)] + [None] * extra
        have = [None if i < 0 else (i, k) for i, k in zip(request_id[rank], position[rank])]
        assert have == want, (lengths, p, strategy, flags, rank)


def _copies(lengths: tuple[int, ...], p: int, strategy: str, flags: tuple[bool, ...] | None) -> list[int]:
    """How many ranks hold request i, by the rule stated in the strategy table's docstring (not by impl's code):
    a decode, or under dcp a prefill with (2P-1) * ceil(L/2P) >= L, is copied whole to every rank (replicated,
    dcp) or to one (round-robin); everything else is split, each token on one rank."""
    out = []
    for i, length in enumerate(lengths):
        decode = flags is not None and not flags[i]
        short = strategy == "dual_chunk_swap_dcp" and (2 * p - 1) * -(-length // (2 * p)) >= length
        copied = decode or short
        out.append(p if copied and strategy != "dual_chunk_swap" else 1)
    return out


@given(case=layouts())
@example(case=((300, 1, 0, 1), 4, "dual_chunk_swap_replicated", 0, (True, False, False, False)))
def test_every_token_is_placed_exactly_once_per_copy(case: Case) -> None:
    """Counting the (request, token) of every row: a split token once, a replicated one once on every rank;
    the rows a rank holds are the reference's rank_loads; ``dest`` reads each token from a row that holds it."""
    lengths, p, strategy, extra, flags = case
    layout = build_torch_layout(lengths, cp_size=p, strategy=strategy, is_prefilling=flags)
    layout = build_torch_layout(lengths, cp_size=p, rows=layout.rows + extra, strategy=strategy, is_prefilling=flags)
    assert layout.loads == reference.rank_loads(lengths, cp_size=p, strategy=strategy, is_prefilling=flags)
    request_id, position = layout.request_id.tolist(), layout.position.tolist()
    seen: dict[tuple[int, int], list[int]] = {}
    for rank in range(p):
        real = [(i, k) for i, k in zip(request_id[rank], position[rank]) if i >= 0]
        assert len(real) == layout.loads[rank]
        assert all(i < 0 for i in request_id[rank][len(real):])  # occupied rows first, padding after
        for slot in real:
            seen.setdefault(slot, []).append(rank)
    copies = _copies(lengths, p, strategy, flags)
    want = {(i, k): copies[i] for i, length in enumerate(lengths) for k in range(length)}
    assert {slot: len(ranks) for slot, ranks in seen.items()} == want
    assert all(len(set(ranks)) == len(ranks) for ranks in seen.values())  # never twice on one rank
    assert layout.copies == sum((c - 1) * length for c, length in zip(copies, lengths))
    token = 0
    flat_id, flat_pos = layout.request_id.flatten().tolist(), layout.position.flatten().tolist()
    for i, length in enumerate(lengths):
        for k in range(length):
            row = int(layout.dest[token])
            assert (flat_id[row], flat_pos[row]) == (i, k)
            token += 1
    for t, row in zip(layout.copy_token.tolist(), layout.copy_dest.tolist()):
        i = next(j for j in range(len(lengths)) if sum(lengths[: j + 1]) > t)
        assert (flat_id[row], flat_pos[row]) == (i, t - sum(lengths[:i]))


@given(case=layouts())
def test_shard_then_gather_returns_every_token_in_order(case: Case) -> None:
    lengths, p, strategy, extra, flags = case
    layout = build_torch_layout(lengths, cp_size=p, strategy=strategy, is_prefilling=flags)
    layout = build_torch_layout(lengths, cp_size=p, rows=layout.rows + extra, strategy=strategy, is_prefilling=flags)
    hidden = torch.arange(sum(lengths) * 3, dtype=torch.float32).view(-1, 3) + 1
    per_rank = shard(hidden, layout)
    assert per_rank.shape == (p, layout.rows, 3)
    assert torch.equal(gather(per_rank, layout), hidden)
    padding = (layout.request_id < 0)
    assert torch.all(per_rank[padding] == 0)  # padding rows are zero, real rows all non-zero
    assert torch.all(per_rank[~padding] != 0)
    assert int((~padding).sum()) == sum(lengths) + layout.copies  # every copy of every token has a row, only they
    for t, row in zip(layout.copy_token.tolist(), layout.copy_dest.tolist()):  # a further copy holds its token
        assert torch.equal(per_rank.view(-1, 3)[row], hidden[t])


def test_layout_refuses_instead_of_truncating() -> None:
    with pytest.raises(ValueError, match=r"layout needs 513 rows on rank 0 .* but 512 rows are available"):
        build_torch_layout((1534, 161, 353), cp_size=4, rows=512)


def test_layout_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="extend_seq_lens must be a non-empty sequence"):
        build_torch_layout((), cp_size=2)
    with pytest.raises(ValueError, match="cp_size must be an int >= 1, got 0"):
        build_torch_layout((4,), cp_size=0)
    with pytest.raises(ValueError, match="strategy must be one of zigzag, interleave, contiguous, dual_chunk_swap, "
                                         "dual_chunk_swap_replicated, dual_chunk_swap_dcp; got 'ring'"):
        build_torch_layout((4,), cp_size=2, strategy="ring")
    with pytest.raises(ValueError, match="strategy must be one of .*; got None"):
        build_torch_layout((4,), cp_size=2, strategy=None)
    with pytest.raises(ValueError, match="rows must be an int >= 0, got -1"):
        build_torch_layout((4,), cp_size=2, rows=-1)
    layout = build_torch_layout((4, 4), cp_size=2)
    with pytest.raises(ValueError, match="hidden has 7 rows but the layout holds 8 tokens"):
        shard(torch.zeros(7, 2), layout)


def test_dual_chunk_swap_layout_by_hand() -> None:
    """P = 2, one request of 5 tokens: 4 chunks of c = 2: [0, 2) [2, 4) [4, 5) and an empty one. Rank 0 owns chunks 0
    and 3 (tokens 0, 1); rank 1 owns chunks 1 and 2 (tokens 2, 3, then 4). Loads (2, 3); no in-layout padding."""
    layout = build_torch_layout((5,), cp_size=2, strategy="dual_chunk_swap")
    assert layout.loads == (2, 3) and layout.rows == 3
    assert layout.request_id.tolist() == [[0, 0, -1], [0, 0, 0]]
    assert layout.position.tolist() == [[0, 1, 0], [2, 3, 4]]
    assert layout.dest.tolist() == [0, 1, 3, 4, 5]  # token k's flat row rank*rows + row
    assert layout.copies == 0


def test_dual_chunk_swap_layout_with_a_decode_by_hand() -> None:
    """P = 2: a prefill of 3 (c = 1: rank 0 token 0; rank 1 tokens 1, 2), a one-token decode, a prefill of 4 (rank 0
    tokens 0, 3; rank 1 tokens 1, 2). Row order is request by request on every rank."""
    flags = (True, False, True)
    dealt = build_torch_layout((3, 1, 4), cp_size=2, strategy="dual_chunk_swap", rows=5, is_prefilling=flags)
    assert dealt.loads == (4, 4)  # the decode dealt to rank 0 (the first copied request)
    assert dealt.request_id.tolist() == [[0, 1, 2, 2, -1], [0, 0, 2, 2, -1]]
    assert dealt.position.tolist() == [[0, 0, 0, 3, 0], [1, 2, 1, 2, 0]]
    assert dealt.copies == 0
    copied = build_torch_layout((3, 1, 4), cp_size=2, strategy="dual_chunk_swap_replicated", rows=5,
                                is_prefilling=flags)
    assert copied.loads == (4, 5)  # the decode on both ranks
    assert copied.request_id.tolist() == [[0, 1, 2, 2, -1], [0, 0, 1, 2, 2]]
    assert copied.position.tolist() == [[0, 0, 0, 3, 0], [1, 2, 0, 1, 2]]
    assert copied.dest.tolist()[3] == 1  # the decode's token (packed index 3) is read from rank 0, row 1
    assert (copied.copy_token.tolist(), copied.copy_dest.tolist()) == ([3], [7])  # and copied to rank 1, row 2


def test_decodes_need_a_strategy_that_places_them_and_flags_are_checked() -> None:
    with pytest.raises(ValueError, match=r"is_prefilling\[1\] is False but strategy 'zigzag' lays out prefills only; "
                                         r"a batch with decodes needs one of dual_chunk_swap, "
                                         r"dual_chunk_swap_replicated, dual_chunk_swap_dcp"):
        build_torch_layout((40, 1), cp_size=2, is_prefilling=(True, False))
    with pytest.raises(ValueError, match=r"is_prefilling must hold one bool per request \(2\), got 3"):
        build_torch_layout((40, 1), cp_size=2, strategy="dual_chunk_swap", is_prefilling=(True, False, True))
    with pytest.raises(TypeError, match=r"is_prefilling\[0\] must be a bool"):
        build_torch_layout((40, 1), cp_size=2, strategy="dual_chunk_swap", is_prefilling=(1, 0))
    with pytest.raises(TypeError, match=r"got dtype torch.int64"):
        build_torch_layout((40, 1), cp_size=2, strategy="dual_chunk_swap", is_prefilling=torch.tensor([1, 0]))
    want = build_torch_layout((40, 1), cp_size=2, strategy="dual_chunk_swap", is_prefilling=(True, False))
    got = build_torch_layout((40, 1), cp_size=2, strategy="dual_chunk_swap", is_prefilling=torch.tensor([True, False]))
    assert torch.equal(got.request_id, want.request_id) and got.is_prefilling == (True, False)


def test_layout_takes_arrays_and_tensors_like_tuples() -> None:
    import numpy as np

    want = build_torch_layout((7, 30, 2), cp_size=3, strategy="dual_chunk_swap")
    for given in (np.array([7, 30, 2]), torch.tensor([7, 30, 2]), [7, 30, 2]):
        got = build_torch_layout(given, cp_size=3, strategy="dual_chunk_swap")
        assert got.extend_seq_lens == (7, 30, 2) and got.loads == want.loads
        assert torch.equal(got.request_id, want.request_id) and torch.equal(got.dest, want.dest)
