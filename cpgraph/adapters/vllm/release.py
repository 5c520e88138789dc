"""A vLLM release as the vLLM adapter finds and reads it: where the installed package lives, its version,
the modules run for real, the two definitions compiled from their own source (``CUDAGraphMode`` and
``ParallelConfig.pcp_shard_decode_requests``), and the model runner's partition and replay glue located in
its ``model_runner.py`` (where the partition steps are, cited by file and line, and the family read from
their shape; the dispatch, the partition and the replay key are run from the release's own statements:
execute.py, partition.py).

Nothing of vLLM is copied here: the real modules are loaded from the release's files, and the glue is
found by reading the release's syntax tree, so a release whose glue differs from what the adapter restates
is an error naming the step, never a silent mismatch.
"""

from __future__ import annotations

import ast
import bisect
import enum
import importlib.metadata
import importlib.util
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cpgraph.adapters import AdapterError
from cpgraph.adapters.glue import Assumption, GlueError, defines, find, members, reads, signature, tree_of
from cpgraph.adapters import releases

PACKAGE = "vllm"
GPU = "vllm.v1.worker.gpu"
PCP_MANAGER = f"{GPU}.pcp_manager"
CUDAGRAPH_UTILS = f"{GPU}.cudagraph_utils"
DP_UTILS = f"{GPU}.dp_utils"
REAL_MODULES = (PCP_MANAGER, CUDAGRAPH_UTILS, DP_UTILS, "vllm.utils.math_utils")  # math_utils: cdiv, round_up (stdlib only)
OUTSIDE = ("numpy",)  # third-party packages the real modules get for real
MODEL_RUNNER = "vllm/v1/worker/gpu/model_runner.py"
PCP_FILE = "vllm/v1/worker/gpu/pcp_manager.py"
COMPILATION = "vllm/config/compilation.py"
PARALLEL = "vllm/config/parallel.py"
CUDAGRAPH_FILE = "vllm/v1/worker/gpu/cudagraph_utils.py"
DP_FILE = "vllm/v1/worker/gpu/dp_utils.py"
ADAPTER = "cpgraph.adapters.vllm"
# Release families, read from the code (see read_glue and capture_api). ``releases``: the releases each was
# read against, which is where the adapter's support range comes from (nothing to bump by hand).
GLOBAL_DISPATCH = "global_dispatch"  # 0.26-0.28: dispatch by the global count, replay keyed by max per-rank rows
LOCAL_DISPATCH = "local_dispatch"  # 0.29-0.33: dispatch by the largest rank-local rows, layout padded to that size
SPLIT_CAPTURE = "split_capture"  # 0.34 on: as local_dispatch; capture sizes split into prefill tokens and decode requests
TOKEN_SIZES = "token_sizes"  # CudaGraphManager(vllm_config, device, mode, decode_query_len) over cudagraph_capture_sizes
SPLIT_SIZES = "split_sizes"  # CudaGraphManager(..., decode_query_lens) over prefill_/decode_ capture sizes


@dataclass(frozen=True)
class Family:
    """A family of releases the adapter drives the same way: how the model runner dispatches (``dispatch``:
    'global' or 'local'), how CudaGraphManager takes its capture sizes (``capture``), and the releases the
    adapter was read against."""

    name: str
    dispatch: str
    capture: str
    releases: tuple[str, ...]
    summary: str


FAMILY_TABLE = (
    Family(GLOBAL_DISPATCH, "global", TOKEN_SIZES, ("0.26.0", "0.27.0", "0.28.0"),
           "dispatched by the global count n, replayed under the largest per-rank rows"),
    Family(LOCAL_DISPATCH, "local", TOKEN_SIZES, ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
           "dispatched and replayed by the largest rank-local rows"),
    Family(SPLIT_CAPTURE, "local", SPLIT_SIZES, ("0.34.0",),
           "as local_dispatch; prefill token sizes and decode request sizes captured apart, uniform decode graphs "
           "indexed by request count and tried first by dispatch"),
)
FAMILIES = tuple(f.name for f in FAMILY_TABLE)


READ_AGAINST = tuple(sorted((v for f in FAMILY_TABLE for v in f.releases), key=releases.version_key))
FIRST, NEWEST = READ_AGAINST[0], READ_AGAINST[-1]


def read_against() -> str:
    """The releases the adapter was read against, by family, for messages."""
    spans = ", ".join(f"{f.name} {f.releases[0]}" + (f"-{f.releases[-1]}" if len(f.releases) > 1 else "") for f in FAMILY_TABLE)
    return f"vLLM {FIRST}-{NEWEST} ({spans})"


INSTALL_HINT = (
    f"pip download --no-deps vllm=={NEWEST} -d DIR, unzip the wheel into DIR (only its .py files are needed), "
    "then pass --adapter-root DIR (or --release VERSION: cpgraph downloads it; in Python: "
    "cpgraph.adapters.vllm.policy_from(DIR))"
)


