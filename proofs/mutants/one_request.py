"""Treats the batch as one request of n tokens (the capture-time layout), ignoring request boundaries."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import Batch, align_up, protocol, selector, zigzag_loads

CAUGHT_AS: Final = "capacity_fit"


def required(batch: Batch) -> int:
    """The bug: the loads of one request of n tokens (``[n]``), not of the batch's lengths."""
    return align_up(max(zigzag_loads([batch["num_tokens"]], batch["cp_size"])), batch["align_size"])


select = selector(required)

admit, replay_bucket = protocol(select)
