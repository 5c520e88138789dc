"""reference/strategies.py: the strategy table, each row against an independent count, and the capture rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.reference.strategies import STRATEGY_TABLE, capture_lengths, strategy_row
from cpgraph.spec.strategies import STRATEGIES as SPEC_STRATEGIES


def _dual_chunk_swap_by_counting(
    lengths: list[int], flags: list[bool], cp_size: int, decodes: str
) -> tuple[int, ...]:
    # Independent of the table: walk the batch as vLLM's PCPManager does, rank by rank, chunk by chunk
    # (2P chunks of ceil(L/2P), the last ones short or empty), dealing or copying what is not split.
    chunks = 2 * cp_size
    rows = [0] * cp_size
    for rank in range(cp_size):
        ordinal = 0
        for length, prefill in zip(lengths, flags):
            if length == 0:
                continue
            c = (length + chunks - 1) // chunks
            copied = not prefill or (decodes == "dcp" and (chunks - 1) * c >= length)
            if not copied:
                for j in (rank, chunks - 1 - rank):
                    rows[rank] += max(0, min(c, length - j * c))
            elif decodes == "round_robin":
                rows[rank] += length if ordinal % cp_size == rank else 0
                ordinal += 1
            else:
                rows[rank] += length
    return tuple(rows)


_DCS = {"dual_chunk_swap": "round_robin", "dual_chunk_swap_replicated": "replicated", "dual_chunk_swap_dcp": "dcp"}


@given(
    st.sampled_from(sorted(_DCS)), st.integers(1, 16),
    st.lists(st.tuples(st.integers(0, 3000), st.booleans()), min_size=1, max_size=6),
)
def test_dual_chunk_swap_loads_equal_an_independent_count(strategy: str, cp_size: int, batch: list[tuple[int, bool]]) -> None:
    lengths, flags = [x for x, _ in batch], [f for _, f in batch]
    want = _dual_chunk_swap_by_counting(lengths, flags, cp_size, _DCS[strategy])
    assert reference.rank_loads(lengths, cp_size=cp_size, strategy=strategy, is_prefilling=flags) == want
    if all(flags):
        assert reference.rank_loads(lengths, cp_size=cp_size, strategy=strategy) == want


@given(
    st.sampled_from(sorted(_DCS)), st.integers(1, 8),
    st.lists(st.tuples(st.integers(0, 200), st.booleans()), min_size=1, max_size=4),
)
def test_dual_chunk_swap_layout_places_every_token_of_a_split_request_once(
    strategy: str, cp_size: int, batch: list[tuple[int, bool]]
) -> None:
    lengths, flags = [x for x, _ in batch], [f for _, f in batch]
    layout = reference.build_layout(lengths, cp_size=cp_size, strategy=strategy, is_prefilling=flags)
    assert layout.loads == _dual_chunk_swap_by_counting(lengths, flags, cp_size, _DCS[strategy])
    seen: dict[tuple[int, int], int] = {}
    for rank in range(cp_size):
        for row in range(layout.loads[rank]):
            slot = layout.token_at(rank, row)
            assert slot is not None
            seen[slot] = seen.get(slot, 0) + 1
    assert sorted(seen) == [(i, k) for i, n in enumerate(lengths) for k in range(n)]
    for (request, _), copies in seen.items():  # a copied request is on every rank, a split one once
        split = copies == 1
        assert split or copies == cp_size


def test_dual_chunk_swap_worked_examples() -> None:
    # vLLM's own numbers: L = 300 at P = 4 is cut into 8 chunks of 38 (the last one 34).
    assert reference.rank_loads([300], cp_size=4, strategy="dual_chunk_swap") == (72, 76, 76, 76)
    assert reference.rank_loads([3], cp_size=4, strategy="dual_chunk_swap") == (1, 1, 1, 0)
    assert max(reference.rank_loads([170, 161, 153], cp_size=4, strategy="dual_chunk_swap")) == 126
    assert max(reference.rank_loads([64] * 7, cp_size=4, strategy="dual_chunk_swap")) == 112
    # decodes: dealt one rank each (0.32 on), copied (up to 0.31), and dcp copies the short prefill 3 too
    mixed = dict(extend_seq_lens=[300, 1, 1, 3], cp_size=4, is_prefilling=[True, False, False, True])
    assert reference.rank_loads(strategy="dual_chunk_swap", **mixed) == (74, 78, 77, 76)  # type: ignore[arg-type]
    assert reference.rank_loads(strategy="dual_chunk_swap_replicated", **mixed) == (75, 79, 79, 78)  # type: ignore[arg-type]
    assert reference.rank_loads(strategy="dual_chunk_swap_dcp", **mixed) == (77, 81, 81, 81)  # type: ignore[arg-type]
    assert reference.default_align_size(cp_size=4, strategy="dual_chunk_swap") == 1


@pytest.mark.parametrize(
    "flags, error, match",
    [
        ([True], ValueError, r"is_prefilling must hold one bool per request \(2\), got 1"),
        ([True, 1], TypeError, r"is_prefilling\[1\] must be a bool"),
        ("TF", TypeError, "is_prefilling must be None or a sequence of 2 bools"),
    ],
)
def test_a_bad_is_prefilling_names_the_argument(flags: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        reference.rank_loads([8, 1], cp_size=2, strategy="dual_chunk_swap", is_prefilling=flags)


@pytest.mark.parametrize("strategy", ["zigzag", "interleave", "contiguous"])
def test_a_decode_under_a_prefill_only_strategy_is_an_error(strategy: str) -> None:
    with pytest.raises(ValueError, match=f"is_prefilling\\[1\\] is False but strategy '{strategy}' lays out prefills only"):
        reference.rank_loads([8, 1], cp_size=2, strategy=strategy, is_prefilling=[True, False])
    assert reference.rank_loads([8, 1], cp_size=2, strategy=strategy, is_prefilling=[True, True]) == reference.rank_loads(
        [8, 1], cp_size=2, strategy=strategy
    )


def test_every_strategy_id_has_a_spec_row_with_the_same_alignment() -> None:
    assert tuple(STRATEGY_TABLE) == tuple(SPEC_STRATEGIES)
    for sid, row in STRATEGY_TABLE.items():
        assert SPEC_STRATEGIES[sid].align_factor == row.align_factor


@pytest.mark.parametrize("bad", ["zigzagpad", "", None, 3, "ZIGZAG"])
def test_an_unknown_strategy_id_is_an_error_everywhere(bad: object) -> None:
    with pytest.raises(ValueError, match="strategy must be one of zigzag, interleave, contiguous, dual_chunk_swap, dual_chunk_swap_replicated, dual_chunk_swap_dcp"):
        strategy_row(bad)
    with pytest.raises(ValueError, match="strategy must be one of"):
        reference.rank_loads([8], cp_size=2, strategy=bad)
    with pytest.raises(ValueError, match="strategy must be one of"):
        reference.build_layout([8], cp_size=2, strategy=bad)
    with pytest.raises(ValueError, match="strategy must be one of"):
        reference.default_align_size(cp_size=2, strategy=bad)  # type: ignore[arg-type]


def test_capture_above_the_context_length_uses_context_length_requests() -> None:
    assert capture_lengths(4128, context_len=2047) == (2047, 2047, 34)
    assert capture_lengths(4094, context_len=2047) == (2047, 2047)
    assert capture_lengths(2047, context_len=2047) == (2047,)
    assert capture_lengths(4128) == (4128,)
    # ctx 2047, P = 4, B = 4128: 1040 rows, where one request of B would record 1032.
    assert reference.capture_local_tokens(4128, cp_size=4, align_size=8, context_len=2047) == 1040
    assert reference.capture_local_tokens(4128, cp_size=4, align_size=8) == 1032


@pytest.mark.parametrize("bad", [0, -1])
def test_context_len_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError, match="context_len must be an int >= 1"):
        reference.capture_local_tokens(64, cp_size=2, align_size=4, context_len=bad)


@given(st.sampled_from(tuple(STRATEGY_TABLE)), st.integers(1, 32), st.lists(st.integers(1, 2000), min_size=1, max_size=6))
def test_headroom_bound_holds_for_every_strategy(strategy: str, cp_size: int, lengths: list[int]) -> None:
    n = sum(lengths)
    bound = reference.headroom_bound(n, cp_size=cp_size, max_requests=len(lengths), strategy=strategy)
    assert max(reference.rank_loads(lengths, cp_size=cp_size, strategy=strategy)) <= bound


def test_a_row_that_names_its_request_loads_sums_them_rank_by_rank() -> None:
    """The judge's memoised loads rest on this column: batch_loads = the rank-wise sum of request_loads."""
    from cpgraph.reference.strategies import STRATEGY_TABLE

    named = [row for row in STRATEGY_TABLE.values() if row.request_loads is not None]
    assert {row.id for row in named} == {"zigzag", "contiguous", *_DCS}
    for row in named:
        assert row.request_loads is not None
        for p in (1, 2, 3, 4, 8):
            for lengths in ((1,), (5, 9), (2 * p, 17, 3, 40), (0, 7)):
                each = [row.request_loads(x, cp_size=p) for x in lengths]
                assert row.batch_loads(lengths, p) == tuple(map(sum, zip(*each)))
