"""Treats the batch as one request of n tokens (the capture-time layout), ignoring request boundaries."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import align_up, cp_active, protocol, scan, zigzag_loads

CAUGHT_AS: Final = "capacity_fit"


def select(**batch: Any) -> int | None:
    lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
    if not cp_active(lengths, n, p):
        return None
    required = align_up(max(zigzag_loads([n], p)), batch["align_size"])
    return scan(required, n, batch["capture_num_tokens"], batch["bucket_local_tokens"], batch["max_padding_factor"])


admit, replay_bucket = protocol(select)