class VllmAdapterError(AdapterError):
    """The vLLM at hand has no prefill-CP code this adapter can drive (what is missing, and what to install
    or pass, is named)."""


class VllmGlueError(GlueError, VllmAdapterError):
    """This vLLM release changed what the adapter's glue assumes (see cpgraph.adapters.glue)."""


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
            f"releases {FIRST} to {NEWEST} have it): {INSTALL_HINT}"
        )
    return root


def release_version(root: str) -> str:
    """The release's version, for reports (see cpgraph.adapters.releases.release_version)."""
    return releases.release_version(root, PACKAGE, ("_version.py",))


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
    """The release's partition and replay glue, as the adapter restates it, with where each step is (the
    dispatch before it is run from the release's source: execute.py).

    ``family``: ``global_dispatch`` (the model runner partitions with no padded size, so the replay key is
    the largest per-rank row count; 0.26-0.28 also dispatch by the global count) or ``local_dispatch`` (it
    partitions padded to the dispatched size).
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
    """Locate, in the release's model_runner.py and pcp_manager.py, each step of the partition and replay
    glue the adapter restates; VllmAdapterError names a step that is not there as restated."""
    runner, manager = _tree(root, MODEL_RUNNER), _tree(root, PCP_FILE)
    lines = {MODEL_RUNNER: _source_lines(root, MODEL_RUNNER), PCP_FILE: _source_lines(root, PCP_FILE)}

    def cite(rel: str, node: ast.AST) -> Citation:
        line = getattr(node, "lineno")
        return Citation(rel, line, lines[rel][line - 1].strip())

    def missing(step: str) -> VllmGlueError:
        return VllmGlueError(
            f"{ADAPTER} cannot drive vLLM {release_version(root)} under {root}: its model runner "
            f"({MODEL_RUNNER}) does not match the glue the adapter restates ({step}). The adapter was read against "
            f"{read_against()}; this is a limit of cpgraph's adapter, not a finding about the release"
        )

    # The dispatch itself (the counts execute_model hands dispatch_cg_and_sync_dp) is not read here: it is run
    # from the release's own statements (cpgraph/adapters/vllm/execute.py). What is read is how the model runner
    # hands the dispatched size to the partition, which sets the family.
    steps: list[tuple[str, Citation]] = []
    execute = next(_functions(runner, "execute_model"), None)
    if execute is None:
        raise missing("the model runner has execute_model")
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
    if partition == "descriptor":  # does the partition read the descriptor's num_tokens (whatever it names it)?
        padded = []
        for function in (f for name in ("maybe_partition_pcp_batch", "partition_batch") for f in _functions(manager, name)):
            params = {a.arg for a in function.args.args} - {"self", "manager", "input_batch"}
            padded += [n for n in ast.walk(function) if isinstance(n, ast.Attribute) and n.attr == "num_tokens"
                       and isinstance(n.value, ast.Name) and n.value.id in params]
        if padded:
            steps.append(("descriptor_padding", cite(PCP_FILE, padded[0])))
        else:  # the partition takes the descriptor but never pads to it: laid out unpadded (the pre-fix partition)
            partition = "unpadded"
    family = GLOBAL_DISPATCH if partition == "unpadded" else LOCAL_DISPATCH
    local_padded = _assigns(manager, "num_local_tokens_padded")
    if not local_padded:
        raise missing("partition_batch sets num_local_tokens_padded")
    steps.append(("local_padded", cite(PCP_FILE, local_padded[0])))

    # the replay key is not read here: execute_model is run on to the call that replays (execute.py)
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


# -- the graphs API, the family, and what the adapter assumes of each ------------------------------------
def capture_api(root: str) -> str:
    """How the release's CudaGraphManager takes its capture sizes: ``split_sizes`` when its constructor takes
    ``decode_query_lens`` (0.34 on), else ``token_sizes`` (the glue check then says whether that holds)."""
    tree = tree_of(root, CUDAGRAPH_FILE)
    init = find(tree, "CudaGraphManager.__init__") if tree is not None else None
    if isinstance(init, ast.FunctionDef) and any(a.arg == "decode_query_lens" for a in init.args.args + init.args.kwonlyargs):
        return SPLIT_SIZES
    return TOKEN_SIZES


def family_of(glue: Glue, capture: str, root: str) -> Family:
    """The family of a release whose model runner dispatches as ``glue`` says and whose CudaGraphManager
    takes capture sizes as ``capture``; VllmGlueError when no family the adapter knows is both."""
    dispatch = "local" if glue.family == LOCAL_DISPATCH else "global"
    found = next((f for f in FAMILY_TABLE if f.dispatch == dispatch and f.capture == capture), None)
    if found is None:
        raise VllmGlueError(
            f"{ADAPTER} cannot drive vLLM {release_version(root)} under {root}: its model runner dispatches by the "
            f"{dispatch} count (its partition at {glue.cite('partition')}) but CudaGraphManager takes {capture}, a pairing no "
            f"release the adapter was read against has ({read_against()})"
        )
    return found


def assumptions(family: Family, root: str) -> tuple[Assumption, ...]:
    """What the adapter assumes of a release of ``family``: the signatures it calls, the attributes it sets
    on the CudaGraphManager it marks as captured, the configuration fields it fills and the names it reads
    back (checked before the first batch by cpgraph.adapters.glue.check_release)."""
    split = family.capture == SPLIT_SIZES
    filled = (("prefill_cudagraph_capture_token_sizes", "decode_cudagraph_capture_request_sizes", "uniform_decode_query_len")
              if split else ("cudagraph_capture_sizes",)) + ("max_num_seqs",)
    out = [
        signature(PCP_FILE, "PCPManager.__init__", keywords=("pcp_world_size", "pcp_rank", "device", "dcp_world_size")
                  + (("shard_decode_requests",) if tree_has(root, PCP_FILE, "PCPManager.__init__", "shard_decode_requests") else ())),
        signature(PCP_FILE, "PCPManager._build_batch_layout",
                  positional=("num_scheduled_tokens", "num_computed_tokens", "is_prefilling", "query_start_loc_np"),
                  keywords=("padded_num_tokens",) if family.dispatch == "local" else ()),
        signature(CUDAGRAPH_FILE, "CudaGraphManager.__init__",
                  positional=("vllm_config", "device", "cudagraph_mode", "decode_query_lens" if split else "decode_query_len")),
        signature(CUDAGRAPH_FILE, "CudaGraphManager.dispatch",
                  positional=("num_reqs", "num_tokens", "uniform_token_count", "num_active_loras")),
        defines(CUDAGRAPH_FILE, "CudaGraphManager._init_candidates", why="builds the candidates from the capture sizes"),
        reads(CUDAGRAPH_FILE, ("_graphs_captured", "graphs", "_capture_descs"), "CudaGraphManager",
              why="the adapter marks every candidate as captured through it"),
        reads(CUDAGRAPH_FILE, filled, why="the adapter fills this configuration field"),
        members(CUDAGRAPH_FILE, "BatchExecutionDescriptor", ("cg_mode", "num_tokens"), why="the adapter reads the dispatched descriptor"),
        members(COMPILATION, "CUDAGraphMode", ("NONE", "PIECEWISE"), why="the adapter dispatches PIECEWISE and reads NONE as eager"),
        signature(DP_FILE, "dispatch_cg_and_sync_dp",
                  positional=("cudagraph_manager", "num_reqs", "num_tokens", "uniform_token_count", "dp_size", "dp_rank"),
                  keywords=("need_eager", "num_active_loras")),
    ]
    if family.dispatch == "local":
        out.append(signature(PCP_FILE, "PCPManager.get_num_tokens_for_dispatch", positional=("num_scheduled_tokens", "is_prefilling")))
    if split:
        out.append(defines(COMPILATION, "decode_cudagraph_capture_shapes", why="CudaGraphManager imports it; compiled from its source"))
        out.append(defines(COMPILATION, "decode_cudagraph_capture_max_tokens", why="CudaGraphManager imports it; compiled from its source"))
    return tuple(out)


def tree_has(root: str, file: str, qualname: str, parameter: str) -> bool:
    """Does ``qualname`` in ``file`` take ``parameter`` (a feature the release may or may not have)?"""
    tree = tree_of(root, file)
    node = find(tree, qualname) if tree is not None else None
    if not isinstance(node, ast.FunctionDef):
        return False
    return any(a.arg == parameter for a in node.args.args + node.args.kwonlyargs)


def compilation_functions(root: str) -> dict[str, Callable[..., Any]]:
    """The module-level functions of vllm/config/compilation.py that CudaGraphManager imports (0.34 on:
    ``decode_cudagraph_capture_shapes``, ``decode_cudagraph_capture_max_tokens``), compiled from their own
    source with their file name and line numbers; empty for a release without them."""
    out: dict[str, Callable[..., Any]] = {}
    wanted = ("decode_cudagraph_capture_shapes", "decode_cudagraph_capture_max_tokens")
    for node in _tree(root, COMPILATION).body:
        if isinstance(node, ast.FunctionDef) and node.name in wanted:
            node.returns = None
            for arg in node.args.args + node.args.kwonlyargs:
                arg.annotation = None
            out[node.name] = _compile(root, COMPILATION, node, {"bisect": bisect, "__name__": "vllm.config.compilation"})
    return out


def mark_captured(manager: Any) -> Any:
    """A release's CudaGraphManager marked as if every candidate had been captured (``graphs`` holds each
    descriptor, ``_graphs_captured`` set: the names the glue check holds the release to); returns it."""
    for descs in manager._capture_descs.values():
        for desc in descs:
            manager.graphs[desc] = "captured"
    manager._graphs_captured = True
    return manager
