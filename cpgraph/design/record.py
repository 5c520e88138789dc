"""A design: one CP graph runner configuration as a frozen record, and what it records per rank (the capacities
each rank's capture left, from the capacity rule or the design's table, or under ``local`` keying a size s
holding s rows on every rank, from the keying table reference/keying.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from cpgraph.reference import CaptureRule, capture_local_tokens
from cpgraph.reference.keying import KEYINGS, KeyingRow, keying_row

DEFAULT_BYTES_PER_ROW: Final = 8192 * 2
# What each keying's selector compares, as the design's admission_key names it (one entry per row of
# reference/keying.py's KEYING_TABLE, checked at import): the admission key defaults to the keying's own.
KEY_OF_KEYING: Final = {"global": "num_tokens", "local": "local_rows"}
ADMISSION_KEYS: Final = tuple(KEY_OF_KEYING.values())


class DesignError(ValueError):
    """A design file that cannot be read: the message names the key, the value and what is allowed."""


@dataclass(frozen=True)
class Design:
    """One CP graph runner configuration. ``table`` maps bucket -> rows per rank (length P). ``keying`` is a
    row of reference/keying.py (global: buckets of n tokens with recorded capacities; local: sizes of
    rank-local rows, size s holding s rows); ``admission_key`` what admission dispatches by (None: the
    keying's own key, so admission and replay read one key; vLLM 0.26-0.28 admitted by num_tokens while
    replaying by the rank-local rows)."""

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
    keying: str = "global"
    admission_key: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_padding_factor, Fraction):  # an int given in code: keep it exact
            object.__setattr__(self, "max_padding_factor", Fraction(self.max_padding_factor))
        keying_row(self.keying)  # ValueError naming the keyings
        if self.admission_key is None:
            object.__setattr__(self, "admission_key", KEY_OF_KEYING[self.keying])
        elif self.admission_key not in ADMISSION_KEYS:
            raise ValueError(f"admission_key must be one of {', '.join(ADMISSION_KEYS)}; got {self.admission_key!r}")

    @property
    def keyed(self) -> KeyingRow:
        """The keying's row of reference/keying.py."""
        return keying_row(self.keying)

    @property
    def key(self) -> str:
        """What replay is keyed by (the keying's own key): num_tokens or local_rows."""
        return KEY_OF_KEYING[self.keying]

    @property
    def admits_by(self) -> str:
        """What admission dispatches by: the keying's own key unless the design splits them."""
        return self.admission_key or self.key

    @property
    def split(self) -> bool:
        """Admission and replay read different keys (vLLM 0.26-0.28: the graph admitted is not the one replayed)."""
        return self.admits_by != self.key

    @property
    def buckets(self) -> tuple[int, ...]:
        """Buckets the runner keeps, in scan order: those below 2P are dropped at start-up when only CP-active
        batches take the graph path (global keying); every size is kept under local keying."""
        if not self.keyed.gated:
            return self.capture_num_tokens
        return tuple(b for b in self.capture_num_tokens if b >= 2 * self.cp_size)

    @functools.cached_property
    def is_sorted(self) -> bool:
        return list(self.buckets) == sorted(self.buckets)

    def capture_rule(self) -> CaptureRule:
        """The reference's CaptureRule for rank 0 (a per-rank table is split by ``rank_capacities``)."""
        if self.capacity_rule == "table" or not self.keyed.recorded_capacity:
            return CaptureRule(kind="table", table=dict(self.rank_capacities(0)))
        return CaptureRule(kind=self.capacity_rule, max_requests=self.max_requests)

    def rank_capacities(self, rank: int) -> dict[int, int]:
        """``bucket_local_tokens`` as rank ``rank`` recorded it; a bucket without a row count is absent. Under a
        keying without recorded capacities (local), every size s holds s rows."""
        if not self.keyed.recorded_capacity:
            return dict(self.keyed.capacities(self.buckets, {}))
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



if tuple(KEY_OF_KEYING) != KEYINGS:  # one admission key per row of the keying table, in its order
    raise AssertionError(f"KEY_OF_KEYING {tuple(KEY_OF_KEYING)} must name exactly the keyings {KEYINGS}")
