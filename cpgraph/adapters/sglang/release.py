"""An sglang release as the adapter finds and reads it: where the installed package lives, the modules the
selector needs run for real, the CP-BCG input record per strategy, the model runner's admission check
compiled from its own source, and the planted pre-fix bug (for tests)."""

from __future__ import annotations

import ast
import importlib.util
import os
from collections.abc import Callable
from types import FunctionType
from typing import Any

from cpgraph.adapters import AdapterError
from cpgraph.adapters.glue import Assumption, GlueError, calls, defines, reads, signature

PACKAGE = "sglang"
RUNNER = "sglang.srt.model_executor.runner.prefill_cuda_graph_runner"
MODEL_RUNNER_FILE = ("sglang", "srt", "model_executor", "model_runner.py")
REAL_MODULES = (
    "sglang.srt.layers.cp.base",
    "sglang.srt.layers.cp.padding",
    "sglang.srt.layers.cp.utils",
    "sglang.srt.layers.cp.zigzag",
    "sglang.srt.layers.cp.interleave",
    "sglang.srt.layers.cp.bcg",
    "sglang.srt.layers.cp.bcg.bcg",
    "sglang.srt.layers.cp.bcg.zigzag_bcg",
    "sglang.srt.layers.cp.bcg.interleave_bcg",
    "sglang.srt.layers.utils.cp_utils",
    "sglang.srt.model_executor.runner.base_cuda_graph_runner",
    RUNNER,
)
STRATEGIES = {"zigzag": ("ZigzagCPBCGInput", "2P"), "interleave": ("InterleaveCPBCGInput", "P")}


ADAPTER = "cpgraph.adapters.sglang"
# The releases the adapter was read against (0.5.17 is the first with prefill-CP graphs): its support range.
READ_AGAINST = ("0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
FIRST, NEWEST = READ_AGAINST[0], READ_AGAINST[-1]


class SglangAdapterError(AdapterError):
    """The sglang at hand has no prefill-CP CUDA-graph selector this adapter can drive (what is missing
    is named)."""


class SglangGlueError(GlueError, SglangAdapterError):
    """This sglang release changed what the adapter's glue assumes (see cpgraph.adapters.glue)."""


def read_against() -> str:
    return f"sglang {FIRST}-{NEWEST}"


def _file(module: str) -> tuple[str, str]:
    base = module.replace(".", "/")
    return f"{base}.py", f"{base}/__init__.py"


RUNNER_FILES = _file(RUNNER)
UTILS_FILES = _file("sglang.srt.layers.cp.utils")
BASE_FILES = _file("sglang.srt.layers.cp.base")
REAL_FILES = tuple(f for m in REAL_MODULES for f in _file(m))
# What the adapter sets on the runner and the CP-BCG input it builds without their constructors, the CP
# configuration it hands out, and the ForwardBatch and metadata fields it fills or reads back; 'a|b': the
# release reads one spelling or the other (the v1 and v2 names). Fields the adapter sets only to keep a
# feature off (enable_dsa_prefill_context_parallel, dsa_prefill_cp_mode, enable_cp_tp_group_sharing) are not
# assumed: no pinned release needs them all.
SET_AND_READ = (
    "capture_num_tokens", "max_num_tokens", "enable_cp_v2_bcg_capture|enable_cp_bcg_capture", "buffer_registry",
    "prefill_cp_bcg_input", "input_embeds", "positions", "live_local_tokens", "bucket_local_tokens",
    "attn_cp_size", "attn_cp_rank", "tp_size", "enable_prefill_cp|enable_prefill_context_parallel", "cp_strategy",
    "input_ids", "extend_seq_lens_cpu", "seq_lens_cpu", "extend_prefix_lens_cpu", "extend_num_tokens", "batch_size",
    "forward_mode", "attn_cp_metadata", "per_rank_actual_token",
)
ASSUMPTIONS: tuple[Assumption, ...] = (
    signature(RUNNER_FILES, "PrefillCudaGraphRunner.can_run_graph", positional=("forward_batch",)),
    signature(RUNNER_FILES, "PrefillCudaGraphRunner.load_batch", positional=("forward_batch",)),
    signature(UTILS_FILES, "prepare_cp_forward", positional=("forward_batch",)),
    defines(UTILS_FILES, "is_cp_active|is_cp_v2_active", why="asks whether the batch takes the CP path"),
    defines(BASE_FILES, "get_cp_strategy", why="hands it to the model runner's admission"),
    signature(REAL_FILES, "prepare", positional=("runner", "forward_batch"), keywords=("static_num_tokens", "capture")),
    calls(RUNNER_FILES, "fill_from", ("padded_num_tokens",), why="the adapter's buffer registry reads the padded bucket from it"),
    reads(REAL_FILES, SET_AND_READ, why="the adapter sets or fills it"),
)


def installed_root() -> str:
    """The folder holding the installed ``sglang`` package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SglangAdapterError(
            "sglang is not installed in this environment, so there is no selector to check: pip install sglang, or "
            "unpack a wheel (pip download --no-deps sglang==VERSION -d DIR; unzip it into DIR) and pass --adapter-root DIR"
        )
    return os.path.dirname(list(spec.submodule_search_locations)[0])


def model_runner_admission(root: str, namespace: dict[str, Any]) -> Callable[..., bool] | None:
    """``_prefill_cuda_graph_allows_context_parallel`` compiled from the release's model_runner.py (the
    module itself needs the whole server, so only this function's own source is compiled, with its
    file name and line numbers), or None when the release has no such function."""
    path = os.path.join(root, *MODEL_RUNNER_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=path)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "_prefill_cuda_graph_allows_context_parallel":
            node.returns = None
            for arg in node.args.args:
                arg.annotation = None
            module = ast.Module(body=[node], type_ignores=[])
            code = compile(module, path, "exec")
            scope = dict(namespace)
            exec(code, scope)
            fn = scope[node.name]
            assert isinstance(fn, FunctionType)
            return fn
    return None


def plant_prefix(released: type) -> type:
    """The release's input record with the pre-fix bug planted: its own bucket scan, called with zero
    rows required (the capacity is never read), so the first bucket in [n, F*n] is taken."""
    scan: Callable[..., Any] = getattr(released, "select_replay_bucket")

    def select_replay_bucket(self: Any, *, required_local_tokens: int, **kw: Any) -> Any:
        return scan(self, required_local_tokens=0, **kw)

    return type(f"PreFix{released.__name__}", (released,), {"select_replay_bucket": select_replay_bucket})
