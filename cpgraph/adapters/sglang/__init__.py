"""sglang's prefill-CP CUDA-graph selector, as ``cpgraph check`` policies (``:zigzag``, ``:interleave``).

The stack adapter for sglang (the contract: cpgraph/adapters/contract.py). The policy is ``policy.py``; the
driven forward path ``path.py``; what it reads of a release ``release.py``; what it gives the release's objects
``state.py`` (only what the release itself sets) and ``strict.py``; what a server would hand it ``stand_ins.py``.
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
    Driven("ModelRunner.forward and _forward_raw: the model runner's decision to take the prefill CUDA-graph path (its whole "
           "condition, with _prefill_cuda_graph_allows_context_parallel where the release has it) and the call into "
           "the graph runner or the eager runner", "sglang/srt/model_executor/model_runner.py"),
    Driven("PrefillCudaGraphRunner.can_run_graph (with its call of the attention backend's own prefill-graph check), "
           "execute and load_batch (the bucket chosen, the static batch built, the replay metadata refreshed) up to "
           "the backend's replay, whose shape key is the bucket replayed; of its __init__, the statements that read "
           "the attention backend (state.py RUNNER_INIT)",
           "sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py"),
    Driven("the CP-BCG input's select_replay_bucket_for_batch and prepare (its row guards), and execute_prefill_cp_bcg "
           "where the release has it", "sglang/srt/layers/cp/bcg.py or sglang/srt/layers/cp/bcg/"),
    Driven("prepare_cp_forward (the CP layout's per_rank_actual_token) and the layout strategies; zigzag's "
           "build_metadata, whose metadata on the replayed batch local_layout reads (each rank's rows from its own "
           "split_list and zigzag_index, the restore from its reverse_split_len and cp_reverse_index: layout.py)",
           "sglang/srt/layers/cp/utils.py, zigzag.py, interleave.py"),
    Driven("ForwardBatch and ForwardMode (the batch is the release's own dataclass, its defaults the release's)",
           "sglang/srt/model_executor/forward_batch_info.py"),
)
STOOD_IN = (
    StandIn("the server arguments and parallel state: attn_cp_size, attn_cp_rank, tp_size, cp_strategy, "
            "enable_prefill_cp and the other SERVER_ARGS of state.py, each given only where the release's "
            "configuration declares it; every other field read raises (exit 2 at the reading line)",
            "a CPU process has no server; the check's batch names the CP size, rank and strategy"),
    StandIn("the model runner's and the CP graph runner's state as their constructors leave it (state.py's "
            "MODEL_RUNNER_STATE and RUNNER_STATE: a breakable backend with CP BCG capture on, no LoRA, draft, PP, "
            "DP attention, mamba or max context size), each given only where the release assigns it",
            "the constructors load a model and capture graphs on a GPU"),
    StandIn("the capture: the capture list and each bucket's recorded CP-local rows (bucket_local_tokens)",
            "the checker records them; capture runs the model on a GPU"),
    StandIn("the captured backend's replay (ends the path, naming the bucket and noting the CP metadata on the forward "
            "batch handed to it) and the eager runner's execute",
            "a replay launches a CUDA graph"),
    StandIn("the model runner's attention backend (stand_ins.AttentionBackend): its own prefill-graph check "
            "(can_run_prefill_cuda_graph) accepts every batch, no dLLM attention, no DP vote; the release's "
            "__init__ reads the check and can_run_graph calls it; anything else it is asked is a strict helper",
            "the server builds it from the model on a GPU; a check that says yes leaves the release's handling of "
            "its answer to be judged"),
    StandIn("tensors: token ids, positions and static buffers as row counts; the CP split's tensor work "
            "(cp_split_before_forward, cp_interleave_input_ids) as the rank's rows of the release's own CP metadata; "
            "zigzag's shard and gather (shard_hidden_states, gather_hidden_states) not run: the layout is read from "
            "the indices they consume, as they consume them (layout.py)",
            "torch is stubbed; a stub the release computes with raises (shim.py)"),
    StandIn("sglang's other modules: every name they hand out is a strict helper (helpers.py); a branch on one "
            "raises (exit 2 at the testing line) unless helpers.HELPERS / ATTRIBUTES declare its answer (no DP "
            "attention, no PP, no DSA or MLA CP, a CUDA device); the model and the pipeline "
            "group are such helpers too; a stubbed sglang class named by an isinstance check is an empty class",
            "a CPU process has no server; a declared answer names the configuration it stands for"),
    StandIn("torch, triton and other packages, the KV location plan",
            "stubs, falsy (a feature off); a stub the release computes with raises (shim.py)"),
)

_BUILT: dict[str, SglangPolicy] = {}


def __getattr__(name: str) -> SglangPolicy:
    """``zigzag`` and ``interleave``: the installed sglang's selectors, built on first use."""
    if name not in STRATEGIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (policies: {', '.join(STRATEGIES)})")
    if name not in _BUILT:
        _BUILT[name] = SglangPolicy(installed_root(), name)
    return _BUILT[name]
