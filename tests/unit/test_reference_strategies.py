"""reference/strategies.py: the strategy table, each row against an independent count, and the capture rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.reference.strategies import STRATEGY_TABLE, capture_lengths, strategy_row
from cpgraph.spec.strategies import STRATEGIES as SPEC_STRATEGIES


def _zigzag_pad_by_counting(lengths: list[int], cp_size: int) -> tuple[int, ...]:
    # Independent of the table: pad every request token by token, then deal its 2P equal blocks out.
    rows = [0] * cp_size
    for length in lengths:
        padded = length
        while padded % (2 * cp_size):
            padded += 1
        block = padded // (2 * cp_size)
        for j in range(2 * cp_size):
            owner = j if j < cp_size else 2 * cp_size - 1 - j
            rows[owner] += block
    return tuple(rows)


@given(st.integers(1, 64), st.lists(st.integers(0, 3000), min_size=1, max_size=6))
def test_zigzag_pad_loads_equal_an_independent_count(cp_size: int, lengths: list[int]) -> None:
    assert reference.rank_loads(lengths, cp_size=cp_size, strategy="zigzag_pad") == _zigzag_pad_by_counting(
        lengths, cp_size
    )


@given(st.integers(1, 16), st.lists(st.integers(0, 200), min_size=1, max_size=4))
def test_zigzag_pad_layout_places_every_token_once_and_pads_inside_requests(cp_size: int, lengths: list[int]) -> None:
    layout = reference.build_layout(lengths, cp_size=cp_size, strategy="zigzag_pad")
    placed = layout.placement()
    assert sorted(placed) == [(i, k) for i, n in enumerate(lengths) for k in range(n)]
    for (request, token), (rank, row) in placed.items():
        assert layout.token_at(rank, row) == (request, token)
    assert layout.loads == _zigzag_pad_by_counting(lengths, cp_size)


def test_zigzag_pad_worked_example() -> None:
    # P = 4: 2P = 8; L = 9 pads to 16 (blocks of 2), L = 16 stays (blocks of 2): 4 + 4 rows a rank.
    assert reference.rank_loads([9, 16], cp_size=4, strategy="zigzag_pad") == (8, 8, 8, 8)
    assert reference.default_align_size(cp_size=4, strategy="zigzag_pad") == 8


def test_every_strategy_id_has_a_spec_row_with_the_same_alignment() -> None:
    assert tuple(STRATEGY_TABLE) == tuple(SPEC_STRATEGIES)
    for sid, row in STRATEGY_TABLE.items():
        assert SPEC_STRATEGIES[sid].align_factor == row.align_factor


@pytest.mark.parametrize("bad", ["zigzagpad", "", None, 3, "ZIGZAG"])
def test_an_unknown_strategy_id_is_an_error_everywhere(bad: object) -> None:
    with pytest.raises(ValueError, match="strategy must be one of zigzag, interleave, contiguous, zigzag_pad"):
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
    assert {row.id for row in named} == {"zigzag", "contiguous", "zigzag_pad"}
    for row in named:
        assert row.request_loads is not None
        for p in (1, 2, 3, 4, 8):
            for lengths in ((1,), (5, 9), (2 * p, 17, 3, 40), (0, 7)):
                each = [row.request_loads(x, cp_size=p) for x in lengths]
                assert row.batch_loads(lengths, p) == tuple(map(sum, zip(*each)))
