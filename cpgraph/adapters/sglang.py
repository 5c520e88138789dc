"""sglang's own prefill-CP CUDA-graph selector as a ``cpgraph check`` policy.

    cpgraph check cpgraph.adapters.sglang:zigzag --padding-factors 2
    cpgraph check cpgraph.adapters.sglang:interleave --strategy interleave --padding-factors 2

The policies run the installed sglang's code, not a restatement of it: the runner's
``can_run_graph`` (and, where the release has it, the model runner's
``_prefill_cuda_graph_allows_context_parallel``, the rest of upstream's admission) for ``admit``; the
runner's ``load_batch`` up to the point where it fills its static buffers for ``replay_bucket`` (the
bucket it pads to); and ``prepare_cp_forward`` (the CP layout's metadata, ``per_rank_actual_token``)
for ``local_rows``. Capacities are handed to the release's own CP-BCG input record
(``bucket_local_tokens``) as the checker recorded them. sglang's modules are loaded from their files
in a sandbox (cpgraph/adapters/shim.py): the selector's modules for real, everything else it imports
(torch, triton, the rest of sglang) as stubs; ``runtime_context`` and ``environ`` are replaced by the
configuration of the batch (cp_size, rank, strategy, CP-v2 on).

Knobs the release fixes are declared on the policy, so the check honours them: ``max_padding_factor``
is the release's ``_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR`` and ``align_size`` its CP alignment (2P
for zigzag, P for interleave); ``strategy`` names the layout. cp_size 1 runs no CP graph (admit False).

``policy_from(root, strategy)`` builds a policy from any folder holding an ``sglang`` package (an
unpacked wheel); ``zigzag`` and ``interleave`` (module attributes, built on first use) come from the
installed sglang. ``planted_prefix=True`` plants the pre-fix bug (the capacity is never read) into
the release's own bucket scan, for tests.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FunctionType, SimpleNamespace
from typing import Any

from cpgraph.adapters.shim import Sandbox, Stub

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


class SglangAdapterError(RuntimeError):
    """The sglang at hand has no prefill-CP CUDA-graph selector this adapter can drive (what is missing
    is named)."""


def installed_root() -> str:
    """The folder holding the installed ``sglang`` package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SglangAdapterError("sglang is not installed in this environment (pip install sglang), so there is no selector to check")
    return os.path.dirname(list(spec.submodule_search_locations)[0])


class _Parallel(SimpleNamespace):
    """``get_parallel()`` / ``get_server_args()``: the batch's CP configuration."""


@dataclass
class _Recorded(Exception):
    """Raised by the stand-in buffer registry: ``load_batch`` reached its static buffers with this bucket."""

    bucket: object


class _Registry:
    """load_batch's buffer registry: the first write names the padded bucket, and the replay stops there."""

    def fill_from(self, *args: object, padded_num_tokens: object = None, **kwargs: object) -> None:
        raise _Recorded(padded_num_tokens)


class _Mode:
    """An EXTEND forward mode (the prefill CP graphs serve extend batches)."""

    def is_context_parallel_extend(self, *args: object, **kwargs: object) -> bool:
        return True

    def is_extend(self, *args: object, **kwargs: object) -> bool:
        return True

    def is_target_verify(self) -> bool:
        return False

    def is_split_prefill(self) -> bool:
        return False


