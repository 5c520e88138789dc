"""Megatron-Core's dynamic inference engine over simulated EP ranks: the graphs a configuration captures and the
graph (or eager) each EP rank of a step replays, from the release's own code.

What runs from the release (module-level in ``EXECUTED``, cpgraph/adapters/megatron/__init__.py): the whole of
batch_dimensions_utils.py (the graph list generator, ``adjust_batch_dims_for_expert_parallelism``,
``match_graph_config``, ``is_applicable_for_batch_dim``), the context ``__init__``'s statements that set the
graph list and the EP/dispatcher flags, ``initialize_attention_state`` up to its graph-or-eager decision, the
idle rank's dummy step (0.16: the controller's ``min(...)`` of the graph list; 0.17 on: the context's
``add_dummy_requests_for_expert_parallel_step`` up to its tensor writes), ``get_pg_size`` and
``round_up_to_nearest_multiple`` from megatron/core/utils.py, the sizing enum of inference/config.py.
"""

from __future__ import annotations

import ast
import math
import typing
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from cpgraph.adapters import AdapterError
from cpgraph.adapters.glue import classify, find
from cpgraph.adapters.megatron import release as rel
from cpgraph.adapters.megatron.stand_ins import Collective, ContextStandIn, EpGroup, Hang, agree, torch_stand_in
from cpgraph.adapters.shim import Sandbox
from cpgraph.reference.ep_graphs import EpAnswer, EpConfig, GraphDims, RankStep

PACKAGE = rel.PACKAGE
READ_AGAINST = ("0.16.0", "0.16.1", "0.17.0", "0.17.1", "0.18.0", "0.18.2", "0.19.0", "0.19.2")
NEWEST = READ_AGAINST[-1]
POLICIES = ("ep",)
BATCH_DIMS_MODULE = "megatron.core.inference.batch_dimensions_utils"
DISPATCH_IMPL = {"alltoall": ("transformer_engine", "nvls"), "nccl": ("inference_optimized", "nccl"),
                 "nvls": ("inference_optimized", "nvls")}  # dispatcher -> (transformer_impl, inference dispatcher type)


class MegatronAdapterError(AdapterError):
    """No Megatron-Core release to drive here (the message names what to install or pass)."""


class ConfigRefused(ValueError):
    """The release refuses this configuration itself (an assert or error of its own at file:line)."""


