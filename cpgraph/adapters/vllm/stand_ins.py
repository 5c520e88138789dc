"""Stand-ins for the vLLM runtime objects the PCP code reads, made from the protocol's keywords: the
configuration CudaGraphManager is built from, the parallel configuration ``pcp_shard_decode_requests``
reads, and the scheduled batch's arrays as Model Runner V2 hands them to PCPManager."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from cpgraph.adapters.shim import Stub

MAX_NUM_SEQS = 256  # scheduler_config.max_num_seqs: only decode-routine graphs read it, and PIECEWISE has none


class Namespace(SimpleNamespace):
    """A configuration record: the fields set here, and a falsy Stub for any other field the release reads
    (a feature it names is off: no LoRA, no speculative decoding, no microbatching)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Stub(f"config.{name}")


def vllm_config(capture_sizes: Sequence[int], *, max_num_seqs: int = MAX_NUM_SEQS, split: bool = False) -> Namespace:
    """The VllmConfig fields CudaGraphManager reads: the capture sizes (``cudagraph_capture_sizes``, or from 0.34
    with ``split`` the prefill token sizes ``prefill_cudagraph_capture_token_sizes`` and no decode request
    sizes, which only FULL decode graphs read), their max as ``max_cudagraph_capture_size``, one DP and one TP
    rank, no speculative decoding (a uniform decode query of 1 token)."""
    sizes = [int(s) for s in capture_sizes]
    compilation = (
        Namespace(prefill_cudagraph_capture_token_sizes=sizes, decode_cudagraph_capture_request_sizes=[],
                  max_cudagraph_capture_size=max(sizes, default=0))
        if split else Namespace(cudagraph_capture_sizes=sizes, max_cudagraph_capture_size=max(sizes, default=0))
    )
    return Namespace(
        compilation_config=compilation,
        scheduler_config=Namespace(max_num_seqs=max_num_seqs),
        parallel_config=Namespace(data_parallel_size=1, tensor_parallel_size=1),
        speculative_config=None,
        num_speculative_tokens=0,
        uniform_decode_query_len=1,
    )


def parallel_config(cp_size: int, dcp_size: int) -> SimpleNamespace:
    """The ParallelConfig fields ``pcp_shard_decode_requests`` reads."""
    return SimpleNamespace(prefill_context_parallel_size=cp_size, decode_context_parallel_size=dcp_size)


@dataclass(frozen=True, eq=False)
class ScheduledBatch:
    """The scheduled batch's arrays in batch order, as PCPManager reads them: tokens per request, the tokens
    already computed (none: every request starts here; this only orders a rank's rows), which requests
    are prefilling, and the query start offsets."""

    num_scheduled_tokens: np.ndarray[Any, Any]
    num_computed_tokens: np.ndarray[Any, Any]
    is_prefilling: np.ndarray[Any, Any]
    query_start_loc: np.ndarray[Any, Any] = field(repr=False)

    @classmethod
    def of(cls, lengths: Sequence[int], is_prefilling: Sequence[bool]) -> ScheduledBatch:
        tokens = np.asarray(lengths, dtype=np.int32)
        starts = np.zeros(len(lengths) + 1, dtype=np.int32)
        np.cumsum(tokens, out=starts[1:])
        return cls(tokens, np.zeros(len(lengths), dtype=np.int32), np.asarray(is_prefilling, dtype=np.bool_), starts)

    def layout_args(self) -> tuple[np.ndarray[Any, Any], ...]:
        """The positional arguments of ``PCPManager._build_batch_layout``."""
        return (self.num_scheduled_tokens, self.num_computed_tokens, self.is_prefilling, self.query_start_loc)
