"""Layouts: which (request, token) lands on which (rank, row), and the per-rank loads they imply.

Each strategy's rank token order is a row of the strategy table (reference/strategies.py); this
module builds the physical layout from it: rows padded to a common count, and the inverse map.
"""

from __future__ import annotations

from dataclasses import dataclass

from cpgraph.reference.strategies import (
    STRATEGY_TABLE,
    RankRows,
    Slot,
    StrategyRow,
    contiguous_request_loads,
    strategy_row,
    zigzag_block_lens,
    zigzag_owned_blocks,
    zigzag_request_loads,
)
from cpgraph.reference.validate import check_cp_size, check_int, check_is_prefilling, check_lengths

__all__ = [
    "Layout",
    "Slot",
    "build_layout",
    "contiguous_request_loads",
    "rank_loads",
    "zigzag_block_lens",
    "zigzag_block_starts",
    "zigzag_owned_blocks",
    "zigzag_request_loads",
]


def zigzag_block_starts(length: int, *, cp_size: int) -> tuple[int, ...]:
    """Start offset of each of the 2P blocks inside the sequence."""
    starts = [0]
    for size in zigzag_block_lens(length, cp_size=cp_size)[:-1]:
        starts.append(starts[-1] + size)
    return tuple(starts)


def rank_loads(
    extend_seq_lens: object, *, cp_size: object, strategy: object = "zigzag", is_prefilling: object = None
) -> tuple[int, ...]:
    """Rows each of the P ranks occupies for this batch: its real tokens, which sum to the batch's tokens
    unless the strategy copies a request to every rank (a DualChunkSwap decode, replicated).
    ``is_prefilling`` (one bool per request, default all True) marks decodes; only a strategy whose row
    places decodes (the dual_chunk_swap rows) takes a batch with one."""
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    p = check_cp_size("cp_size", cp_size)
    row = strategy_row(strategy)
    prefilling = check_is_prefilling("is_prefilling", is_prefilling, requests=len(lengths))
    if prefilling is None:
        return row.batch_loads(lengths, p)
    return tuple(len(rows) for rows in _mixed_rows(row, lengths, prefilling, p))


def _mixed_rows(row: StrategyRow, lengths: tuple[int, ...], prefilling: tuple[bool, ...], cp_size: int) -> RankRows:
    if row.mixed_rows is None:
        decode = prefilling.index(False)
        mixed = ", ".join(s for s, r in STRATEGY_TABLE.items() if r.mixed_rows is not None)
        raise ValueError(
            f"is_prefilling[{decode}] is False but strategy {row.id!r} lays out prefills only; "
            f"a batch with decodes needs one of {mixed}"
        )
    return row.mixed_rows(lengths, prefilling, cp_size)


@dataclass(frozen=True)
class Layout:
    """A batch laid out on P ranks with ``rows`` physical rows each; rows past a rank's load are padding."""

    extend_seq_lens: tuple[int, ...]
    cp_size: int
    strategy: str
    rows: int
    rank_tokens: tuple[tuple[Slot | None, ...], ...]  # rank -> its occupied rows' (request, token) in row
    # order; rows past the end are padding

    @property
    def loads(self) -> tuple[int, ...]:
        """Occupied rows per rank (the rank_loads of the batch)."""
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
        return {
            slot: (rank, row)
            for rank, tokens in enumerate(self.rank_tokens)
            for row, slot in enumerate(tokens)
            if slot is not None
        }


def build_layout(
    extend_seq_lens: object,
    *,
    cp_size: object,
    rows: object = None,
    strategy: object = "zigzag",
    is_prefilling: object = None,
) -> Layout:
    """Lay the batch out on P ranks, each padded to ``rows`` physical rows (default: the busiest rank's load).

    Raises ValueError when ``rows`` is below the busiest rank's load: a layout is refused, never truncated.
    """
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    p = check_cp_size("cp_size", cp_size)
    row = strategy_row(strategy)
    prefilling = check_is_prefilling("is_prefilling", is_prefilling, requests=len(lengths))
    ranks = row.rank_rows(lengths, p) if prefilling is None else _mixed_rows(row, lengths, prefilling, p)
    busiest = max(len(tokens) for tokens in ranks)
    physical = busiest if rows is None else check_int("rows", rows, minimum=0)
    if physical < busiest:
        raise ValueError(
            f"rows={physical} cannot hold this batch: rank {[len(t) for t in ranks].index(busiest)} needs "
            f"{busiest} rows (loads {tuple(len(t) for t in ranks)}); a layout is refused, never truncated"
        )
    return Layout(lengths, p, row.id, physical, tuple(tuple(tokens) for tokens in ranks))
