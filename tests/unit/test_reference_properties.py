"""Properties of the reference stated in docs/semantics.md, drawn by Hypothesis."""

from hypothesis import given
from hypothesis import strategies as st

from cpgraph.reference import (
    align_up,
    build_layout,
    capture_local_tokens,
    headroom_bound,
    headroom_local_tokens,
    rank_loads,
    required_local_tokens,
    select_replay_bucket,
    zigzag_request_loads,
)

cp_sizes = st.integers(min_value=1, max_value=16)
lengths = st.lists(st.integers(min_value=0, max_value=600), min_size=1, max_size=8).map(tuple)
strategies_ = st.sampled_from(("zigzag", "interleave", "contiguous"))


@given(lens=lengths, cp_size=cp_sizes, strategy=strategies_)
def test_loads_sum_to_the_batch_tokens(lens: tuple[int, ...], cp_size: int, strategy: str) -> None:
    assert sum(rank_loads(lens, cp_size=cp_size, strategy=strategy)) == sum(lens)


@given(lens=lengths, cp_size=cp_sizes, strategy=strategies_, extra=st.integers(0, 5))
def test_layout_is_a_bijection_between_tokens_and_real_rows(
    lens: tuple[int, ...], cp_size: int, strategy: str, extra: int
) -> None:
    layout = build_layout(lens, cp_size=cp_size, strategy=strategy)
    layout = build_layout(lens, cp_size=cp_size, strategy=strategy, rows=layout.rows + extra)
    assert layout.loads == rank_loads(lens, cp_size=cp_size, strategy=strategy)
    placement = layout.placement()
    assert len(placement) == sum(lens)
    for (request, token), (rank, row) in placement.items():
        assert layout.token_at(rank, row) == (request, token)
    pads = sum(layout.token_at(r, row) is None for r in range(cp_size) for row in range(layout.rows))
    assert pads == cp_size * layout.rows - sum(lens)


@given(length=st.integers(0, 10_000), cp_size=cp_sizes)
def test_busiest_rank_holds_ceil_share_of_one_request(length: int, cp_size: int) -> None:
    assert max(zigzag_request_loads(length, cp_size=cp_size)) == -(-length // cp_size)


@given(num_tokens=st.integers(1, 10_000), cp_size=cp_sizes, align=st.integers(1, 32))
def test_capture_capacity_is_aligned_ceil_share(num_tokens: int, cp_size: int, align: int) -> None:
    expected = align_up(-(-num_tokens // cp_size), align)
    assert capture_local_tokens(num_tokens, cp_size=cp_size, align_size=align) == expected


@given(lens=lengths, cp_size=cp_sizes, slack_requests=st.integers(0, 3), slack_tokens=st.integers(0, 50))
def test_headroom_capacity_fits_every_smaller_batch(
    lens: tuple[int, ...], cp_size: int, slack_requests: int, slack_tokens: int
) -> None:
    n = sum(lens) + slack_tokens
    if n == 0:
        return
    r = len(lens) + slack_requests
    assert max(rank_loads(lens, cp_size=cp_size)) <= headroom_bound(n, cp_size=cp_size, max_requests=r)
    a = 2 * cp_size
    assert required_local_tokens(lens, cp_size=cp_size, align_size=a) <= headroom_local_tokens(
        n, cp_size=cp_size, align_size=a, max_requests=r
    )


@given(q=st.lists(st.integers(0, 40), min_size=1, max_size=6), cp_size=st.integers(2, 16))
def test_headroom_bound_is_hit_when_every_length_is_p_plus_1_mod_2p(q: list[int], cp_size: int) -> None:
    lens = tuple(2 * cp_size * k + cp_size + 1 for k in q)
    assert max(rank_loads(lens, cp_size=cp_size)) == headroom_bound(sum(lens), cp_size=cp_size, max_requests=len(lens))


@st.composite
def selection_inputs(draw: st.DrawFn) -> tuple[int, int, tuple[int, ...], dict[int, int], int]:
    buckets = tuple(sorted(draw(st.sets(st.integers(1, 200), min_size=1, max_size=8))))
    capacities = {b: draw(st.integers(0, 60)) for b in buckets if draw(st.booleans())}
    return draw(st.integers(1, 150)), draw(st.integers(0, 60)), buckets, capacities, draw(st.integers(1, 3))


@given(selection_inputs())
def test_selection_is_the_least_fitting_bucket(case: tuple[int, int, tuple[int, ...], dict[int, int], int]) -> None:
    n, required, buckets, capacities, factor = case
    chosen = select_replay_bucket(
        num_tokens=n,
        required_local_tokens=required,
        capture_num_tokens=buckets,
        bucket_local_tokens=capacities,
        max_padding_factor=factor,
    )
    fits = [b for b in buckets if n <= b <= factor * n and capacities.get(b, -1) >= required]
    assert chosen == (min(fits) if fits else None)
