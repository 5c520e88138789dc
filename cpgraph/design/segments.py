"""Where a design's decision can change: the scan's breakpoints over n, its thresholds over the busiest load.

For n tokens the scan considers the buckets >= n up to the first above F*n (``considered``); that list
changes only at breakpoints (a bucket enters at ceil(B/F), leaves at B + 1). Within one, the search
selector takes bucket B exactly for busiest loads M in (T_B, C_B] (``_choices``), so a design's decision
on every batch of n tokens is fixed between consecutive thresholds of M (``segment_points``). The
efficiency figures, the crash region and the diff's exact token ranges all walk these segments.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from cpgraph.design.busiest import BusiestRange
from cpgraph.design.schema import Design


def runs(points: list[int]) -> tuple[tuple[int, int], ...]:
    """Sorted points as maximal runs of consecutive integers: [3, 4, 5, 9] -> ((3, 5), (9, 9))."""
    out: list[tuple[int, int]] = []
    for n in points:
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
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
class Choice:
    """A bucket the search selector takes for busiest loads M with low < M <= high."""

    bucket: int
    low: int
    high: int
    capacity: int


def choices(design: Design, buckets: tuple[int, ...], caps: dict[int, int]) -> tuple[Choice, ...]:
    """Per bucket the selector can take from ``buckets``: the busiest loads that make it the first with room
    (required = align_up(M, A) <= capacity iff M <= floor(capacity/A)*A)."""
    a = design.align_size
    if design.selector == "smallest":
        if not buckets:
            return ()
        return (Choice(buckets[0], -1, 1 << 62, caps.get(buckets[0], 0)),)
    if design.selector != "search":
        raise ValueError(f"selector must be one of search, smallest; got {design.selector!r}")
    out = []
    best = -1  # the most rows any earlier bucket had room for, as a busiest-load bound
    for b in buckets:
        if b not in caps:
            continue
        high = (caps[b] // a) * a
        if high > best:
            out.append(Choice(b, best, high, caps[b]))
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


def choice_at(design: Design, n: int, bucket: int, caps: dict[int, int]) -> Choice:
    """The Choice of ``bucket`` among n tokens' considered buckets."""
    return next(c for c in choices(design, considered(design, n), caps) if c.bucket == bucket)
