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
    Driven("GPUModelRunner.execute_model through dispatch_cg_and_sync_dp up to its call of prepare_inputs, and "
           "gather_batch_req_state: the statements that reach the dispatch and the arguments handed to prepare_inputs "
           "(the backward slice), compiled from the file with its line numbers (execute.py)",
           "vllm/v1/worker/gpu/model_runner.py"),
    Driven("sort_batch_req_ids and BatchReqState (module level, compiled whole)", "vllm/v1/worker/gpu/model_runner.py"),
    Driven("get_uniform_decode_token_count and the helpers it calls (0.28 on, compiled whole)", "vllm/v1/worker/utils.py"),
    Driven("GPUModelRunner.prepare_inputs up to the partition call (the slice of what it hands the partition) and, at "
           "one rank, up to the InputBatch it builds (the slice of its num_tokens_after_padding and num_tokens): partition.py",
           "vllm/v1/worker/gpu/model_runner.py"),
    Driven("GPUModelRunner.execute_model after prepare_inputs, up to the call that replays: the slice back from what "
           "run_fullgraph(descriptor) and set_forward_context(cudagraph_runtime_mode=, batch_descriptor=) are handed, run on "
           "from the hand-over statement with the local batch the partition made; the replay call recorded, not run "
           "(execute.py, follow.Program.resume)", "vllm/v1/worker/gpu/model_runner.py"),
    Driven("BatchDescriptor (compiled from its source)", "vllm/forward_context.py"),
    Driven("the raise and assert statements before each sink and stop above (slicing.guards), but for the guards after "
           "prepare_inputs that read attention metadata the adapter does not build (listed: execute.program.unrun_guards)",
           "vllm/v1/worker/gpu/model_runner.py, vllm/v1/worker/gpu/pcp_manager.py"),
    Driven("maybe_partition_pcp_batch (0.26-0.30) up to partition_batch, and PCPManager.partition_batch up to the local "
           "batch's num_tokens_after_padding and num_reqs_after_padding: their slices (partition.py)",
           "vllm/v1/worker/gpu/pcp_manager.py"),
    Driven("PCPManager: get_num_tokens_for_dispatch, _build_batch_layout, _resolve_num_reqs_after_padding",
           "vllm/v1/worker/gpu/pcp_manager.py"),
    Driven("CudaGraphManager: __init__, _init_candidates, dispatch; get_uniform_token_count (0.26-0.27)",
           "vllm/v1/worker/gpu/cudagraph_utils.py"),
    Driven("dispatch_cg_and_sync_dp (the DP sync and re-dispatch)", "vllm/v1/worker/gpu/dp_utils.py"),
    Driven("CUDAGraphMode and the capture-size helpers", "vllm/config/compilation.py"),
    Driven("ParallelConfig.pcp_shard_decode_requests", "vllm/config/parallel.py"),
    Driven("cdiv, round_up", "vllm/utils/math_utils.py"),
)
STOOD_IN = (
    StandIn("the local InputBatch prepare_inputs returns to execute_model",
            "execute.LocalBatch: num_tokens_after_padding, num_reqs_after_padding and num_tokens as the partition's (one "
            "rank: prepare_inputs') slice computed them; reading another field is a glue error"),
    StandIn("the global InputBatch prepare_inputs hands the partition",
            "partition.GlobalBatch: its CPU arrays and draft-token count from the batch in the release's order (the "
            "slice reads no other field)"),
    StandIn("a serving PCPManager's buffers and per-step state (InputBuffers sizes, request states, GPU index tensors)",
            "partition.serving: max_num_reqs twice the scheduler's requests, max_num_tokens the token budget (at least "
            "the largest capture size and the batch), stub markers for the rest, so the partition's guards run"),
    StandIn("the scheduler's output and the request states (SchedulerOutput, RequestState)",
            "built from the checked batch (execute.py): request ids in batch order, a prefill fresh, a decode past its prompt"),
    StandIn("the model runner's self (GPUModelRunner)", "execute.PROVIDED: the rank's real PCPManager and CudaGraphManager, "
            "DP size and rank, the features off (no LoRA, encoder-decoder, encoder-only, pipeline parallel, adaptive "
            "verification, microbatching), one bonus token a step; a sliced statement reading anything else of self is "
            "refused at its file:line"),
    StandIn("torch, triton and the rest of vLLM", "falsy stubs; a stub the release computes with raises (shim.py), and a "
            "sliced statement whose value comes from a stub is refused at its file:line"),
    StandIn("the configuration (VllmConfig, ParallelConfig)", "stand_ins.py fills the fields the driven code reads"),
    StandIn("the DP all-reduce", "simulated in one process over every DP rank's proposal (paths.py)"),
    StandIn("the attention metadata execute_model checks after prepare_inputs (assert slot_mappings / block_tables is "
            "not None)", "not built, and those guards not run: they check what prepare_attn returned, not a value reaching "
            "the replay key; listed per tree, with why, in policy.execute.program.unrun_guards"),
)

_BUILT: dict[str, VllmPolicy] = {}


def __getattr__(name: str) -> VllmPolicy:
    """``pcp``: the installed vLLM's PCP policy, built on first use."""
    if name not in POLICIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (policies: {', '.join(POLICIES)})")
    if name not in _BUILT:
        _BUILT[name] = VllmPolicy(installed_root())
    return _BUILT[name]
