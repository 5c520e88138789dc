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
  shown. Contiguous and dual_chunk_swap: values between lo(n) and hi(n) are the hull (reported as an upper
  bound); dual_chunk_swap's lo(n) is the least over one request plus 2P-token requests (busiest.py: equal
  to brute force where compared, not proved; the report says so).
Under local keying (vLLM) the decision reads the keys: the largest rank-local rows m (every batch is keyed,
lengths >= 1) and, for a design admitting by the token count, n. Batches of n tokens have every busiest
load m from ceil(n/P) to n (busiest.local_range), so, with s(k) the size the scan takes for key k:
- eager fallback: some batch of n tokens runs eagerly iff its largest key has no size (m = n, or n itself
  when admitted by n), every batch iff its least key has none; n > P * (largest size) (admission by m) or
  n > the largest size (admission by n) always runs eagerly;
- worst padding: the size over its key s(m)/m (the first figure, the local analogue of B/n; admitted by
  n, over the least m of that n), and P * s/n (rows executed over real tokens, the least n for that m);
- the curve (n, least P*s/n, largest P*s/n) for --plot, up to CURVE_POINTS token counts.
Exact for every strategy the closed form of busiest.local_range holds for; a design it does not (the dcp
row copies short prefills) gets no figures, with a note saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cpgraph.design.busiest import BusiestRange, LocalRange, batch_with_busiest, busiest_range, local_range
from cpgraph.design.evaluate import SAFETY, evaluate, select_keyed, violations_at
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
    keyed_locally: bool = False  # local keying: the first figure is s/m, the curve P*s/n
    eager_above: int | None = None  # every batch of more tokens runs eagerly (None: the largest bucket)
    computed: bool = True  # False: no figures (``note`` says why)

    @property
    def top(self) -> int:
        """The token count above which every batch runs eagerly."""
        return self.largest_bucket if self.eager_above is None else self.eager_above

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
        if not design.keyed.recorded_capacity:  # a size s holds s rows: no single-request rule to compare
            out.append(BucketCost(b, rows, None if rows is None else rows * design.bytes_per_row, None))
            continue
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
    would crash a server); exact for live-layout designs, () for padded ones (their replay reads the pad).
    Local keying: ``_local_crash_region``."""
    if not design.keyed.windowed:
        return _local_crash_region(design)
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
    if not design.keyed.windowed:
        return _local_efficiency(design)
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
    if not rng.lo_exact:
        note = (
            f"{design.strategy} at cp_size {p}: lo(n), the least busiest load, is the least over one request "
            "plus 2P-token requests (equal to brute force where compared, not proved), so 'every batch eager' "
            "and the padding figures rest on it; hi(n) and 'some batches eager' are exact"
        )
    region = Region(0, runs(some), runs(every), len(some), len(sweep.ns))
    return Efficiency(
        0, _extreme(rng, worst_global), _extreme(rng, worst_local), (region,), bucket_costs(design), top, curve, note
    )


CURVE_POINTS = 1 << 16  # token counts the local curve (for --plot) covers, at most


def _sizes_by_key(design: Design, largest: int, required_of_key: bool) -> np.ndarray:
    """s(k) for every key k in 0..largest: the size the scan takes (-1: none). ``required_of_key``: the
    rows to fit are the key itself (admission by m); else the key is n and the rows m <= n always fit a
    size >= n (capacity s)."""
    caps = design.capacities()[0]
    out = np.full(largest + 1, -1, dtype=np.int64)
    for k in range(1, largest + 1):
        got = select_keyed(design, k, k if required_of_key else 0, caps)
        out[k] = -1 if got is None else got
    return out


def _local_efficiency(design: Design) -> Efficiency:
    """The module docstring's local figures, exact (closed forms of busiest.local_range and the scan per key)."""
    p, largest = design.cp_size, max(design.buckets)
    try:
        rng = local_range(design.strategy, p)
    except ValueError as exc:
        region = Region(0, (), (), 0, 0)
        return Efficiency(0, None, None, (region,), bucket_costs(design), largest, (), f"not computed: {exc}",
                          True, None, False)
    by_tokens = design.admits_by == "num_tokens"
    sizes = _sizes_by_key(design, largest, not by_tokens)
    top = largest if by_tokens else _last_n(rng, largest)
    some, every = _local_regions(rng, top, largest, by_tokens)
    worst_key = _worst_key(design, rng, sizes, by_tokens)
    worst_local = _worst_rows(design, rng, sizes, by_tokens)
    curve = _local_curve(design, rng, sizes, top, by_tokens)
    region = Region(0, runs(some), runs(every), len(some), top)
    return Efficiency(0, worst_key, worst_local, (region,), bucket_costs(design), largest, curve, "", True, top)


def _last_n(rng: LocalRange, largest: int) -> int:
    """The most tokens a batch keyed by m <= the largest size can have (P * largest for per-request loads)."""
    n = largest * rng.cp_size
    while rng.lo(n) > largest:
        n -= 1
    return n


