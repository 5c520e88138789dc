"""A PyTorch CUDA-graph prefill runner with context parallelism (zigzag, DualChunkSwap; global or local graph keying),
checked against reference/.

The decision path (this namespace) needs no torch; the runner, model and layouts are imported lazily so that
``cpgraph check impl.policy`` does not pay for torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from cpgraph.impl.decision import (
    FallbackReason,
    Plan,
    Selector,
    capture_local_tokens,
    default_align_size,
    headroom_local_tokens,
    is_cp_active,
    max_rank_load,
    plan_batch,
    required_local_tokens,
    select_replay_bucket,
)

_LAZY = {
    "PrefillGraphRunner": "cpgraph.impl.runner",
    "Dispatcher": "cpgraph.impl.runner",
    "RunResult": "cpgraph.impl.runner",
    "ReplayError": "cpgraph.impl.runner",
    "BucketKey": "cpgraph.impl.graphs",
    "GraphRunner": "cpgraph.impl.graphs",
    "CPTransformer": "cpgraph.impl.model",
    "ModelConfig": "cpgraph.impl.model",
    "TorchLayout": "cpgraph.impl.layout",
    "build_torch_layout": "cpgraph.impl.layout",
    "DistributedPrefillRunner": "cpgraph.impl.distributed",
    "ConsensusError": "cpgraph.impl.distributed",
    "spawn": "cpgraph.impl.distributed",
}

__all__ = [
    "FallbackReason",
    "Plan",
    "Selector",
    "capture_local_tokens",
    "default_align_size",
    "headroom_local_tokens",
    "is_cp_active",
    "max_rank_load",
    "plan_batch",
    "required_local_tokens",
    "select_replay_bucket",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'impl' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
