"""Inputs, cheapest and sharpest first: Z3 boundary models (boundary.py), exhaustive small domains, seeded random.

Knobs: the padding factor is the fixed one(s) of --padding-factors (or the policy's declared
max_padding_factor), else the configured F with one random batch in five at another F in 1..4; the
alignment is the fixed one(s) of --align-sizes (or the policy's align_size), else the strategy's; n is
the lengths' sum and/or a padded n (--num-tokens live|padded|both): padded to a multiple of the
alignment, or by a small arbitrary pad.

Every batch carries a capacity table made the way upstream records it ('captured': one request of B
tokens), with headroom for R requests ('headroom:R'), or 'arbitrary' (perturbed, some buckets absent).
The small-domain tables are built around each batch's own n and required rows, so every edge the
selector must respect (n-1, n, the first bucket that fits, F*n, F*n+1, an absent capacity) is met.
Under global keying the small domain draws its capacity edges first: the multisets whose busiest rank
holds one row over a captured capacity a bucket in the window has, then exact fits alternating with the
rest (``_edges_early``), so a one-row miscount of the busiest rank is met early.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from collections.abc import Generator, Iterator
from dataclasses import replace

from cpgraph.check.batch import Batch, Factor, build, parse_table
from cpgraph.check.boundary import PhasedBatch, BoundaryFeed
from cpgraph.check.judging import live_loads
from cpgraph.check.options import CheckOptions
from cpgraph.check.randoms import random_cases as random_cases  # the random phase
from cpgraph.check.randoms_keyed import local_random_cases
from cpgraph.reference.layout import rank_loads
from cpgraph.reference.strategies import strategy_row
from cpgraph.reference import default_align_size
from cpgraph.reference.judge import window_top


def _key_edges(
    lengths: tuple[int, ...], cp_size: int, options: CheckOptions, align: int, factor: Factor, flags: tuple[bool, ...] | None
) -> Iterator[Batch]:
    """Under local keying: capture lists around the batch's key m (the largest rank-local rows) and the
    rows it needs, align_up(m, A): sizes m - 1, m, m + 1, the first that fits, 2m; and one list with no
    size that holds the key (the batch must run eagerly)."""
    s = options.strategy
    m = max(rank_loads(lengths, cp_size=cp_size, strategy=s, is_prefilling=flags))
    need = -(-m // align) * align
    kw = dict(cp_size=cp_size, strategy=s, factor=factor, align_size=align, is_prefilling=flags)
    yield build(lengths, {b for b in (m - 1, m, m + 1, need, need + 1, 2 * m) if b >= 1}, "sizes", **kw)  # type: ignore[arg-type]
    yield build(lengths, {need, 2 * need + 1}, "sizes", **kw)  # type: ignore[arg-type]
    below = {b for b in (1, m // 2, need - 1) if 1 <= b < need}
    if below:
        yield build(lengths, below, "sizes", **kw)  # type: ignore[arg-type]


def _edge_batches(
    lengths: tuple[int, ...], cp_size: int, options: CheckOptions, *, pad: int = 0, factor: Factor = 2, align: int | None = None,
    flags: tuple[bool, ...] | None = None,
) -> Iterator[Batch]:
    """Capture lists and tables around this batch's n (sum + ``pad``) and required rows (see the module
    docstring). With a pad, buckets in [sum, n) and (F*sum, F*n] are among the edges, so a selector that
    takes its window from the lengths instead of n meets a bucket only that mistake picks or skips."""
    s, f, ctx = options.strategy, factor, options.context_len
    n = sum(lengths) + pad
    a = default_align_size(cp_size=cp_size, strategy=s) if align is None else align
    if options.keying == "local":
        yield from _key_edges(lengths, cp_size, options, a, f, flags)
        return
    req = -(-max(live_loads(lengths, cp_size, s)) // a) * a
    top = window_top(n, f)
    # captured rows are about align_up(ceil(B/P), A); the first B >= n with rows >= req:
    fit = max(n, cp_size * (req - a) + 1)
    low = 2 * cp_size
    edges = {b for b in (n - 1, n, fit - 1, fit, top, top + 1) if b >= low}
    kinds = _kinds(options.capacities)
    kw = dict(cp_size=cp_size, strategy=s, factor=f, pad=pad, align_size=a, context_len=ctx)
    if "captured" in kinds:
        yield build(lengths, edges, "captured", **kw)  # type: ignore[arg-type]
        yield build(lengths, {n, top}, "captured", **kw)  # type: ignore[arg-type]
    if "headroom" in kinds:
        yield build(lengths, edges, kinds["headroom"], **kw)  # type: ignore[arg-type]
    if "arbitrary" in kinds:
        tight = max(req - 1, 0)
        build_rows = {n - 1: req, n: tight, top: req, top + 1: req}
        yield build(lengths, {n, n + 1, top}, "", rows={n + 1: req, top: req + a}, **kw)  # type: ignore[arg-type]
        yield build(lengths, [b for b in build_rows if b >= low], "", rows=build_rows, **kw)  # type: ignore[arg-type]
        over = {n - 1: req, n: tight, top: tight, top + 1: req}
        yield build(lengths, [b for b in over if b >= low], "", rows=over, **kw)  # type: ignore[arg-type]


@lru_cache(maxsize=64)
def _kinds(capacities: tuple[str, ...]) -> dict[str, str]:
    """table kind -> the spec asked for ('headroom' -> 'headroom:2')."""
    return {parse_table(t)[0]: t for t in capacities}


def pad_choices(total: int, cp_size: int, align: int, options: CheckOptions, turn: int) -> tuple[int, ...]:
    """The pads of n over the lengths' sum for one batch: 0 (live) and/or one padded n, rotating between
    padding to a multiple of the alignment and small arbitrary pads (1, P, 2P - 1)."""
    live = (0,) if options.num_tokens in ("live", "both") else ()
    if options.num_tokens == "live":
        return live
    to_align = -total % align
    small = (1, cp_size, 2 * cp_size - 1)
    choice = to_align if turn % 2 == 0 and to_align else small[(turn // 2) % len(small)]
    return live + (max(1, choice),)


def _small_lengths(cp_size: int, options: CheckOptions) -> list[tuple[int, ...]]:
    """Every multiset of up to 3 lengths from [2P, 2P + W), smallest n first: W = max(4P, 16) below P = 8
    (several rounds of L mod 2P), one round W = 2P from P = 8 (every residue once)."""
    lo = 1 if cp_size == 1 or options.keying == "local" else 2 * cp_size  # local keying has no CP-active gate
    hi = 6 if cp_size == 1 else 2 * cp_size + max(4 * cp_size, 16) if cp_size < 8 else 4 * cp_size
    out: list[tuple[int, ...]] = []
    for r in range(1, min(3, options.max_requests) + 1):
        out.extend(c for c in itertools.combinations_with_replacement(range(lo, hi), r) if sum(c) <= options.max_tokens)
    out.sort(key=lambda c: (sum(c), len(c)))
    if options.keying == "local" or cp_size == 1:
        return out  # local keying's edges are the key's own (_key_edges); P = 1 has no CP rows
    return _edges_early(out, cp_size, options)


def _capacity_edge(lengths: tuple[int, ...], cp_size: int, strategy: str, align: int) -> int:
    """How sharply ``lengths`` meet a captured capacity (align_up(ceil(B/P), A): a multiple of A): 0 when
    the busiest rank holds one row over a capacity c = m - 1 that a bucket in the window [n, 2n] has
    (P*c >= n), 1 when it holds exactly a capacity (m a multiple of A), 2 otherwise. A row miscounted by
    one on the busiest rank changes the bucket only at these two edges."""
    m = max(live_loads(lengths, cp_size, strategy))
    if align > 1 and m % align == 1 and cp_size * (m - 1) >= sum(lengths):
        return 0
    return 1 if m % align == 0 else 2


def _edges_early(ordered: list[tuple[int, ...]], cp_size: int, options: CheckOptions) -> list[tuple[int, ...]]:
    """``ordered`` (smallest n first) with the capacity edges drawn early: the one-row-over edges
    (``_capacity_edge`` 0, few: 50 of 968 multisets at P = 2, 23 at P = 4, none at P = 8) first, then the
    exact fits (1) and the rest (2) alternately, each list still smallest n first. The domain is the same;
    only the order changes, so a busiest rank counted one row short or long meets a bucket whose captured
    capacity that row crosses within the first hundred batches of its P, not after the domain's tail."""
    align = options.aligns(cp_size)[0]
    s = options.strategy
    by_rank: tuple[list[tuple[int, ...]], ...] = ([], [], [])
    for c in ordered:
        by_rank[_capacity_edge(c, cp_size, s, align)].append(c)
    over, exact, rest = by_rank
    out = list(over)
    for pair in itertools.zip_longest(exact, rest):
        out.extend(c for c in pair if c is not None)
    return out


