"""Rounds the busiest rank's load down to the alignment instead of up."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import cp_active, protocol, scan, zigzag_loads

CAUGHT_AS: Final = "capacity_fit"


def select(**batch: Any) -> int | None:
    lengths, p, n, a = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"], batch["align_size"]
    if not cp_active(lengths, n, p):
        return None
    required = max(zigzag_loads(lengths, p)) // a * a
    return scan(required, n, batch["capture_num_tokens"], batch["bucket_local_tokens"], batch["max_padding_factor"])


admit, replay_bucket = protocol(select)
