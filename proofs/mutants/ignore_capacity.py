"""Pre-fix behaviour: the smallest bucket in [n, F*n], capacity ignored (the 4-GPU overflow)."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import cp_active, protocol

CAUGHT_AS: Final = "capacity_fit"


def select(**batch: Any) -> int | None:
    n, f = batch["num_tokens"], batch["max_padding_factor"]
    if not cp_active(batch["extend_seq_lens"], n, batch["cp_size"]):
        return None
    return next((b for b in batch["capture_num_tokens"] if n <= b <= f * n), None)


admit, replay_bucket = protocol(select)
