"""Rank r owns blocks r and P+r (not 2P-1-r): leading remainders pile on low ranks, so the busiest rank is
over-counted and a larger bucket than needed is replayed (never a smaller one: safe but wasteful)."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import Batch, align_up, protocol, selector

CAUGHT_AS: Final = "minimal_bucket"


def required(batch: Batch) -> int:
    """The bug: rank r's second block is P+r, not 2P-1-r."""
    p = batch["cp_size"]
    loads = [0] * p
    for length in batch["extend_seq_lens"]:
        q, m = divmod(length, 2 * p)
        for r in range(p):
            loads[r] += 2 * q + (r < m) + (p + r < m)
    return align_up(max(loads), batch["align_size"])


select = selector(required)

admit, replay_bucket = protocol(select)
