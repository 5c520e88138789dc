"""The backward slice of one function: the statements that can change the values reaching its sinks.

Def-use chains come from beniget (flow-sensitive reaching definitions over Python's ``ast``); the slice adds
the control dependences (the ``if`` / ``for`` / ``while`` / ``with`` / ``try`` statements enclosing a kept
statement, whose headers are then sliced too) and the statements that mutate a kept local in place (a
subscript or attribute assignment on it, a method called on it, an ``out=`` argument). Attribute state of
``self`` is not traced here: what a method reads of ``self`` is the caller's business (follow.py checks
it against the stand-ins). A ``return`` that can end the function before a sink is kept as control only
(``early``): it decides whether the sink is reached, its value does not reach it. A ``raise`` or ``assert``
before a sink (``guards``) is a seed of its own: the callers add them, so a guard that stops the run is run.

A constructor's state is sliced more coarsely (``setting``): the top-level statements of a body that set chosen
``self`` attributes, closed over the names and attributes they read, in order. The adapters run such a slice of
a release's ``__init__`` (Megatron-Core's context, sglang's prefill graph runner) instead of restating it.

What this deliberately does not do: follow calls (follow.py follows ``self.<method>`` calls and runs the
rest), or slice inside a callee's arguments more finely than the whole call.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Sequence
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


def setting(body: Sequence[ast.stmt], wanted: Iterable[str], binds: Callable[[ast.stmt], set[str]],
            reads: Callable[[ast.stmt], set[str]], given: frozenset[str] = frozenset()) -> list[int]:
    """The indices (in order) of the statements of ``body`` that bind a name in ``wanted`` (``binds``: the names and
    'self.<attr>'s a statement binds), grown to a fixpoint by what each chosen statement ``reads``. A statement
    binding a ``given`` name is never chosen (the caller provides it), and ``given`` names are not followed."""
    want = set(wanted)
    chosen: set[int] = set()
    grew = True
    while grew:
        grew = False
        for i, stmt in enumerate(body):
            if i not in chosen and binds(stmt) & want and not binds(stmt) & given:
                chosen.add(i)
                want |= reads(stmt) - given
                grew = True
    return sorted(chosen)


def guards(function: ast.FunctionDef, before: int | None = None) -> list[ast.stmt]:
    """The ``raise`` and ``assert`` statements of ``function`` that start before line ``before`` (all of them when
    None): a guard that raises stops the run before the sink, so whether it raises is part of what reaches the
    sink (its test, and what its message reads, are sliced like any value; nested functions are not entered)."""
    return [s for s in statements(function) if isinstance(s, (ast.Raise, ast.Assert)) and (before is None or s.lineno < before)]


def backward_slice(
    chains: Chains, function: ast.FunctionDef, seeds: Iterable[ast.AST], controls: Iterable[ast.stmt] = (),
    within: frozenset[int] | None = None,
) -> Slice:
    """The statements of ``function`` that can change what ``seeds`` evaluate (statements, or expressions
    inside the function: then only what the expression reads), with the statements enclosing them;
    ``controls`` (returns before a sink) are kept with their enclosing statements, their values not
    followed. ``within`` (statement ids): the slice stops at its edge (a name defined outside it is an input)."""
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
                if id(node) in kept or (within is not None and id(node) not in within):
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
        fields = _fields_read(kept.values(), parent)
        mutations = [s for s in inside.values() if id(s) not in kept and (within is None or id(s) in within)
                     and _mutates_kept(s, chains, kept, statement_of, fields)]
        if not mutations:
            break
        work.extend((s, True) for s in mutations)
    ordered = tuple(s for s in statements(function) if id(s) in kept)
    early_ordered = tuple(r for r in ordered if id(r) in early and isinstance(r, ast.Return))
    return Slice(function, ordered, early_ordered, len(inside))


def _fields_read(kept: Iterable[ast.stmt], parent: dict[int, ast.AST]) -> dict[str, set[str]]:
    """For each name the kept statements read: the attributes read of it (``x.a`` -> ``a``), ``*`` where the
    object itself is read (handed to a call, indexed, compared)."""
    out: dict[str, set[str]] = {}
    for stmt in kept:
        for part in value_parts(stmt):
            for node in ast.walk(part):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    above = parent.get(id(node))
                    field = above.attr if isinstance(above, ast.Attribute) and above.value is node else "*"
                    out.setdefault(node.id, set()).add(field)
    return out


def _first_field(node: ast.AST, name: ast.Name) -> str | None:
    """The attribute of ``name`` a chain ending in ``node`` goes through (``x.a[i].b`` -> ``a``); None: ``x`` itself."""
    current: ast.AST = node
    while True:
        inner = current.func if isinstance(current, ast.Call) else getattr(current, "value", None)
        if inner is name:
            return current.attr if isinstance(current, ast.Attribute) else None
        if inner is None or not isinstance(current, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
            return None
        current = inner


def _mutates_kept(stmt: ast.stmt, chains: Chains, kept: dict[int, ast.stmt], statement_of: object,
                  fields: dict[str, set[str]] | None = None) -> bool:
    """Does ``stmt`` change, in place, a local defined by a kept statement (a field of it the kept statements
    read, or the object itself)?"""
    find = statement_of

    def kept_local(node: ast.AST | None) -> bool:
        name = root_name(node) if node is not None else None
        if name is None or name.id == "self":
            return False
        if not any((s := find(d)) is not None and id(s) in kept for d in chains.of(name)):  # type: ignore[operator]
            return False
        read = (fields or {}).get(name.id)
        field = _first_field(node, name) if node is not None else None
        return read is None or field is None or "*" in read or field in read

    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return any(isinstance(t, (ast.Subscript, ast.Attribute)) and kept_local(t) for t in targets)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if isinstance(call.func, ast.Attribute) and kept_local(call.func.value):
            return True
        return any(k.arg == "out" and kept_local(k.value) for k in call.keywords)
    return False
