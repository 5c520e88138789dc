"""Takes the window's lower end from the lengths (sum(extend_seq_lens)) instead of n: when n is padded
(upstream's n is len(input_ids), padded for DP/CP), a bucket in [sum, n) is replayed, smaller than the
padded batch."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import align_up, cp_active, protocol, zigzag_loads

CAUGHT_AS: Final = "padding_limit"


def select(**batch: Any) -> int | None:
    lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
    if not cp_active(lengths, n, p):
        return None
    required = align_up(max(zigzag_loads(lengths, p)), batch["align_size"])
    low = sum(lengths)  # the bug: the live count, not the padded n the graph must hold
    for bucket in batch["capture_num_tokens"]:
        if bucket < low:
            continue
        if bucket > batch["max_padding_factor"] * n:
            break
        rows = batch["bucket_local_tokens"].get(bucket)
        if rows is not None and rows >= required:
            return int(bucket)
    return None


admit, replay_bucket = protocol(select)
