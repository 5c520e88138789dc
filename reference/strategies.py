"""The layout strategies as one table: one row per strategy id, read by everything concrete.

A row states, for its strategy:
- ``align_factor``: upstream's default alignment is ``align_factor * P`` rows;
- ``rank_spans``: the rank token order as spans, i.e. for each rank the runs (request, first token, stop) its
  physical rows hold, in row order from row 0 (``rank_rows`` expands them to one (request, token) per row; no
  strategy of the table leaves a padding row inside a layout);
- ``batch_loads``: the rows each rank occupies for a batch of prefills (they sum to the batch's tokens,
  except where a strategy copies a request to every rank);
- ``request_excess``: the most any one request can put on a rank beyond its mean, as P*l_r - L (so that
  P * max_r l_r <= N + R * excess over R requests), or ``None`` where loads depend on the total only;
- ``request_loads``: one request's loads, where ``batch_loads`` is their rank-wise sum (``None`` where the
  loads depend on the whole batch, as interleave's do);
- ``decodes``: where a request that is not prefilling goes (``None``: the strategy lays out prefills only,
  a decode in its batch is a ValueError): ``"replicated"`` (the whole query on every rank),
  ``"round_robin"`` (the k-th decode of the batch on rank k mod P), or ``"dcp"`` (replicated, and so is a
  prefill too short to fill all 2P chunks, (2P-1) * ceil(L/2P) >= L);
- ``mixed_spans``: the rank token order (as spans) of a batch that may carry decodes (``is_prefilling`` per
  request), for the rows whose ``decodes`` is not None (``mixed_rows`` expands it);
- ``cp_active``: the strategy's gate under a gated keying (``global``), whether a batch of these lengths and
  n tokens on P ranks takes the CP graph path at all; a batch that is not CP-active runs eagerly upstream,
  so a rank that admits it to the CP graph breaks ``admission_replay``. ``"blocks"`` (the default, the rule
  the project states for zigzag): P > 1, n >= 2P and every length >= 2P, so every one of a request's 2P
  blocks holds a token; ``"tokens"`` (interleave, as sglang's interleave strategy gates it): P > 1 and the
  lengths' sum >= P, so every rank holds a token of the batch. ``cp_active_rule`` states each in words.

vLLM's layout ("DualChunkSwap", Model Runner V2's PCPManager) is three rows, one per placement of its
decodes, as its releases and configurations place them: ``dual_chunk_swap_replicated`` (0.26-0.31, and
0.26-0.29 with decode context parallel), ``dual_chunk_swap`` (0.32 on, where decodes are dealt
round-robin when dcp = 1, the default) and ``dual_chunk_swap_dcp`` (0.30 on with dcp > 1). For a batch of
prefills the three differ only in the dcp row's short prefills.

The capture capacity of every strategy is one rule (``capture_lengths`` then the strategy's rows), so it
is not a column. Adding a strategy adds one row here, one in ``spec/strategies.py`` and one in
``impl/`` (see CONTRIBUTING.md); an unknown id is a ValueError everywhere, never a silent default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

Slot = tuple[int, int]  # (request, token) or (rank, row)
RankRows = list[list[Slot | None]]
Span = tuple[int, int, int]  # (request, first token, stop): the request's tokens [first, stop) in consecutive rows
RankSpans = list[list[Span]]


def expand_spans(ranks: RankSpans) -> RankRows:
    """One (request, token) per physical row of each rank, from its spans."""
    return [[(i, k) for i, first, stop in spans for k in range(first, stop)] for spans in ranks]


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


def dual_chunk_swap_chunk_lens(length: int, *, cp_size: int) -> tuple[int, ...]:
    """vLLM's 2P chunks of one prefill: c = ceil(L/2P) tokens each, chunk j holding min(c, max(0, L - j*c))
    (the trailing chunks short or empty; unlike zigzag the remainder does not go to the leading blocks)."""
    chunks = 2 * cp_size
    c = -(-length // chunks)
    return tuple(min(c, max(0, length - j * c)) for j in range(chunks))


def dual_chunk_swap_request_loads(length: int, *, cp_size: int) -> tuple[int, ...]:
    """Tokens of one prefill held by each rank under DualChunkSwap: chunks r and 2P-1-r
    (L = 300, P = 4: (72, 76, 76, 76); L = 3, P = 4: (1, 1, 1, 0))."""
    sizes = dual_chunk_swap_chunk_lens(length, cp_size=cp_size)
    return tuple(sizes[r] + sizes[2 * cp_size - 1 - r] for r in range(cp_size))


def is_short_for_dcp(length: int, *, cp_size: int) -> bool:
    """vLLM (0.30 on) with decode context parallel copies a prefill whose last chunk is empty,
    (2P-1) * ceil(L/2P) >= L, to every rank instead of splitting it."""
    chunks = 2 * cp_size
    return (chunks - 1) * (-(-length // chunks)) >= length


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


def _zigzag_spans(lengths: tuple[int, ...], cp_size: int) -> RankSpans:
    ranks: RankSpans = [[] for _ in range(cp_size)]
    for i, length in enumerate(lengths):
        sizes = zigzag_block_lens(length, cp_size=cp_size)
        starts = [sum(sizes[:j]) for j in range(len(sizes))]
        for r in range(cp_size):
            for b in zigzag_owned_blocks(r, cp_size=cp_size):
                _span(ranks[r], i, starts[b], starts[b] + sizes[b])
    return ranks


def _span(spans: list[Span], request: int, first: int, stop: int) -> None:
    """Append tokens [first, stop) of ``request`` to a rank's spans (nothing for an empty range)."""
    if stop > first:
        spans.append((request, first, stop))


