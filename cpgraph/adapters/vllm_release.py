"""A vLLM release as the vLLM adapter finds and reads it: where the installed package lives, its version,
the modules run for real, the two definitions compiled from their own source (``CUDAGraphMode`` and
``ParallelConfig.pcp_shard_decode_requests``), and the model runner's PCP glue located in its
``model_runner.py`` (what the adapter restates, cited by file and line, and checked to be there).

Nothing of vLLM is copied here: the real modules are loaded from the release's files, and the glue is
found by reading the release's syntax tree, so a release whose glue differs from what the adapter restates
is an error naming the step, never a silent mismatch.
"""

from __future__ import annotations

import ast
import enum
import importlib.metadata
import importlib.util
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cpgraph.adapters import AdapterError

PACKAGE = "vllm"
GPU = "vllm.v1.worker.gpu"
PCP_MANAGER = f"{GPU}.pcp_manager"
CUDAGRAPH_UTILS = f"{GPU}.cudagraph_utils"
DP_UTILS = f"{GPU}.dp_utils"
REAL_MODULES = (PCP_MANAGER, CUDAGRAPH_UTILS, DP_UTILS)
OUTSIDE = ("numpy",)  # third-party packages the real modules get for real
MODEL_RUNNER = "vllm/v1/worker/gpu/model_runner.py"
PCP_FILE = "vllm/v1/worker/gpu/pcp_manager.py"
COMPILATION = "vllm/config/compilation.py"
PARALLEL = "vllm/config/parallel.py"
NEWEST = "0.33.0"  # the newest release the adapter was read against (0.26.0 is the first with PCP graphs)
INSTALL_HINT = (
    f"pip download --no-deps vllm=={NEWEST} -d DIR, unzip the wheel into DIR (only its .py files are needed), "
    "then pass --adapter-root DIR (in Python: cpgraph.adapters.vllm.policy_from(DIR))"
)

# Release families, read from the code (see ReleaseCode.family):
GLOBAL_DISPATCH = "global_dispatch"  # 0.26-0.28: dispatch by the global count, replay keyed by max per-rank rows
LOCAL_DISPATCH = "local_dispatch"  # 0.29 on: dispatch by the largest rank-local rows, layout padded to that size
FAMILIES = (GLOBAL_DISPATCH, LOCAL_DISPATCH)


class VllmAdapterError(AdapterError):
    """The vLLM at hand has no prefill-CP code this adapter can drive (what is missing, and what to install
    or pass, is named)."""


