"""An sglang release as the adapter finds and reads it: where the installed package lives, the modules the
selector needs run for real, the CP-BCG input record per strategy, the signatures of the entry points the
adapter calls, and the planted pre-fix bug (for tests)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any

from cpgraph.adapters import AdapterError
from cpgraph.adapters.glue import Assumption, GlueError, signature

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
REAL_FILES = tuple(f for m in REAL_MODULES for f in _file(m))
MODEL_RUNNER_FILES = ("sglang/srt/model_executor/model_runner.py",)
# What the adapter itself calls: the entry points of the driven path (their signatures), nothing about the
# shape of the code in between, which runs (cpgraph/adapters/sglang/path.py) rather than being matched.
ASSUMPTIONS: tuple[Assumption, ...] = (
    signature(MODEL_RUNNER_FILES, "ModelRunner.forward", positional=("forward_batch",)),
    signature(RUNNER_FILES, "PrefillCudaGraphRunner.execute", positional=("forward_batch",)),
    signature(UTILS_FILES, "prepare_cp_forward", positional=("forward_batch",)),
    signature(REAL_FILES, "prepare", positional=("runner", "forward_batch"), keywords=("static_num_tokens", "capture")),
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


def plant_prefix(released: type) -> type:
    """The release's input record with the pre-fix bug planted: its own bucket scan, called with zero
    rows required (the capacity is never read), so the first bucket in [n, F*n] is taken."""
    scan: Callable[..., Any] = getattr(released, "select_replay_bucket")

    def select_replay_bucket(self: Any, *, required_local_tokens: int, **kw: Any) -> Any:
        return scan(self, required_local_tokens=0, **kw)

    return type(f"PreFix{released.__name__}", (released,), {"select_replay_bucket": select_replay_bucket})
