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
"""

from __future__ import annotations

import bisect
import itertools
import random
from functools import lru_cache
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from cpgraph.check.batch import Batch, Factor, build, parse_table, record, rows_table
from cpgraph.check.boundary import Case, BoundaryFeed
from cpgraph.check.judging import live_loads
from cpgraph.check.options import SEARCHED_FACTORS, CheckOptions
from cpgraph.reference import default_align_size
from cpgraph.reference.judge import window_top

T = TypeVar("T")


def _edge_batches(
    lengths: tuple[int, ...], cp_size: int, options: CheckOptions, *, pad: int = 0, factor: Factor = 2, align: int | None = None
) -> Iterator[Batch]:
    """Capture lists and tables around this batch's n (sum + ``pad``) and required rows (see the module
    docstring). With a pad, buckets in [sum, n) and (F*sum, F*n] are among the edges, so a selector that
    takes its window from the lengths instead of n meets a bucket only that mistake picks or skips."""
    s, f, ctx = options.strategy, factor, options.context_len
    n = sum(lengths) + pad
    a = default_align_size(cp_size=cp_size, strategy=s) if align is None else align
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
    lo = 1 if cp_size == 1 else 2 * cp_size
    hi = 6 if cp_size == 1 else lo + max(4 * cp_size, 16) if cp_size < 8 else lo + 2 * cp_size
    out: list[tuple[int, ...]] = []
    for r in range(1, min(3, options.max_requests) + 1):
        out.extend(c for c in itertools.combinations_with_replacement(range(lo, hi), r) if sum(c) <= options.max_tokens)
    out.sort(key=lambda c: (sum(c), len(c)))
    return out


def _domain(cp_size: int, options: CheckOptions, shard: int = 0, shards: int = 1) -> Iterator[Batch]:
    """The small domain of ``cp_size``: for each length multiset and n, the batches around its edges.
    With ``shards`` > 1, only every shards-th (lengths, n) group, so each search process builds only
    the batches it checks (the shards together are the whole domain)."""
    factors, aligns = options.factors, options.aligns(cp_size)
    group = 0
    for turn, lengths in enumerate(_small_lengths(cp_size, options)):
        f, a = factors[turn % len(factors)], aligns[turn % len(aligns)]
        for pad in pad_choices(sum(lengths), cp_size, a, options, turn):
            group += 1
            if group % shards != shard:
                continue
            for batch in _edge_batches(lengths, cp_size, options, pad=pad, factor=f, align=a):
                if batch.capture_num_tokens:
                    yield batch


def exhaustive(options: CheckOptions, *, shard: int = 0, shards: int = 1) -> Iterator[Case]:
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


class _Draw:
    """The draws of one seeded stream, the same values as ``random.Random``'s own methods in the same
    order, with fewer Python layers: ``randint(a, b)`` is ``a + _randbelow(b - a + 1)`` (what randrange
    does after its checks) with Random's ``_randbelow`` (the getrandbits rejection loop) written inline,
    ``choice(seq)`` is ``seq[_randbelow(len(seq))]``, and a weighted choice bisects precomputed cumulative
    weights as ``choices`` does. Tests hold the stream equal to Random's."""

    __slots__ = ("rng", "random", "randint", "choice", "inline")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.random = rng.random
        getrandbits = rng.getrandbits
        inline = getattr(type(rng), "_randbelow", None) is getattr(random.Random, "_randbelow_with_getrandbits", 0)
        self.inline = inline  # Random's _randbelow is the getrandbits loop: draws may be written out

        def randint(a: int, b: int) -> int:
            width = b - a + 1
            if width <= 0:
                return rng.randint(a, b)  # its error, as before
            k = width.bit_length()
            r = getrandbits(k)
            while r >= width:
                r = getrandbits(k)
            return a + r

        def choice(seq: Sequence[T]) -> T:
            n = len(seq)
            if not n:
                return rng.choice(seq)  # its error
            k = n.bit_length()
            r = getrandbits(k)
            while r >= n:
                r = getrandbits(k)
            return seq[r]

        if not inline:  # a Random whose _randbelow is another: its own methods
            randint, choice = rng.randint, rng.choice
        self.randint = randint
        self.choice: Callable[[Sequence[Any]], Any] = choice


