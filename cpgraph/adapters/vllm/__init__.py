"""vLLM's Model Runner V2 under prefill context parallel, as ``cpgraph check`` policies (``:pcp``).

The stack adapter for vLLM (the contract: cpgraph/adapters/contract.py). The policy is ``policy.py``; what
it reads of a release (families, the glue, the citations) is ``release.py``; the objects a server would
hand the release are ``stand_ins.py``; the graph paths beside the prefill bucket are ``paths.py``.
"""

from __future__ import annotations

from cpgraph.adapters.contract import Driven, StandIn
from cpgraph.adapters.vllm.policy import (
    FAMILIES,
    FAMILY_TABLE,
    GLOBAL_DISPATCH,
    LOCAL_DISPATCH,
    NEWEST,
    PACKAGE,
    PLANTS,
    POLICIES,
    READ_AGAINST,
    REAL_MODULES,
    SPLIT_CAPTURE,
    Citation,
    Family,
    Glue,
    Step,
    VllmAdapterError,
    VllmGlueError,
    VllmPolicy,
    installed_root,
    policy_from,
)

__all__ = [
    "EXECUTED", "FAMILIES", "FAMILY_TABLE", "GLOBAL_DISPATCH", "LOCAL_DISPATCH", "NEWEST", "PACKAGE", "PLANTS", "POLICIES",
    "READ_AGAINST", "REAL_MODULES", "SPLIT_CAPTURE", "STACK", "STOOD_IN", "Citation", "Family", "Glue", "Step",
    "VllmAdapterError", "VllmGlueError", "VllmPolicy", "installed_root", "policy_from",
]

STACK = "vLLM"
EXECUTED = (
    Driven("PCPManager: get_num_tokens_for_dispatch, _build_batch_layout", "vllm/v1/worker/gpu/pcp_manager.py"),
    Driven("CudaGraphManager: __init__, _init_candidates, dispatch", "vllm/v1/worker/gpu/cudagraph_utils.py"),
    Driven("dispatch_cg_and_sync_dp (the DP sync and re-dispatch)", "vllm/v1/worker/gpu/dp_utils.py"),
    Driven("CUDAGraphMode and the capture-size helpers", "vllm/config/compilation.py"),
    Driven("ParallelConfig.pcp_shard_decode_requests", "vllm/config/parallel.py"),
    Driven("cdiv, round_up", "vllm/utils/math_utils.py"),
)
STOOD_IN = (
    StandIn("the model runner's glue in execute_model (the count handed to dispatch, the partition's padded size, "
            "the replay key)", "restated per family in policy.py and located in the release's syntax tree by "
            "release.read_glue, which refuses a release whose glue it does not recognise"),
    StandIn("torch, triton and the rest of vLLM", "falsy stubs; a stub the release computes with raises (shim.py)"),
    StandIn("the configuration (VllmConfig, ParallelConfig)", "stand_ins.py fills the fields the driven code reads"),
    StandIn("the DP all-reduce", "simulated in one process over every DP rank's proposal (paths.py)"),
    StandIn("the scheduler's output and the input batch", "built from the checked batch (stand_ins.ScheduledBatch)"),
)

_BUILT: dict[str, VllmPolicy] = {}


def __getattr__(name: str) -> VllmPolicy:
    """``pcp``: the installed vLLM's PCP policy, built on first use."""
    if name not in POLICIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (policies: {', '.join(POLICIES)})")
    if name not in _BUILT:
        _BUILT[name] = VllmPolicy(installed_root())
    return _BUILT[name]
