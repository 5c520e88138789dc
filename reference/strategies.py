"""The layout strategies as one table: one row per strategy id, read by everything concrete.

A row states, for its strategy:
- ``align_factor``: upstream's default alignment is ``align_factor * P`` rows;
- ``rank_rows``: the rank token order, i.e. for each rank the (request, token) of every physical row in
  row order, with ``None`` for a padding row *inside* the layout (zigzag_pad pads each request);
- ``batch_loads``: the rows each rank occupies for a batch (real tokens, plus in-layout padding);
- ``request_excess``: the most any one request can put on a rank beyond its mean, as P*l_r - L (so that
  P * max_r l_r <= N + R * excess over R requests), or ``None`` where loads depend on the total only;
- ``request_loads``: one request's loads, where ``batch_loads`` is their rank-wise sum (``None`` where the
  loads depend on the whole batch, as interleave's do).

The capture capacity of every strategy is one rule (``capture_lengths`` then the strategy's rows), so it
is not a column. Adding a strategy adds one row here, one in ``spec/strategies.py`` and one in
``impl/`` (see CONTRIBUTING.md); an unknown id is a ValueError everywhere, never a silent default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

Slot = tuple[int, int]  # (request, token) or (rank, row)
RankRows = list[list[Slot | None]]


def zigzag_block_lens(length: int, *, cp_size: int) -> tuple[int, ...]:
    """The 2P block lengths of one sequence; the remainder goes to the leading blocks."""
    blocks = 2 * cp_size
    q, m = divmod(length, blocks)
    return tuple(q + (1 if j < m else 0) for j in range(blocks))


def zigzag_owned_blocks(rank: int, *, cp_size: int) -> tuple[int, int]:
    """Rank r owns one early and one late block: (r, 2P-1-r)."""
    return (rank, 2 * cp_size - 1 - rank)


def zigzag_request_loads(length: int, *, cp_size: int) -> tuple[int, ...]:
    """Tokens of one sequence held by each rank under zigzag."""
    sizes = zigzag_block_lens(length, cp_size=cp_size)
    return tuple(sum(sizes[b] for b in zigzag_owned_blocks(r, cp_size=cp_size)) for r in range(cp_size))


def zigzag_pad_request_rows(length: int, *, cp_size: int) -> tuple[int, ...]:
    """Rows of one sequence on each rank when it is first padded up to a multiple of 2P: 2*ceil(L/2P)."""
    block = -(-length // (2 * cp_size))
    return (2 * block,) * cp_size


def contiguous_request_loads(length: int, *, cp_size: int) -> tuple[int, ...]:
    """Tokens of one sequence held by each rank under contiguous sharding."""
    return tuple((length * (r + 1)) // cp_size - (length * r) // cp_size for r in range(cp_size))


def _per_request(request_loads: Callable[..., tuple[int, ...]]) -> Callable[[tuple[int, ...], int], tuple[int, ...]]:
    def batch_loads(lengths: tuple[int, ...], cp_size: int) -> tuple[int, ...]:
        loads = [0] * cp_size
        for length in lengths:
            for r, load in enumerate(request_loads(length, cp_size=cp_size)):
                loads[r] += load
        return tuple(loads)

    return batch_loads


def _interleave_loads(lengths: tuple[int, ...], cp_size: int) -> tuple[int, ...]:
    total = sum(lengths)
    return tuple(total // cp_size + (1 if r < total % cp_size else 0) for r in range(cp_size))


def _zigzag_rows(lengths: tuple[int, ...], cp_size: int) -> RankRows:
    ranks: RankRows = [[] for _ in range(cp_size)]
    for i, length in enumerate(lengths):
        sizes = zigzag_block_lens(length, cp_size=cp_size)
        starts = [sum(sizes[:j]) for j in range(len(sizes))]
        for r in range(cp_size):
            for b in zigzag_owned_blocks(r, cp_size=cp_size):
                ranks[r].extend((i, k) for k in range(starts[b], starts[b] + sizes[b]))
    return ranks


def _zigzag_pad_rows(lengths: tuple[int, ...], cp_size: int) -> RankRows:
    # Each request is padded to 2P*c tokens (c = ceil(L/2P)); block j is [j*c, (j+1)*c); positions >= L pad.
    ranks: RankRows = [[] for _ in range(cp_size)]
    for i, length in enumerate(lengths):
        c = -(-length // (2 * cp_size))
        for r in range(cp_size):
            for b in zigzag_owned_blocks(r, cp_size=cp_size):
                ranks[r].extend((i, k) if k < length else None for k in range(b * c, (b + 1) * c))
    return ranks


def _contiguous_rows(lengths: tuple[int, ...], cp_size: int) -> RankRows:
    ranks: RankRows = [[] for _ in range(cp_size)]
    for i, length in enumerate(lengths):
        for r in range(cp_size):
            lo, hi = (length * r) // cp_size, (length * (r + 1)) // cp_size
            ranks[r].extend((i, k) for k in range(lo, hi))
    return ranks


def _interleave_rows(lengths: tuple[int, ...], cp_size: int) -> RankRows:
    ranks: RankRows = [[] for _ in range(cp_size)]
    t = 0
    for i, length in enumerate(lengths):
        for k in range(length):
            ranks[t % cp_size].append((i, k))
            t += 1
    return ranks


@dataclass(frozen=True)
class StrategyRow:
    """One layout strategy (see the module docstring for each column)."""

    id: str
    align_factor: int
    rank_rows: Callable[[tuple[int, ...], int], RankRows]
    batch_loads: Callable[[tuple[int, ...], int], tuple[int, ...]]
    request_excess: Callable[[int], int] | None
    request_loads: Callable[..., tuple[int, ...]] | None = None

    def align_size(self, cp_size: int) -> int:
        """Upstream's default alignment for this strategy at ``cp_size`` ranks."""
        return self.align_factor * cp_size


STRATEGY_TABLE: Mapping[str, StrategyRow] = MappingProxyType(
    {
        "zigzag": StrategyRow(
            "zigzag", 2, _zigzag_rows, _per_request(zigzag_request_loads), lambda p: p - 1, zigzag_request_loads
        ),
        "interleave": StrategyRow("interleave", 1, _interleave_rows, _interleave_loads, None),
        "contiguous": StrategyRow(
            "contiguous", 1, _contiguous_rows, _per_request(contiguous_request_loads), lambda p: p - 1,
            contiguous_request_loads,
        ),
        "zigzag_pad": StrategyRow(
            "zigzag_pad", 2, _zigzag_pad_rows, _per_request(zigzag_pad_request_rows), lambda p: 2 * p - 1,
            zigzag_pad_request_rows,
        ),
    }
)


def strategy_row(strategy: object) -> StrategyRow:
    """The table row for ``strategy``; ValueError names the allowed ids."""
    if not isinstance(strategy, str) or strategy not in STRATEGY_TABLE:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGY_TABLE)}; got {strategy!r}")
    return STRATEGY_TABLE[strategy]


def capture_lengths(bucket: int, *, context_len: int | None = None) -> tuple[int, ...]:
    """The request lengths a bucket of B tokens is captured with: one request of B tokens, or, when B is
    above the model's context length, ``context_len``-token requests and one with the rest (upstream)."""
    if context_len is None or bucket <= context_len:
        return (bucket,)
    full, rest = divmod(bucket, context_len)
    return (context_len,) * full + ((rest,) if rest else ())
