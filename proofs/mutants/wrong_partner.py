"""Rank r owns blocks r and P+r (not 2P-1-r): leading remainders pile on low ranks, so the busiest rank is
over-counted and a larger bucket than needed is replayed (never a smaller one: safe but wasteful)."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import align_up, cp_active, protocol, scan

CAUGHT_AS: Final = "minimal_bucket"


def select(**batch: Any) -> int | None:
    lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
    if not cp_active(lengths, n, p):
        return None
    loads = [0] * p
    for length in lengths:
        q, m = divmod(length, 2 * p)
        for r in range(p):
            loads[r] += 2 * q + (r < m) + (p + r < m)
    required = align_up(max(loads), batch["align_size"])
    return scan(required, n, batch["capture_num_tokens"], batch["bucket_local_tokens"], batch["max_padding_factor"])


admit, replay_bucket = protocol(select)
