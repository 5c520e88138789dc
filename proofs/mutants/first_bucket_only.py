"""Looks only at the first bucket >= n and runs eagerly when it is too small, never trying the next one."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import align_up, cp_active, protocol, zigzag_loads

CAUGHT_AS: Final = "no_needless_fallback"


def select(**batch: Any) -> int | None:
    lengths, p, n, f = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"], batch["max_padding_factor"]
    if not cp_active(lengths, n, p):
        return None
    required = align_up(max(zigzag_loads(lengths, p)), batch["align_size"])
    bucket = next((b for b in batch["capture_num_tokens"] if b >= n), None)
    if bucket is None or bucket > f * n:
        return None
    rows = batch["bucket_local_tokens"].get(bucket)
    return int(bucket) if rows is not None and rows >= required else None


admit, replay_bucket = protocol(select)
