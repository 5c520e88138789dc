"""Sizes by the mean load n // P instead of the busiest rank's load."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import Batch, align_up, protocol, selector

CAUGHT_AS: Final = "capacity_fit"


def required(batch: Batch) -> int:
    """The bug: the mean load n // P, not the busiest rank's."""
    return align_up(batch["num_tokens"] // batch["cp_size"], batch["align_size"])


select = selector(required)

admit, replay_bucket = protocol(select)
