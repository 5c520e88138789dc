"""What the adapter gives the release's objects, and the rule that it gives only what the release itself sets.

The model runner and the CP graph runner are built without their constructors (those load a model and
capture graphs on a GPU), so the adapter gives them the state their constructors leave under one declared
configuration: a breakable CUDA-graph backend with CP BCG capture on (or, for a batch whose capacity table
records no bucket, the state of a runner that captured no CP body: CP BCG capture off and no CP-BCG input, the
only state in which sglang records no capacity), a generation model on CUDA with no
LoRA, draft model, pipeline parallelism, DP attention, mamba state or hidden-state capture. A name is given
only where the release's own code assigns it (``self.NAME = ...`` in the class's files, see ``assigned``):
a release that renamed where it sets a flag but not where it reads it gets no value for the old name, so
its read fails (cited at its line, exit 2) or takes its own default, never the adapter's. The same holds
for the server arguments (``SERVER_ARGS``), given only where the release's configuration declares them.
Every other read of these objects is refused (cpgraph/adapters/sglang/strict.py).

What the CP graph runner's constructor derives from the attention backend the server hands it (``RUNNER_INIT``)
is not given at all: the release's own ``__init__`` statements that set it run (``init_statements``), reading the
stand-in backend (cpgraph/adapters/sglang/stand_ins.py ``AttentionBackend``).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from types import CodeType, FunctionType
from typing import Any

from cpgraph.adapters.slicing import setting

MODEL_RUNNER_FILES = ("sglang/srt/model_executor/model_runner.py",)
RUNNER_FILES = (
    "sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py",
    "sglang/srt/model_executor/runner/base_cuda_graph_runner.py",
    "sglang/srt/model_executor/runner/base_runner.py",
)
CONFIG_FILES = ("sglang/srt/server_args.py", "sglang/srt/runtime_context.py", "sglang/srt/arg_groups/")
ENVIRON_FILES = ("sglang/srt/environ.py",)

# The model runner as ModelRunner.__init__ leaves it (the runners are filled in by the policy).
MODEL_RUNNER_STATE: Mapping[str, str] = {
    "device": "cuda", "is_generation": "a generation model", "is_draft_worker": "the target worker",
    "support_pp": "no pipeline-parallel proxy tensors",
    "decode_cuda_graph_runner": "a strict helper (an extend batch never asks it; a release that does is refused)",
    "forward_pass_id": "0", "msprobe_debugger": "none", "canary_manager": "none", "enable_elastic_ep": "False",
    "eplb_manager": "none", "hisparse_coordinator": "none", "lora_manager": "none", "graph_shared_output": "none (eager logits)", "device_timer": "none", "kv_index_translator": "none",
    "model": "the model (a stub)", "req_to_token_pool": "a plain request pool (a stub)", "pp_group": "a stub",
    "attn_backend": "stand_ins.AttentionBackend: its own prefill-graph check (can_run_prefill_cuda_graph) accepts "
                    "every batch; no dLLM attention, no DP vote; everything else a strict helper",
}
# The CP graph runner as PrefillCudaGraphRunner.__init__ leaves it under the configuration above.
RUNNER_STATE: Mapping[str, str] = {
    "enable_cp_bcg_capture": "True (False when no bucket has a recorded capacity)",
    "enable_cp_v2_bcg_capture": "True (False when no bucket has a recorded capacity)", "prefill_backend_name": "breakable",
    "max_context_size": "None (CP BCG ignores it)", "max_seq_len": "None", "enable_lora": "False",
    "_capture_lora": "False", "_qwen_bcg_hc_sidechannel": "False", "_qwen_bcg_mtp_draft": "False",
    "_is_full_backend": "False", "_fa4_prefill": "False", "_capture_req_slots": "1",
    "has_mha_companion_layers": "False", "_capture_chunked_prefix": "False", "capture_hidden_mode": "NULL",
    "_use_draft_input_embeds": "False", "static_draft_hidden_states": "None",
    "capture_return_pooled_hidden_states": "False", "_prefill_static_buffers": "None",
    "use_captured_attn_metadata": "False", "device": "cuda", "device_module": "a stub",
    "attention_layers": "a stub", "quant_config": "a stub", "moe_layers": "a stub", "moe_fusions": "a stub",
    "dsa_indexers": "a stub", "mha_companion_layers": "a stub",
    "capture_num_tokens": "the checked capture list", "max_num_tokens": "its largest bucket",
    "buffer_registry": "stand_ins.BufferRegistry", "backend": "stand_ins.backend_class",
    "prefill_cp_bcg_input": "the CP-BCG input with the checked capacities (None when none is recorded)",
    "model_runner": "the model runner",
}
# What PrefillCudaGraphRunner.__init__ derives from the model runner's attention backend, where the release sets it:
# never given, run from the release's own __init__ statements that set it (init_statements), on the stand-in backend.
RUNNER_INIT: Mapping[str, str] = {
    "_backend_can_run_prefill_cuda_graph": "the backend's can_run_prefill_cuda_graph (accepts every batch), which "
                                           "can_run_graph calls (0.5.21 on)",
    "dllm_attention": "the backend's dllm_attention: None, not a dLLM model (0.5.22 on)",
}
# The server arguments and parallel state of the checked batch (get_parallel(), get_server_args()).
SERVER_ARGS: tuple[str, ...] = (
    "attn_cp_size", "attn_cp_rank", "tp_size", "enable_prefill_cp", "enable_prefill_context_parallel", "cp_strategy",
    "prefill_cp_mode", "enable_dsa_prefill_context_parallel", "dsa_prefill_cp_mode", "enable_cp_tp_group_sharing",
    "enable_dsa_cache_layer_split", "enable_cp_decode_attn_tp",
)


class _Env:
    """An environment setting as ``envs.NAME`` hands it out (``.get()``)."""

    def __init__(self, value: object) -> None:
        self.value = value

    def get(self) -> object:
        return self.value


# The environment the batch runs under (``envs.NAME.get()``), given only where the release's environ declares NAME.
ENVIRONMENT: Mapping[str, object] = {"SGLANG_ENABLE_CP_V2": _Env(True)}


def _python_files(root: str, entries: Iterable[str]) -> list[str]:
    found: list[str] = []
    for entry in entries:
        path = os.path.join(root, entry)
        if entry.endswith("/") and os.path.isdir(path):
            found += sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".py"))
        elif os.path.isfile(path):
            found.append(path)
    return found


@lru_cache(maxsize=64)
def _tree(path: str, mtime: float) -> ast.Module:
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), filename=path)


def _trees(root: str, entries: Iterable[str]) -> list[ast.Module]:
    return [_tree(p, os.path.getmtime(p)) for p in _python_files(root, entries)]


def assigned(root: str, files: Iterable[str], on: str = "self") -> frozenset[str]:
    """The attribute names the release's ``files`` assign on ``on`` (plainly, augmented, annotated, or
    through ``setattr(self, 'NAME', ...)``), or declare at class level; ``on=""``: on any object."""
    names: set[str] = set()
    for tree in _trees(root, files):
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        names.add(item.target.id)
                    elif isinstance(item, ast.Assign):
                        names.update(t.id for t in item.targets if isinstance(t, ast.Name))
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                  and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                names.add(node.args[1].value)
            for target in targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and (not on or t.value.id == on):
                        names.add(t.attr)
    return frozenset(names)


def declared(root: str, files: Iterable[str] = CONFIG_FILES) -> frozenset[str]:
    """The configuration names the release declares: annotated fields and properties of its server-argument
    and runtime-context classes, and the names its parallel state is keyed by (string constants)."""
    names: set[str] = set()
    for tree in _trees(root, files):
        for node in ast.walk(tree):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                names.add(node.value)
    return frozenset(names)


def given(values: Mapping[str, object], allowed: frozenset[str]) -> dict[str, object]:
    """``values`` restricted to the names the release sets or declares (``allowed``)."""
    return {name: value for name, value in values.items() if name in allowed}


def _names(node: ast.AST, ctx: type[ast.expr_context]) -> set[str]:
    """The local names and ``self.<attr>``s (as 'self.<attr>') a statement stores or loads (``ctx``) anywhere inside it."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ctx):
            out.add(sub.id)
        elif (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ctx) and isinstance(sub.value, ast.Name)
              and sub.value.id == "self"):
            out.add(f"self.{sub.attr}")
    return out