_POWERS = tuple(1 << k for k in range(1, 16))


def random_cases(options: CheckOptions) -> Iterator[Case]:
    """Seeded random batches forever: sizes, residues mod 2P, padded n, capture lists and tables all varied.

    One batch: a cp_size (weights 1/P), a factor, an alignment; up to max_requests lengths (a third of
    them short multiples of 2P, a quarter whole rounds of 2P plus an awkward remainder, most of the rest
    anywhere up to the budget, one in twenty shorter than 2P); for half of them a padded n; a capture
    list (a grid around n, the powers of two, or scattered buckets, plus n, F*n and, for a padded n, the
    edges a window taken from the lengths would meet); a table ('arbitrary' rows are the captured ones
    nudged, some absent). Written as one loop over one seeded stream (the draws in a fixed order, the
    stream the tests hold equal to random.Random's own methods)."""
    rng = random.Random(options.seed)
    draw = _Draw(rng)
    random_, randint, choice = draw.random, draw.randint, draw.choice
    getrandbits, inline = rng.getrandbits, draw.inline
    sample = rng.sample
    sizes = options.cp_sizes
    # Equal policy time per cp_size rather than equal batch counts: a batch asks P ranks, so weight 1/P.
    weights = [0.3 if p == 1 else 1.0 / p for p in sizes]
    cum = list(itertools.accumulate(weights))  # rng.choices(sizes, weights): the same bisection
    total_weight, hi = cum[-1] + 0.0, len(sizes) - 1
    s, ctx = options.strategy, options.context_len
    aligns = {p: options.aligns(p) for p in sizes}
    kinds = {t: parse_table(t)[0] for t in options.capacities}
    captured = {(p, a): rows_table("captured", cp_size=p, align_size=a, strategy=s, context_len=ctx) for p in sizes for a in aligns[p]}
    tables = {
        (t, p, a): rows_table(t, cp_size=p, align_size=a, strategy=s, context_len=ctx)
        for t in options.capacities if kinds[t] != "arbitrary" for p in sizes for a in aligns[p]
    }
    fixed_factors, configured = options.padding_factors, options.max_padding_factor
    num_tokens, capacities = options.num_tokens, options.capacities
    max_requests, budget, cap = options.max_requests, options.max_tokens, 4 * options.max_tokens
    top64: dict[Factor, int] = {}
    while True:
        p = sizes[bisect.bisect(cum, random_() * total_weight, 0, hi)]
        if fixed_factors is not None:
            f = choice(fixed_factors)
        else:  # mostly the configured F; sometimes another, so a policy that ignores max_padding_factor shows
            f = configured if random_() < 0.8 else choice(SEARCHED_FACTORS)
        align = choice(aligns[p])
        # the lengths
        low = 2 * p
        r = randint(1, max_requests)
        out: list[int] = []
        live = 0
        for i in range(r):
            roll = random_()
            if roll < 0.35:
                length = randint(low, 8 * low)
            elif roll < 0.6:
                length = low * randint(1, max(1, budget // (low * r))) + choice((p + 1, low - 1, 1, p))
            elif roll < 0.95:
                length = randint(low, max(low, budget // r))
            else:
                length = randint(1, low)  # a short request: not CP-active
            length = max(1, min(length, budget - live - (r - i - 1)))
            out.append(length)
            live += length
            if live >= budget:
                break
        lengths = tuple(out)
        pad = 0
        if num_tokens == "padded" or (num_tokens == "both" and random_() < 0.5):
            pad = choice((-live % align or align, randint(1, 2 * p), randint(1, max(1, live // 4))))
        n = live + pad
        # the capture list
        top_n = n * f if type(f) is int else window_top(n, f)
        above = top64.get(f)
        if above is None:
            above = top64[f] = window_top(64, f)
        roll = random_()
        top = max(low, min(top_n + above, cap))
        if roll < 0.4:
            step = choice((2 * p, 8 * p, 64, 128, 256, max(1, n // 8)))
            grid = range(step * max(1, (n // 2) // step), top + 1, step)  # sample() reads a range as it reads the list
            buckets = set(sample(grid, min(len(grid), randint(1, 12)))) if grid else set()
        elif roll < 0.6:
            buckets = set(_POWERS[: bisect.bisect(_POWERS, top)])
        else:
            buckets = set()
            first = max(1, n // 2)
            for _ in range(randint(1, 8)):
                buckets.add(randint(first, top))
        near = n + randint(1, 4 * low)  # drawn before the three coins below, as a tuple of the three was
        for b in (n, top_n, near):
            if random_() < 0.35:
                buckets.add(b)
        if live < n:  # padded: tempt a window taken from the lengths (a bucket in [sum, n), one in (F*sum, F*n])
            for b in (live, window_top(live, f) + 1):
                if random_() < 0.35:
                    buckets.add(b)
        clean = tuple(sorted(filter(low.__le__, buckets))) or (max(n, low),)  # build()'s clean list
        # the table
        table = choice(capacities)
        if kinds[table] != "arbitrary":  # build(lengths, buckets, table, ...), one record
            rows_of = tables[(table, p, align)]
            caps = tuple(zip(clean, map(rows_of.__getitem__, clean)))
            yield ("random", record(p, align, n, lengths, clean, caps, f, table, ctx if table == "captured" else None))
            continue
        rows = {}
        base_rows = captured[(p, align)]
        nudges = (0, 0, align, -align, 1, -1)
        for b in clean:
            if random_() < 0.2:
                continue  # absent: no recorded capacity
            if inline:  # choice(nudges), its draw written out (6 values: 3 bits, redrawn above 5)
                k = getrandbits(3)
                while k >= 6:
                    k = getrandbits(3)
                nudge = nudges[k]
            else:
                nudge = choice(nudges)
            rows[b] = max(0, base_rows[b] + nudge)
        yield ("random", record(p, align, n, lengths, clean, tuple(rows.items()), f, "arbitrary", None))


RANDOM_EVERY = 4  # while the exhaustive domains last, one random batch after every 3 exhaustive ones


def _mix(first: Iterator[Case], then: Iterator[Case], *, every: int) -> Iterator[Case]:
    """``first`` with one item of ``then`` in every ``every`` (so bugs only random inputs reach are not
    kept waiting for the whole exhaustive phase), then the rest of ``then``."""
    for i, case in enumerate(first):
        yield case
        if i % every == every - 1:
            yield next(then)
    yield from then


FEED_EVERY = 32  # batches between two looks at the solver's pipe (each look is a system call or two)


def cases(options: CheckOptions, *, shard: int = 0, shards: int = 1) -> Generator[Case, None, None]:
    """Boundary models as soon as the solver has them, the exhaustive small domains, then seeded random
    batches until the caller stops (closing the generator stops the solver).

    With ``shards`` > 1 this is shard ``shard``'s share: every shards-th group of the exhaustive batches
    (one length multiset at one n), its own random seed, and the boundary models on shard 0 only."""
    feed = BoundaryFeed(options) if options.boundary and shard == 0 else None
    mine = exhaustive(options, shard=shard, shards=shards)
    random_stream = random_cases(replace(options, seed=options.seed + 7919 * shard))
    try:
        for i, case in enumerate(_mix(mine, random_stream, every=RANDOM_EVERY)):
            if feed is not None and not i % FEED_EVERY:
                yield from feed.ready()
            yield case
    finally:
        if feed is not None:
            feed.close()
