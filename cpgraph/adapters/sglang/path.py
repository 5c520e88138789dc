"""sglang's forward path for a CP prefill batch, driven from the release's own files: the model runner's
``forward`` and ``_forward_raw`` (its decision to take the prefill CUDA-graph path: ``can_run_graph``, the CP
check and the rest of its condition) into the CP graph runner's ``execute`` (``load_batch``'s bucket, the CP-BCG
input's ``prepare`` with its row guards, the replay-metadata refresh) up to the captured backend's ``replay``,
whose shape key is the bucket replayed.

The modules on that path are loaded for real in the sandbox (``PATH_MODULES``); the release's classes are
instantiated without their constructors and given only what cpgraph/adapters/sglang/state.py allows, except what
the CP graph runner's constructor derives from the attention backend (state.py ``RUNNER_INIT``): the release's
own ``__init__`` statements that set it run on the runner; what a server hands them is
cpgraph/adapters/sglang/stand_ins.py. A stubbed class named in an ``isinstance`` check
on the path becomes an empty class of that name (nothing the adapter builds is an instance of it, except the
backend, built as the release's breakable backend).
"""

from __future__ import annotations

import ast
import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from cpgraph.adapters.shim import Sandbox, Stub
from cpgraph.adapters.sglang import stand_ins
from cpgraph.adapters.sglang.helpers import Helper
from cpgraph.adapters.sglang.state import (
    CONFIG_FILES,
    MODEL_RUNNER_FILES,
    MODEL_RUNNER_STATE,
    RUNNER_FILES,
    RUNNER_INIT,
    RUNNER_STATE,
    SERVER_ARGS,
    assigned,
    declared,
    given,
    init_statements,
)
from cpgraph.adapters.sglang.strict import strict

FORWARD_BATCH_INFO = "sglang.srt.model_executor.forward_batch_info"
MODEL_RUNNER = "sglang.srt.model_executor.model_runner"
PATH_MODULES = (
    FORWARD_BATCH_INFO,
    MODEL_RUNNER,
    "sglang.srt.model_executor.runner.shape_key",
    "sglang.srt.model_executor.runner.base_runner",
    "sglang.srt.model_executor.cuda_graph_config",
)
# runtime_context's accessors that hand out configuration namespaces: each a strict namespace holding only
# the checked batch's server arguments it is given (get_parallel, get_server_args) or nothing.
ACCESSORS = ("get_exec", "get_schedule", "get_lora", "get_memory", "get_spec", "get_context", "get_observability",
             "get_flags", "get_disagg")


@dataclass(frozen=True)
class Outcome:
    """Where the driven path ended for one batch on one rank: ``graph`` (the model runner took the prefill
    graph path), ``bucket`` (the shape replayed, None when it did not get there), ``raised`` (the
    release's own exception on the way, None when it replayed or went eager), ``preparing`` (the bucket the CP
    input's ``prepare`` was asked to replay) and ``metadata`` (the CP metadata on the forward batch handed to the
    replay, None when it did not get there)."""

    graph: bool
    bucket: object = None
    raised: BaseException | None = None
    preparing: object = None
    metadata: object = None


def _unstub_isinstance_targets(module: ModuleType) -> None:
    """A stubbed class named by an isinstance check in ``module`` becomes an empty class of that name."""
    path = module.__file__
    if path is None:
        return
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" and len(node.args) == 2:
            target = node.args[1]
            for name in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(name, ast.Name) and isinstance(module.__dict__.get(name.id), Stub):
                    module.__dict__[name.id] = type(name.id, (), {"__module__": f"stubbed:{module.__name__}"})