def _bound(node: ast.AST) -> set[str]:
    """What a statement binds: its stores and the names its imports bind."""
    imported = {(alias.asname or alias.name).split(".")[0]
                for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom)) for alias in sub.names}
    return _names(node, ast.Store) | imported


def _read(node: ast.AST) -> set[str]:
    """What a statement reads: its loads."""
    return _names(node, ast.Load)


def init_statements(init: Callable[..., Any], targets: Iterable[str]) -> Callable[..., None] | None:
    """The statements of the release's ``init`` (a constructor, e.g. ``PrefillCudaGraphRunner.__init__``) that set
    ``self.<target>`` for ``targets``, with those setting what they read (names and ``self`` attributes, the
    backward slice over its top-level statements, in order), compiled from the release's file so they keep its
    file name and line numbers, as a function of ``init``'s own parameters in ``init``'s module globals.
    None when the release's ``init`` sets none of ``targets`` (a release that never reads them)."""
    code = getattr(init, "__code__", None)
    if not isinstance(code, CodeType) or not os.path.isfile(code.co_filename):
        return None
    tree = _tree(code.co_filename, os.path.getmtime(code.co_filename))
    node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == code.co_name
                 and min([n.lineno, *(d.lineno for d in n.decorator_list)]) == code.co_firstlineno), None)
    if not isinstance(node, ast.FunctionDef):
        return None
    body = node.body
    chosen = setting(body, (f"self.{target}" for target in targets), _bound, _read)
    if not chosen:
        return None
    fn = ast.FunctionDef(name=node.name, args=node.args, body=[body[i] for i in chosen], decorator_list=[],
                         returns=None, type_comment=None)
    ast.copy_location(fn, node)
    module = compile(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])), code.co_filename, "exec")
    made = next(c for c in module.co_consts if isinstance(c, CodeType))
    return FunctionType(made, getattr(init, "__globals__"), node.name)
