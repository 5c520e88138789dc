"""Off by one the other way: the window is taken as [n, F*n + 1], so a bucket one past F*n is replayed."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import align_up, cp_active, protocol, zigzag_loads

CAUGHT_AS: Final = "padding_limit"


def select(**batch: Any) -> int | None:
    lengths, p, n, f = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"], batch["max_padding_factor"]
    if not cp_active(lengths, n, p):
        return None
    required = align_up(max(zigzag_loads(lengths, p)), batch["align_size"])
    for bucket in batch["capture_num_tokens"]:
        if bucket < n:
            continue
        if bucket > f * n + 1:
            break
        rows = batch["bucket_local_tokens"].get(bucket)
        if rows is not None and rows >= required:
            return int(bucket)
    return None


admit, replay_bucket = protocol(select)
