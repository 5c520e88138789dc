"""The backward slice of one function: the statements that can change the values reaching its sinks.

Def-use chains come from beniget (flow-sensitive reaching definitions over Python's ``ast``); the slice adds
the control dependences (the ``if`` / ``for`` / ``while`` / ``with`` / ``try`` statements enclosing a kept
statement, whose headers are then sliced too) and the statements that mutate a kept local in place (a
subscript or attribute assignment on it, a method called on it, an ``out=`` argument). Attribute state of
``self`` is not traced here: what a method reads of ``self`` is the caller's business (follow.py checks
it against the stand-ins). A ``return`` that can end the function before a sink is kept as control only
(``early``): it decides whether the sink is reached, its value does not reach it.

What this deliberately does not do: follow calls (follow.py follows ``self.<method>`` calls and runs the
rest), or slice inside a callee's arguments more finely than the whole call.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import beniget  # type: ignore[import-untyped]

COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)


class _Chains(beniget.DefUseChains):  # type: ignore[misc]
    """beniget's chains without its warnings on stderr (an unbound name is reported by follow.py)."""

    def warn(self, msg: str, node: ast.AST) -> None:
        return None


@dataclass(frozen=True, eq=False)
class Chains:
    """A module's use-def chains: use (a Name node) -> the nodes that define it (Name stores, args, defs)."""

    module: ast.Module
    defs: dict[ast.AST, tuple[ast.AST, ...]]

    def of(self, use: ast.AST) -> tuple[ast.AST, ...]:
        return self.defs.get(use, ())


def chains_of(module: ast.Module) -> Chains:
    """The use-def chains of every name in ``module`` (beniget)."""
    du = _Chains()
    du.visit(module)
    ud = beniget.UseDefChains(du)
    return Chains(module, {use: tuple(d.node for d in found) for use, found in ud.chains.items()})


@lru_cache(maxsize=64)
def _cached(source: str, filename: str) -> tuple[ast.Module, Chains]:
    module = ast.parse(source, filename=filename)
    return module, chains_of(module)


def parse(path: str) -> tuple[ast.Module, Chains]:
    """``path`` parsed, with its chains (cached by content: a planted copy is parsed afresh)."""
    with open(path, encoding="utf-8") as handle:
        return _cached(handle.read(), path)


@dataclass(frozen=True, eq=False)
class Slice:
    """The statements of ``function`` kept (``statements``, in source order), the returns kept as control
    only (``early``), and how many statements the function has in all (``total``)."""

    function: ast.FunctionDef
    statements: tuple[ast.stmt, ...]
    early: tuple[ast.Return, ...]
    total: int

    def kept(self, node: ast.stmt) -> bool:
        return any(node is s for s in self.statements)

    def ids(self) -> frozenset[int]:
        return frozenset(id(s) for s in self.statements)


