"""Sizes the batch by this rank's own load instead of the busiest rank's: ranks pick different buckets."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import Batch, align_up, protocol, selector, zigzag_loads

CAUGHT_AS: Final = "rank_consensus"


def required(batch: Batch) -> int:
    """The bug: this rank's load (``[cp_rank]``), not the busiest rank's (``max``)."""
    return align_up(zigzag_loads(batch["extend_seq_lens"], batch["cp_size"])[batch["cp_rank"]], batch["align_size"])


select = selector(required)

admit, replay_bucket = protocol(select)
