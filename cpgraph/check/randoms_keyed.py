"""The seeded random phase for a check under ``local`` keying (reference/keying.py): batches keyed by their
largest rank-local rows, with decodes where the strategy places them and the policy takes them.

A batch draws cp_size from the run's, 1..max_requests requests of 1..max_tokens tokens in all (lengths
spread on a log scale, so short prefills that leave DualChunkSwap chunks empty are as common as long
ones), each request a decode (length 1) with chance 1/4 when decodes are on, and a capture list of sizes
around its key m = max rank loads: one of vLLM's default list (1, 2, 4, 8..248 step 8, 256..512 step 16),
a random sorted subset of it, or a few sizes at the edges (m - 1, m, m + 1, 2m) and random ones; every
size holds itself ('sizes' table). One ``random.Random(seed)`` stream per search process: the same seed and
options give the same batches. It is a plain loop: a local-keyed policy is a real stack's code driven on a
CPU (the vLLM adapter), slower than this generator by far.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

from cpgraph.check.batch import build
from cpgraph.check.boundary import PhasedBatch
from cpgraph.check.options import CheckOptions
from cpgraph.reference.layout import rank_loads
from cpgraph.reference.strategies import strategy_row

VLLM_CAPTURE_SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))  # vLLM's default cudagraph_capture_sizes
DECODE_CHANCE = 0.25


def _lengths(rng: random.Random, requests: int, budget: int, decodes: bool) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    lengths: list[int] = []
    flags: list[bool] = []
    left = budget
    for i in range(requests):
        if left < 1:
            break
        if decodes and rng.random() < DECODE_CHANCE:
            lengths.append(1)
            flags.append(False)
        else:
            top = max(1, left - (requests - i - 1))
            lengths.append(min(top, max(1, int(math.exp(rng.random() * math.log(top + 1))))))
            flags.append(True)
        left -= lengths[-1]
    return tuple(lengths), tuple(flags)


def _sizes(rng: random.Random, key: int) -> tuple[int, ...]:
    kind = rng.randrange(3)
    if kind == 0:
        return VLLM_CAPTURE_SIZES
    if kind == 1:
        picked = sorted(rng.sample(VLLM_CAPTURE_SIZES, rng.randrange(1, 12)))
        return tuple(picked)
    edges = {key - 1, key, key + 1, 2 * key} if rng.random() < 0.5 else {key - 1, key + 1 + rng.randrange(4)}
    edges |= {rng.randrange(1, 2 * key + 3) for _ in range(rng.randrange(4))}
    return tuple(sorted(s for s in edges if s >= 1)) or (key,)


def local_random_cases(options: CheckOptions) -> Iterator[PhasedBatch]:
    """Seeded random batches for a local-keyed check, forever (the caller stops)."""
    rng = random.Random(options.seed)
    row = strategy_row(options.strategy)
    decodes = options.decodes and row.mixed_rows is not None
    while True:
        p = rng.choice(options.cp_sizes)
        requests = rng.randrange(1, options.max_requests + 1)
        lengths, flags = _lengths(rng, requests, rng.randrange(1, options.max_tokens + 1), decodes)
        loads = rank_loads(lengths, cp_size=p, strategy=options.strategy, is_prefilling=flags)
        align = options.aligns(p)[rng.randrange(len(options.aligns(p)))]
        yield ("random", build(
            lengths, _sizes(rng, max(loads)), "sizes", cp_size=p, strategy=options.strategy,
            factor=options.factors[0], align_size=align, is_prefilling=flags,
        ))
