"""Megatron-Core's dynamic inference engine over expert-parallel (EP) ranks, as a ``cpgraph check`` policy (``:ep``).

The stack adapter for Megatron-Core (the contract: cpgraph/adapters/contract.py). The policy is ``policy.py``
(the graphs a configuration captures, each EP rank's graph or eager for a step); what it reads and compiles of
a release is ``release.py``; the process group, the simulated all-reduce and the context the driven statements
run on are ``stand_ins.py``. ``cpgraph check cpgraph.adapters.megatron:ep`` checks EP steps
(cpgraph/check/subjects/ep_steps.py), not prefill batches: Megatron-Core has no context-parallel prefill path.
"""

from __future__ import annotations

from cpgraph.adapters.contract import Driven, StandIn
from cpgraph.adapters.megatron.policy import (
    NEWEST,
    PACKAGE,
    POLICIES,
    READ_AGAINST,
    ConfigRefused,
    MegatronAdapterError,
    MegatronPolicy,
    installed_root,
    policy_from,
)
from cpgraph.adapters.megatron.release import MegatronGlueError

__all__ = [
    "DOWNLOAD_ARGS", "EP_STEPS", "EXECUTED", "IMPORT_PACKAGE", "NEWEST", "PACKAGE", "POLICIES", "READ_AGAINST", "STACK", "STOOD_IN", "ConfigRefused",
    "MegatronAdapterError", "MegatronGlueError", "MegatronPolicy", "installed_root", "policy_from",
]

STACK = "Megatron-Core"
IMPORT_PACKAGE = "megatron"  # the distribution megatron-core installs the package megatron
DOWNLOAD_ARGS = ("--python-version", "3.12")  # wheels from 0.17 on are cp312-only; only their .py files are kept
EP_STEPS = True  # its policies are checked on EP steps (cpgraph/check/subjects/ep_steps.py), not the prefill protocol
EXECUTED = (
    Driven("batch_dimensions_utils.py whole: the graph list generator, adjust_batch_dims_for_expert_parallelism, "
           "match_graph_config, is_applicable_for_batch_dim", "megatron/core/inference/batch_dimensions_utils.py"),
    Driven("DynamicInferenceContext.__init__'s statements that set the graph list and the EP/dispatcher flags "
           "(their backward slice)", "megatron/core/inference/contexts/dynamic_context.py"),
    Driven("DynamicInferenceContext.initialize_attention_state up to its graph-or-eager decision; num_decode_requests; "
           "using_cuda_graph_this_step; add_dummy_requests_for_expert_parallel_step up to its tensor writes (0.17 on)",
           "megatron/core/inference/contexts/dynamic_context.py"),
    Driven("the idle rank's dummy step: dummy_forward's graph for it (0.16: min of the graph list)",
           "megatron/core/inference/text_generation_controllers/text_generation_controller.py"),
    Driven("get_pg_size, round_up_to_nearest_multiple", "megatron/core/utils.py"),
    Driven("CudaGraphSizingDistribution (0.19 on)", "megatron/core/inference/config.py"),
)
STOOD_IN = (
    StandIn("the EP all-reduce MAX (torch.distributed.all_reduce over the EP group)",
            "simulated in one process over every EP rank's tensor (stand_ins.agree: each rank runs to the collective, "
            "the MAX is taken, each rank runs again with it); a rank that skips a collective others enter is a hang"),
    StandIn("the int32 sync tensor and torch.cuda.current_device", "stand_ins.IntTensor: the same integers, on the CPU"),
    StandIn("the context's sizes (max_requests, max_tokens, max_sequence_length) and tp_size",
            "set from the checked configuration; the release derives max_requests from its memory buffer"),
    StandIn("InferenceConfig and the model's TransformerConfig (dispatcher, transformer_impl)",
            "namespaces holding the fields the driven statements read"),
    StandIn("0.16's add_dummy_requests_for_cudagraph_capture (fills the request tensors to a graph's counts)",
            "sets the three counts it fills (stand_ins.ContextStandIn)"),
)

_BUILT: dict[str, MegatronPolicy] = {}


def __getattr__(name: str) -> MegatronPolicy:
    """``ep``: the installed Megatron-Core's policy, built on first use."""
    if name not in POLICIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (policies: {', '.join(POLICIES)})")
    if name not in _BUILT:
        _BUILT[name] = MegatronPolicy(installed_root())
    return _BUILT[name]
