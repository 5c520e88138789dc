"""What a design costs: worst-case padding, the eager-fallback region, static rows and bytes per bucket.

Exact over every CP-active batch, of any number of requests (n from 2P to the largest bucket; above it
every batch runs eagerly). How each figure is computed:
- A design's decision for a batch reads only n and its live rows required = align_up(M, A), M the busiest
  rank's load (rank 0's recorded capacities; the layout basis changes replay, not the decision).
- For every n, the busiest loads M that batches of n tokens can have are lo(n), lo(n)+step, ..., hi(n)
  (cpgraph/design/busiest.py: one request gives lo, a knapsack over request lengths gives hi exactly,
  and single-token moves between requests reach every value in between).
- The scan's view is constant between breakpoints of n (a bucket enters at ceil(B/F), leaves at B + 1),
  and within one the search selector takes bucket B exactly for M in an interval (T_B, C_B] (C_B its
  capacity rounded down to a multiple of A, T_B the largest earlier such bound); the smallest selector
  takes the first bucket whatever M.
- eager fallback: some batch of n tokens falls back iff hi(n) is above every considered bound; every
  batch falls back iff lo(n) is. Worst padding: the largest bucket some batch of n tokens takes, over n,
  divided by n (global B/n) or P*capacity(B)/n (CP-local); a batch attaining it is constructed and
  shown. Contiguous: values between lo(n) and hi(n) are the hull (reported as an upper bound).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cpgraph.design.busiest import BusiestRange, batch_with_busiest, busiest_range
from cpgraph.design.evaluate import SAFETY, violations_at
from cpgraph.design.schema import Design
from cpgraph.design.segments import Choice, breakpoints, choice_at, choices, considered, runs, segment_points
from cpgraph.reference import capture_local_tokens


@dataclass(frozen=True)
class BucketCost:
    """Static rows per rank (rank 0's record) and their bytes; ``extra_rows`` over the single-request rule."""

    bucket: int
    rows: int | None
    bytes: int | None
    extra_rows: int | None


@dataclass(frozen=True)
class Extreme:
    """A worst case: the ratio and a batch that attains it."""

    ratio: float
    num_tokens: int
    requests: int
    bucket: int
    extend_seq_lens: tuple[int, ...]


@dataclass(frozen=True)
class Region:
    """Token ranges where some / every batch runs eagerly; ``requests`` 0 = any number of requests."""

    requests: int
    some_eager: tuple[tuple[int, int], ...]
    all_eager: tuple[tuple[int, int], ...]
    eager_points: int  # token counts n at which some batch falls back
    points: int  # token counts n with a CP-active batch (2P..largest bucket)


@dataclass(frozen=True)
class Efficiency:
    request_bound: int  # 0: exact for any number of requests
    worst_global: Extreme | None
    worst_local: Extreme | None
    regions: tuple[Region, ...]
    buckets: tuple[BucketCost, ...]
    largest_bucket: int
    curve: tuple[tuple[int, float, float], ...]  # (n, least B/n, largest B/n) over admitted batches
    note: str = ""  # how the figures are bounded where they are not exact (e.g. contiguous's hull)

    @property
    def static_rows(self) -> int:
        return sum(b.rows or 0 for b in self.buckets)

    @property
    def static_bytes(self) -> int:
        return sum(b.bytes or 0 for b in self.buckets)


def bucket_costs(design: Design) -> tuple[BucketCost, ...]:
    caps = design.rank_capacities(0)
    out = []
    for b in design.buckets:
        rows = caps.get(b)
        single = capture_local_tokens(b, cp_size=design.cp_size, align_size=design.align_size, strategy=design.strategy)
        out.append(
            BucketCost(
                b,
                rows,
                None if rows is None else rows * design.bytes_per_row,
                None if rows is None else rows - single,
            )
        )
    return tuple(out)


def crash_region(design: Design) -> tuple[tuple[int, int], ...]:
    """Token ranges where some CP-active batch, of any number of requests, breaks a safety invariant (it
    would crash a server); exact for live-layout designs, () for padded ones (their replay reads the pad)."""
    if design.layout_basis != "live" or design.cp_size < 2:
        return ()
    top = max(design.buckets)
    rng = busiest_range(design.strategy, design.cp_size, top)
    hits: list[int] = []
    memo: dict[tuple[int, int], bool] = {}
    for interval, n, m in segment_points(rng, (design,), top):
        if hits and hits[-1] == n:
            continue
        key = (interval, -(-m // design.align_size) * design.align_size)
        if key not in memo:
            memo[key] = bool(violations_at(design, n, key[1]) & set(SAFETY))
        if memo[key]:
            hits.append(n)
    return runs(hits)


Worst = tuple[float, int, Choice]  # (ratio, n, the choice that attains it)


@dataclass(frozen=True)
class _Sweep:
    """Per n in [2P, top]: does some / every batch fall back, the largest / smallest bucket some takes (-1: none)."""

    ns: np.ndarray
    eager_some: np.ndarray
    eager_all: np.ndarray
    big: np.ndarray
    small: np.ndarray


def _sweep(design: Design, rng: BusiestRange, caps: dict[int, int], top: int) -> _Sweep:
    """Every n at once, one breakpoint interval at a time: each choice's busiest-load interval against the
    achievable loads lo(n), lo(n)+step, ..., hi(n)."""
    p = design.cp_size
    lo = np.array(rng.lo[2 * p :], dtype=np.int64)
    hi = np.array(rng.hi[2 * p :], dtype=np.int64)
    size = top + 1 - 2 * p
    sweep = _Sweep(
        np.arange(2 * p, top + 1), np.zeros(size, dtype=bool), np.zeros(size, dtype=bool),
        np.full(size, -1, dtype=np.int64), np.full(size, -1, dtype=np.int64),
    )
    cuts = breakpoints(design, 2 * p, top) + [top + 1]
    for x, y in zip(cuts, cuts[1:]):
        i, j = x - 2 * p, y - 2 * p  # n in [x, y)
        options = choices(design, considered(design, x), caps)
        lo_i, hi_i = lo[i:j], hi[i:j]
        top_room = max((c.high for c in options), default=-1)
        sweep.eager_some[i:j] = hi_i > top_room
        sweep.eager_all[i:j] = lo_i > top_room
        big, small = sweep.big[i:j], sweep.small[i:j]
        for c in options:
            start = np.maximum(lo_i, c.low + 1)
            first = lo_i + -(-(start - lo_i) // rng.step) * rng.step
            ok = first <= np.minimum(hi_i, c.high)
            big[:] = np.where(ok & (c.bucket > big), c.bucket, big)
            small[:] = np.where(ok & ((small < 0) | (c.bucket < small)), c.bucket, small)
    return sweep


def _worst(design: Design, sweep: _Sweep, caps: dict[int, int]) -> tuple[Worst | None, Worst | None]:
    """The n with the largest global (B/n) and CP-local (P*capacity(B)/n) padding, and the choice there."""
    ns, big, admitted = sweep.ns, sweep.big, sweep.big >= 0
    if not admitted.any():
        return None, None
    ratios = np.where(admitted, big / ns, -1.0)
    k = int(np.argmax(ratios))
    worst_global = (float(ratios[k]), int(ns[k]), choice_at(design, int(ns[k]), int(big[k]), caps))
    p = design.cp_size
    local = np.where(admitted, [p * caps.get(int(b), 0) / int(n) if b >= 0 else -1.0 for n, b in zip(ns, big)], -1.0)
    k = int(np.argmax(local))
    worst_local = (float(local[k]), int(ns[k]), choice_at(design, int(ns[k]), int(big[k]), caps))
    return worst_global, worst_local


def _extreme(rng: BusiestRange, worst: Worst | None) -> Extreme | None:
    """A concrete batch attaining ``worst``: one request of n tokens when it can, else the fewest requests."""
    if worst is None:
        return None
    ratio, n, choice = worst
    low, high = max(choice.low + 1, rng.lo[n]), min(choice.high, rng.hi[n])
    single = low <= rng.lo[n] <= high
    lengths = (n,) if single else batch_with_busiest(rng, n, low, high) or ()
    return Extreme(ratio, n, len(lengths), choice.bucket, lengths)


def efficiency(design: Design) -> Efficiency:
    """Exact efficiency figures over every CP-active batch, of any number of requests (module docstring)."""
    p = design.cp_size
    caps = design.capacities()[0]
    top = max(design.buckets)
    if p < 2 or top < 2 * p:
        region = Region(0, (), (), 0, 0)
        return Efficiency(0, None, None, (region,), bucket_costs(design), top, (), "")
    rng = busiest_range(design.strategy, p, top)
    sweep = _sweep(design, rng, caps, top)
    some = [int(n) for n in sweep.ns[sweep.eager_some]]
    every = [int(n) for n in sweep.ns[sweep.eager_all]]
    admitted = sweep.big >= 0
    curve = tuple(
        (int(n), int(b_small) / int(n), int(b_big) / int(n))
        for n, b_small, b_big in zip(sweep.ns[admitted], sweep.small[admitted], sweep.big[admitted])
    )
    worst_global, worst_local = _worst(design, sweep, caps)
    note = ""
    if not rng.exact_between:
        note = (
            f"{design.strategy} at cp_size {p}: the eager regions are exact (they read lo(n) and hi(n) only); "
            "the padding figures take every busiest load between lo(n) and hi(n) as possible (an upper bound)"
        )
    region = Region(0, runs(some), runs(every), len(some), len(sweep.ns))
    return Efficiency(
        0, _extreme(rng, worst_global), _extreme(rng, worst_local), (region,), bucket_costs(design), top, curve, note
    )
