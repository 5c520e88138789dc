"""The model runner's own glue, run: ``GPUModelRunner.execute_model`` of the release's model_runner.py, sliced
back from its call of ``dispatch_cg_and_sync_dp`` and compiled from the file (cpgraph/adapters/follow.py), so
the request count, the token count, the uniform decode count, the query-length bound and the rest handed to
dispatch are computed by the release's statements (and the ``self.<method>`` calls it follows, such as
``gather_batch_req_state``), never restated here. After the partition (partition.py) execute_model runs on
from its ``input_batch = self.prepare_inputs(...)`` statement, the call's value the local batch the partition
made (``LocalBatch``), to the call that replays the graph (``REPLAY``): its slice back from what
``run_fullgraph`` and ``set_forward_context`` are handed, those calls recorded, not run (``Execute.replay``).

What the sliced code gets instead of a server (``PROVIDED``, each a stand-in; a slice that reads anything
else of ``self`` is refused at its file:line before the first batch): the scheduler's output for the batch
(request ids in batch order, their scheduled tokens, the total, draft tokens for speculative decodes), the
request states ``add_requests`` / ``update_requests`` would leave (each prefill fresh, each decode past its
prompt), the rank's real PCPManager and the real CudaGraphManager, DP size and rank, and the features off
(no LoRA, no encoder-decoder, not encoder-only, no pipeline parallel, no adaptive verification, no
microbatching), one bonus token a step (``model_state``, read by a speculative-decoding guard).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from cpgraph.adapters.follow import FollowError, Program, Site, Tally, imports
from cpgraph.adapters.shim import Sandbox, Stub

ENTRY = ("GPUModelRunner", "execute_model")
SINK = "dispatch_cg_and_sync_dp"
MODULE = "vllm.v1.worker.gpu.model_runner"
HANDOVER = "prepare_inputs"  # execute_model runs up to its call, whose arguments it hands the partition (partition.py)
# dispatch_cg_and_sync_dp's parameters the adapter reads back, with their positions (dp_utils.py)
PARAMETERS = {"cudagraph_manager": 0, "num_reqs": 1, "num_tokens": 2, "uniform_token_count": 3, "dp_size": 4, "dp_rank": 5,
              "max_query_len": 6, "need_eager": 7, "num_active_loras": 8}
PROVIDED = {
    "pcp_manager": "the rank's PCPManager, built by its own __init__ (None at one rank, as maybe_build_pcp_manager returns)",
    "cudagraph_manager": "the release's CudaGraphManager, built by its own __init__, every candidate marked captured",
    "dp_size": "the checked step's DP size", "dp_rank": "the DP rank the step runs on",
    "decode_query_len": "1 + the speculative tokens (the uniform decode query length)",
    "req_states": "the request states add_requests/update_requests leave: a prefill has computed none of its prompt, a "
                  "decode all of it",
    "lora_config": "None: no LoRA", "lora_state": "None: no LoRA", "is_encoder_decoder": "False",
    "adaptive_verification": "None: no adaptive (varlen) verification", "use_pp": "False: no pipeline parallel",
    "is_first_pp_rank": "True: no pipeline parallel", "is_encoder_only": "False: a decoder (PCP's prefill)",
    "ubatch_runner": "None: no microbatching (DBO)", "parallel_config": "the ParallelConfig fields the DP sync reads",
    "max_num_reqs": "scheduler_config.max_num_seqs",
    "model_state": "num_new_sampled_tokens_per_step 1 (one bonus token per step: prepare_inputs' speculative-decoding "
                   "guard reads it)",
}
CONSTANTS = {"lora_config": None, "lora_state": None, "is_encoder_decoder": False, "adaptive_verification": None,
             "use_pp": False, "is_first_pp_rank": True, "is_encoder_only": False,
             "ubatch_runner": None}  # a branch these switch off is not run (follow.py)
MODEL_STATE = SimpleNamespace(num_new_sampled_tokens_per_step=1)
ALLOWED_STUBS = ("envs",)  # environment flags: unset, so falsy (the sandbox's stub)


@dataclass(frozen=True)
class Dispatched:
    """What one rank's execute_model handed dispatch and got back: the release's own values."""

    num_reqs: int
    num_tokens: int
    uniform: int | None
    max_query_len: int | None
    desc: Any
    order: tuple[int, ...]  # the batch's requests in the order the release lays them out (gather_batch_req_state)
    runner: Any = None  # the stand-in self the slice ran on
    handed: tuple[tuple[Any, ...], dict[str, Any]] | None = None  # what execute_model hands prepare_inputs
    state: Any = None  # execute_model's locals at its call of prepare_inputs (where the replay part resumes)


REPLAY = ("run_fullgraph", "set_forward_context")  # the calls after the partition that replay a graph, found by name


def replay_calls(function: ast.FunctionDef) -> list[tuple[ast.Call, list[ast.expr]]]:
    """execute_model's replay calls and what the adapter records of each: ``<manager>.run_fullgraph(descriptor)``
    (a FULL graph, replayed by the descriptor) and ``set_forward_context(..., batch_descriptor=...,
    cudagraph_runtime_mode=...)`` (a PIECEWISE graph is replayed under the forward context's batch descriptor)."""
    out: list[tuple[ast.Call, list[ast.expr]]] = []
    for call in ast.walk(function):
        if not isinstance(call, ast.Call):
            continue
        name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id if isinstance(call.func, ast.Name) else None
        if name == REPLAY[0] and call.args:
            out.append((call, [call.args[0]]))
        elif name == REPLAY[1]:
            words = {k.arg: k.value for k in call.keywords}
            if "batch_descriptor" in words:
                mode = words.get("cudagraph_runtime_mode")
                out.append((call, [words["batch_descriptor"], mode if mode is not None else ast.copy_location(ast.Constant(None), call)]))
    return out


@dataclass(frozen=True)
class Replayed:
    """What execute_model replays: ``via`` (``FULL``: run_fullgraph; ``FORWARD``: the forward context), the mode
    (a CUDAGraphMode name), the key's token count, the key itself (descriptor or BatchDescriptor) and where."""

    via: str
    mode: str
    num_tokens: int
    key: Any
    site: Site


class LocalBatch:
    """The InputBatch prepare_inputs hands execute_model back (the partition's local batch at several ranks):
    its padded counts and its real token count, as the tree's own statements computed them (partition.py); any
    other field is a glue error naming it."""

    def __init__(self, num_tokens_after_padding: int, num_reqs_after_padding: int | None, num_tokens: int | None) -> None:
        self.num_tokens_after_padding = num_tokens_after_padding
        if num_reqs_after_padding is not None:
            self.num_reqs_after_padding = num_reqs_after_padding
        if num_tokens is not None:
            self.num_tokens = num_tokens

    def __getattr__(self, name: str) -> Any:
        raise FollowError(f"execute_model reads input_batch.{name} after prepare_inputs on its way to the replay; the adapter "
                          "stands in only for the local batch's padded counts")


class _States:
    """RequestState's fields gather_batch_req_state reads, for requests indexed in batch order."""

    def __init__(self, ids: Sequence[str], lengths: Sequence[int], prefilling: Sequence[bool]) -> None:
        self.req_id_to_index = {r: i for i, r in enumerate(ids)}
        prompt = np.asarray([max(1, n) for n in lengths], dtype=np.int32)
        self.prefill_len = SimpleNamespace(np=prompt, gpu=Stub("req_states.prefill_len.gpu"))
        self.num_computed_prefill_tokens = np.where(np.asarray(prefilling, dtype=np.bool_), 0, prompt).astype(np.int32)
        self.max_seq_len = prompt


def scheduler_output(lengths: Sequence[int], prefilling: Sequence[bool], total: int, query_len: int) -> SimpleNamespace:
    """The SchedulerOutput fields execute_model's slice reads: request ids r0, r1, ... in batch order."""
    ids = [f"r{i}" for i in range(len(lengths))]
    drafts = {r: [0] * (query_len - 1) for r, pre, n in zip(ids, prefilling, lengths) if not pre and query_len > 1 and n == query_len}
    return SimpleNamespace(num_scheduled_tokens=dict(zip(ids, (int(n) for n in lengths))), total_num_scheduled_tokens=int(total),
                           scheduled_spec_decode_tokens=drafts, scheduled_encoder_inputs={}, skip_drafts=False)


class Execute:
    """One release's execute_model, followed up to dispatch (see the module docstring)."""

    def __init__(self, root: str, rel: str, sandbox: Sandbox, max_num_reqs: int) -> None:
        self.program = Program(root, rel, ENTRY[0], ENTRY[1], SINK, provided=PROVIDED,
                               load_imports=imports(sandbox, MODULE), allowed_stubs=ALLOWED_STUBS, constants=CONSTANTS,
                               handover=HANDOVER, replay=replay_calls)
        self.max_num_reqs = max_num_reqs
        # the ParallelConfig fields the DP sync reads (0.34 hands it over): no fault tolerance
        self._parallel = SimpleNamespace(enable_fault_tolerance=False)
        self._batch: tuple[object, ...] = ()
        self._made: tuple[Any, Any] = (None, None)
        self._runners: dict[tuple[object, ...], Any] = {}

    def run(self, *, graphs: Any, pcp_manager: Any, lengths: Sequence[int], prefilling: Sequence[bool], total: int,
            dp_size: int = 1, dp_rank: int = 0, query_len: int = 1) -> Dispatched:
        """Run the slice for one rank's batch (raises what the release raises; a stub reaching dispatch is a
        FollowError naming the statements that defined it)."""
        batch = (tuple(lengths), tuple(prefilling), total, query_len)
        if batch != self._batch:  # every rank of a batch gets the same scheduler output and request states
            output = scheduler_output(lengths, prefilling, total, query_len)
            self._batch, self._made = batch, (output, _States(list(output.num_scheduled_tokens), lengths, prefilling))
        output, states = self._made
        key = (id(graphs), id(pcp_manager), dp_size, dp_rank, query_len)
        runner = self._runners.get(key)
        if runner is None or runner.cudagraph_manager is not graphs or runner.pcp_manager is not pcp_manager:
            if len(self._runners) >= 256:
                self._runners.clear()
            runner = self._runners[key] = self.program.runner({
                "pcp_manager": pcp_manager, "cudagraph_manager": graphs, "dp_size": dp_size, "dp_rank": dp_rank,
                "decode_query_len": query_len, "req_states": states, "parallel_config": self._parallel,
                "max_num_reqs": self.max_num_reqs, "model_state": MODEL_STATE, **CONSTANTS,
            })
        runner.req_states = states
        found, call, handed = self.program.run(runner, output)
        bound = self._bound(call.args, call.kwargs)
        for name in ("num_reqs", "num_tokens", "uniform_token_count", "max_query_len"):
            if isinstance(bound.get(name), Stub):
                raise self._stub(name, bound[name])
        ids = getattr(found.get("batch_req_state"), "req_ids", None)  # 0.28 on: the release sorts the batch first
        order = tuple(int(r[1:]) for r in ids) if isinstance(ids, list) else tuple(range(len(lengths)))
        desc = call.result[0]
        return Dispatched(int(bound["num_reqs"]), int(bound["num_tokens"]), _optional(bound.get("uniform_token_count")),
                          _optional(bound.get("max_query_len")), desc, order, runner, handed, found)

    def replay(self, found: Dispatched, made: Any) -> Replayed:
        """execute_model run on from its call of prepare_inputs (which hands back the local batch: its padded
        counts, as the partition or prepare_inputs made them) to the call that replays the graph: the FULL
        graph's ``run_fullgraph(descriptor)`` or the forward context's ``batch_descriptor`` and mode."""
        batch = LocalBatch(made.num_tokens_after_padding, made.num_reqs_after_padding, made.num_tokens)
        index, values = self.program.resume(found.runner, found.state, batch)
        call = self.program.replay_sinks[index][1]
        if isinstance(call.func, ast.Attribute) and call.func.attr == REPLAY[0]:
            desc = values[0]
            return Replayed("FULL", desc.cg_mode.name, int(desc.num_tokens), desc, self.program.site(call))
        key, mode = values
        if isinstance(key, Stub) or isinstance(getattr(key, "num_tokens", None), Stub):
            raise FollowError(f"{self.replay_sites()[index]}: the replay key execute_model hands set_forward_context is "
                              f"{key!r}, computed by code the adapter does not run")
        name = getattr(mode, "name", None) or found.desc.cg_mode.name
        return Replayed("FORWARD", name, int(key.num_tokens), key, self.program.site(call))

    def replay_sites(self) -> tuple[Site, ...]:
        """Where execute_model replays, in the tree checked: the statements defining the key each replay call
        records (the FULL graph's descriptor, the forward context's batch descriptor)."""
        return tuple(self.program.replay_deciding(i, 0)[-1] for i in range(len(self.program.replay_sinks)))

    @staticmethod
    def _bound(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        out = {name: args[i] for name, i in PARAMETERS.items() if i < len(args)}
        out.update({k: v for k, v in kwargs.items() if k in PARAMETERS})
        return out

    def _stub(self, parameter: str, value: object) -> FollowError:
        where = ", ".join(f"{s} `{s.text}`" for s in self.deciding(parameter)) or str(self.program.site(self.program.sink_stmt))
        return FollowError(f"{where}: the {parameter} handed to {SINK}() is {value!r}, computed by code the adapter does not run")

    def deciding(self, parameter: str) -> tuple[Site, ...]:
        """The release's statements that define the value execute_model hands dispatch as ``parameter`` (where
        they reach the call), or the call itself when it passes a constant."""
        expr = self.program.argument(parameter, PARAMETERS[parameter])
        if expr is None:
            return ()
        found = self.program.deciding(expr)
        return found or (self.program.site(expr),)

    def sink(self) -> Site:
        return self.program.site(self.program.sink_stmt)

    def tally(self) -> tuple[Tally, ...]:
        return self.program.tally()


def _optional(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