def installed_root() -> str:
    """The folder holding the installed ``megatron`` package."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("megatron")
    if spec is None or not spec.submodule_search_locations:
        raise MegatronAdapterError("megatron-core is not installed: pip install megatron-core, or pass --adapter-root DIR "
                                   "(an unpacked release) or --release VERSION")
    return os.path.dirname(list(spec.submodule_search_locations)[0])


def policy_from(root: str, policy: str = "ep") -> MegatronPolicy:
    if policy not in POLICIES:
        raise ValueError(f"cpgraph.adapters.megatron serves {', '.join(POLICIES)}, not {policy!r}")
    return MegatronPolicy(root)


class MegatronPolicy:
    """One release, driven: ``graphs(config)``, ``answers(config, steps)``, what it offers, where it decides."""

    name = "cpgraph.adapters.megatron:ep"

    def __init__(self, root: str) -> None:
        import os

        if not os.path.isfile(os.path.join(root, rel.BATCH_DIMS)):
            raise MegatronAdapterError(f"{root} holds no Megatron-Core release with dynamic inference ({rel.BATCH_DIMS} is missing)")
        self.root = root
        self.version = rel.version_of(root)
        self.family = self.version.rsplit(".", 1)[0]
        self._current = Collective([])
        self.torch = torch_stand_in(lambda: self._current)
        utils = rel.definitions(root, rel.UTILS, ("get_pg_size", "round_up_to_nearest_multiple") if self._has_round_up() else ("get_pg_size",),
                                {"torch": self.torch, "math": math})
        overrides: dict[str, Mapping[str, object]] = {"torch": vars(self.torch), "megatron.core.utils": utils}
        sizing = find(rel.tree(root, rel.CONFIG), "CudaGraphSizingDistribution") if os.path.isfile(os.path.join(root, rel.CONFIG)) else None
        if sizing is not None:
            import enum

            overrides["megatron.core.inference.config"] = rel.definitions(root, rel.CONFIG, ("CudaGraphSizingDistribution",), {"Enum": enum.Enum})
        self.sizings: tuple[str, ...] = ("exponential", "linear") if sizing is not None else ("exponential",)
        self._box = Sandbox(root, rel.IMPORT, [BATCH_DIMS_MODULE], overrides=overrides)
        module = self._box.load(BATCH_DIMS_MODULE)
        self._globals: dict[str, Any] = {**vars(module), "Optional": typing.Optional, "List": typing.List, "math": math,
                                         "get_pg_size": utils["get_pg_size"], "torch": self.torch}
        self._init = rel.init_slice(root)
        self._attention = self._function(rel.body_slice(root, rel.CONTEXT, f"{rel.CONTEXT_CLASS}.initialize_attention_state",
                                                        until=rel.assigns_self("_using_cuda_graph_this_step")))
        self._context_class = self._context()
        dummy = rel.keyword_of(root, rel.CONTROLLER, "TextGenerationController.dummy_forward", "_dynamic_step_context_init",
                               "construct_graph_dimensions")
        self._dummy_graph = rel.expression(root, rel.CONTROLLER, dummy) if dummy is not None else None
        init_text = _read(root, rel.CONTEXT)
        self.dispatchers: tuple[str, ...] = ("alltoall", "nccl", "nvls") if "inference_moe_token_dispatcher_type" in init_text else ("alltoall",)
        self.all_prefills = "cuda_graph_all_prefills" in init_text
        self.auto_graphs = "num_cuda_graphs == -1" in _read(root, rel.BATCH_DIMS)
        self.max_spec_tokens = 0 if "num_speculative_tokens" not in init_text else 3
        self._graphs: dict[EpConfig, tuple[tuple[GraphDims, ...], dict[str, Any]]] = {}
        engine = rel.tree(root, rel.ENGINE) if os.path.isfile(os.path.join(root, rel.ENGINE)) else None
        chunking = engine is not None and find(engine, f"{rel.ENGINE_CLASS}._find_cg_chunk_size") is not None
        self.admission = chunking  # the CUDA-graph-aware admission (0.19 on)
        self._chunk = self._function(rel.body_slice(root, rel.ENGINE, f"{rel.ENGINE_CLASS}._find_cg_chunk_size")) if chunking else None
        self._gating = self._function(rel.body_slice(root, rel.ENGINE, f"{rel.ENGINE_CLASS}._cg_admission_gating_active")) if chunking else None

    def _has_round_up(self) -> bool:
        return "round_up_to_nearest_multiple" in _read(self.root, rel.BATCH_DIMS)

    def _function(self, piece: rel.Slice) -> Any:
        namespace = dict(self._globals)
        exec(piece.code, namespace)  # noqa: S102  (the release's own statements)
        return next(v for k, v in namespace.items() if callable(v) and getattr(v, "__code__", None) is not None
                    and v.__code__.co_filename.endswith(piece.file))

    def _context(self) -> type:
        """A ContextStandIn with the release's own ``num_decode_requests``, ``using_cuda_graph_this_step`` and
        the leading statements of ``add_dummy_requests_for_expert_parallel_step`` where it has one."""
        attrs: dict[str, Any] = {}
        for name, is_property in (("num_decode_requests", True), ("using_cuda_graph_this_step", False)):
            fn = self._function(rel.body_slice(self.root, rel.CONTEXT, f"{rel.CONTEXT_CLASS}.{name}"))
            attrs[name] = property(_returning(fn, name)) if is_property else _returning(fn, name)
        if find(rel.tree(self.root, rel.CONTEXT), f"{rel.CONTEXT_CLASS}.add_dummy_requests_for_expert_parallel_step") is not None:
            attrs["add_dummy_requests_for_expert_parallel_step"] = self._function(rel.body_slice(
                self.root, rel.CONTEXT, f"{rel.CONTEXT_CLASS}.add_dummy_requests_for_expert_parallel_step", leading=rel.plain_assignment))
        return type("DynamicInferenceContextStandIn", (ContextStandIn,), attrs)

    # --- the driver -----------------------------------------------------------------------------------------

    def _setup(self, config: EpConfig) -> tuple[tuple[GraphDims, ...], dict[str, Any]]:
        """The graph list and the context attributes the release's __init__ sets for ``config``."""
        cached = self._graphs.get(config)
        if cached is not None:
            return cached
        ctx = self._context_class()
        ctx.max_requests, ctx.max_tokens = config.max_requests, config.max_tokens
        ctx.max_sequence_length, ctx.num_speculative_tokens = config.max_sequence_length, config.spec_tokens
        ctx.is_hybrid_model = config.model == "hybrid"
        ctx.expert_model_parallel_group = EpGroup(config.ep_size) if config.ep_size > 1 else None
        impl, kind = DISPATCH_IMPL[config.dispatcher]
        sizing_enum = self._box.modules.get("megatron.core.inference.config")
        sizing = getattr(getattr(sizing_enum, "CudaGraphSizingDistribution", None), config.sizing.upper(), config.sizing)
        inference_config = SimpleNamespace(
            num_cuda_graphs=config.num_cuda_graphs, cuda_graph_mixed_prefill_count=config.mixed_prefill_count,
            use_cuda_graphs_for_non_decode_steps=config.non_decode_graphs, cuda_graph_max_tokens=config.cuda_graph_max_tokens,
            cuda_graph_all_prefills=config.all_prefills, cuda_graph_sizing_distribution=sizing,
            num_speculative_tokens=config.spec_tokens, max_requests=config.max_requests, max_tokens=config.max_tokens,
            mamba_inference_state_config=object() if config.model == "hybrid" else None)
        namespace = {**self._globals, "self": ctx, "tp_size": config.tp_size, "inference_config": inference_config,
                     "model_config": SimpleNamespace(transformer_impl=impl, inference_moe_token_dispatcher_type=kind),
                     "num_cuda_graphs": config.num_cuda_graphs, "cuda_graph_mixed_prefill_count": config.mixed_prefill_count,
                     "use_cuda_graphs_for_non_decode_steps": config.non_decode_graphs, "cuda_graph_max_tokens": None}
        try:
            with self._box:
                exec(self._init.code, namespace)  # noqa: S102  (the release's own __init__ statements)
        except Exception as exc:
            raise self._refused_or_glue(exc) from None
        graphs = tuple(GraphDims(g.token_count, g.prefill_req_count, g.decode_req_count) for g in ctx.cuda_graph_batch_dimensions_list)
        result = (graphs, dict(vars(ctx)))
        self._graphs[config] = result
        return result

    def _refused_or_glue(self, exc: Exception) -> Exception:
        classified = classify(exc, "cpgraph.adapters.megatron", self.version, self.root, NEWEST)
        if classified is exc:  # the release's own assert or raise: it refuses this configuration
            tb = exc.__traceback__
            line = ""
            while tb is not None:
                if tb.tb_frame.f_code.co_filename.startswith(self.root):
                    line = f"{tb.tb_frame.f_code.co_filename[len(self.root) + 1:]}:{tb.tb_lineno}"
                tb = tb.tb_next
            return ConfigRefused(f"megatron-core {self.version} refuses the configuration at {line}: {exc}")
        return classified

    def graphs(self, config: EpConfig) -> tuple[GraphDims, ...]:
        """The graphs the release captures under ``config`` (ConfigRefused when the release refuses it)."""
        return self._setup(config)[0]

    def answers(self, config: EpConfig, steps: Sequence[RankStep], graphs: Sequence[GraphDims] | None = None) -> tuple[EpAnswer, ...]:
        """What each EP rank replays for its step (None: idle), over the simulated all-reduce; with ``graphs``, the
        context's captured list is those graphs (as the release's own InferenceBatchDimensions) instead of the
        list the release builds for ``config`` (a proof's counterexample replayed through the release)."""
        if len(steps) != config.ep_size:
            raise ValueError(f"steps must have one per EP rank ({config.ep_size}), got {len(steps)}")
        _, attrs = self._setup(config)
        if graphs is not None:
            make = self._globals["InferenceBatchDimensions"]
            attrs = {**attrs, "cuda_graph_batch_dimensions_list": [make(g.tokens, g.prefill, g.decode) for g in graphs]}

        def run(rank: int, collective: Collective) -> GraphDims | None:
            self._current = collective
            ctx = self._context_class()
            ctx.__dict__.update(attrs)
            step = steps[rank]
            kwargs: dict[str, Any] = {}
            if step is None:
                if not ctx.cuda_graph_batch_dimensions_list:  # dummy_forward's first test: eager, no sync
                    return None
                if self._dummy_graph is not None:
                    kwargs["construct_graph_dimensions"] = eval(self._dummy_graph, {**self._globals, "context": ctx})  # noqa: S307
                else:
                    kwargs["is_expert_parallel_dummy_cuda_graph_step"] = True
            else:
                ctx.active_token_count, ctx.num_prefill_requests = step.tokens, step.prefill
                ctx.total_request_count = step.prefill + step.decode
            best = self._attention(ctx, **kwargs).get("best_graph")
            return None if best is None else GraphDims(best.token_count, best.prefill_req_count, best.decode_req_count)

        try:
            with self._box:
                ran, _ = agree(config.ep_size, run)
        except Hang as hang:
            return tuple(EpAnswer(r, None, hung=r in hang.skipped or r in hang.entered) for r in range(config.ep_size))
        except Exception as exc:
            raise classify(exc, "cpgraph.adapters.megatron", self.version, self.root, NEWEST) from None
        return tuple(EpAnswer(r, g) for r, g in enumerate(ran))

    def chunk(self, config: EpConfig, active: GraphDims, budget: int) -> tuple[bool, int | None]:
        """The engine's CUDA-graph-aware admission of a new prefill beside ``active`` (0.19 on): whether the
        gating is on for ``config`` (the release's _cg_admission_gating_active) and the chunk its
        _find_cg_chunk_size snaps the ``budget`` to (None: no boundary, eager)."""
        if self._chunk is None or self._gating is None:
            raise ValueError(f"megatron-core {self.version} has no CUDA-graph-aware admission (0.19 on)")
        _, attrs = self._setup(config)
        context = SimpleNamespace(**attrs, active_token_count=active.tokens, num_prefill_requests=active.prefill,
                                  num_decode_requests=active.decode)
        engine = SimpleNamespace(context=context, cuda_graph_all_prefills=config.all_prefills)
        try:
            with self._box:
                gating = bool(self._gating(engine))
                chunk = self._chunk(engine, budget)
        except Exception as exc:
            raise classify(exc, "cpgraph.adapters.megatron", self.version, self.root, NEWEST) from None
        return gating, None if chunk is None else int(chunk)

    # --- where the release decides ------------------------------------------------------------------------

    def citations(self) -> dict[str, str]:
        root = self.root
        adjust = "InferenceBatchDimensions.adjust_batch_dims_for_expert_parallelism"
        return {
            "graph list": f"{self._init.where}",
            "EP sync": rel.line_of(root, rel.BATCH_DIMS, adjust, rel.calls("all_reduce")),
            "synced dims": rel.line_of(root, rel.BATCH_DIMS, adjust, lambda n: isinstance(n, ast.Assign) and any(
                getattr(t, "id", "") == "adjusted_batch_dim" for t in n.targets)),
            "match": rel.line_of(root, rel.BATCH_DIMS, "CUDAGraphBatchDimensionBuilder.match_graph_config", rel.calls("min")),
            "graph or eager": rel.line_of(root, rel.CONTEXT, f"{rel.CONTEXT_CLASS}.initialize_attention_state", rel.calls("match_graph_config")),
            "idle rank": rel.line_of(root, rel.CONTROLLER, "TextGenerationController.dummy_forward", rel.calls("_dynamic_step_context_init")),
        }

    def decided_at(self, invariant: str, kind: str = "") -> tuple[str, ...]:
        c = self.citations()
        if kind == "chunk" and self._chunk is not None:
            return (rel.line_of(self.root, rel.ENGINE, f"{rel.ENGINE_CLASS}._find_cg_chunk_size", rel.calls("is_applicable_for_batch_dim")),
                    rel.line_of(self.root, rel.ENGINE, f"{rel.ENGINE_CLASS}.schedule_chunked_prefill", rel.calls("_find_cg_chunk_size")))
        if invariant in ("rank_consensus", "minimal_bucket", "no_needless_fallback"):
            return (c["EP sync"], c["synced dims"], c["graph or eager"])
        return (c["match"], c["graph or eager"])

    def code_files(self) -> dict[str, str]:
        return {"batch_dimensions_utils": rel.BATCH_DIMS, "DynamicInferenceContext": rel.CONTEXT,
                "TextGenerationController.dummy_forward": rel.CONTROLLER, "get_pg_size": rel.UTILS,
                **({"DynamicInferenceEngine._find_cg_chunk_size": rel.ENGINE} if self.admission else {})}

    def ep_step_driver(self) -> MegatronPolicy:
        return self


def _returning(fn: Any, name: str) -> Any:
    """A compiled body slice returns its locals; a method returns what its body's ``return`` gave."""
    def method(self: Any) -> Any:
        return fn(self)
    method.__name__ = name
    return method


def _read(root: str, file: str) -> str:
    with open(f"{root}/{file}", encoding="utf-8") as handle:
        return handle.read()
