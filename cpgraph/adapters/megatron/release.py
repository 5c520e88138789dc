"""What the Megatron-Core adapter reads of a release: its files, the functions and statements it runs, compiled
from the release's own source so their code objects keep the release's file names and line numbers.

A slice is a run of a function's own statements (``body_slice``), or the statements of ``__init__`` that set
the graph list and the EP flags (``init_slice``, the backward slice of the attributes the decision reads). A
release whose code has none of the anchors a slice needs is refused with a ``GlueError`` at its file:line.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Any

from cpgraph.adapters.glue import GlueError, find, tree_of
from cpgraph.adapters.slicing import setting

PACKAGE = "megatron-core"
IMPORT = "megatron"
BATCH_DIMS = "megatron/core/inference/batch_dimensions_utils.py"
CONTEXT = "megatron/core/inference/contexts/dynamic_context.py"
CONTROLLER = "megatron/core/inference/text_generation_controllers/text_generation_controller.py"
UTILS = "megatron/core/utils.py"
CONFIG = "megatron/core/inference/config.py"
ENGINE = "megatron/core/inference/engines/dynamic_engine.py"
CONTEXT_CLASS = "DynamicInferenceContext"
ENGINE_CLASS = "DynamicInferenceEngine"
# what the decision reads of the context, set in its __init__ (the slice's roots)
INIT_TARGETS = ("_nccl_ep_dispatcher", "_nvls_dispatcher", "_training_ep_dispatcher", "use_cuda_graphs_for_non_decode_steps",
                "cuda_graph_batch_dimensions_list", "smallest_non_decode_cuda_graph_size")
GIVEN = ("tp_size",)  # set by hand, not by the slice (the release computes it from the process groups)


class MegatronGlueError(GlueError):
    """The adapter's reading of a Megatron-Core release does not fit it (the release's file:line named)."""


@dataclass(frozen=True)
class Slice:
    """Statements of the release compiled as ``code``: from ``file`` lines ``first``..``last``."""

    code: CodeType
    file: str
    first: int
    last: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.first}-{self.last}"


def tree(root: str, file: str) -> ast.Module:
    parsed = tree_of(root, file)
    if parsed is None:
        raise MegatronGlueError(f"megatron-core under {root} has no {file} (the adapter drives it)")
    return parsed


def function(root: str, file: str, qualname: str) -> ast.FunctionDef:
    node = find(tree(root, file), qualname)
    if not isinstance(node, ast.FunctionDef):
        raise MegatronGlueError(f"{file} defines no {qualname} (the adapter drives it)")
    return node


def _body(fn: ast.FunctionDef) -> list[ast.stmt]:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body


def _assigns(node: ast.AST) -> set[str]:
    """Names and self.<attr>s (as 'self.<attr>') assigned anywhere in ``node``."""
    out: set[str] = set()
    for sub in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(sub, ast.Assign):
            targets = list(sub.targets)
        elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
            targets = [sub.target]
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                    out.add(t.id)
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" and isinstance(t.ctx, ast.Store):
                    out.add(f"self.{t.attr}")
    return out


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _compile(statements: Sequence[ast.stmt], path: str, file: str, as_function: ast.FunctionDef | None = None) -> Slice:
    if not statements:
        raise MegatronGlueError(f"{file}: nothing to run")
    body: list[ast.stmt] = list(statements)
    if as_function is not None:
        ret = ast.Return(value=ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[]))
        ast.copy_location(ret, statements[-1])
        fn = ast.FunctionDef(name=as_function.name, args=as_function.args, body=[*body, ret], decorator_list=[],
                             returns=None, type_comment=None)
        ast.copy_location(fn, as_function)
        body = [fn]
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    return Slice(compile(module, path, "exec"), file, statements[0].lineno, statements[-1].end_lineno or statements[-1].lineno)


def init_slice(root: str) -> Slice:
    """The statements of the context's ``__init__`` that set ``INIT_TARGETS``, and those the names they read
    come from (top-level statements, in order; ``GIVEN`` names excluded)."""
    init = function(root, CONTEXT, f"{CONTEXT_CLASS}.__init__")
    body = _body(init)
    chosen = setting(body, (f"self.{t}" for t in INIT_TARGETS), _assigns, _reads, frozenset(GIVEN))
    if not any("self.cuda_graph_batch_dimensions_list" in _assigns(body[i]) for i in chosen):
        raise MegatronGlueError(f"{CONTEXT}:{init.lineno}: {CONTEXT_CLASS}.__init__ sets no cuda_graph_batch_dimensions_list")
    return _compile([body[i] for i in chosen], os.path.join(root, CONTEXT), CONTEXT)


def body_slice(root: str, file: str, qualname: str, until: Callable[[ast.stmt], bool] | None = None,
               leading: Callable[[ast.stmt], bool] | None = None) -> Slice:
    """``qualname``'s body as a function of its own parameters returning its locals: up to and including the
    first statement ``until`` accepts (a GlueError when none does), or the leading statements ``leading``
    accepts."""
    fn = function(root, file, qualname)
    body = _body(fn)
    if until is not None:
        end = next((i for i, s in enumerate(body) if until(s)), None)
        if end is None:
            raise MegatronGlueError(f"{file}:{fn.lineno}: {qualname} no longer has the statement the adapter runs up to")
        body = body[: end + 1]
    if leading is not None:
        count = next((i for i, s in enumerate(body) if not leading(s)), len(body))
        body = body[:count]
    return _compile(body, os.path.join(root, file), file, as_function=fn)


def assigns_self(attr: str) -> Callable[[ast.stmt], bool]:
    return lambda stmt: isinstance(stmt, ast.Assign) and f"self.{attr}" in _assigns(stmt)


def plain_assignment(stmt: ast.stmt) -> bool:
    """An assignment to names or self attributes (no subscript, no tensor call), or an assert."""
    if isinstance(stmt, ast.Assert):
        return True
    if not isinstance(stmt, ast.Assign):
        return False
    return all(isinstance(t, (ast.Name, ast.Attribute)) for t in stmt.targets)


def keyword_of(root: str, file: str, qualname: str, call: str, keyword: str) -> ast.expr | None:
    """The expression passed as ``keyword`` to a call of ``call`` in ``qualname`` (None: not passed)."""
    fn = function(root, file, qualname)
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) == call or getattr(node.func, "id", None) == call):
            for kw in node.keywords:
                if kw.arg == keyword:
                    return kw.value
    return None


def expression(root: str, file: str, node: ast.expr) -> CodeType:
    return compile(ast.fix_missing_locations(ast.Expression(body=node)), os.path.join(root, file), "eval")


def definitions(root: str, file: str, names: Iterable[str], namespace: dict[str, Any]) -> dict[str, Any]:
    """The module-level functions and classes ``names`` of ``file``, executed from the release's source in
    ``namespace`` (which gives what they read)."""
    parsed = tree(root, file)
    wanted = set(names)
    nodes: list[ast.stmt] = [n for n in parsed.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in wanted]
    missing = wanted - {getattr(n, "name", "") for n in nodes}
    if missing:
        raise MegatronGlueError(f"{file} defines no {', '.join(sorted(missing))} (the adapter runs it)")
    exec(compile(ast.Module(body=nodes, type_ignores=[]), os.path.join(root, file), "exec"), namespace)  # noqa: S102
    return {name: namespace[name] for name in wanted}


def line_of(root: str, file: str, qualname: str, predicate: Callable[[ast.AST], bool]) -> str:
    """``file:line`` of the first node in ``qualname`` that ``predicate`` accepts (the function's own line when
    none does)."""
    fn = function(root, file, qualname)
    for node in ast.walk(fn):
        if predicate(node) and hasattr(node, "lineno"):
            return f"{file}:{node.lineno}"
    return f"{file}:{fn.lineno}"


def calls(name: str) -> Callable[[ast.AST], bool]:
    return lambda node: isinstance(node, ast.Call) and (getattr(node.func, "attr", None) == name or getattr(node.func, "id", None) == name)


def version_of(root: str) -> str:
    """The release's version: the wheel ``fetch`` unpacked, else megatron/core/package_info.py's numbers."""
    marker = os.path.join(root, "WHEEL-FILE")
    if os.path.isfile(marker):
        with open(marker, encoding="utf-8") as handle:
            parts = handle.read().strip().split("-")
        if len(parts) > 1 and parts[0] == "megatron_core":
            return parts[1]
    info = tree_of(root, "megatron/core/package_info.py")
    numbers: dict[str, int] = {}
    for node in info.body if info is not None else ():
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    numbers[t.id] = node.value.value
    if {"MAJOR", "MINOR", "PATCH"} <= set(numbers):
        return f"{numbers['MAJOR']}.{numbers['MINOR']}.{numbers['PATCH']}"
    return "unknown"
