"""Looks only at the first bucket >= n and runs eagerly when it is too small, never trying the next one."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import Batch, fits, past_fn, protocol, selector

CAUGHT_AS: Final = "no_needless_fallback"


def first_only(required: int, batch: Batch) -> int | None:
    """The bug: only the first bucket >= n is tried; when it does not fit, the batch runs eagerly."""
    bucket = next((b for b in batch["capture_num_tokens"] if b >= batch["num_tokens"]), None)
    if bucket is None or past_fn(bucket, batch):
        return None
    return int(bucket) if fits(batch["bucket_local_tokens"].get(bucket), required) else None


select = selector(pick=first_only)

admit, replay_bucket = protocol(select)
