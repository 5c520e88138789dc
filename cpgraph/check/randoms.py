"""The seeded random phase of the check's inputs (generate.py mixes it with the others): batches of every
cp_size, residue mod 2P, padded n, capture list and table kind, drawn from one ``random.Random`` stream
per search process (``_Draw``: Random's own draws with fewer Python layers, the same values)."""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from cpgraph.check.batch import Factor, parse_table, record, rows_table
from cpgraph.check.boundary import PhasedBatch
from cpgraph.check.options import SEARCHED_FACTORS, CheckOptions
from cpgraph.reference.judge import window_top

T = TypeVar("T")


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


def random_cases(options: CheckOptions) -> Iterator[PhasedBatch]:
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
