"""The seeded random phase of the check's inputs (generate.py mixes it with the others): batches of every
cp_size, residue mod 2P, padded n, capture list and table kind, drawn from one ``random.Random`` stream
per search process.

The stream. Every draw is one call of the seeded Mersenne Twister's C ``random()`` (a float in [0, 1),
53 random bits): a coin is ``random() < p``, an integer in [a, a + w) is ``a + int(random() * w)`` (w <
2**53, so the product stays below w), a choice indexes a precomputed table with such an integer. No
Python rejection loop, no Python-level Random method. The integers are not exactly uniform: a float of
53 bits scaled to w values favours some values by at most w / 2**53 (under 1e-11 for the widths drawn
here, a few thousand), which changes nothing the search looks for. The same seed and options give the
same batches in every process and on every platform (MT19937 seeded from an int, IEEE doubles, the
draws in a fixed order).

This stream replaced one that reproduced ``random.Random``'s randint/choice/sample exactly (getrandbits
rejection loops written in Python) so that old seeds met the batches they met before; it cost about
two thirds of generating a batch. A seed now meets different batches than it did before that change.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Iterator

from cpgraph.check.batch import Factor, parse_table, record, rows_table
from cpgraph.check.boundary import PhasedBatch
from cpgraph.check.options import SEARCHED_FACTORS, CheckOptions
from cpgraph.reference.judge import window_top

_POWERS = tuple(1 << k for k in range(1, 16))

# One configuration of a batch, everything the loop needs about it: cp_size, alignment, table spec, whether
# the table is 'arbitrary', bucket -> recorded rows (the captured ones for 'arbitrary'), the batch's
# context_len label, the arbitrary rows' nudge table, the awkward remainders, (rounds, width) per request count.
_Config = tuple[
    int, int, str, bool, Callable[[int], int], int | None, tuple[int | None, ...], tuple[int, ...], tuple[tuple[int, int], ...]
]

_COIN = 0.35  # each tempting edge bucket (n, F*n, just above n; for a padded n: sum, F*sum + 1) is added with this chance


def random_cases(options: CheckOptions) -> Iterator[PhasedBatch]:
    """Seeded random batches forever: sizes, residues mod 2P, padded n, capture lists and tables all varied.

    One batch: a cp_size (weights 1/P, 0.3 for P = 1), an alignment and a table spec (uniform among the
    configured ones), a factor (the fixed ones uniformly, else the configured F four times in five and
    one of 1..4 otherwise); 1..max_requests lengths (35% short ones of 2P..16P tokens, 25% whole
    rounds of 2P plus an awkward remainder P + 1, 2P - 1, 1 or P, 35% anywhere from 2P up to the
    budget's share, 5% shorter than 2P: not CP-active; none past the max_tokens budget); for half of
    them (all with num_tokens='padded', none with 'live') a padded n: to the alignment, by 1..2P, or by
    up to a quarter of the sum; a capture list of one of three kinds: 40% a grid around n (1..12 points
    of a step 2P, 8P, 64, 128, 256 or n/8 from about n/2 up to F*n + F*64), 20% the powers of two up to
    there, 40% 1..8 buckets scattered over the same range; then each of n, F*n and a bucket just above
    n with chance 0.35 and, for a padded n, the edges a window taken from the lengths would meet (the
    sum, floor(F*sum) + 1), each with chance 0.35; buckets below 2P are dropped (none left: max(n, 2P)).
    The table: 'captured' and 'headroom:R' rows as recorded; 'arbitrary' rows are the captured ones, a
    fifth of them absent, the rest nudged by 0, 0, +A, -A, +1 or -1 (never below 0).

    Written as one loop over one seeded stream (module docstring), the per-configuration work (tables,
    weights, factors' windows) done once before it."""
    rnd = random.Random(options.seed).random  # the only source of randomness: one C call a draw
    ctx, strategy, budget = options.context_len, options.strategy, options.max_tokens
    cap = 4 * budget  # the capture lists' range ends here (the edges F*n and n + 8P may lie above)

    # One configuration per (cp_size, alignment, table spec), weighted so that a batch is drawn at cp_size
    # P with weight 1/P (equal policy time per cp_size rather than equal batch counts: a batch asks P
    # ranks), and the alignment and table uniformly among the configured ones: one draw picks all three.
    configs: list[_Config] = []
    weights: list[float] = []
    for p in options.cp_sizes:
        aligns, specs = options.aligns(p), options.capacities
        share = (0.3 if p == 1 else 1.0 / p) / (len(aligns) * len(specs))
        low = 2 * p
        remainders: tuple[int, ...] = (p + 1, low - 1, 1, p)  # the awkward remainders of a whole-rounds length
        # per request count r: how many rounds of 2P fit the budget's share, and the width of 2P..share
        shapes = ((0, 0),) + tuple((max(1, budget // (low * r)), max(low, budget // r) - low + 1) for r in range(1, options.max_requests + 1))
        for a in aligns:
            # an arbitrary table's row: absent with chance 6/30 = 1/5, else one of the six nudges (4/30 each)
            row_nudges: tuple[int | None, ...] = (None,) * 6 + (0, 0, a, -a, 1, -1) * 4
            for spec in specs:
                arbitrary = parse_table(spec)[0] == "arbitrary"
                rows = rows_table("captured" if arbitrary else spec, cp_size=p, align_size=a, strategy=strategy, context_len=ctx)
                label = ctx if spec == "captured" else None
                configs.append((p, a, spec, arbitrary, rows.__getitem__, label, row_nudges, remainders, shapes))
                weights.append(share)
    cum = list(itertools.accumulate(weights))
    total_weight, last = cum[-1], len(cum) - 1

    # The factor table: an index drawn uniformly into it gives F with the promised chances; each entry
    # carries F's numerator and denominator (floor(F*n) = n * num // den) and its window above 64 tokens.
    fs: tuple[Factor, ...]
    if options.padding_factors is not None:
        fs = options.padding_factors
    else:  # mostly the configured F; sometimes another, so a policy that ignores max_padding_factor shows
        fs = (options.max_padding_factor,) * 16 + SEARCHED_FACTORS  # 16/20 the configured F, 1/20 each of 1..4
    factors = tuple((f, f if type(f) is int else f.numerator, 1 if type(f) is int else f.denominator, window_top(64, f)) for f in fs)
    n_factors = len(factors)

    max_requests = options.max_requests
    # the padded-n draw: k = pad_off + int(random() * pad_width); k < 3 is a live n, 3..5 the three pads
    pad_width, pad_off = {"both": (6, 0), "padded": (3, 3), "live": (0, 0)}[options.num_tokens]

    while True:
        p, align, table, arbitrary, rows_of, label, nudges, tails, shapes = configs[bisect.bisect(cum, rnd() * total_weight, 0, last)]
        f, num, den, above = factors[int(rnd() * n_factors)]
        low = 2 * p

        # the lengths: none past the budget, each >= 1, room left for the ones still to come
        r = 1 + int(rnd() * max_requests)
        rounds, wide = shapes[r]
        out: list[int] = []
        live = 0
        for i in range(r):
            roll = rnd()
            if roll < 0.35:  # a short one: 2P..16P tokens
                length = low + int(rnd() * (7 * low + 1))
            elif roll < 0.6:  # whole rounds of 2P plus an awkward remainder
                length = low * (1 + int(rnd() * rounds)) + tails[int(rnd() * 4)]
            elif roll < 0.95:  # anywhere from 2P up to the budget's share
                length = low + int(rnd() * wide)
            else:  # a short request: not CP-active
                length = 1 + int(rnd() * low)
            room = budget - live - (r - i - 1)
            if length > room:
                length = room if room > 1 else 1
            out.append(length)
            live += length
            if live >= budget:
                break
        lengths = tuple(out)

        # n: the sum, or padded (to the alignment, by 1..2P, or by up to a quarter of the sum)
        n = live
        if pad_width:
            k = pad_off + int(rnd() * pad_width)
            if k == 3:
                n += -live % align or align
            elif k == 4:
                n += 1 + int(rnd() * low)
            elif k == 5:
                n += 1 + int(rnd() * (live // 4 or 1))

        # the capture list, over [about n/2, F*n + F*64] (capped at 4 * max_tokens, at least 2P)
        top_n = n * num // den  # floor(F*n)
        top = top_n + above
        if top > cap:
            top = cap
        if top < low:
            top = low
        buckets: set[int] = set()
        add = buckets.add
        roll = rnd()
        if roll < 0.4:  # a grid around n: 1..12 of its points (drawn with replacement)
            k = int(rnd() * 6)
            step = (low, 8 * p, 64, 128, 256)[k] if k < 5 else (n // 8 or 1)
            start = step * ((n // 2) // step or 1)
            if start <= top:
                points = (top - start) // step + 1
                for _ in range(1 + int(rnd() * 12)):
                    add(start + step * int(rnd() * points))
        elif roll < 0.6:  # the powers of two
            buckets.update(_POWERS[: bisect.bisect(_POWERS, top)])
        else:  # 1..8 scattered buckets
            first = n // 2 or 1
            width = top - first + 1
            for _ in range(1 + int(rnd() * 8)):
                add(first + int(rnd() * width))
        # the tempting edges
        if rnd() < _COIN:
            add(n)
        if rnd() < _COIN:
            add(top_n)
        if rnd() < _COIN:
            add(n + 1 + int(rnd() * 4 * low))
        if live < n:  # padded: tempt a window taken from the lengths (a bucket in [sum, n), one in (F*sum, F*n])
            if rnd() < _COIN:
                add(live)
            if rnd() < _COIN:
                add(live * num // den + 1)
        ordered = sorted(buckets)
        if not ordered or ordered[0] < low:  # buckets below 2P are dropped; none left: max(n, 2P)
            ordered = [b for b in ordered if b >= low] or [n if n > low else low]
        clean = tuple(ordered)

        # the table
        caps: list[tuple[int, int]] = []
        if not arbitrary:  # rows as recorded ('captured' at context_len, or 'headroom:R')
            for b in clean:
                caps.append((b, rows_of(b)))
            yield ("random", record(p, align, n, lengths, clean, tuple(caps), f, table, label))
            continue
        for b in clean:
            nudge = nudges[int(rnd() * 30)]
            if nudge is not None:  # None: absent, no recorded capacity
                nudged = rows_of(b) + nudge
                caps.append((b, nudged if nudged > 0 else 0))
        yield ("random", record(p, align, n, lengths, clean, tuple(caps), f, "arbitrary", None))
