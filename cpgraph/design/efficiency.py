"""What a design costs: worst-case padding, the eager-fallback region, static rows and bytes per bucket.

Exact over every CP-active batch of at most ``request_bound`` requests: cpgraph.design.loads enumerates
every achievable busiest-rank load for each (n, R), and the selector depends only on n and the rows
that load needs. Ratios are rows executed per real token: global B / n, CP-local P * capacity(B) / n.
"""

from __future__ import annotations

from dataclasses import dataclass

from cpgraph.design.evaluate import select
from cpgraph.design.loads import busiest_loads, example_batch
from cpgraph.design.schema import Design
from cpgraph.reference import align_up, capture_local_tokens

DEFAULT_REQUEST_BOUND = 8


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
    """For batches of exactly ``requests`` requests: token ranges where some / every batch runs eagerly."""

    requests: int
    some_eager: tuple[tuple[int, int], ...]
    all_eager: tuple[tuple[int, int], ...]
    eager_points: int  # (n, busiest load) pairs that fall back
    points: int


@dataclass(frozen=True)
class Efficiency:
    request_bound: int
    worst_global: Extreme | None
    worst_local: Extreme | None
    regions: tuple[Region, ...]
    buckets: tuple[BucketCost, ...]
    largest_bucket: int
    curve: tuple[tuple[int, float, float], ...]  # (n, least B/n, largest B/n) over admitted batches

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


def efficiency(design: Design, *, request_bound: int = DEFAULT_REQUEST_BOUND) -> Efficiency:
    """Exact efficiency figures over CP-active batches of 1..request_bound requests."""
    p, a = design.cp_size, design.align_size
    caps = design.capacities()[0]
    top = max(design.buckets)
    decided: dict[tuple[int, int], int | None] = {}
    # (ratio, n, requests, bucket, busiest) of the worst batch so far
    worst_global: tuple[float, int, int, int, int] | None = None
    worst_local: tuple[float, int, int, int, int] | None = None
    regions = []
    curve: dict[int, tuple[float, float]] = {}
    for requests in range(1, request_bound + 1 if p > 1 else 1):
        some, every = [], []
        eager_points = points = 0
        for n in range(2 * p * requests, top + 1):
            loads = busiest_loads(n, requests, cp_size=p, strategy=design.strategy)
            eager = 0
            for busiest in loads:
                required = align_up(busiest, a)
                key = (n, required)
                if key not in decided:
                    decided[key] = select(design, n, required, caps)
                bucket = decided[key]
                if bucket is None:
                    eager += 1
                    continue
                ratio = bucket / n
                low, high = curve.get(n, (ratio, ratio))
                curve[n] = (min(low, ratio), max(high, ratio))
                local = p * caps.get(bucket, 0) / n
                if worst_global is None or ratio > worst_global[0]:
                    worst_global = (ratio, n, requests, bucket, busiest)
                if worst_local is None or local > worst_local[0]:
                    worst_local = (local, n, requests, bucket, busiest)
            points += len(loads)
            eager_points += eager
            if eager:
                some.append(n)
            if loads and eager == len(loads):
                every.append(n)
        regions.append(Region(requests, runs(some), runs(every), eager_points, points))

    def concrete(worst: tuple[float, int, int, int, int] | None) -> Extreme | None:
        if worst is None:
            return None
        ratio, n, requests, bucket, busiest = worst
        lengths = example_batch(n, requests, busiest, cp_size=p, strategy=design.strategy) or ()
        return Extreme(ratio, n, requests, bucket, lengths)

    return Efficiency(
        request_bound,
        concrete(worst_global),
        concrete(worst_local),
        tuple(regions),
        bucket_costs(design),
        top,
        tuple((n, lo, hi) for n, (lo, hi) in sorted(curve.items())),
    )
