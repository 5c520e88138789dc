"""The bulk harness's random draws: edge-biased integers for every family (deterministic for a seed)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

BIG = 2**53


class Draw:
    """Edge-biased integers: residues 0, P-1, P, P+1, 2P-1 (mod 2P), values near 2^53 and beyond, n up to 10^6."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def factor(self) -> int | Fraction:
        """The padding factor F: 1, 2 (upstream's), 3, or a rational one (5/4, 3/2, 7/3: B <= F*n is B <= floor(F*n))."""
        return self.rng.choice((1, 2, 2, 3, Fraction(5, 4), Fraction(3, 2), Fraction(7, 3)))

    def cp_size(self) -> int:
        rng = self.rng
        return rng.choice((1, 2, 3, 4, 8, 16, 31, 32, 63, 64)) if rng.random() < 0.4 else rng.randint(1, 64)

    def length(self, p: int, *, huge: bool = False) -> int:
        rng = self.rng
        s = 2 * p
        roll = rng.random()
        if roll < 0.05:
            return rng.choice((0, 1, s - 1, s, s + 1))
        if huge:
            q = rng.choice((BIG // s - 1, BIG // s, BIG // s + 1, rng.randint(BIG // s, 2**62 // s)))
        elif roll < 0.5:
            q = rng.randint(0, 10**6 // s + 1)
        else:
            q = rng.randint(1, 64)
        residue = rng.choice((0, p - 1, p, p + 1, s - 1)) if rng.random() < 0.6 else rng.randrange(s)
        return s * q + residue % s

    def lengths(self, p: int, *, huge: bool = False) -> tuple[int, ...]:
        rng = self.rng
        roll = rng.random()
        # Mostly 1-4 requests; some 5-40; some 48-96 (impl takes its vectorised path from 48 requests, for
        # lengths that fit int64: so a long batch is never huge).
        if roll >= 0.94:
            return tuple(self.length(p) for _ in range(rng.randint(48, 96)))
        k = rng.choice((1, 1, 2, 3, 4)) if roll < 0.91 else rng.randint(5, 40)
        return tuple(self.length(p, huge=huge and rng.random() < 0.7) for _ in range(k))

    def value(self) -> int:
        rng = self.rng
        roll = rng.random()
        if roll < 0.3:
            return rng.randint(0, 10**6)
        if roll < 0.6:
            return BIG + rng.randint(-64, 64) * rng.choice((1, 1, 3, 1 << 10))
        return rng.randint(BIG, 2**80)

    def capture_list(
        self, n: int, factor: int | Fraction, required: int, *, size: int
    ) -> tuple[tuple[int, ...], dict[int, int]]:
        """``size`` sorted buckets around [n, F*n] (n, F*n and F*n+1 often among them; often 8 or more below n,
        so the answer sits past the 8th bucket), capacities around ``required`` (equal, one short, one over, or
        anywhere), about 15% missing."""
        rng = self.rng
        high = math.floor(factor * n)  # the largest bucket within the window
        chosen = {e for e in (n, high, high + 1, n - 1) if e >= 1 and rng.random() < 0.5}
        if rng.random() < 0.05:
            chosen.add(1)  # the least bucket a list may hold
        below = min(rng.randint(0, size // 2 + 8), max(0, n - 1 - n // 4))
        while len(chosen) < below:
            chosen.add(rng.randint(max(1, n // 4), n - 1))
        while len(chosen) < size:
            chosen.add(rng.randint(n, 3 * high + 2))
        buckets = tuple(sorted(chosen))
        table: dict[int, int] = {}
        missing = rng.choice((0.0, 0.15, 0.15))  # a third of the lists record every capacity (impl's bisection)
        monotone = rng.random() < 0.25  # and some record capacities that grow with the bucket
        for b in buckets:
            roll = rng.random()
            if monotone:
                table[b] = max(0, required + (b - n) // max(1, factor) - 1 + int(rng.random() * 3))
                continue
            if roll < missing:
                continue
            offset = -1 if roll < 0.35 else 0 if roll < 0.6 else 1 if roll < 0.75 else int((rng.random() - 0.5) * 2 * required)
            table[b] = max(0, required + offset)
        return buckets, table
