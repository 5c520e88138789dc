"""Layouts: which (request, token) lands on which (rank, row), and the per-rank loads they imply.

Strategies (SEMANTICS.md):
- zigzag: each sequence is cut into S = 2P blocks, block j holds floor(L/S) + [j < L mod S]
  tokens; rank r owns blocks r and S-1-r of every sequence. On a rank, rows are laid out
  request by request, block r before block S-1-r.
- interleave: token t of the packed batch goes to rank t mod P, row t // P.
- contiguous: rank r owns [floor(L*r/P), floor(L*(r+1)/P)) of every sequence, request by request.
"""

from __future__ import annotations

from dataclasses import dataclass

from cpgraph.reference.validate import check_int, check_lengths, check_strategy

Slot = tuple[int, int]  # (request, token) or (rank, row)


def zigzag_block_lens(length: int, *, cp_size: int) -> tuple[int, ...]:
    """The 2P block lengths of one sequence; the remainder goes to the leading blocks."""
    blocks = 2 * cp_size
    q, m = divmod(length, blocks)
    return tuple(q + (1 if j < m else 0) for j in range(blocks))


def zigzag_block_starts(length: int, *, cp_size: int) -> tuple[int, ...]:
    """Start offset of each of the 2P blocks inside the sequence."""
    starts = [0]
    for size in zigzag_block_lens(length, cp_size=cp_size)[:-1]:
        starts.append(starts[-1] + size)
    return tuple(starts)


def zigzag_owned_blocks(rank: int, *, cp_size: int) -> tuple[int, int]:
    """Rank r owns one early and one late block: (r, 2P-1-r)."""
    return (rank, 2 * cp_size - 1 - rank)


def zigzag_request_loads(length: int, *, cp_size: int) -> tuple[int, ...]:
    """Tokens of one sequence held by each rank under zigzag."""
    sizes = zigzag_block_lens(length, cp_size=cp_size)
    return tuple(sum(sizes[b] for b in zigzag_owned_blocks(r, cp_size=cp_size)) for r in range(cp_size))


def contiguous_request_loads(length: int, *, cp_size: int) -> tuple[int, ...]:
    """Tokens of one sequence held by each rank under contiguous sharding."""
    return tuple((length * (r + 1)) // cp_size - (length * r) // cp_size for r in range(cp_size))


def rank_loads(extend_seq_lens: object, *, cp_size: object, strategy: object = "zigzag") -> tuple[int, ...]:
    """Real (unpadded) tokens each of the P ranks holds for this batch; they sum to the batch's tokens."""
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    p = check_int("cp_size", cp_size, minimum=1)
    kind = check_strategy(strategy)
    if kind == "interleave":
        total = sum(lengths)
        return tuple(total // p + (1 if r < total % p else 0) for r in range(p))
    per_request = zigzag_request_loads if kind == "zigzag" else contiguous_request_loads
    loads = [0] * p
    for length in lengths:
        for r, load in enumerate(per_request(length, cp_size=p)):
            loads[r] += load
    return tuple(loads)


def _rank_token_lists(lengths: tuple[int, ...], cp_size: int, strategy: str) -> list[list[Slot]]:
    """For each rank, the (request, token) pairs of its real rows, in row order."""
    ranks: list[list[Slot]] = [[] for _ in range(cp_size)]
    if strategy == "interleave":
        t = 0
        for i, length in enumerate(lengths):
            for k in range(length):
                ranks[t % cp_size].append((i, k))
                t += 1
        return ranks
    for i, length in enumerate(lengths):
        if strategy == "zigzag":
            sizes = zigzag_block_lens(length, cp_size=cp_size)
            starts = zigzag_block_starts(length, cp_size=cp_size)
            for r in range(cp_size):
                for b in zigzag_owned_blocks(r, cp_size=cp_size):
                    ranks[r].extend((i, k) for k in range(starts[b], starts[b] + sizes[b]))
        else:
            for r in range(cp_size):
                lo, hi = (length * r) // cp_size, (length * (r + 1)) // cp_size
                ranks[r].extend((i, k) for k in range(lo, hi))
    return ranks


@dataclass(frozen=True)
class Layout:
    """A batch laid out on P ranks with ``rows`` physical rows each; rows past a rank's load are padding."""

    extend_seq_lens: tuple[int, ...]
    cp_size: int
    strategy: str
    rows: int
    rank_tokens: tuple[tuple[Slot, ...], ...]  # rank -> real rows' (request, token), in row order

    @property
    def loads(self) -> tuple[int, ...]:
        return tuple(len(tokens) for tokens in self.rank_tokens)

    def token_at(self, rank: int, row: int) -> Slot | None:
        """The (request, token) in physical row ``row`` of ``rank``, or None for a padding row."""
        if not 0 <= rank < self.cp_size:
            raise ValueError(f"rank must be in [0, {self.cp_size}), got {rank}")
        if not 0 <= row < self.rows:
            raise ValueError(f"row must be in [0, {self.rows}), got {row}")
        tokens = self.rank_tokens[rank]
        return tokens[row] if row < len(tokens) else None

    def locate(self, request: int, token: int) -> Slot:
        """The (rank, row) holding token ``token`` of request ``request`` (the inverse of token_at)."""
        if not 0 <= request < len(self.extend_seq_lens):
            raise ValueError(f"request must be in [0, {len(self.extend_seq_lens)}), got {request}")
        if not 0 <= token < self.extend_seq_lens[request]:
            raise ValueError(f"token must be in [0, {self.extend_seq_lens[request]}), got {token}")
        for rank, tokens in enumerate(self.rank_tokens):
            for row, slot in enumerate(tokens):
                if slot == (request, token):
                    return (rank, row)
        raise AssertionError(f"token {(request, token)} is not laid out")  # unreachable by construction

    def placement(self) -> dict[Slot, Slot]:
        """Every (request, token) mapped to its (rank, row)."""
        return {slot: (rank, row) for rank, tokens in enumerate(self.rank_tokens) for row, slot in enumerate(tokens)}


def build_layout(
    extend_seq_lens: object, *, cp_size: object, rows: object = None, strategy: object = "zigzag"
) -> Layout:
    """Lay the batch out on P ranks, each padded to ``rows`` physical rows (default: the busiest rank's load).

    Raises ValueError when ``rows`` is below the busiest rank's load: a layout is refused, never truncated.
    """
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    p = check_int("cp_size", cp_size, minimum=1)
    kind = check_strategy(strategy)
    ranks = _rank_token_lists(lengths, p, kind)
    busiest = max(len(tokens) for tokens in ranks)
    physical = busiest if rows is None else check_int("rows", rows, minimum=0)
    if physical < busiest:
        raise ValueError(
            f"rows={physical} cannot hold this batch: rank {[len(t) for t in ranks].index(busiest)} needs "
            f"{busiest} rows (loads {tuple(len(t) for t in ranks)}); a layout is refused, never truncated"
        )
    return Layout(lengths, p, kind, physical, tuple(tuple(tokens) for tokens in ranks))