class _ForwardBatch:
    """The ForwardBatch fields the selector reads, made from the protocol's keywords: ``input_ids`` of
    length num_tokens (possibly padded), ``extend_seq_lens_cpu`` the live lengths, no prefix, no
    multimodal input, no DP; any other field is None."""

    def __init__(self, lengths: Sequence[int], num_tokens: int) -> None:
        self.input_ids = range(num_tokens)
        self.extend_seq_lens_cpu = list(lengths)
        self.seq_lens_cpu = list(lengths)
        self.extend_prefix_lens_cpu = [0] * len(lengths)
        self.extend_num_tokens = sum(lengths)
        self.batch_size = len(lengths)
        self.forward_mode = _Mode()
        self.return_logprob = False
        self.attn_cp_metadata = None

    def contains_mm_inputs(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return None


def _model_runner_admission(root: str, namespace: dict[str, Any]) -> Callable[..., bool] | None:
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


class SglangPolicy:
    """One strategy of one sglang release, driven through its own selector (see the module docstring)."""

    def __init__(self, root: str, strategy: str = "zigzag", *, planted_prefix: bool = False) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
        self.root = os.path.abspath(root)
        self.strategy = strategy
        self.align_size = STRATEGIES[strategy][1]
        self.config = _Parallel()
        self._set_config(2, 0)
        overrides: dict[str, dict[str, object]] = {
            "sglang.srt.runtime_context": {
                "get_parallel": lambda: self.config,
                "get_server_args": lambda: self.config,
                "get_device": lambda: SimpleNamespace(device="cpu"),
                "uses_mla_backend": lambda: False,
                "get_flags": lambda: Stub("flags"),
            },
            "sglang.srt.environ": {"envs": SimpleNamespace(SGLANG_ENABLE_CP_V2=SimpleNamespace(get=lambda: True))},
        }
        if not os.path.isdir(os.path.join(self.root, PACKAGE)):
            raise SglangAdapterError(f"no sglang package under {self.root}")
        self.sandbox = Sandbox(self.root, PACKAGE, REAL_MODULES, overrides)
        missing = [m for m in (RUNNER, "sglang.srt.layers.cp.utils") if m not in self.sandbox.real]
        if missing:
            raise SglangAdapterError(f"this sglang has no prefill-CP CUDA-graph runner: missing {', '.join(missing)} under {self.root}")
        self.runner_module = self.sandbox.load(RUNNER)
        self.utils = self.sandbox.load("sglang.srt.layers.cp.utils")
        self.base = self.sandbox.load("sglang.srt.layers.cp.base")
        self.input_type = self.released_input_type = self._input_type()
        self.planted_prefix = planted_prefix
        if planted_prefix:
            self.input_type = _plant_prefix(self.input_type)
        factor = getattr(self.runner_module, "_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR", None)
        if not isinstance(factor, int):
            raise SglangAdapterError(f"{RUNNER} has no int _MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR (got {factor!r})")
        self.max_padding_factor = factor
        runner_cls = self.runner_module.PrefillCudaGraphRunner
        self._runner_cls = type("DrivenPrefillCudaGraphRunner", (runner_cls,), {"__getattr__": lambda self, name: None})
        self._runner_cls.__abstractmethods__ = frozenset()  # type: ignore[attr-defined]
        active = getattr(self.utils, "is_cp_active", None) or getattr(self.utils, "is_cp_v2_active")
        self.prepare_cp_forward = self.utils.prepare_cp_forward
        self.is_cp_active = active
        self.model_admission = _model_runner_admission(
            self.root, {"get_cp_strategy": self.base.get_cp_strategy, "is_cp_active": active, "is_cp_v2_active": active, "bool": bool, "getattr": getattr}
        )
        self.__name__ = f"sglang:{strategy}@{self.root}"

    # -- the release's classes and functions -------------------------------------------------------
    def _input_type(self) -> type:
        name, _ = STRATEGIES[self.strategy]
        for module in ("sglang.srt.layers.cp.bcg.zigzag_bcg" if self.strategy == "zigzag" else "sglang.srt.layers.cp.bcg.interleave_bcg",):
            if module in self.sandbox.real:
                found = getattr(self.sandbox.load(module), name, None)
                if isinstance(found, type):
                    return found
        if self.strategy != "zigzag":
            raise SglangAdapterError(f"this sglang has no {self.strategy} CP CUDA-graph input ({name}); only zigzag is captured")
        bcg = self.sandbox.load("sglang.srt.layers.cp.bcg")
        found = getattr(bcg, "PrefillCPBCGInput", None)
        if not isinstance(found, type):
            raise SglangAdapterError("this sglang has no PrefillCPBCGInput in sglang.srt.layers.cp.bcg")
        return found

    def code_files(self) -> dict[str, str]:
        """The file each judged function's code object comes from (for provenance checks). With the
        planted pre-fix bug, the scan listed is the release's own, which the plant calls."""
        runner = self.runner_module.PrefillCudaGraphRunner
        out = {
            "can_run_graph": runner.can_run_graph.__code__.co_filename,
            "load_batch": runner.load_batch.__code__.co_filename,
            "prepare_cp_forward": self.prepare_cp_forward.__code__.co_filename,
        }
        scan = getattr(self.released_input_type, "select_replay_bucket", None)
        if scan is not None:
            out["select_replay_bucket"] = scan.__code__.co_filename
        if self.model_admission is not None:
            out["_prefill_cuda_graph_allows_context_parallel"] = self.model_admission.__code__.co_filename
        return out

    def _set_config(self, cp_size: int, cp_rank: int) -> None:
        seq_split = self.strategy == "zigzag"
        self.config.__dict__.update(
            attn_cp_size=cp_size,
            attn_cp_rank=cp_rank,
            tp_size=cp_size,
            enable_prefill_cp=True,
            enable_prefill_context_parallel=True,
            enable_dsa_prefill_context_parallel=False,
            cp_strategy=self.strategy,
            prefill_cp_mode="in-seq-split" if seq_split else "round-robin-split",
            dsa_prefill_cp_mode=None,
            enable_cp_tp_group_sharing=False,
        )

    def _runner(self, batch: dict[str, Any]) -> Any:
        """A runner of this release holding the batch's capture state (no GPU, no __init__)."""
        buckets = [int(b) for b in batch["capture_num_tokens"]]
        self._set_config(batch["cp_size"], batch["cp_rank"])
        if hasattr(self.base, "_STRATEGY"):
            setattr(self.base, "_STRATEGY", None)  # the strategy singleton is rebuilt for this batch's cp_size
        runner: Any = object.__new__(self._runner_cls)
        runner.__dict__.update(
            capture_num_tokens=buckets,
            max_num_tokens=max(buckets),
            enable_cp_v2_bcg_capture=True,
            enable_cp_bcg_capture=True,
            buffer_registry=_Registry(),
            device="cpu",
        )
        cp_input: Any = object.__new__(self.input_type)
        cp_input.__dict__.update(
            input_embeds=None, positions=None, live_local_tokens=0,
            bucket_local_tokens={int(b): int(r) for b, r in batch["bucket_local_tokens"].items() if r is not None},
        )
        runner.__dict__["prefill_cp_bcg_input"] = cp_input
        return runner

    # -- the protocol ----------------------------------------------------------------------------
    def admit(self, **batch: Any) -> bool:
        if batch["cp_size"] < 2:
            return False  # cp_size 1: no CP graph is captured
        with self.sandbox:
            runner = self._runner(batch)
            fb = _ForwardBatch(batch["extend_seq_lens"], batch["num_tokens"])
            if not runner.can_run_graph(fb):
                return False
            return self.model_admission is None or bool(self.model_admission(runner, fb))

    def replay_bucket(self, **batch: Any) -> object:
        with self.sandbox:
            runner = self._runner(batch)
            fb = _ForwardBatch(batch["extend_seq_lens"], batch["num_tokens"])
            try:
                runner.load_batch(fb)
            except _Recorded as done:
                return done.bucket
        raise RuntimeError("load_batch returned without filling its static buffers")

    def local_rows(self, *, bucket: int, **batch: Any) -> list[int]:
        with self.sandbox:
            self._runner(batch)
            fb = _ForwardBatch(batch["extend_seq_lens"], batch["num_tokens"])
            self.prepare_cp_forward(fb)
            metadata: Any = fb.attn_cp_metadata
            rows = metadata.per_rank_actual_token
        return [int(r) for r in rows]

    def replay_guard(self, **batch: Any) -> None:
        """Run the release's CP-local replay preparation (``PrefillCPBCGInput.prepare``) up to its own
        capacity guard for ``batch['bucket']``: raises its RuntimeError ('Live batch needs N local CP
        rows ...') when the live layout overflows the bucket's capture."""
        bucket = batch.pop("bucket")
        with self.sandbox:
            runner = self._runner(batch)
            fb = _ForwardBatch(batch["extend_seq_lens"], batch["num_tokens"])
            try:
                runner.prefill_cp_bcg_input.prepare(runner, fb, static_num_tokens=bucket, capture=False)
            except RuntimeError:
                raise
            except Exception:
                pass  # past the guard: the stubbed tensor work that follows is not the selector's


def _plant_prefix(released: type) -> type:
    """The release's input record with the pre-fix bug planted: its own bucket scan, called with zero
    rows required (the capacity is never read), so the first bucket in [n, F*n] is taken."""
    scan: Callable[..., Any] = getattr(released, "select_replay_bucket")

    def select_replay_bucket(self: Any, *, required_local_tokens: int, **kw: Any) -> Any:
        return scan(self, required_local_tokens=0, **kw)

    return type(f"PreFix{released.__name__}", (released,), {"select_replay_bucket": select_replay_bucket})


def policy_from(root: str, strategy: str = "zigzag", *, planted_prefix: bool = False) -> SglangPolicy:
    """The ``strategy`` selector of the sglang package found under ``root`` (an unpacked wheel)."""
    return SglangPolicy(root, strategy, planted_prefix=planted_prefix)


_BUILT: dict[str, SglangPolicy] = {}


def __getattr__(name: str) -> SglangPolicy:
    """``zigzag`` and ``interleave``: the installed sglang's selectors, built on first use."""
    if name not in STRATEGIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (policies: {', '.join(STRATEGIES)})")
    if name not in _BUILT:
        _BUILT[name] = SglangPolicy(installed_root(), name)
    return _BUILT[name]

