"""Graph keying as one table of Z3 term builders: what a captured graph is keyed by, and so what the
selector compares. Row for row the mirror of reference/keying.py (same ids, same columns):

- ``global`` (sglang): key = the batch's token count n; window n <= B <= F*n (``max_padding_factor``);
  capacity = the rows recorded for B at capture (``bucket_local_tokens[B]``, per rank, may be missing);
  gated: only CP-active batches (P > 1, n >= 2P, every length >= 2P) take the graph path. The rows the
  capacity must hold are align_up(max_r l_r, A).
- ``local`` (vLLM 0.29 on): key = m, the largest real rank-local row count over all ranks; no window (every
  size s >= m; no padding factor); capacity of a size s = s on every rank (a size holds its own rows; a
  listed size always has one); not gated: every batch is keyed. The rows the capacity must hold are
  align_up(m, A), as the reference's local runner has them: m itself at vLLM's A = 1 (vLLM pads a rank's
  rows to the size and aligns nothing else; ``_build_batch_layout`` raises when the size is below a rank's
  rows).

The seven invariants keep their ids under both rows, stated over the key (spec/invariants.py takes the
keying as a parameter); admission (spec/admission.py) and replay (spec/replay.py) each build their own
decision from the row their RankSetup names. Nothing here calls a solver; an unknown id is a ValueError.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import z3

from cpgraph.spec.logic import And
from cpgraph.spec.capacity import aligned_rows, busiest_load
from cpgraph.spec.selection import CaptureList, Window, padding_window, unbounded_window
from cpgraph.spec.terms import BoolTerm, Defined, IntLike, IntTerm, Loads, int_term

KeyTerm = Callable[[IntLike, Defined], Defined]  # (num_tokens, the busiest rank's live load) -> the key


def _global_key(num_tokens: IntLike, busiest: Defined) -> Defined:
    del busiest
    return Defined(int_term(num_tokens), z3.BoolVal(True))


def _local_key(num_tokens: IntLike, busiest: Defined) -> Defined:
    del num_tokens
    return busiest


@dataclass(frozen=True)
class Keyed:
    """What one rank's selector call reads under a keying: the key, the window over it, the capacity table,
    the rows the chosen bucket must hold, and the facts defining them."""

    key: IntTerm
    window: Window
    capture: CaptureList
    required: IntTerm
    holds: BoolTerm


@dataclass(frozen=True)
class Keying:
    """One graph keying (see the module docstring for each column)."""

    id: str
    key_name: str  # what the selector compares, in words
    key: KeyTerm
    windowed: bool  # True: max_padding_factor bounds the bucket by F * key; False: no upper bound
    recorded_capacity: bool  # True: bucket_local_tokens[B]; False: a size B holds B rows on every rank
    gated: bool  # True: only CP-active batches take the graph path; False: every batch is keyed

    def window(self, key: IntLike, max_padding_factor: IntLike | Fraction, name: str) -> Window:
        """[key, F*key] (windowed) or [key, infinity)."""
        if self.windowed:
            return padding_window(key, max_padding_factor, name)
        return unbounded_window(key)

    def capacities(self, capture: CaptureList) -> CaptureList:
        """The capacity table the selector reads: the recorded one, or every listed size holding itself."""
        if self.recorded_capacity:
            return capture
        return CaptureList(capture.buckets, capture.buckets, tuple(z3.BoolVal(True) for _ in capture.buckets))

    def inputs(
        self, num_tokens: IntLike, loads: Loads, align_size: IntLike, max_padding_factor: IntLike | Fraction,
        capture: CaptureList, name: str,
    ) -> Keyed:
        """Everything one selector call reads, built from the live loads under ``name``: the key, its window,
        the capacity table and the rows to hold, align_up(max_r l_r, A) under both rows (local: the key m
        rounded up to A, m itself at A = 1)."""
        busiest = busiest_load(loads, f"{name}.rows")  # built once: the local key, and what the rows align up
        key = self.key(num_tokens, busiest)
        window = self.window(key.value, max_padding_factor, f"{name}.window")
        rows = aligned_rows(busiest, align_size, f"{name}.rows")  # its facts hold the busiest load's and the loads'
        return Keyed(key.value, window, self.capacities(capture), rows.value, And(key.holds, window.holds, rows.holds))


KEYINGS: dict[str, Keying] = {
    "global": Keying("global", "num_tokens n", _global_key, True, True, True),
    "local": Keying("local", "largest rank-local rows m", _local_key, False, False, False),
}


def keying(name: str) -> Keying:
    """The table row for ``name``; ValueError names the allowed keyings."""
    if name not in KEYINGS:
        raise ValueError(f"keying must be one of {', '.join(KEYINGS)}; got {name!r}")
    return KEYINGS[name]

