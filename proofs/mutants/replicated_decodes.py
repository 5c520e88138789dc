"""Keyed as if decodes were dealt one rank each while the layout copies them to every rank (a selector
written for vLLM 0.32's placement, run on a 0.31 layout): the size is too small for the copied decodes."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import dual_chunk_swap_loads, local_protocol

CAUGHT_AS: Final = "capacity_fit"
keying, strategy, align_size = "local", "dual_chunk_swap_replicated", 1


def dispatch(**batch: Any) -> int | None:
    key = max(dual_chunk_swap_loads(batch["extend_seq_lens"], batch.get("is_prefilling"), batch["cp_size"]))
    return next((s for s in batch["capture_num_tokens"] if s >= key), None)


admit, replay_bucket, admitted_bucket = local_protocol(dispatch, dispatch)