def _dual_chunk_swap_prefill(ranks: RankSpans, i: int, length: int, cp_size: int) -> None:
    sizes = dual_chunk_swap_chunk_lens(length, cp_size=cp_size)
    c = sizes[0]
    for r in range(cp_size):
        for j in (r, 2 * cp_size - 1 - r):
            _span(ranks[r], i, j * c, j * c + sizes[j])


def _dual_chunk_swap_spans(lengths: tuple[int, ...], cp_size: int) -> RankSpans:
    ranks: RankSpans = [[] for _ in range(cp_size)]
    for i, length in enumerate(lengths):
        _dual_chunk_swap_prefill(ranks, i, length, cp_size)
    return ranks


def _placed_spans(decodes: str) -> Callable[[tuple[int, ...], tuple[bool, ...], int], RankSpans]:
    """The rank token order of a DualChunkSwap batch with decodes placed as ``decodes`` says. Rows on a
    rank follow request order, chunk r before chunk 2P-1-r (vLLM reorders a rank's segments for its
    attention kernels; the order inside a rank does not change its row count)."""

    def spans(lengths: tuple[int, ...], is_prefilling: tuple[bool, ...], cp_size: int) -> RankSpans:
        ranks: RankSpans = [[] for _ in range(cp_size)]
        ordinal = 0  # vLLM deals only the copied requests, in batch order, skipping empty ones
        for i, (length, prefill) in enumerate(zip(lengths, is_prefilling)):
            if length == 0:
                continue
            copied = not prefill or (decodes == "dcp" and is_short_for_dcp(length, cp_size=cp_size))
            if not copied:
                _dual_chunk_swap_prefill(ranks, i, length, cp_size)
            elif decodes == "round_robin":
                _span(ranks[ordinal % cp_size], i, 0, length)
                ordinal += 1
            else:
                for r in range(cp_size):
                    _span(ranks[r], i, 0, length)
        return ranks

    return spans


def _prefills_only(
    spans: Callable[[tuple[int, ...], tuple[bool, ...], int], RankSpans],
) -> Callable[[tuple[int, ...], int], RankSpans]:
    return lambda lengths, cp_size: spans(lengths, (True,) * len(lengths), cp_size)


def _dcp_request_loads(length: int, *, cp_size: int) -> tuple[int, ...]:
    if length and is_short_for_dcp(length, cp_size=cp_size):
        return (length,) * cp_size
    return dual_chunk_swap_request_loads(length, cp_size=cp_size)


def _dual_chunk_swap_excess(cp_size: int) -> int:
    # A rank holds at most 2c = 2*ceil(L/2P) <= (L + 2P - 1)/P rows of a request: P*l_r - L <= 2P - 1, attained
    # at L mod 2P = 1 once every chunk but the last is full; one rank holds the whole request at P = 1.
    return 2 * cp_size - 1 if cp_size > 1 else 0


def _dcp_excess(cp_size: int) -> int:
    # The longest prefill dcp copies is L = 2P(2P-2) + 1 (q = 2P-1-m with m = 1): (P-1) * L beyond its mean.
    longest = 2 * cp_size * (2 * cp_size - 2) + 1
    return max(_dual_chunk_swap_excess(cp_size), (cp_size - 1) * longest)