def _domain(cp_size: int, options: CheckOptions, shard: int = 0, shards: int = 1) -> Iterator[Batch]:
    """The small domain of ``cp_size``: for each length multiset and n, the batches around its edges.
    With ``shards`` > 1, only every shards-th (lengths, n) group, so each search process builds only
    the batches it checks (the shards together are the whole domain)."""
    factors, aligns = options.factors, options.aligns(cp_size)
    group = 0
    decodes = options.decodes and strategy_row(options.strategy).mixed_rows is not None
    for turn, lengths in enumerate(_small_lengths(cp_size, options)):
        f, a = factors[turn % len(factors)], aligns[turn % len(aligns)]
        for pad in pad_choices(sum(lengths), cp_size, a, options, turn):
            for mixed, flags in _with_decodes(lengths, decodes and pad == 0, turn):
                group += 1
                if group % shards != shard:
                    continue
                for batch in _edge_batches(mixed, cp_size, options, pad=pad, factor=f, align=a, flags=flags):
                    if batch.capture_num_tokens:
                        yield batch


def _with_decodes(lengths: tuple[int, ...], decodes: bool, turn: int) -> Iterator[tuple[tuple[int, ...], tuple[bool, ...] | None]]:
    """The lengths as prefills, and (where decodes are on) with one-token decodes before, between or after
    them: one decode, and two on alternate turns (round-robin placement deals them to different ranks)."""
    yield lengths, None
    if not decodes:
        return
    prefills = (True,) * len(lengths)
    yield lengths + (1,), prefills + (False,)
    yield (1,) + lengths, (False,) + prefills
    if turn % 2:
        yield (1,) + lengths + (1,), (False,) + prefills + (False,)


