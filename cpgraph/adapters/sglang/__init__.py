"""sglang's prefill-CP CUDA-graph selector, as ``cpgraph check`` policies (``:zigzag``, ``:interleave``).

The stack adapter for sglang (the contract: cpgraph/adapters/contract.py). The policy is ``policy.py``; what
it reads of a release is ``release.py``; the objects a server would hand the release are ``stand_ins.py``.
"""

from __future__ import annotations

from cpgraph.adapters.contract import Driven, StandIn
from cpgraph.adapters.sglang.policy import (
    MODEL_RUNNER_FILE,
    NEWEST,
    PACKAGE,
    READ_AGAINST,
    REAL_MODULES,
    RUNNER,
    STRATEGIES,
    SglangAdapterError,
    SglangGlueError,
    SglangPolicy,
    installed_root,
    policy_from,
)

__all__ = [
    "EXECUTED", "MODEL_RUNNER_FILE", "NEWEST", "PACKAGE", "POLICIES", "READ_AGAINST", "REAL_MODULES", "RUNNER", "STACK",
    "STOOD_IN", "STRATEGIES", "SglangAdapterError", "SglangGlueError", "SglangPolicy", "installed_root", "policy_from",
]

STACK = "sglang"
POLICIES = tuple(STRATEGIES)
EXECUTED = (
    Driven("the CP graph runner's can_run_graph and load_batch (up to filling its static buffers)",
           "sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py"),
    Driven("the model runner's _prefill_cuda_graph_allows_context_parallel, where the release has it",
           "sglang/srt/model_executor/model_runner.py"),
    Driven("prepare_cp_forward (the CP layout's per_rank_actual_token)", "sglang/srt (the release's CP layout module)"),
)
STOOD_IN = (
    StandIn("runtime_context and environ (cp_size, rank, strategy, CP-v2 on)", "the batch's configuration, set by hand"),
    StandIn("torch, triton and the rest of sglang", "stubs; a stub the release computes with raises (shim.py)"),
    StandIn("the forward batch and the buffer registry", "stand_ins.py builds them from the checked batch"),
)

_BUILT: dict[str, SglangPolicy] = {}


def __getattr__(name: str) -> SglangPolicy:
    """``zigzag`` and ``interleave``: the installed sglang's selectors, built on first use."""
    if name not in STRATEGIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (policies: {', '.join(STRATEGIES)})")
    if name not in _BUILT:
        _BUILT[name] = SglangPolicy(installed_root(), name)
    return _BUILT[name]
