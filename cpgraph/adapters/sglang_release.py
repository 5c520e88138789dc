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


class SglangAdapterError(AdapterError):
    """The sglang at hand has no prefill-CP CUDA-graph selector this adapter can drive (what is missing
    is named)."""


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
