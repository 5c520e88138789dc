"""vLLM 0.26-0.28: admission dispatches the least size >= the batch's total tokens, but the layout is
replayed under its largest rank-local rows: the graph chosen at admission is not the one replayed."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import dual_chunk_swap_loads, local_protocol

CAUGHT_AS: Final = "admission_replay"
keying, strategy, align_size = "local", "dual_chunk_swap", 1


def dispatch(**batch: Any) -> int | None:
    n = sum(batch["extend_seq_lens"])
    return next((s for s in batch["capture_num_tokens"] if s >= n), None)


def replay(**batch: Any) -> int:
    return max(dual_chunk_swap_loads(batch["extend_seq_lens"], batch.get("is_prefilling"), batch["cp_size"]))


admit, replay_bucket, admitted_bucket = local_protocol(dispatch, replay)