def value_parts(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions a statement evaluates (what its kept value depends on)."""
    out: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        out += [stmt.value, *(p for t in stmt.targets for p in _target_loads(t))]
    elif isinstance(stmt, ast.AugAssign):
        out += [stmt.value, stmt.target]
    elif isinstance(stmt, ast.AnnAssign):
        out += [*([stmt.value] if stmt.value is not None else []), *_target_loads(stmt.target)]
    elif isinstance(stmt, (ast.Expr, ast.Return)):
        out += [stmt.value] if stmt.value is not None else []
    elif isinstance(stmt, (ast.If, ast.While)):
        out.append(stmt.test)
    elif isinstance(stmt, ast.For):
        out += [stmt.iter, *_target_loads(stmt.target)]
    elif isinstance(stmt, ast.With):
        out += [item.context_expr for item in stmt.items]
    elif isinstance(stmt, ast.Assert):
        out += [stmt.test, *([stmt.msg] if stmt.msg is not None else [])]
    elif isinstance(stmt, ast.Raise):
        out += [p for p in (stmt.exc, stmt.cause) if p is not None]
    elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        out.append(stmt)
    return out


def _target_loads(target: ast.expr) -> Iterator[ast.expr]:
    """The parts of an assignment target that are read (a subscript's object and index, an attribute's object)."""
    if isinstance(target, ast.Subscript):
        yield target.value
        yield target.slice
    elif isinstance(target, ast.Attribute):
        yield target.value
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_loads(element)
    elif isinstance(target, ast.Starred):
        yield from _target_loads(target.value)


def root_name(node: ast.AST) -> ast.Name | None:
    """The name an attribute / subscript / call chain starts from (``a`` in ``a.b[c].d``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node if isinstance(node, ast.Name) else None


def statements(function: ast.FunctionDef) -> Iterator[ast.stmt]:
    """Every statement inside ``function`` (nested bodies included, nested functions as one statement)."""
    stack: list[ast.stmt] = list(reversed(function.body))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, COMPOUND):
            inner: list[ast.stmt] = list(getattr(stmt, "body", [])) + list(getattr(stmt, "orelse", []))
            inner += [s for h in getattr(stmt, "handlers", []) for s in h.body] + list(getattr(stmt, "finalbody", []))
            stack.extend(reversed(inner))


def backward_slice(
    chains: Chains, function: ast.FunctionDef, seeds: Iterable[ast.AST], controls: Iterable[ast.stmt] = ()
) -> Slice:
    """The statements of ``function`` that can change what ``seeds`` evaluate (statements, or expressions
    inside the function: then only what the expression reads), with the statements enclosing them;
    ``controls`` (returns before a sink) are kept with their enclosing statements, their values not
    followed."""
    parent: dict[int, ast.AST] = {}
    for node in ast.walk(function):
        for child in ast.iter_child_nodes(node):
            parent[id(child)] = node
    inside = {id(s): s for s in statements(function)}

    def statement_of(node: ast.AST) -> ast.stmt | None:
        current: ast.AST | None = node
        while current is not None and id(current) not in inside:
            current = parent.get(id(current))
        return current if isinstance(current, ast.stmt) else None

    kept: dict[int, ast.stmt] = {}
    early: dict[int, ast.Return] = {}
    work: list[tuple[ast.AST, bool]] = [(s, True) for s in seeds]
    work += [(s, False) for s in controls]
    while True:
        while work:
            node, valued = work.pop()
            if isinstance(node, ast.stmt) and id(node) in inside:
                if id(node) in kept:
                    continue
                kept[id(node)] = node
                if valued:
                    work.extend((part, True) for part in value_parts(node))
                elif isinstance(node, ast.Return):
                    early[id(node)] = node
                enclosing = statement_of(parent[id(node)]) if id(node) in parent else None
                if enclosing is not None:
                    work.append((enclosing, True))
                continue
            for name in ast.walk(node):
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load):
                    for definition in chains.of(name):
                        stmt = statement_of(definition)
                        if stmt is not None:
                            work.append((stmt, True))
        mutations = [s for s in inside.values() if id(s) not in kept and _mutates_kept(s, chains, kept, statement_of)]
        if not mutations:
            break
        work.extend((s, True) for s in mutations)
    ordered = tuple(s for s in statements(function) if id(s) in kept)
    early_ordered = tuple(r for r in ordered if id(r) in early and isinstance(r, ast.Return))
    return Slice(function, ordered, early_ordered, len(inside))


def _mutates_kept(stmt: ast.stmt, chains: Chains, kept: dict[int, ast.stmt], statement_of: object) -> bool:
    """Does ``stmt`` change, in place, a local defined by a kept statement?"""
    find = statement_of

    def kept_local(node: ast.AST | None) -> bool:
        name = root_name(node) if node is not None else None
        if name is None or name.id == "self":
            return False
        return any((s := find(d)) is not None and id(s) in kept for d in chains.of(name))  # type: ignore[operator]

    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return any(isinstance(t, (ast.Subscript, ast.Attribute)) and kept_local(t) for t in targets)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if isinstance(call.func, ast.Attribute) and kept_local(call.func.value):
            return True
        return any(k.arg == "out" and kept_local(k.value) for k in call.keywords)
    return False
