"""Takes the window's upper end (F*n) from the lengths instead of n: with a padded n the cap is F*sum,
so a bucket in (F*sum, F*n] that fits is never tried and the batch runs eagerly needlessly."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import align_up, cp_active, protocol, zigzag_loads

CAUGHT_AS: Final = "no_needless_fallback"


def select(**batch: Any) -> int | None:
    lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
    if not cp_active(lengths, n, p):
        return None
    required = align_up(max(zigzag_loads(lengths, p)), batch["align_size"])
    cap = batch["max_padding_factor"] * sum(lengths)  # the bug: F * the live count, not F * n
    for bucket in batch["capture_num_tokens"]:
        if bucket < n:
            continue
        if bucket > cap:
            break
        rows = batch["bucket_local_tokens"].get(bucket)
        if rows is not None and rows >= required:
            return int(bucket)
    return None


admit, replay_bucket = protocol(select)
