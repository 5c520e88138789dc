"""Compares the busiest rank's raw load with the capacity, forgetting that rows are aligned up to A."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import Batch, protocol, selector, zigzag_loads

CAUGHT_AS: Final = "capacity_fit"


def required(batch: Batch) -> int:
    """The bug: the busiest rank's raw load, never aligned up to A."""
    return max(zigzag_loads(batch["extend_seq_lens"], batch["cp_size"]))


select = selector(required)

admit, replay_bucket = protocol(select)