class ForwardPath:
    """The release's forward path under ``root`` for one CP strategy; ``config`` is the strict namespace of
    server arguments the sandbox's runtime_context hands out, refilled per batch."""

    def __init__(self, root: str, sandbox: Sandbox, config: Any, input_type: Callable[[], type]) -> None:
        self.root = root
        self.sandbox = sandbox
        self.config = config
        self.input_type = input_type
        self.forward_batch_info = sandbox.load(FORWARD_BATCH_INFO)
        self.model_runner_module = sandbox.load(MODEL_RUNNER)
        self.runner_module = sandbox.load("sglang.srt.model_executor.runner.prefill_cuda_graph_runner")
        for name in sorted(sandbox.real):  # every real module on the path, each loaded once
            _unstub_isinstance_targets(sandbox.load(name))
        setattr(self.model_runner_module, "EagerRunner", stand_ins.EagerRunner)
        self.backend = stand_ins.backend_class(getattr(self.runner_module, "BreakableCudaGraphBackend", object))
        self.model_runner_sets = assigned(root, MODEL_RUNNER_FILES)
        self.runner_sets = assigned(root, RUNNER_FILES)
        self.config_names = declared(root, CONFIG_FILES)
        self.entered = False
        self.preparing: object = None
        self._recording: dict[type, type] = {}
        self._input_sets: frozenset[str] | None = None
        path = self

        def execute(self: Any, *args: Any, **kwargs: Any) -> Any:
            path.entered = True
            return getattr(super(runner_cls, self), "execute")(*args, **kwargs)

        runner_cls: type = type("PrefillCudaGraphRunner", (self.runner_module.PrefillCudaGraphRunner,), {"execute": execute})
        self.runner_cls = runner_cls
        # the release's own __init__ statements that read the attention backend (None: it reads none of RUNNER_INIT)
        self.runner_init = init_statements(self.runner_module.PrefillCudaGraphRunner.__init__, RUNNER_INIT)

    def server_args(self, values: Mapping[str, object]) -> dict[str, object]:
        """The batch's server arguments the release declares (the others are not given)."""
        unknown = set(values) - set(SERVER_ARGS)
        if unknown:
            raise ValueError(f"server arguments must be among SERVER_ARGS ({', '.join(SERVER_ARGS)}); got {sorted(unknown)}")
        return given(values, self.config_names)

    def objects(self, batch: Mapping[str, Any], capacities: Mapping[int, int]) -> tuple[Any, Any, Any]:
        """The model runner, its CP graph runner and the forward batch for ``batch`` (inside the sandbox)."""
        fbi = self.forward_batch_info
        buckets = [int(b) for b in batch["capture_num_tokens"]]
        cp_input: Any = object.__new__(self.recording(self.input_type()))
        rows = max(buckets)
        cp_input.__dict__.update(input_embeds=stand_ins.Rows(rows), positions=stand_ins.Rows(rows), live_local_tokens=0,
                                 bucket_local_tokens=dict(capacities))
        if self._input_sets is None:
            self._input_sets = assigned(self.root, self.input_files(), on="")
        made = self._input_sets  # interleave's create allocates two more buffers
        extra = dict(input_ids_global=stand_ins.Rows(rows), moe_local_token_count=stand_ins.Rows(0))
        cp_input.__dict__.update(given(extra, made))
        stub = {name: Helper(f"runner.{name}") for name in ("attention_layers", "quant_config", "moe_layers", "moe_fusions",
                                              "dsa_indexers", "mha_companion_layers", "device_module")}
        # no recorded CP capacity at all: the runner captured no CP body (CP BCG capture off, no CP-BCG input)
        captured = bool(capacities)
        runner_values: dict[str, object] = dict(
            enable_cp_bcg_capture=captured, enable_cp_v2_bcg_capture=captured, prefill_backend_name="breakable",
            max_context_size=None, max_seq_len=None, enable_lora=False, _capture_lora=False,
            _qwen_bcg_hc_sidechannel=False, _qwen_bcg_mtp_draft=False, _is_full_backend=False, _fa4_prefill=False,
            _capture_req_slots=1, has_mha_companion_layers=False, _capture_chunked_prefix=False,
            capture_hidden_mode=fbi.CaptureHiddenMode.NULL, _use_draft_input_embeds=False,
            static_draft_hidden_states=None, capture_return_pooled_hidden_states=False, _prefill_static_buffers=None,
            use_captured_attn_metadata=False, device="cuda", capture_num_tokens=buckets, max_num_tokens=max(buckets),
            buffer_registry=stand_ins.BufferRegistry(), backend=self.backend(), prefill_cp_bcg_input=cp_input if captured else None, **stub,
        )
        model_runner_values: dict[str, object] = dict(
            device="cuda", is_generation=True, is_draft_worker=False, support_pp=False,
            decode_cuda_graph_runner=Helper("model_runner.decode_cuda_graph_runner"),
            hisparse_coordinator=None, lora_manager=None, device_timer=None, kv_index_translator=None,
            graph_shared_output=None, forward_pass_id=0, msprobe_debugger=None, canary_manager=None,
            enable_elastic_ep=False, eplb_manager=None,
            model=Helper("model_runner.model"), req_to_token_pool=Helper("model_runner.req_to_token_pool"),
            pp_group=Helper("model_runner.pp_group"), attn_backend=stand_ins.AttentionBackend(),
            eager_runner=stand_ins.EagerRunner(),
        )
        assert set(runner_values) <= set(RUNNER_STATE) | {"model_runner"}, set(runner_values) - set(RUNNER_STATE)
        assert set(model_runner_values) <= set(MODEL_RUNNER_STATE) | {"eager_runner"}
        runner = strict(self.runner_cls, "PrefillCudaGraphRunner", given(runner_values, self.runner_sets))
        model_runner = strict(self.model_runner_module.ModelRunner, "ModelRunner",
                              given(model_runner_values, self.model_runner_sets))
        for name, value in (("prefill_cuda_graph_runner", runner), ("eager_runner", stand_ins.EagerRunner())):
            if name in self.model_runner_sets:
                model_runner.__dict__[name] = value
        if "model_runner" in self.runner_sets:
            runner.__dict__["model_runner"] = model_runner
        if self.runner_init is not None:  # what its constructor derives from the attention backend, by its own lines
            self.runner_init(runner, model_runner)
        return model_runner, runner, self.forward_batch(batch)

    def recording(self, input_type: type) -> type:
        """``input_type`` noting the bucket its ``prepare`` is asked to replay (``preparing``)."""
        if input_type not in self._recording:
            path = self

            def prepare(self: Any, *args: Any, **kwargs: Any) -> Any:
                if not kwargs.get("capture", True):
                    path.preparing = kwargs.get("static_num_tokens")
                return getattr(super(made, self), "prepare")(*args, **kwargs)

            made: type = type(input_type.__name__, (input_type,), {"prepare": prepare})
            self._recording[input_type] = made
        return self._recording[input_type]

    def input_files(self) -> tuple[str, ...]:
        """The release files (relative to root) defining the CP-BCG input classes on this strategy's MRO."""
        out = []
        for cls in self.input_type().__mro__:
            code = getattr(vars(cls).get("prepare"), "__code__", None)
            if code is not None and os.path.abspath(code.co_filename).startswith(self.root + os.sep):
                out.append(os.path.relpath(code.co_filename, self.root))
        return tuple(out)

    def forward_batch(self, batch: Mapping[str, Any]) -> Any:
        """The release's own ForwardBatch for an extend batch of the live lengths, ``num_tokens`` input ids
        (possibly padded), no prefix, no multimodal input, no DP: the fields the scheduler sets for it, each
        given only where the release's ForwardBatch has the field (its defaults are the rest)."""
        fbi = self.forward_batch_info
        lengths = [int(x) for x in batch["extend_seq_lens"]]
        values: dict[str, object] = dict(
            forward_mode=fbi.ForwardMode.EXTEND, batch_size=len(lengths), input_ids=stand_ins.Rows(batch["num_tokens"]),
            req_pool_indices=None, seq_lens=None, out_cache_loc=None, seq_lens_sum=sum(lengths),
            extend_seq_lens_cpu=lengths, seq_lens_cpu=lengths, extend_prefix_lens_cpu=[0] * len(lengths),
            extend_num_tokens=sum(lengths), positions=stand_ins.Rows(batch["num_tokens"]),
            capture_hidden_mode=fbi.CaptureHiddenMode.NULL, kv_loc_plan=stand_ins.KvLocPlan(),
        )
        fields = frozenset(f.name for f in dataclasses.fields(fbi.ForwardBatch))
        return fbi.ForwardBatch(**given(values, fields))

    def forward(self, model_runner: Any, forward_batch: Any) -> Outcome:
        """``ModelRunner.forward`` on the batch (into ``_forward_raw``): where it ends (inside the sandbox)."""
        self.entered, self.preparing = False, None
        try:
            model_runner.forward(forward_batch)
        except stand_ins.Replayed as done:
            return Outcome(True, done.bucket, metadata=done.metadata)
        except stand_ins.TookEager:
            return Outcome(False)
        except Exception as exc:
            if not self.entered:
                raise
            return Outcome(True, None, exc, self.preparing)
        raise AssertionError("the forward path returned without replaying a graph or running eagerly")

    def replay(self, runner: Any, forward_batch: Any) -> Outcome:
        """The CP graph runner's ``execute`` asked directly (a replay past the model runner's decision)."""
        self.preparing = None
        try:
            runner.execute(forward_batch)
        except stand_ins.Replayed as done:
            return Outcome(True, done.bucket, metadata=done.metadata)
        except Exception as exc:
            return Outcome(True, None, exc, self.preparing)
        raise AssertionError("execute returned without replaying a graph")


def files_of(root: str, modules: tuple[str, ...]) -> list[str]:
    """The release's files for ``modules`` (module or package) that exist under ``root``."""
    out = []
    for module in modules:
        base = os.path.join(root, *module.split("."))
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                out.append(candidate)
    return out