def _local_regions(rng: LocalRange, top: int, largest: int, by_tokens: bool) -> tuple[list[int], list[int]]:
    """n in 1..top where some / every batch runs eagerly: its largest / least key has no size (the scan
    takes a size for every key up to the largest size, none above)."""
    if by_tokens:
        return [], []  # every n <= the largest size is admitted whatever its m; above it every batch is eager
    some = [n for n in range(1, top + 1) if rng.hi(n) > largest]
    every = [n for n in range(1, top + 1) if rng.lo(n) > largest]
    return some, every


def _worst_key(design: Design, rng: LocalRange, sizes: np.ndarray, by_tokens: bool) -> Extreme | None:
    """The largest size over its key: s(m)/m over every m (admitted by n: s(n) over the least m of n)."""
    best: tuple[float, int, int] | None = None  # (ratio, n, m)
    for k in range(1, sizes.shape[0]):
        s = int(sizes[k])
        if s < 0:
            continue
        n, m = (k, rng.lo(k)) if by_tokens else (rng.cp_size * k, k)  # the most tokens for m: the fewest requests
        ratio = s / m
        if best is None or ratio > best[0]:
            best = (ratio, n, m)
    return None if best is None else _local_extreme(design, rng, best[0], best[1], best[2])


def _worst_rows(design: Design, rng: LocalRange, sizes: np.ndarray, by_tokens: bool) -> Extreme | None:
    """P * s over the tokens: the most rows executed per real token (the fewest tokens for that key)."""
    p = design.cp_size
    best: tuple[float, int, int] | None = None
    for k in range(1, sizes.shape[0]):
        s = int(sizes[k])
        if s < 0:
            continue
        n, m = (k, rng.lo(k)) if by_tokens else (rng.least_tokens(k), k)
        ratio = p * s / n
        if best is None or ratio > best[0]:
            best = (ratio, n, m)
    return None if best is None else _local_extreme(design, rng, best[0], best[1], best[2])


def _local_extreme(design: Design, rng: LocalRange, ratio: float, n: int, m: int) -> Extreme:
    lengths = rng.batch(n, m)
    bucket = evaluate(design, lengths).bucket
    return Extreme(ratio, n, len(lengths), -1 if bucket is None else bucket, lengths)


def _local_curve(
    design: Design, rng: LocalRange, sizes: np.ndarray, top: int, by_tokens: bool
) -> tuple[tuple[int, float, float], ...]:
    """(n, least P*s/n, largest P*s/n) over the admitted batches of n tokens, n up to CURVE_POINTS."""
    p, largest = design.cp_size, sizes.shape[0] - 1
    out = []
    for n in range(1, min(top, CURVE_POINTS) + 1):
        if by_tokens:
            keys = [n] if n <= largest else []
        elif design.is_sorted:  # s(m) never drops as m grows: the ends of the key range hold the extremes
            keys = sorted({rng.lo(n), min(rng.hi(n), largest)}) if rng.lo(n) <= largest else []
        else:
            keys = list(range(rng.lo(n), min(rng.hi(n), largest) + 1))
        taken = [int(sizes[k]) for k in keys if sizes[k] >= 0]
        if taken:
            out.append((n, p * min(taken) / n, p * max(taken) / n))
    return tuple(out)


def _local_crash_region(design: Design) -> tuple[tuple[int, int], ...]:
    """Token ranges where some batch breaks a safety invariant under local keying: every (n, m) with
    ceil(n/P) <= m <= n, judged through ``evaluate`` on a batch of n tokens with busiest m. Admitted by m,
    a decision reads m only: one batch per m, and n crashes iff some m in [lo(n), hi(n)] does. Admitted by
    n, the graph admitted is s(n) and the one replayed is keyed by m: the keys lo(n), lo(n)+1 and hi(n)
    stand for every m of that n (only m = s(n) can replay the admitted graph)."""
    try:
        rng = local_range(design.strategy, design.cp_size)
    except ValueError:
        return ()
    largest = max(design.buckets)
    hits = []
    if design.admits_by == "num_tokens":
        for n in range(1, largest + 1):
            lo, hi = rng.lo(n), min(rng.hi(n), largest)
            keys = sorted({lo, hi, min(lo + 1, hi)})
            if any(set(evaluate(design, rng.batch(n, m)).violated) & set(SAFETY) for m in keys):
                hits.append(n)
        return runs(hits)
    top = _last_n(rng, largest)
    crash = np.zeros(largest + 2, dtype=np.int64)
    for m in range(1, largest + 1):  # the most tokens for m: a batch of few requests
        crash[m] = bool(set(evaluate(design, rng.batch(rng.cp_size * m, m)).violated) & set(SAFETY))
    prefix = np.concatenate(([0], np.cumsum(crash)))
    for n in range(1, top + 1):
        lo, hi = rng.lo(n), min(rng.hi(n), largest)
        if lo <= hi and prefix[hi + 1] - prefix[lo] > 0:
            hits.append(n)
    return runs(hits)
