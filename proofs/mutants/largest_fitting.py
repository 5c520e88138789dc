"""Replays the largest fitting bucket instead of the smallest (safe, but pads needlessly)."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import align_up, cp_active, protocol, zigzag_loads

CAUGHT_AS: Final = "minimal_bucket"


def select(**batch: Any) -> int | None:
    lengths, p, n, f = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"], batch["max_padding_factor"]
    if not cp_active(lengths, n, p):
        return None
    required = align_up(max(zigzag_loads(lengths, p)), batch["align_size"])
    table = batch["bucket_local_tokens"]
    fits = [b for b in batch["capture_num_tokens"] if n <= b <= f * n and b in table and table[b] >= required]
    return max(fits) if fits else None


admit, replay_bucket = protocol(select)
