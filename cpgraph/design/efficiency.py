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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from cpgraph.design.busiest import BusiestRange, batch_with_busiest, busiest_range
from cpgraph.design.evaluate import SAFETY, violations_at
from cpgraph.design.schema import Design
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


def runs(points: list[int]) -> tuple[tuple[int, int], ...]:
    """Sorted points as maximal runs of consecutive integers: [3, 4, 5, 9] -> ((3, 5), (9, 9))."""
    out: list[tuple[int, int]] = []
    for n in points:
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return tuple(out)


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


def considered(design: Design, n: int) -> tuple[int, ...]:
    """The buckets the scan looks at for n tokens, in scan order: those >= n, up to the first above F*n."""
    out = []
    factor = design.max_padding_factor
    for b in design.buckets:
        if b < n:
            continue
        if b > factor * n:
            break
        out.append(b)
    return tuple(out)


def breakpoints(design: Design, first: int, last: int) -> list[int]:
    """The n in [first, last] where the considered list can change (b < n flips at b + 1, b > F*n at
    ceil(b/F)), with ``first``: consecutive ones bound intervals of n with one considered list."""
    f = design.max_padding_factor
    points = {first}
    for b in design.buckets:
        for x in (b + 1, -(-b * f.denominator // f.numerator)):
            if first < x <= last:
                points.add(x)
    return sorted(points)


@dataclass(frozen=True)
class _Choice:
    """A bucket the search selector takes for busiest loads M with low < M <= high."""

    bucket: int
    low: int
    high: int
    capacity: int


def _choices(design: Design, buckets: tuple[int, ...], caps: dict[int, int]) -> tuple[_Choice, ...]:
    """Per bucket the selector can take from ``buckets``: the busiest loads that make it the first with room
    (required = align_up(M, A) <= capacity iff M <= floor(capacity/A)*A)."""
    a = design.align_size
    if design.selector == "smallest":
        if not buckets:
            return ()
        return (_Choice(buckets[0], -1, 1 << 62, caps.get(buckets[0], 0)),)
    if design.selector != "search":
        raise ValueError(f"selector must be one of search, smallest; got {design.selector!r}")
    out = []
    best = -1  # the most rows any earlier bucket had room for, as a busiest-load bound
    for b in buckets:
        if b not in caps:
            continue
        high = (caps[b] // a) * a
        if high > best:
            out.append(_Choice(b, best, high, caps[b]))
            best = high
    return tuple(out)


def thresholds(design: Design, n: int) -> set[int]:
    """Busiest loads M at which the design's decision can change for n tokens (M <= t vs M > t): every
    considered bucket's capacity (any rank) rounded down to a multiple of A."""
    a = design.align_size
    out = set()
    for caps in design.capacities() if design.per_rank_table else design.capacities()[:1]:
        for b in considered(design, n):
            if b in caps:
                out.add((caps[b] // a) * a)
    return out


def segment_points(rng: BusiestRange, designs: Sequence[Design], top: int) -> Iterator[tuple[int, int, int]]:
    """(interval id, n, M) for every n in [2P, top] and one achievable busiest load M in each segment of
    lo(n)..hi(n) where no design's decision changes (cut at every design's thresholds)."""
    p = rng.cp_size
    cuts = sorted({c for d in designs for c in breakpoints(d, 2 * p, top)}) + [top + 1]
    for interval, (x, y) in enumerate(zip(cuts, cuts[1:])):
        marks = sorted(set().union(*(thresholds(d, x) for d in designs)))
        for n in range(x, y):
            lo, hi = rng.lo[n], rng.hi[n]
            if lo < 0:
                continue
            segment_low = lo
            for mark in marks + [hi]:
                if mark < segment_low:
                    continue
                upper = min(mark, hi)
                m = lo + -(-(segment_low - lo) // rng.step) * rng.step  # first achievable load >= segment_low
                if m <= upper:
                    yield interval, n, m
                segment_low = upper + 1
                if segment_low > hi:
                    break


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


def efficiency(design: Design) -> Efficiency:
    """Exact efficiency figures over every CP-active batch, of any number of requests (module docstring)."""
    p = design.cp_size
    caps = design.capacities()[0]
    top = max(design.buckets)
    some: list[int] = []
    every: list[int] = []
    curve: list[tuple[int, float, float]] = []
    worst_global: tuple[float, int, _Choice] | None = None
    worst_local: tuple[float, int, _Choice] | None = None
    points = 0
    if p > 1 and top >= 2 * p:
        rng = busiest_range(design.strategy, p, top)
        lo = np.array(rng.lo[2 * p :], dtype=np.int64)
        hi = np.array(rng.hi[2 * p :], dtype=np.int64)
        cuts = breakpoints(design, 2 * p, top) + [top + 1]
        eager_some = np.zeros(top + 1 - 2 * p, dtype=bool)
        eager_all = np.zeros(top + 1 - 2 * p, dtype=bool)
        big = np.full(top + 1 - 2 * p, -1, dtype=np.int64)
        small = np.full(top + 1 - 2 * p, -1, dtype=np.int64)
        for x, y in zip(cuts, cuts[1:]):
            i, j = x - 2 * p, y - 2 * p  # n in [x, y)
            choices = _choices(design, considered(design, x), caps)
            lo_i, hi_i = lo[i:j], hi[i:j]
            top_room = max((c.high for c in choices), default=-1)
            eager_some[i:j] = hi_i > top_room
            eager_all[i:j] = lo_i > top_room
            for c in choices:
                start = np.maximum(lo_i, c.low + 1)
                first = lo_i + -(-(start - lo_i) // rng.step) * rng.step
                ok = first <= np.minimum(hi_i, c.high)
                big[i:j] = np.where(ok & (c.bucket > big[i:j]), c.bucket, big[i:j])
                small[i:j] = np.where(ok & ((small[i:j] < 0) | (c.bucket < small[i:j])), c.bucket, small[i:j])
        ns = np.arange(2 * p, top + 1)
        points = len(ns)
        some = [int(n) for n in ns[eager_some]]
        every = [int(n) for n in ns[eager_all]]
        admitted = big >= 0
        for n, b_small, b_big in zip(ns[admitted], small[admitted], big[admitted]):
            curve.append((int(n), int(b_small) / int(n), int(b_big) / int(n)))
        if admitted.any():
            ratios = np.where(admitted, big / ns, -1.0)
            k = int(np.argmax(ratios))
            worst_global = (float(ratios[k]), int(ns[k]), _choice_at(design, int(ns[k]), int(big[k]), caps))
            local = np.where(admitted, [p * caps.get(int(b), 0) / int(n) if b >= 0 else -1.0 for n, b in zip(ns, big)], -1.0)
            k = int(np.argmax(local))
            worst_local = (float(local[k]), int(ns[k]), _choice_at(design, int(ns[k]), int(big[k]), caps))

    def concrete(worst: tuple[float, int, _Choice] | None) -> Extreme | None:
        if worst is None:
            return None
        ratio, n, choice = worst
        low, high = max(choice.low + 1, rng.lo[n]), min(choice.high, rng.hi[n])
        single = low <= rng.lo[n] <= high  # one request of n tokens: the fewest requests
        lengths = (n,) if single else batch_with_busiest(rng, n, low, high) or ()
        return Extreme(ratio, n, len(lengths), choice.bucket, lengths)

    some_runs, every_runs = runs(some), runs(every)
    note = ""
    if p > 1 and top >= 2 * p and not busiest_range(design.strategy, p, top).exact_between:
        note = (
            f"{design.strategy} at cp_size {p}: the eager regions are exact (they read lo(n) and hi(n) only); "
            "the padding figures take every busiest load between lo(n) and hi(n) as possible (an upper bound)"
        )
    return Efficiency(
        0,
        concrete(worst_global),
        concrete(worst_local),
        (Region(0, some_runs, every_runs, len(some), points),),
        bucket_costs(design),
        top,
        tuple(curve),
        note,
    )


def _choice_at(design: Design, n: int, bucket: int, caps: dict[int, int]) -> _Choice:
    return next(c for c in _choices(design, considered(design, n), caps) if c.bucket == bucket)
