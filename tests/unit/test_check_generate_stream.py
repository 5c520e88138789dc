"""The generator's random phase draws exactly the batches it drew before it was made faster (the same
seeded stream, so every seed meets the same inputs), and its draws equal random.Random's."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from fractions import Fraction

import pytest

from cpgraph.check.batch import Factor, build, captured_rows, parse_table
from cpgraph.check.boundary import PhasedBatch
from cpgraph.check.randoms import _Draw, random_cases
from cpgraph.check.options import SEARCHED_FACTORS, CheckOptions, make_options
from cpgraph.reference.judge import window_top


def _old_random_lengths(rng: random.Random, p: int, options: CheckOptions) -> tuple[int, ...]:
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


def _old_random_buckets(rng: random.Random, n: int, live: int, p: int, f: Factor, options: CheckOptions) -> set[int]:
    low = 2 * p
    top_n = window_top(n, f)
    roll = rng.random()
    top = max(low, min(top_n + window_top(64, f), 4 * options.max_tokens))
    if roll < 0.4:
        step = rng.choice((2 * p, 8 * p, 64, 128, 256, max(1, n // 8)))
        grid = list(range(step * max(1, (n // 2) // step), top + 1, step))
        buckets = set(rng.sample(grid, min(len(grid), rng.randint(1, 12)))) if grid else set()
    elif roll < 0.6:
        buckets = {1 << k for k in range(1, 16) if (1 << k) <= top}
    else:
        buckets = {rng.randint(max(1, n // 2), top) for _ in range(rng.randint(1, 8))}
    buckets |= {b for b in (n, top_n, n + rng.randint(1, 4 * low)) if rng.random() < 0.35}
    if live < n:  # padded: tempt a window taken from the lengths (a bucket in [sum, n), one in (F*sum, F*n])
        buckets |= {b for b in (live, window_top(live, f) + 1) if rng.random() < 0.35}
    return {b for b in buckets if b >= low} or {max(n, low)}


def _old_random_cases(options: CheckOptions) -> Iterator[PhasedBatch]:
    """generate.random_cases before it drew through _Draw (commit 670d014), kept verbatim as the oracle."""
    rng = random.Random(options.seed)
    sizes = options.cp_sizes
    # Equal policy time per cp_size rather than equal batch counts: a batch asks P ranks, so weight 1/P.
    weights = [0.3 if p == 1 else 1.0 / p for p in sizes]
    s, ctx = options.strategy, options.context_len
    while True:
        p = rng.choices(sizes, weights)[0]
        if options.padding_factors is not None:
            f = rng.choice(options.padding_factors)
        else:  # mostly the configured F; sometimes another, so a policy that ignores max_padding_factor shows
            f = options.max_padding_factor if rng.random() < 0.8 else rng.choice(SEARCHED_FACTORS)
        align = rng.choice(options.aligns(p))
        lengths = _old_random_lengths(rng, p, options)
        live = sum(lengths)
        pad = 0
        if options.num_tokens == "padded" or (options.num_tokens == "both" and rng.random() < 0.5):
            pad = rng.choice((-live % align or align, rng.randint(1, 2 * p), rng.randint(1, max(1, live // 4))))
        n = live + pad
        buckets = _old_random_buckets(rng, n, live, p, f, options)
        table = rng.choice(options.capacities)
        kw = dict(cp_size=p, strategy=s, factor=f, pad=pad, align_size=align, context_len=ctx)
        if parse_table(table)[0] != "arbitrary":
            yield ("random", build(lengths, buckets, table, **kw))  # type: ignore[arg-type]
            continue
        rows = {}
        for b in sorted(buckets):
            if rng.random() < 0.2:
                continue  # absent: no recorded capacity
            base = captured_rows(b, p, align, s, ctx)
            rows[b] = max(0, base + rng.choice((0, 0, align, -align, 1, -1)))
        yield ("random", build(lengths, buckets, "", rows=rows, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"seed": 11, "num_tokens": "padded", "strategy": "interleave"},
        {"seed": 5, "padding_factors": (1, Fraction(3, 2), 4), "capacities": ("arbitrary",), "context_len": 300},
        {"seed": 2, "num_tokens": "live", "cp_sizes": (1, 3, 16), "max_requests": 8, "max_tokens": 700, "align_sizes": ("P", "16")},
        {"seed": 9, "capacities": ("captured", "headroom:5"), "max_tokens": 20000, "strategy": "zigzag_pad"},
    ],
)
def test_random_cases_draw_the_batches_they_drew_before(options: dict[str, object]) -> None:
    opts = make_options(boundary=False, **options)  # type: ignore[arg-type]
    new = list(itertools.islice(random_cases(opts), 3000))
    old = list(itertools.islice(_old_random_cases(opts), 3000))
    assert new == old


def test_draws_equal_randoms_own() -> None:
    a, b = random.Random(4), random.Random(4)
    draw = _Draw(a)
    for i in range(20000):
        lo = i % 50
        hi = lo + (i * 7919) % 5000
        assert draw.randint(lo, hi) == b.randint(lo, hi)
        seq = tuple(range(1 + i % 9))
        assert draw.choice(seq) == b.choice(seq)
        assert draw.random() == b.random()
    with pytest.raises(ValueError):
        draw.randint(3, 2)
    with pytest.raises(IndexError):
        draw.choice(())


@pytest.mark.parametrize("shards", [2, 3])
def test_the_exhaustive_shards_together_are_the_whole_domain(shards: int) -> None:
    from collections import Counter

    from cpgraph.check.generate import exhaustive

    opts = make_options(boundary=False, cp_sizes=(1, 2, 4), max_tokens=160)
    whole = Counter(b for _, b in exhaustive(opts))
    parts = [Counter(b for _, b in exhaustive(opts, shard=k, shards=shards)) for k in range(shards)]
    assert sum(parts, Counter()) == whole and all(parts)
