"""Rounds the busiest rank's load down to the alignment instead of up."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import Batch, protocol, selector, zigzag_loads

CAUGHT_AS: Final = "capacity_fit"


def required(batch: Batch) -> int:
    """The bug: the busiest load rounded down to A (``// a * a``), not up."""
    a: int = batch["align_size"]
    return max(zigzag_loads(batch["extend_seq_lens"], batch["cp_size"])) // a * a


select = selector(required)

admit, replay_bucket = protocol(select)
