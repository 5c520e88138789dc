"""Inputs, cheapest and sharpest first: Z3 boundary models (boundary.py), exhaustive small domains, seeded random.

Every batch carries a capacity table made the way upstream records it ('captured': one request of B
tokens), with headroom for R requests ('headroom:R'), or 'arbitrary' (perturbed, some buckets absent).
The small-domain tables are built around each batch's own n and required rows, so every edge the
selector must respect (n-1, n, the first bucket that fits, F*n, F*n+1, an absent capacity) is met.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Generator, Iterator
from dataclasses import replace

from cpgraph.check.batch import Batch, build, captured_rows, parse_table
from cpgraph.check.boundary import Case, BoundaryFeed
from cpgraph.check.invariants import live_loads
from cpgraph.check.options import CheckOptions
from cpgraph.reference import default_align_size


def _edge_batches(lengths: tuple[int, ...], cp_size: int, options: CheckOptions) -> Iterator[Batch]:
    """Capture lists and tables around this batch's n and required rows (see the module docstring)."""
    s, f = options.strategy, options.max_padding_factor
    n = sum(lengths)
    a = default_align_size(cp_size=cp_size, strategy=s)
    req = -(-max(live_loads(lengths, cp_size, s)) // a) * a
    # captured rows are align_up(ceil(B/P), A); the first B >= n with rows >= req:
    fit = max(n, cp_size * (req - a) + 1)
    low = 2 * cp_size
    edges = {b for b in (n - 1, n, fit - 1, fit, f * n, f * n + 1) if b >= low}
    kinds = {parse_table(t)[0]: t for t in options.capacities}
    if "captured" in kinds:
        yield build(lengths, edges, "captured", cp_size=cp_size, strategy=s, factor=f)
        yield build(lengths, {n, f * n}, "captured", cp_size=cp_size, strategy=s, factor=f)
    if "headroom" in kinds:
        yield build(lengths, edges, kinds["headroom"], cp_size=cp_size, strategy=s, factor=f)
    if "arbitrary" in kinds:
        tight = max(req - 1, 0)
        build_rows = {n - 1: req, n: tight, f * n: req, f * n + 1: req}
        yield build(lengths, {n, n + 1, f * n}, "", cp_size=cp_size, strategy=s, factor=f, rows={n + 1: req, f * n: req + a})
        yield build(lengths, [b for b in build_rows if b >= low], "", cp_size=cp_size, strategy=s, factor=f, rows=build_rows)
        over = {n - 1: req, n: tight, f * n: tight, f * n + 1: req}
        yield build(lengths, [b for b in over if b >= low], "", cp_size=cp_size, strategy=s, factor=f, rows=over)


def _small_lengths(cp_size: int, options: CheckOptions) -> list[tuple[int, ...]]:
    """Every multiset of up to 3 lengths from [2P, 2P + W), smallest n first: W = max(4P, 16) below P = 8
    (several rounds of L mod 2P), one round W = 2P from P = 8 (every residue once)."""
    lo = 1 if cp_size == 1 else 2 * cp_size
    hi = 6 if cp_size == 1 else lo + max(4 * cp_size, 16) if cp_size < 8 else lo + 2 * cp_size
    out: list[tuple[int, ...]] = []
    for r in range(1, min(3, options.max_requests) + 1):
        out.extend(c for c in itertools.combinations_with_replacement(range(lo, hi), r) if sum(c) <= options.max_tokens)
    out.sort(key=lambda c: (sum(c), len(c)))
    return out


def _domain(cp_size: int, options: CheckOptions) -> Iterator[Batch]:
    for lengths in _small_lengths(cp_size, options):
        for batch in _edge_batches(lengths, cp_size, options):
            if batch.capture_num_tokens:
                yield batch


def exhaustive(options: CheckOptions) -> Iterator[Case]:
    """The small domains of every cp_size, round-robin so that no P waits for a larger one."""
    streams = [_domain(p, options) for p in options.cp_sizes]
    while streams:
        for stream in list(streams):
            batch = next(stream, None)
            if batch is None:
                streams.remove(stream)
            else:
                yield ("exhaustive", batch)


def _random_lengths(rng: random.Random, p: int, options: CheckOptions) -> tuple[int, ...]:
    s = 2 * p
    r = rng.randint(1, options.max_requests)
    budget = options.max_tokens
    out: list[int] = []
    for _ in range(r):
        roll = rng.random()
        if roll < 0.35:
            length = rng.randint(s, 8 * s)
        elif roll < 0.6:
            length = s * rng.randint(1, max(1, budget // (s * r))) + rng.choice((p + 1, s - 1, 1, p))
        elif roll < 0.95:
            length = rng.randint(s, max(s, budget // r))
        else:
            length = rng.randint(1, s)  # a short request: not CP-active
        out.append(max(1, min(length, budget - sum(out) - (r - len(out) - 1))))
        if sum(out) >= budget:
            break
    return tuple(out)


def _random_buckets(rng: random.Random, n: int, p: int, options: CheckOptions) -> set[int]:
    f, low = options.max_padding_factor, 2 * p
    roll = rng.random()
    top = max(low, min(f * n + f * 64, 4 * options.max_tokens))
    if roll < 0.4:
        step = rng.choice((2 * p, 8 * p, 64, 128, 256, max(1, n // 8)))
        grid = list(range(step * max(1, (n // 2) // step), top + 1, step))
        buckets = set(rng.sample(grid, min(len(grid), rng.randint(1, 12)))) if grid else set()
    elif roll < 0.6:
        buckets = {1 << k for k in range(1, 16) if (1 << k) <= top}
    else:
        buckets = {rng.randint(max(1, n // 2), top) for _ in range(rng.randint(1, 8))}
    buckets |= {b for b in (n, f * n, n + rng.randint(1, 4 * low)) if rng.random() < 0.35}
    return {b for b in buckets if b >= low} or {max(n, low)}


def random_cases(options: CheckOptions) -> Iterator[Case]:
    """Seeded random batches forever: sizes, residues mod 2P, capture lists and tables all varied."""
    rng = random.Random(options.seed)
    sizes = options.cp_sizes
    # Equal policy time per cp_size rather than equal batch counts: a batch asks P ranks, so weight 1/P.
    weights = [0.3 if p == 1 else 1.0 / p for p in sizes]
    s = options.strategy
    while True:
        p = rng.choices(sizes, weights)[0]
        # Mostly the configured F; sometimes another, so a policy that ignores max_padding_factor shows.
        f = options.max_padding_factor if rng.random() < 0.8 else rng.choice((1, 2, 3, 4))
        lengths = _random_lengths(rng, p, options)
        n = sum(lengths)
        buckets = _random_buckets(rng, n, p, replace(options, max_padding_factor=f))
        table = rng.choice(options.capacities)
        if parse_table(table)[0] != "arbitrary":
            yield ("random", build(lengths, buckets, table, cp_size=p, strategy=s, factor=f))
            continue
        align = default_align_size(cp_size=p, strategy=s)
        rows = {}
        for b in sorted(buckets):
            if rng.random() < 0.2:
                continue  # absent: no recorded capacity
            base = captured_rows(b, p, align, s)
            rows[b] = max(0, base + rng.choice((0, 0, align, -align, 1, -1)))
        yield ("random", build(lengths, buckets, "", cp_size=p, strategy=s, factor=f, rows=rows))


RANDOM_EVERY = 4  # while the exhaustive domains last, one random batch after every 3 exhaustive ones


def _mix(first: Iterator[Case], then: Iterator[Case], *, every: int) -> Iterator[Case]:
    """``first`` with one item of ``then`` in every ``every`` (so bugs only random inputs reach are not
    kept waiting for the whole exhaustive phase), then the rest of ``then``."""
    for i, case in enumerate(first):
        yield case
        if i % every == every - 1:
            yield next(then)
    yield from then


def cases(options: CheckOptions, *, shard: int = 0, shards: int = 1) -> Generator[Case, None, None]:
    """Boundary models as soon as the solver has them, the exhaustive small domains, then seeded random
    batches until the caller stops (closing the generator stops the solver).

    With ``shards`` > 1 this is shard ``shard``'s share: every shards-th exhaustive batch, its own random
    seed, and the boundary models on shard 0 only."""
    feed = BoundaryFeed(options) if options.boundary and shard == 0 else None
    mine = (batch for i, batch in enumerate(exhaustive(options)) if i % shards == shard)
    random_stream = random_cases(replace(options, seed=options.seed + 7919 * shard))
    try:
        for case in _mix(mine, random_stream, every=RANDOM_EVERY):
            if feed is not None:
                yield from feed.ready()
            yield case
    finally:
        if feed is not None:
            feed.close()