def installed_root() -> str:
    """The folder holding the installed ``vllm`` package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise VllmAdapterError(f"vLLM is not installed in this environment, so there is no PCP code to check: {INSTALL_HINT}")
    return os.path.dirname(list(spec.submodule_search_locations)[0])


def check_root(root: str) -> str:
    """``root`` made absolute; VllmAdapterError unless it holds a ``vllm`` package with Model Runner V2's
    PCP modules."""
    root = os.path.abspath(root)
    if not os.path.isdir(os.path.join(root, PACKAGE)):
        what = "no such folder" if not os.path.isdir(root) else "no vllm package in it"
        raise VllmAdapterError(f"--adapter-root {root}: {what}; {INSTALL_HINT}")
    missing = [m for m in (PCP_MANAGER, CUDAGRAPH_UTILS, DP_UTILS) if not os.path.isfile(os.path.join(root, *m.split(".")) + ".py")]
    missing += [f for f in (MODEL_RUNNER, COMPILATION) if not os.path.isfile(os.path.join(root, f))]
    if missing:
        raise VllmAdapterError(
            f"the vllm under {root} has no Model Runner V2 prefill context parallel (missing {', '.join(missing)}; "
            f"releases 0.26.0 to {NEWEST} have it): {INSTALL_HINT}"
        )
    return root


def release_version(root: str) -> str:
    """The release's version, for reports: ``vllm/_version.py`` (read, not run), else a ``vllm-*.dist-info``
    beside the package, else the installed distribution when ``root`` is where it is installed, else
    'unknown'."""
    path = os.path.join(root, PACKAGE, "_version.py")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                if any(isinstance(t, ast.Name) and t.id in ("__version__", "version") for t in node.targets):
                    return node.value.value
    for entry in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        metadata = os.path.join(root, entry, "METADATA")
        if entry.startswith("vllm-") and entry.endswith(".dist-info") and os.path.isfile(metadata):
            with open(metadata, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
    try:
        dist = importlib.metadata.distribution(PACKAGE)
        if os.path.abspath(str(dist.locate_file(""))) == os.path.abspath(root):
            return dist.version
    except importlib.metadata.PackageNotFoundError:
        pass
    return "unknown"


# -- definitions compiled from the release's own source ------------------------------------------------
def _tree(root: str, rel: str) -> ast.Module:
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), filename=path)


def _compile(root: str, rel: str, node: ast.stmt, namespace: dict[str, Any]) -> Any:
    """One top-level definition, compiled alone with its file name and line numbers and run in ``namespace``."""
    code = compile(ast.Module(body=[node], type_ignores=[]), os.path.join(root, rel), "exec")
    scope = dict(namespace)
    exec(code, scope)
    return scope[node.name]  # type: ignore[attr-defined]


def cuda_graph_mode(root: str) -> type[enum.Enum]:
    """The release's ``CUDAGraphMode`` enum (vllm/config/compilation.py), compiled from its own source (the
    module itself needs the whole configuration system)."""
    for node in _tree(root, COMPILATION).body:
        if isinstance(node, ast.ClassDef) and node.name == "CUDAGraphMode":
            mode = _compile(root, COMPILATION, node, {"enum": enum, "__name__": "vllm.config.compilation"})
            if isinstance(mode, type) and issubclass(mode, enum.Enum) and {"NONE", "PIECEWISE"} <= set(mode.__members__):
                return mode
    raise VllmAdapterError(f"{os.path.join(root, COMPILATION)} has no CUDAGraphMode enum with NONE and PIECEWISE")


def shard_decode_rule(root: str) -> Callable[[Any], bool] | None:
    """``ParallelConfig.pcp_shard_decode_requests`` (vllm/config/parallel.py, 0.32 on: whether PCP deals
    decodes round-robin), compiled from its own source as a function of the parallel configuration; None
    when the release has no such property."""
    path = os.path.join(root, PARALLEL)
    if not os.path.isfile(path):
        return None
    for node in _tree(root, PARALLEL).body:
        if isinstance(node, ast.ClassDef) and node.name == "ParallelConfig":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "pcp_shard_decode_requests":
                    item.decorator_list = []
                    item.returns = None
                    rule: Callable[[Any], bool] = _compile(root, PARALLEL, item, {})
                    return rule
    return None


# -- the model runner's glue, located ----------------------------------------------------------------------
@dataclass(frozen=True)
class Citation:
    """Where a restated step of the release's glue is: ``file`` (relative to the root) and ``line``, and the
    statement's source there (first line)."""

    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Glue:
    """The release's PCP glue, as the adapter restates it, with where each step is.

    ``family``: ``global_dispatch`` (the model runner dispatches by the global token count and partitions
    with no padded size, so the replay key is the largest per-rank row count) or ``local_dispatch`` (it
    dispatches by ``get_num_tokens_for_dispatch`` and partitions padded to the dispatched size).
    ``partition``: how the model runner hands the dispatched size to the partition: ``unpadded`` (not at
    all), ``padded_num_tokens`` (always, as a keyword: 0.29) or ``descriptor`` (the descriptor; the
    partition pads to its size unless it runs eagerly: 0.30 on). ``steps``: step name -> Citation."""

    family: str
    partition: str
    steps: tuple[tuple[str, Citation], ...]

    def cite(self, step: str) -> Citation:
        return dict(self.steps)[step]


def _functions(tree: ast.AST, name: str) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            yield node


