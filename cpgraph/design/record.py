"""A design: one CP graph runner configuration as a frozen record, and what it records per rank (the capacities
each rank's capture left, from the capacity rule or the design's table)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from cpgraph.reference import CaptureRule, capture_local_tokens

DEFAULT_BYTES_PER_ROW: Final = 8192 * 2


class DesignError(ValueError):
    """A design file that cannot be read: the message names the key, the value and what is allowed."""


@dataclass(frozen=True)
class Design:
    """One CP graph runner configuration. ``table`` maps bucket -> rows per rank (length P)."""

    name: str
    strategy: str
    cp_size: int
    align_size: int
    capture_num_tokens: tuple[int, ...]
    max_padding_factor: Fraction
    layout_basis: str
    selector: str
    capacity_rule: str
    max_requests: int = 1
    table: tuple[tuple[int, tuple[int, ...]], ...] = ()
    bytes_per_row: int = DEFAULT_BYTES_PER_ROW
    description: str = ""
    source: str = field(default="", compare=False)
    context_len: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_padding_factor, Fraction):  # an int given in code: keep it exact
            object.__setattr__(self, "max_padding_factor", Fraction(self.max_padding_factor))

    @property
    def buckets(self) -> tuple[int, ...]:
        """Buckets the runner keeps, in scan order: those below 2P are dropped at start-up."""
        return tuple(b for b in self.capture_num_tokens if b >= 2 * self.cp_size)

    @functools.cached_property
    def is_sorted(self) -> bool:
        return list(self.buckets) == sorted(self.buckets)

    def capture_rule(self) -> CaptureRule:
        """The reference's CaptureRule for rank 0 (a per-rank table is split by ``rank_capacities``)."""
        if self.capacity_rule == "table":
            return CaptureRule(kind="table", table=dict(self.rank_capacities(0)))
        return CaptureRule(kind=self.capacity_rule, max_requests=self.max_requests)

    def rank_capacities(self, rank: int) -> dict[int, int]:
        """``bucket_local_tokens`` as rank ``rank`` recorded it; a bucket without a row count is absent."""
        if self.capacity_rule == "table":
            table = dict(self.table)
            return {b: table[b][rank] for b in self.buckets if b in table}
        if self.capacity_rule == "captured" and self.context_len is not None:
            return {
                b: capture_local_tokens(
                    b, cp_size=self.cp_size, align_size=self.align_size, strategy=self.strategy,
                    context_len=self.context_len,
                )
                for b in self.buckets
            }
        rule = CaptureRule(kind=self.capacity_rule, max_requests=self.max_requests)
        ordered = sorted(self.buckets)
        caps = rule.capacities(ordered, cp_size=self.cp_size, align_size=self.align_size, strategy=self.strategy)
        return {b: caps[b] for b in self.buckets}

    def capacities(self) -> tuple[dict[int, int], ...]:
        """Per rank, bucket -> rows (computed once per design; treat the dicts as read-only)."""
        return _capacities(self)

    @property
    def per_rank_table(self) -> bool:
        """True when some bucket's recorded rows differ between ranks."""
        return any(len(set(rows)) > 1 for _, rows in self.table)


@functools.lru_cache(maxsize=64)
def _capacities(design: Design) -> tuple[dict[int, int], ...]:
    return tuple(design.rank_capacities(r) for r in range(design.cp_size))
