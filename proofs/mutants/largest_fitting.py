"""Replays the largest fitting bucket instead of the smallest (safe, but pads needlessly)."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import Batch, below_n, fits, past_fn, protocol, selector

CAUGHT_AS: Final = "minimal_bucket"


def largest(required: int, batch: Batch) -> int | None:
    """The bug: the largest fitting bucket of the window [n, F*n], not the least."""
    table = batch["bucket_local_tokens"]
    window = (b for b in batch["capture_num_tokens"] if not below_n(b, batch) and not past_fn(b, batch))
    return max((b for b in window if fits(table.get(b), required)), default=None)


select = selector(pick=largest)

admit, replay_bucket = protocol(select)