def _calls(tree: ast.AST, name: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if called == name:
                yield node


def _assigns(tree: ast.AST, target: str) -> list[ast.Assign | ast.AnnAssign]:
    out: list[ast.Assign | ast.AnnAssign] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == target for t in node.targets):
            out.append(node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == target:
            out.append(node)
    return sorted(out, key=lambda n: n.lineno)


def read_glue(root: str) -> Glue:
    """Locate, in the release's model_runner.py and pcp_manager.py, each step of the glue the adapter
    restates; VllmAdapterError names a step that is not there as restated."""
    runner, manager = _tree(root, MODEL_RUNNER), _tree(root, PCP_FILE)
    lines = {MODEL_RUNNER: _source_lines(root, MODEL_RUNNER), PCP_FILE: _source_lines(root, PCP_FILE)}

    def cite(rel: str, node: ast.AST) -> Citation:
        line = getattr(node, "lineno")
        return Citation(rel, line, lines[rel][line - 1].strip())

    def missing(step: str) -> VllmAdapterError:
        return VllmAdapterError(
            f"the vLLM model runner under {root} does not match the glue the adapter restates ({step}); "
            f"releases 0.26.0 to {NEWEST} do"
        )

    execute = next((f for f in _functions(runner, "execute_model") if any(True for _ in _calls(f, "dispatch_cg_and_sync_dp"))), None)
    if execute is None:
        raise missing("execute_model calls dispatch_cg_and_sync_dp")
    dispatch = next(_calls(execute, "dispatch_cg_and_sync_dp"))
    counted = [a for a in _assigns(execute, "num_toks") if a.lineno < dispatch.lineno]
    if not counted or len(dispatch.args) < 3 or not (isinstance(dispatch.args[2], ast.Name) and dispatch.args[2].id == "num_toks"):
        raise missing("dispatch_cg_and_sync_dp(manager, num_reqs, num_toks, ...) after num_toks = ...")
    local = [a for a in counted if any(True for _ in _calls(a, "get_num_tokens_for_dispatch"))]
    family = LOCAL_DISPATCH if local else GLOBAL_DISPATCH
    steps: list[tuple[str, Citation]] = [("dispatch_count", cite(MODEL_RUNNER, local[-1] if local else counted[-1])),
                                         ("dispatch", cite(MODEL_RUNNER, dispatch))]

    partitions = [c for name in ("maybe_partition_pcp_batch", "partition_batch") for c in _calls(runner, name)]
    if not partitions:
        raise missing("the model runner partitions the batch (maybe_partition_pcp_batch or pcp_manager.partition_batch)")
    forms = set()
    for call in partitions:
        words = {k.arg for k in call.keywords}
        names = {a.id for a in call.args if isinstance(a, ast.Name)} | {
            k.value.id for k in call.keywords if isinstance(k.value, ast.Name)
        }
        forms.add("padded_num_tokens" if "padded_num_tokens" in words else "descriptor" if "batch_desc" in names else "unpadded")
    if len(forms) != 1:
        raise missing(f"one way of partitioning (found {sorted(forms)})")
    partition = forms.pop()
    steps.append(("partition", cite(MODEL_RUNNER, min(partitions, key=lambda c: c.lineno))))
    if (family == LOCAL_DISPATCH) != (partition != "unpadded"):
        raise missing(f"dispatch by {family} with a partition {partition}")
    if partition == "descriptor":
        padded = [a for a in _assigns(manager, "padded_num_tokens") if a.value is not None and "batch_desc.num_tokens" in ast.unparse(a.value)]
        if not padded:
            raise missing("the partition pads to batch_desc.num_tokens when the descriptor is a graph")
        steps.append(("descriptor_padding", cite(PCP_FILE, padded[0])))
    local_padded = _assigns(manager, "num_local_tokens_padded")
    if not local_padded:
        raise missing("partition_batch sets num_local_tokens_padded")
    steps.append(("local_padded", cite(PCP_FILE, local_padded[0])))

    keys = [k for c in _calls(execute, "BatchDescriptor") for k in c.keywords
            if k.arg == "num_tokens" and ast.unparse(k.value) == "input_batch.num_tokens_after_padding"]
    if not keys:
        raise missing("execute_model replays under BatchDescriptor(num_tokens=input_batch.num_tokens_after_padding)")
    steps.append(("replay_key", cite(MODEL_RUNNER, keys[0].value)))
    prepare = next(_functions(runner, "prepare_inputs"), None)
    after = _assigns(prepare, "num_tokens_after_padding") if prepare is not None else []
    if not after:
        raise missing("prepare_inputs sets num_tokens_after_padding")
    steps.append(("single_rank_padding", cite(MODEL_RUNNER, after[0])))
    build = next(_functions(manager, "maybe_build_pcp_manager"), None)
    none = [n for n in ast.walk(build) if isinstance(n, ast.Compare) and ast.unparse(n) == "pcp_size <= 1"] if build else []
    if not none:
        raise missing("maybe_build_pcp_manager builds no manager when pcp_size <= 1")
    steps.append(("no_manager", cite(PCP_FILE, none[0])))
    shard = [k for c in ast.walk(build) if isinstance(c, ast.Call) for k in c.keywords if k.arg == "shard_decode_requests"] if build else []
    if shard:
        steps.append(("decode_sharding", cite(PCP_FILE, shard[0].value)))
    return Glue(family, partition, tuple(steps))


def _source_lines(root: str, rel: str) -> list[str]:
    with open(os.path.join(root, rel), encoding="utf-8") as handle:
        return handle.read().splitlines()