def exhaustive(options: CheckOptions, *, shard: int = 0, shards: int = 1) -> Iterator[PhasedBatch]:
    """The small domains of every cp_size, round-robin so that no P waits for a larger one (shard
    ``shard`` of ``shards``: see _domain)."""
    streams = [_domain(p, options, shard, shards) for p in options.cp_sizes]
    while streams:
        for stream in list(streams):
            batch = next(stream, None)
            if batch is None:
                streams.remove(stream)
            else:
                yield ("exhaustive", batch)


RANDOM_EVERY = 4  # while the exhaustive domains last, one random batch after every 3 exhaustive ones


def _mix(first: Iterator[PhasedBatch], then: Iterator[PhasedBatch], *, every: int) -> Iterator[PhasedBatch]:
    """``first`` with one item of ``then`` in every ``every`` (so bugs only random inputs reach are not
    kept waiting for the whole exhaustive phase), then the rest of ``then``."""
    for i, case in enumerate(first):
        yield case
        if i % every == every - 1:
            yield next(then)
    yield from then


FEED_EVERY = 32  # batches between two looks at the solver's pipe (each look is a system call or two)


def cases(options: CheckOptions, *, shard: int = 0, shards: int = 1) -> Generator[PhasedBatch, None, None]:
    """Boundary models as soon as the solver has them, the exhaustive small domains, then seeded random
    batches until the caller stops (closing the generator stops the solver).

    With ``shards`` > 1 this is shard ``shard``'s share: every shards-th group of the exhaustive batches
    (one length multiset at one n), its own random seed, and the boundary models on shard 0 only."""
    feed = BoundaryFeed(options) if options.boundary and shard == 0 else None
    mine = exhaustive(options, shard=shard, shards=shards)
    seeded = replace(options, seed=options.seed + 7919 * shard)
    random_stream = local_random_cases(seeded) if options.keying == "local" else random_cases(seeded)
    try:
        for i, case in enumerate(_mix(mine, random_stream, every=RANDOM_EVERY)):
            if feed is not None and not i % FEED_EVERY:
                yield from feed.ready()
            yield case
    finally:
        if feed is not None:
            feed.close()
