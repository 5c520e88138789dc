"""Keyed by this rank's own rows instead of the largest over all ranks: ranks replay different sizes."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import dual_chunk_swap_loads, local_protocol

CAUGHT_AS: Final = "rank_consensus"
keying, strategy, align_size = "local", "dual_chunk_swap", 1


def dispatch(**batch: Any) -> int | None:
    own = dual_chunk_swap_loads(batch["extend_seq_lens"], batch.get("is_prefilling"), batch["cp_size"])[batch["cp_rank"]]
    return next((s for s in batch["capture_num_tokens"] if s >= own), None)


admit, replay_bucket, admitted_bucket = local_protocol(dispatch, dispatch)
