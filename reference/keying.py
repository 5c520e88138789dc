"""Graph keying as one table: what a captured graph is keyed by, and so what the selector compares.

The field has two designs, one row each:

- ``global`` (sglang): a graph is captured for a bucket of B global tokens. The selector compares the
  batch's token count n (the key) with the buckets, within the window n <= B <= F*n
  (``max_padding_factor``), and a bucket holds the rows recorded for it at capture
  (``bucket_local_tokens[B]``, which a multi-request batch can overflow). Only CP-active batches
  (P > 1, n >= 2P, every length >= 2P) take the graph path.
- ``local`` (vLLM 0.29 on): a graph is captured for a size s of rank-local rows. Every rank computes the
  key m = the largest real rank-local row count of the batch over all ranks, the selector takes the
  least captured size s >= m with no padding factor (no window), the layout is padded to s rows, and a
  size s holds s rows on every rank. Every batch is keyed (there is no CP-active gate; at P = 1, m = n).

The seven invariants are the same ids under both rows, stated over the key: ``padding_limit`` is
key <= B <= F*key (global) or key <= B (local); ``capacity_fit`` reads the recorded capacity or B
itself; ``minimal_bucket`` and ``no_needless_fallback`` range over the fitting sizes of the key.
spec/keying.py mirrors this table row for row in Z3 terms; an unknown id is a ValueError everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final


def _global_key(num_tokens: int, loads: Sequence[int]) -> int:
    return num_tokens


def _local_key(num_tokens: int, loads: Sequence[int]) -> int:
    return max(loads)


@dataclass(frozen=True)
class KeyingRow:
    """One graph keying (see the module docstring for each column)."""

    id: str
    key_name: str  # what the selector compares, in words
    key: Callable[[int, Sequence[int]], int]  # (num_tokens, live per-rank loads) -> the key
    windowed: bool  # True: max_padding_factor bounds the bucket by F * key; False: no upper bound
    recorded_capacity: bool  # True: bucket_local_tokens[B]; False: a size B holds B rows on every rank
    gated: bool  # True: only CP-active batches take the graph path; False: every batch is keyed
    stack: str  # the serving stack whose design this row is, for reports

    def capacity(self, bucket: int, recorded: Mapping[int, int]) -> int | None:
        """The rows bucket ``bucket`` holds on every rank: its recorded capacity (None if it has none) or
        the size itself."""
        return recorded.get(bucket) if self.recorded_capacity else bucket

    def capacities(self, capture_num_tokens: Sequence[int], recorded: Mapping[int, int]) -> Mapping[int, int]:
        """The capacity table the selector reads: ``recorded`` (global), or every size holding itself (local)."""
        return recorded if self.recorded_capacity else {b: b for b in capture_num_tokens}


KEYING_TABLE: Final[Mapping[str, KeyingRow]] = MappingProxyType(
    {
        "global": KeyingRow("global", "num_tokens n", _global_key, True, True, True, "sglang"),
        "local": KeyingRow("local", "largest rank-local rows m", _local_key, False, False, False, "vLLM 0.29+"),
    }
)
KEYINGS: Final = tuple(KEYING_TABLE)


def keying_row(keying: object) -> KeyingRow:
    """The table row for ``keying``; ValueError names the allowed ids."""
    if not isinstance(keying, str) or keying not in KEYING_TABLE:
        raise ValueError(f"keying must be one of {', '.join(KEYING_TABLE)}; got {keying!r}")
    return KEYING_TABLE[keying]
