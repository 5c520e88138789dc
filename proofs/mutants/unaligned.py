"""Compares the busiest rank's raw load with the capacity, forgetting that rows are aligned up to A."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import cp_active, protocol, scan, zigzag_loads

CAUGHT_AS: Final = "capacity_fit"


def select(**batch: Any) -> int | None:
    lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
    if not cp_active(lengths, n, p):
        return None
    required = max(zigzag_loads(lengths, p))
    return scan(required, n, batch["capture_num_tokens"], batch["bucket_local_tokens"], batch["max_padding_factor"])


admit, replay_bucket = protocol(select)