def _contiguous_spans(lengths: tuple[int, ...], cp_size: int) -> RankSpans:
    ranks: RankSpans = [[] for _ in range(cp_size)]
    for i, length in enumerate(lengths):
        for r in range(cp_size):
            _span(ranks[r], i, (length * r) // cp_size, (length * (r + 1)) // cp_size)
    return ranks


def _interleave_spans(lengths: tuple[int, ...], cp_size: int) -> RankSpans:
    ranks: RankSpans = [[] for _ in range(cp_size)]
    t = 0
    for i, length in enumerate(lengths):
        for k in range(length):
            ranks[t % cp_size].append((i, k, k + 1))
            t += 1
    return ranks


@dataclass(frozen=True)
class StrategyRow:
    """One layout strategy (see the module docstring for each column)."""

    id: str
    align_factor: int
    rank_spans: Callable[[tuple[int, ...], int], RankSpans]
    batch_loads: Callable[[tuple[int, ...], int], tuple[int, ...]]
    request_excess: Callable[[int], int] | None
    request_loads: Callable[..., tuple[int, ...]] | None = None
    decodes: str | None = None
    mixed_spans: Callable[[tuple[int, ...], tuple[bool, ...], int], RankSpans] | None = None
    cp_active: str = "blocks"

    def rank_rows(self, lengths: tuple[int, ...], cp_size: int) -> RankRows:
        """``rank_spans`` expanded: the (request, token) of every physical row of each rank."""
        return expand_spans(self.rank_spans(lengths, cp_size))

    @property
    def mixed_rows(self) -> Callable[[tuple[int, ...], tuple[bool, ...], int], RankRows] | None:
        """``mixed_spans`` expanded to one (request, token) per row, or None where the row has none."""
        spans = self.mixed_spans
        if spans is None:
            return None
        return lambda lengths, prefilling, cp_size: expand_spans(spans(lengths, prefilling, cp_size))

    def is_cp_active(self, lengths: Sequence[int], num_tokens: int, cp_size: int) -> bool:
        """The gate of ``cp_active`` on valid arguments (not validated here: selection.is_cp_active does)."""
        return self.inactive_reason(lengths, num_tokens, cp_size) is None

    def inactive_reason(self, lengths: Sequence[int], num_tokens: int, cp_size: int) -> str | None:
        """Why the gate keeps a batch off the CP graph path (a runner.FallbackReason value: "cp_disabled",
        "too_few_tokens", "short_request"), or None when the batch is CP-active. Arguments not validated."""
        if cp_size < 2:
            return "cp_disabled"
        if self.cp_active == "tokens":
            return "too_few_tokens" if sum(lengths) < cp_size else None
        if num_tokens < 2 * cp_size:
            return "too_few_tokens"
        return "short_request" if min(lengths) < 2 * cp_size else None

    def cp_active_rule(self) -> str:
        """The gate in words, as reports print it."""
        if self.cp_active == "tokens":
            return "P > 1 and the lengths' sum >= P"
        return "P > 1, n >= 2P and every length >= 2P"

    def align_size(self, cp_size: int) -> int:
        """Upstream's default alignment for this strategy at ``cp_size`` ranks (``align_factor`` 0: none,
        A = 1, as vLLM pads a rank's rows to the graph size and nothing else)."""
        return self.align_factor * cp_size if self.align_factor else 1


STRATEGY_TABLE: Mapping[str, StrategyRow] = MappingProxyType(
    {
        "zigzag": StrategyRow(
            "zigzag", 2, _zigzag_spans, _per_request(zigzag_request_loads), lambda p: p - 1, zigzag_request_loads
        ),
        "interleave": StrategyRow("interleave", 1, _interleave_spans, _interleave_loads, None, cp_active="tokens"),
        "contiguous": StrategyRow(
            "contiguous", 1, _contiguous_spans, _per_request(contiguous_request_loads), lambda p: p - 1,
            contiguous_request_loads,
        ),
        "dual_chunk_swap": StrategyRow(
            "dual_chunk_swap", 0, _dual_chunk_swap_spans, _per_request(dual_chunk_swap_request_loads),
            _dual_chunk_swap_excess, dual_chunk_swap_request_loads, "round_robin", _placed_spans("round_robin"),
        ),
        "dual_chunk_swap_replicated": StrategyRow(
            "dual_chunk_swap_replicated", 0, _dual_chunk_swap_spans, _per_request(dual_chunk_swap_request_loads),
            _dual_chunk_swap_excess, dual_chunk_swap_request_loads, "replicated", _placed_spans("replicated"),
        ),
        "dual_chunk_swap_dcp": StrategyRow(
            "dual_chunk_swap_dcp", 0, _prefills_only(_placed_spans("dcp")),
            _per_request(_dcp_request_loads), _dcp_excess, _dcp_request_loads, "dcp", _placed_spans("dcp"),
        ),
    }
)

DUAL_CHUNK_SWAP: Final = tuple(s for s, row in STRATEGY_TABLE.items() if row.decodes is not None)
CP_ACTIVE_GATES: Final = ("blocks", "tokens")
if any(row.cp_active not in CP_ACTIVE_GATES for row in STRATEGY_TABLE.values()):  # pragma: no cover - contributors
    raise ImportError(f"every strategy row's cp_active must be one of {CP_ACTIVE_GATES}")


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
