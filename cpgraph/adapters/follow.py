"""Follow the code: a release's function, sliced back from a sink call and compiled from the release's own
source, which an adapter runs instead of restating the release's glue.

``Program(...)`` parses the release's file, slices the entry method back from the statement that calls the
sink (slicing.py), follows every ``self.<method>(...)`` call the slice makes into that method (sliced back
from its returns), and compiles the kept statements with the release's file name and line numbers, so a
traceback, a refusal and a citation point at the release's file:line. The compiled methods form a class
whose instances carry only the attributes the adapter stands in for; the functions run in a namespace built
by executing the file's own imports (inside the adapter's sandbox: real modules are real, the rest stubs)
and the module-level functions the slice calls, compiled from their source. ``imports(sandbox, name)`` is
that namespace's loader.

Refused before the first batch (``FollowError``, a GlueError: exit 2), each with the release's file:line:
a kept statement that reads ``self.<name>`` the adapter does not stand in for, a name the file does not
define, a name that is a stub (a value computed by code the adapter does not run), a ``self.<method>`` the
class does not define. Statements outside the slice are not run; ``tally()`` counts them.

What this deliberately does not do: slice inside code it runs whole (the real modules' functions), or
trace state the release keeps on ``self`` (the stand-ins are that state, declared by the adapter).
"""

from __future__ import annotations

import ast
import builtins
import copy
import os
import sys
import types
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cpgraph.adapters.glue import GlueError
from cpgraph.adapters.shim import Sandbox, Stub, StubModule
from cpgraph.adapters.slicing import COMPOUND, Slice, backward_slice, guards, parse, statements, value_parts

EARLY = "__cpgraph_returned_before_the_sink__"


class FollowError(GlueError):
    """The release's code that reaches a sink cannot be driven (what, at the release's file:line)."""


class Returned(Exception):
    """The followed entry returned before calling its sink (``line``: the release's return statement)."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


@dataclass(frozen=True)
class Site:
    """A statement of the release: ``file`` (relative to the root), ``line`` and its first source line."""

    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Tally:
    """How much of a followed function runs: ``kept`` of its ``total`` statements (the rest sliced out)."""

    function: str
    kept: int
    total: int


class Recorder:
    """Stands in the namespace for the sink function: calls the real one and keeps its last call."""

    def __init__(self, real: Callable[..., Any]) -> None:
        self.real = real
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}
        self.result: Any = None
        self.called = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.args, self.kwargs, self.called = args, kwargs, True
        self.result = self.real(*args, **kwargs)
        return self.result


def _functions(tree: ast.AST) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in getattr(tree, "body", []) if isinstance(n, ast.FunctionDef)}


def _class(module: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _self_calls(stmt: ast.stmt) -> Iterator[tuple[str, ast.Call]]:
    """The ``self.<method>(...)`` calls a statement itself makes (not those of the statements nested in it)."""
    for call in _reads(stmt):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
                and call.func.value.id == "self":
            yield call.func.attr, call


def _reads(stmt: ast.stmt) -> Iterator[ast.AST]:
    for part in value_parts(stmt):
        yield from ast.walk(part)


class Program:
    """The release's ``cls.entry`` sliced back from its call of ``sink`` (see the module docstring)."""

    def __init__(
        self, root: str, rel: str, cls: str, entry: str, sink: str, *, provided: Collection[str],
        load_imports: Callable[[ast.Module, str], dict[str, Any]], allowed_stubs: Collection[str] = (),
        constants: Mapping[str, object] | None = None, handover: str | None = None,
        replay: Callable[[ast.FunctionDef], list[tuple[ast.Call, list[ast.expr]]]] | None = None,
    ) -> None:
        self.root, self.rel, self.cls_name, self.entry, self.sink = root, rel, cls, entry, sink
        self.path = os.path.join(root, rel)
        module, chains = parse(self.path)
        with open(self.path, encoding="utf-8") as handle:
            self.lines = handle.read().splitlines()
        self.module, self.chains = module, chains
        cls_node = _class(module, cls)
        if cls_node is None:
            raise FollowError(f"{rel}: no class {cls}")
        self.methods = _functions(cls_node)
        if entry not in self.methods:
            raise FollowError(f"{rel}:{cls_node.lineno}: {cls} has no method {entry}")
        function = self.methods[entry]
        sinks = [s for s in statements(function) if not isinstance(s, COMPOUND) and any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == sink for c in _reads(s))]
        if not sinks:
            raise FollowError(f"{rel}:{function.lineno}: {cls}.{entry} does not call {sink}")
        self.sink_stmt = sinks[0]
        self.sink_call = next(c for c in _reads(self.sink_stmt) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == sink)
        # the hand-over: the call of ``self.<handover>(...)`` after the sink, whose arguments are evaluated there
        # (the statement is replaced by a return of them: it and what follows are not run)
        self.stop_stmt: ast.stmt | None = None
        self.stop_call: ast.Call | None = None
        seeds: list[ast.AST] = [self.sink_stmt]
        if handover is not None:
            found = [(st, c) for st in statements(function) if not isinstance(st, COMPOUND) and st.lineno > self.sink_stmt.lineno
                     for c in _reads(st) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                     and isinstance(c.func.value, ast.Name) and c.func.value.id == "self" and c.func.attr == handover]
            if not found:
                raise FollowError(f"{rel}:{function.lineno}: {cls}.{entry} does not call self.{handover}() after {sink}()")
            self.stop_stmt, self.stop_call = found[0]
            enclosing = [c for c in statements(function) if isinstance(c, COMPOUND) and any(
                self.stop_stmt is inner for inner in ast.walk(c) if isinstance(inner, ast.stmt))]
            seeds += [*self.stop_call.args, *(k.value for k in self.stop_call.keywords), *enclosing[-1:]]
        last = self.stop_stmt if self.stop_stmt is not None else self.sink_stmt
        before = [s for s in statements(function) if isinstance(s, ast.Return) and s.lineno < last.lineno]
        seeds += guards(function, last.lineno)
        self.after: Slice | None = None  # the entry's slice after the hand-over, back from the replay sinks
        self.replay_sinks: list[tuple[ast.stmt, ast.Call, list[ast.expr]]] = []
        self.region: frozenset[int] = frozenset()
        self.constants = dict(constants or {})
        self.unrun_guards: list[tuple[Site, str]] = []  # guards after the hand-over the adapter cannot run, and why
        if replay is not None:
            seeds += self._after_handover(function, replay, provided)
        self.slices: dict[str, Slice] = {entry: backward_slice(chains, function, seeds, before)}
        self.constants = dict(constants or {})
        self.dead: set[int] = set()
        self._mark_dead(self.slices[entry])
        if self.after is not None:
            self._mark_dead(self.after)
        pending = [entry]
        first = True
        while pending:  # follow self.<method>() calls the slice makes (and, once, those the replay slice makes)
            name = pending.pop()
            kept = list(self.slices[name].statements)
            early = list(self.slices[name].early)
            if first and self.after is not None:
                kept += self._after_statements()
                early += list(self.after.early)
            first = False
            for stmt in kept:
                if id(stmt) in self.dead:
                    continue
                for called, call in _self_calls(stmt) if not any(stmt is r for r in early) else ():
                    if called in self.slices or called in provided:
                        continue
                    if called not in self.methods:
                        raise self.refusal(call, f"calls self.{called}(), which {cls} does not define here and the adapter does not stand in for")
                    callee = self.methods[called]
                    returns = [s for s in statements(callee) if isinstance(s, ast.Return)]
                    self.slices[called] = backward_slice(chains, callee, [*returns, *guards(callee)])
                    self._mark_dead(self.slices[called])
                    pending.append(called)
        self.load_imports = load_imports
        self.from_source: list[str] = []  # functions of stubbed modules compiled from their source
        self.namespace = load_imports(module, self.path)
        self._module_functions(allowed_stubs)
        self.provided = frozenset(provided)
        self._check(allowed_stubs)
        if self.after is not None:
            self._check_after(allowed_stubs)
        self.recorder = Recorder(self.namespace[sink])
        self.namespace[sink] = self.recorder
        self.namespace[EARLY] = Returned
        self.runner_class = self._compile()
        self.resume_function = self._compile_after() if self.after is not None else None

    # -- after the hand-over: execute_model on to the call that replays the graph -------------------------------
    def _after_handover(self, function: ast.FunctionDef, replay: Callable[[ast.FunctionDef], list[tuple[ast.Call, list[ast.expr]]]],
                        provided: Collection[str]) -> list[ast.AST]:
        """Slice the entry after the hand-over statement back from the replay sinks ``replay`` finds (each a call
        and the arguments of it that are recorded); returns the names that slice reads of what runs before the
        hand-over (seeds for the first part, so that it computes them)."""
        if self.stop_stmt is None:
            raise FollowError(f"{self.rel}:{function.lineno}: the replay sinks are followed after a hand-over call")
        stop = self.stop_stmt
        following = _following(function.body, stop, self.rel)
        if following is None:
            raise FollowError(f"{self.rel}:{stop.lineno}: the hand-over statement is not in {self.cls_name}.{self.entry}'s body")
        self.region_body: list[ast.stmt] = following
        region = {id(n) for st in self.region_body for n in ast.walk(st) if isinstance(n, ast.stmt)}
        parent: dict[int, ast.AST] = {id(c): n for n in ast.walk(function) for c in ast.iter_child_nodes(n)}

        def holding(node: ast.AST) -> ast.stmt | None:
            current: ast.AST | None = node
            while current is not None and not (isinstance(current, ast.stmt) and id(current) in region):
                current = parent.get(id(current))
            return current if isinstance(current, ast.stmt) else None

        seeds: list[ast.AST] = []
        for call, exprs in replay(function):
            stmt = holding(call)
            if stmt is None:
                continue  # a sink before the hand-over, or in a branch the hand-over's run does not take
            self.replay_sinks.append((stmt, call, exprs))
            seeds += exprs
            enclosing = holding(parent[id(stmt)]) if id(stmt) in parent else None
            if enclosing is not None:
                seeds.append(enclosing)
        if not self.replay_sinks:
            raise FollowError(f"{self.site(stop)} `{self.site(stop).text}`: {self.cls_name}.{self.entry} makes none of the replay "
                              f"calls the adapter records after this hand-over")
        last = max(stmt.lineno for stmt, _, _ in self.replay_sinks)
        checks = [g for g in guards(function, last) if id(g) in region]
        returns = [r for r in statements(function) if isinstance(r, ast.Return) and id(r) in region and r.lineno < last]
        base = backward_slice(self.chains, function, seeds, returns)
        known = base.ids()
        accepted: list[ast.stmt] = []
        for guard in checks:  # a guard is run when what it reads is what the replay's slice runs, or driven with it
            own = backward_slice(self.chains, function, [guard], returns)
            if id(guard) in self._dead_in(own):
                continue  # in a branch the constant stand-ins switch off: not run, as the branch is not
            new = [st for st in own.statements if id(st) not in known]
            outside = [st for st in new if id(st) not in region]
            why = (f"it reads what {self.site(outside[0])} `{self.site(outside[0]).text}` sets, which the adapter does not run"
                   if outside else self._undriven(new, provided))
            if why is None:
                accepted.append(guard)
            else:
                self.unrun_guards.append((self.site(guard), why))
        self.region = frozenset(region)
        self.after = backward_slice(self.chains, function, [*seeds, *accepted], returns, within=self.region)
        handed = {n.id for t in getattr(stop, "targets", [getattr(stop, "target", None)]) if t is not None
                  for n in ast.walk(t) if isinstance(n, ast.Name)}
        nodes = {id(n) for st in self.region_body for n in ast.walk(st)}
        reads: list[ast.Name] = []
        for node in [n for st in self._after_statements() for p in value_parts(st) for n in ast.walk(p)] \
                + [n for _, _, e in self.replay_sinks for x in e for n in ast.walk(x)]:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and self._is_local(function, node) \
                    and any(id(d) not in nodes for d in self.chains.of(node)):
                reads.append(node)
        self.after_inputs = tuple(dict.fromkeys(n.id for n in reads))
        return [n for n in reads if n.id not in handed]

    def _undriven(self, stmts: list[ast.stmt], provided: Collection[str]) -> str | None:
        """Why the adapter cannot run ``stmts`` (a read of ``self`` it does not stand in for), or None."""
        for stmt in stmts:
            if isinstance(stmt, ast.If) and self._decide(stmt.test) is not None:
                continue  # a branch the constant stand-ins decide (the one not taken is not run)
            for node in _reads(stmt):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                        and isinstance(node.ctx, ast.Load) and node.attr not in provided:
                    return f"{self.site(stmt)} `{self.site(stmt).text}` reads self.{node.attr}, which the adapter does not stand in for"
        return None

    def _after_statements(self) -> list[ast.stmt]:
        """The kept statements that run after the hand-over (the replay sinks' slice, inside the region)."""
        if self.after is None:
            return []
        return [st for st in self.after.statements if id(st) in self.region]

    def _check_after(self, allowed_stubs: Collection[str]) -> None:
        early = {id(r) for r in self.after.early} if self.after is not None else set()
        parts: list[ast.AST] = [x for _, _, e in self.replay_sinks for x in e]
        for stmt in self._after_statements():
            if id(stmt) in early or id(stmt) in self.dead or any(stmt is s for s, _, _ in self.replay_sinks):
                continue
            parts += value_parts(stmt)
        for part in parts:
            for node in ast.walk(part):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                        and isinstance(node.ctx, ast.Load):
                    if node.attr not in self.provided and node.attr not in self.slices:
                        raise self.refusal(node, f"reads self.{node.attr}, which the adapter does not stand in for")
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and not self._is_local(self.methods[self.entry], node):
                    self._check_global(node, allowed_stubs)

    def _prune_after(self, body: list[ast.stmt], keep: frozenset[int], early: frozenset[int]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            sink = next((i for i, (s, _, _) in enumerate(self.replay_sinks) if s is stmt), None)
            if sink is not None:  # the replay call: not run, its recorded arguments handed back
                values = ast.Tuple(elts=[copy.deepcopy(x) for x in self.replay_sinks[sink][2]], ctx=ast.Load())
                out.append(ast.copy_location(ast.Return(value=ast.Tuple(elts=[ast.Constant(sink), values], ctx=ast.Load())), stmt))
                continue
            if id(stmt) not in keep or id(stmt) in self.dead:
                continue
            out.append(_kept(stmt, early, lambda body: self._prune_after(body, keep, early)))
        return out

    def _compile_after(self) -> Callable[..., Any]:
        """``(self, state, handed)``: the entry from its hand-over statement (the call replaced by ``handed``, the
        names it reads of what ran before taken from ``state``) to the first replay sink it reaches, whose
        recorded arguments it returns as ``(index, values)``; None when it reaches none."""
        assert self.after is not None and self.stop_stmt is not None and self.stop_call is not None
        state, handed = "__cpgraph_state__", "__cpgraph_handed__"
        prologue: list[ast.stmt] = []
        for name in self.after_inputs:
            load = ast.Assign(targets=[ast.Name(name, ast.Store())],
                              value=ast.Subscript(ast.Name(state, ast.Load()), ast.Constant(name), ast.Load()))
            prologue.append(ast.If(test=ast.Compare(ast.Constant(name), [ast.In()], [ast.Name(state, ast.Load())]), body=[load], orelse=[]))
        start = copy.deepcopy(self.stop_stmt)
        call_at = (self.stop_call.lineno, self.stop_call.col_offset)

        class _Swap(ast.NodeTransformer):
            def visit_Call(self, node: ast.Call) -> ast.AST:
                if (node.lineno, node.col_offset) == call_at:
                    return ast.copy_location(ast.Name(handed, ast.Load()), node)
                return self.generic_visit(node)

        start = _Swap().visit(start)
        for p in prologue:
            ast.copy_location(p, self.stop_stmt)
            for n in ast.walk(p):
                ast.copy_location(n, self.stop_stmt)
        keep = self.after.ids()
        body = [*prologue, start, *self._prune_after(self.region_body, keep, frozenset(id(r) for r in self.after.early))]
        body.append(ast.copy_location(ast.Return(value=ast.Constant(None)), self.stop_stmt))
        args = ast.arguments(posonlyargs=[], args=[ast.arg("self"), ast.arg(state), ast.arg(handed)], kwonlyargs=[], kw_defaults=[], defaults=[])
        node = ast.FunctionDef(name=self.entry, args=args, body=body, decorator_list=[], returns=None)
        ast.copy_location(node, self.methods[self.entry])
        tree = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
        exec(compile(tree, self.path, "exec"), self.namespace)
        function: Callable[..., Any] = self.namespace.pop(self.entry)
        return function

    def resume(self, runner: Any, state: Mapping[str, Any], handed: Any) -> tuple[int, tuple[Any, ...]]:
        """Run the entry on from its hand-over (``handed``: what the hand-over call returns, ``state``: the entry's
        locals there, as ``run`` handed them back) to the replay call it makes: which sink, and its recorded
        arguments. Returned when the release returns before."""
        if self.resume_function is None:
            raise FollowError(f"{self.rel}: no replay sinks were asked for")
        found = self.resume_function(runner, state, handed)
        if found is None:
            raise FollowError(f"{self.rel}: {self.cls_name}.{self.entry} made none of the replay calls after "
                              f"{self.site(self.stop_stmt) if self.stop_stmt is not None else 'the hand-over'} on this batch")
        return int(found[0]), tuple(found[1])

    def replay_deciding(self, index: int, position: int) -> tuple[Site, ...]:
        """The kept statements after the hand-over that define what replay sink ``index`` records at ``position``."""
        expr = self.replay_sinks[index][2][position]
        out = [self.site(d) for n in ast.walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
               for d in self.chains.of(n) if isinstance(d, ast.AST) and getattr(d, "lineno", None) is not None
               and any(getattr(d, "lineno", 0) == st.lineno or (st.lineno <= getattr(d, "lineno", 0) <= (st.end_lineno or st.lineno))
                       for st in self._after_statements())]
        return tuple(sorted(set(out), key=lambda s: s.line)) or (self.site(expr),)

    # -- branches the stand-ins switch off -------------------------------------------------------------------
    def _decide(self, test: ast.expr) -> bool | None:
        """The value of an ``if`` test that reads only constant stand-ins (``self.lora_config``, ``self.X is
        None``, ``not``, ``and`` / ``or``), or None when it reads anything else."""
        if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self" and test.attr in self.constants:
            return bool(self.constants[test.attr])
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._decide(test.operand)
            return None if inner is None else not inner
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
            left = test.left
            if isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name) and left.value.id == "self" and left.attr in self.constants:
                return (self.constants[left.attr] is None) == isinstance(test.ops[0], ast.Is)
            return None
        if isinstance(test, ast.BoolOp):
            values = [self._decide(v) for v in test.values]
            if isinstance(test.op, ast.And):
                return False if False in values else (True if all(v is True for v in values) else None)
            return True if True in values else (False if all(v is False for v in values) else None)
        return None

    def _mark_dead(self, sliced: Slice) -> None:
        """Statements in a branch the constant stand-ins never take: neither checked nor run."""
        self.dead.update(self._dead_in(sliced))

    def _dead_in(self, sliced: Slice) -> set[int]:
        out: set[int] = set()
        for stmt in sliced.statements:
            if isinstance(stmt, ast.If) and id(stmt) not in out:
                value = self._decide(stmt.test)
                branch = stmt.body if value is False else stmt.orelse if value is True else []
                for inner in branch:
                    out.update(id(n) for n in ast.walk(inner) if isinstance(n, ast.stmt))
        return out

    # -- refusals ------------------------------------------------------------------------------------------
    def site(self, node: ast.AST) -> Site:
        line = getattr(node, "lineno", 1)
        return Site(self.rel, line, self.lines[line - 1].strip() if 0 < line <= len(self.lines) else "")

    def refusal(self, node: ast.AST, why: str) -> FollowError:
        at = self.site(node)
        return FollowError(f"{at} `{at.text}` {why}; the value reaches {self.sink}() in {self.cls_name}.{self.entry}")

    def _is_local(self, function: ast.FunctionDef, name: ast.Name) -> bool:
        inside = {id(n) for n in ast.walk(function)}
        return any(id(d) in inside for d in self.chains.of(name))

    def _check(self, allowed_stubs: Collection[str]) -> None:
        """Refuse what the slice reads that nothing drives: self attributes not stood in for, names the file
        does not define, stubs."""
        for name, sliced in self.slices.items():
            early = {id(r) for r in sliced.early}
            for stmt in sliced.statements:
                if id(stmt) in early or id(stmt) in self.dead:
                    continue
                for node in _reads(stmt):
                    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                            and isinstance(node.ctx, ast.Load):
                        if node.attr not in self.provided and node.attr not in self.slices:
                            raise self.refusal(node, f"reads self.{node.attr}, which the adapter does not stand in for")
                    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and not self._is_local(sliced.function, node):
                        self._check_global(node, allowed_stubs)

    def _check_global(self, node: ast.Name, allowed_stubs: Collection[str]) -> None:
        if node.id in self.namespace:
            value = self.namespace[node.id]
            if node.id not in allowed_stubs and isinstance(value, (Stub, StubModule)):
                raise self.refusal(node, f"uses {node.id} ({value!r}), code the adapter does not run (a stub)")
        elif not hasattr(builtins, node.id):
            raise self.refusal(node, f"reads {node.id}, which {self.rel} does not define where the adapter runs it")

    def _module_functions(self, allowed_stubs: Collection[str]) -> None:
        """The file's module-level functions and classes the slice reads, compiled whole from their source,
        and the ones they read; a function the file imports from a module the sandbox stubs, compiled whole
        from that module's source the same way (its own imports loaded in the sandbox)."""
        kept = [st for s in self.slices.values() for st in s.statements] + list(self._after_statements())
        reads = [n.id for st in kept if id(st) not in self.dead for n in _reads(st)
                 if isinstance(n, ast.Name)]
        _compile_defs(self.module, self.path, [n for n in reads if n not in self.namespace], self.namespace)
        origins = {alias.asname or alias.name: (node.module, alias.name) for node in self.module.body
                   if isinstance(node, ast.ImportFrom) and node.module and not node.level for alias in node.names}
        for name in dict.fromkeys(reads):
            if isinstance(self.namespace.get(name), Stub) and name in origins and name not in allowed_stubs:
                module_name, real_name = origins[name]
                path = os.path.join(self.root, *module_name.split(".")) + ".py"
                if not os.path.isfile(path):
                    continue
                other, _ = parse(path)
                if not any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == real_name for n in other.body):
                    continue
                namespace = self.load_imports(other, path)
                _compile_defs(other, path, [real_name], namespace)
                self.namespace[name] = namespace[real_name]
                self.from_source.append(f"{module_name}.{real_name}")

    # -- compiling ----------------------------------------------------------------------------------------
    def _prune(self, body: list[ast.stmt], sliced: Slice, keep: frozenset[int], early: frozenset[int]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            if stmt is self.stop_stmt and self.stop_call is not None:  # hand back the locals and the call's arguments
                call = self.stop_call
                handed = ast.Tuple(elts=[
                    ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[]),
                    ast.Tuple(elts=[copy.deepcopy(a) for a in call.args], ctx=ast.Load()),
                    ast.Dict(keys=[ast.Constant(k.arg) for k in call.keywords], values=[copy.deepcopy(k.value) for k in call.keywords]),
                ], ctx=ast.Load())
                out.append(ast.copy_location(ast.Return(value=handed), stmt))
                break
            if id(stmt) not in keep or id(stmt) in self.dead:
                continue
            if self.stop_stmt is not None and sliced.function is self.methods[self.entry] and stmt.lineno > self.stop_stmt.lineno:
                continue
            if id(stmt) in early:
                raised = ast.Raise(exc=ast.Call(func=ast.Name(EARLY, ast.Load()), args=[ast.Constant(stmt.lineno)], keywords=[]), cause=None)
                out.append(ast.copy_location(raised, stmt))
                continue
            if isinstance(stmt, COMPOUND):
                shallow = copy.copy(stmt)
                shallow.body = self._prune(stmt.body, sliced, keep, early) or [ast.copy_location(ast.Pass(), stmt)]
                if hasattr(stmt, "orelse"):
                    shallow.orelse = self._prune(stmt.orelse, sliced, keep, early)  # type: ignore[union-attr]
                if isinstance(stmt, ast.Try):
                    handlers = []
                    for handler in stmt.handlers:
                        h = copy.copy(handler)
                        h.body = self._prune(handler.body, sliced, keep, early) or [ast.copy_location(ast.Pass(), handler)]
                        handlers.append(h)
                    shallow.handlers = handlers  # type: ignore[union-attr]
                    shallow.finalbody = self._prune(stmt.finalbody, sliced, keep, early)  # type: ignore[union-attr]
                out.append(shallow)
            else:
                out.append(stmt)
        return out

    def _compile(self) -> type:
        functions: list[ast.stmt] = []
        for name, sliced in self.slices.items():
            node = copy.copy(sliced.function)
            keep, early = sliced.ids(), frozenset(id(r) for r in sliced.early)
            if name == self.entry and self.stop_stmt is not None:
                keep |= {id(self.stop_stmt)}
            body = self._prune(sliced.function.body, sliced, keep, early)
            if name == self.entry:  # stop after the sink (or at the hand-over): hand back the entry's locals
                cut = self.stop_stmt.lineno if self.stop_stmt is not None else self.sink_stmt.end_lineno or self.sink_stmt.lineno
                body = [s for s in body if s.lineno <= cut]
                body.append(ast.copy_location(ast.Return(value=ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[])), self.sink_stmt))
            node.body = body or [ast.copy_location(ast.Pass(), sliced.function)]
            node.decorator_list = []
            node.returns = None
            args = copy.copy(node.args)
            args.args = [ast.arg(a.arg, None) for a in node.args.args]
            args.kwonlyargs = [ast.arg(a.arg, None) for a in node.args.kwonlyargs]
            args.posonlyargs = [ast.arg(a.arg, None) for a in node.args.posonlyargs]
            node.args = ast.fix_missing_locations(args)
            functions.append(node)
        tree = ast.fix_missing_locations(ast.Module(body=functions, type_ignores=[]))
        code = compile(tree, self.path, "exec")
        scope = self.namespace
        exec(code, scope)
        methods = {name: scope.pop(name) for name in self.slices}
        return type(f"Sliced{self.cls_name}", (_Runner,), methods)

    # -- running and reading --------------------------------------------------------------------------------
    def runner(self, attributes: Mapping[str, Any]) -> Any:
        """An instance of the compiled class carrying ``attributes`` (the stand-ins), and nothing else."""
        unknown = set(attributes) - self.provided
        if unknown:
            raise ValueError(f"attributes {sorted(unknown)} are not among those declared provided ({sorted(self.provided)})")
        instance = self.runner_class()
        instance.__dict__.update(attributes)
        return instance

    def run(self, runner: Any, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], Recorder, tuple[tuple[Any, ...], dict[str, Any]] | None]:
        """Run the sliced entry on ``runner``: its locals, the sink's recorded call, and the arguments of the
        hand-over call (None: none asked for, or not reached). Returned when the release returns before."""
        self.recorder.called = False
        found = getattr(runner, self.entry)(*args, **kwargs)
        if not self.recorder.called:
            raise FollowError(f"{self.rel}: {self.cls_name}.{self.entry} did not call {self.sink}() on this batch")
        if isinstance(found, tuple):
            return found[0], self.recorder, (found[1], found[2])
        return found, self.recorder, None

    def argument(self, parameter: str, position: int) -> ast.expr | None:
        """The sink call's argument for ``parameter`` (positional ``position`` or by keyword)."""
        for keyword in self.sink_call.keywords:
            if keyword.arg == parameter:
                return keyword.value
        return self.sink_call.args[position] if position < len(self.sink_call.args) else None

    def deciding(self, expr: ast.AST) -> tuple[Site, ...]:
        """The kept statements defining the names ``expr`` reads, where they reach it (its reaching definitions)."""
        entry = self.slices[self.entry]
        out: list[Site] = []
        for name in ast.walk(expr):
            if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load):
                for definition in self.chains.of(name):
                    line = getattr(definition, "lineno", None)
                    if line is not None and any(s.lineno <= line <= (s.end_lineno or s.lineno) for s in entry.statements):
                        out.append(self.site(definition))
        return tuple(sorted(set(out), key=lambda s: s.line))

    def tally(self) -> tuple[Tally, ...]:
        return tuple(Tally(f"{self.cls_name}.{name}", len(s.statements), s.total) for name, s in self.slices.items())


def _bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    out = [list(getattr(stmt, "body", [])), list(getattr(stmt, "orelse", []))]
    out += [list(h.body) for h in getattr(stmt, "handlers", [])] + [list(getattr(stmt, "finalbody", []))]
    return out


def _following(body: list[ast.stmt], target: ast.stmt, rel: str) -> list[ast.stmt] | None:
    """The statements that run after ``target`` in ``body`` (the rest of its own block, then of each block
    enclosing it); None when ``target`` is not in ``body``. A loop around it is refused (its next turn would
    run it again)."""
    for i, stmt in enumerate(body):
        if stmt is target:
            return list(body[i + 1:])
        if isinstance(stmt, COMPOUND):
            for inner in _bodies(stmt):
                found = _following(inner, target, rel)
                if found is not None:
                    if isinstance(stmt, (ast.For, ast.While)):
                        raise FollowError(f"{rel}:{stmt.lineno}: the hand-over call is inside a loop; the adapter runs it once")
                    return found + list(body[i + 1:])
    return None


def _compile_defs(module: ast.Module, path: str, names: list[str], namespace: dict[str, Any]) -> None:
    """Compile ``module``'s top-level functions and classes named in ``names`` into ``namespace`` from their
    source (a function's decorators dropped, a class keeps its own), and the top-level ones they read."""
    defined: dict[str, ast.FunctionDef | ast.ClassDef] = {
        n.name: n for n in module.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    wanted = [n for n in names if n in defined]
    done: set[str] = set()
    while wanted:
        name = wanted.pop()
        if name in done:
            continue
        done.add(name)
        node = copy.copy(defined[name])
        if isinstance(node, ast.FunctionDef):
            node.decorator_list = []
        module_name = str(namespace.get("__name__", ""))
        added = isinstance(node, ast.ClassDef) and module_name not in sys.modules
        if added:  # a dataclass looks its module up while it is made (string annotations)
            sys.modules[module_name] = types.ModuleType(module_name)
        try:
            exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), namespace)
        finally:
            if added:
                del sys.modules[module_name]
        wanted += [n.id for n in ast.walk(defined[name]) if isinstance(n, ast.Name) and n.id in defined and n.id not in done]


class Evaluation:
    """A function of the release run up to one statement, for the values of expressions in it (``targets``):
    its backward slice from those expressions, compiled with the file's line numbers, in which the statement
    holding the last target is replaced by a return of every target's value (that statement and what
    follows it are not run). ``self`` is a real object of the release (``provided`` None) or the adapter's
    stand-in (the names in ``provided``, checked as Program checks them); a slice that reads a stub is
    refused at its file:line, as Program refuses it."""

    def __init__(
        self, root: str, rel: str, qualname: str, targets: Callable[[ast.FunctionDef], list[ast.expr]], *,
        namespace: Mapping[str, Any], provided: Collection[str] | None = None, allowed_stubs: Collection[str] = (),
    ) -> None:
        self.root, self.rel, self.qualname = root, rel, qualname
        self.path = os.path.join(root, rel)
        module, chains = parse(self.path)
        with open(self.path, encoding="utf-8") as handle:
            self.lines = handle.read().splitlines()
        self.chains = chains
        owner, _, name = qualname.rpartition(".")
        scope: ast.AST | None = _class(module, owner) if owner else module
        function = _functions(scope).get(name) if scope is not None else None
        if function is None:
            raise FollowError(f"{rel}: no {qualname}")
        self.function = function
        self.targets = targets(function)
        if not self.targets:
            raise FollowError(f"{rel}:{function.lineno}: {qualname} has none of the statements the adapter runs it up to")
        holding = [s for s in statements(function) if not isinstance(s, COMPOUND)
                   and any(t is n for t in self.targets for part in value_parts(s) for n in ast.walk(part))]
        if not holding:
            raise FollowError(f"{rel}:{function.lineno}: {qualname}: the statement to stop at is not a simple statement")
        self.stop = max(holding, key=lambda s: s.lineno)
        before = [s for s in statements(function) if isinstance(s, ast.Return) and s.lineno < self.stop.lineno]
        enclosing = [c for c in statements(function) if isinstance(c, COMPOUND) and any(
            self.stop is inner for inner in ast.walk(c) if isinstance(inner, ast.stmt))]
        self.slice = backward_slice(chains, function, [*self.targets, *enclosing[-1:], *guards(function, self.stop.lineno)], before)
        self.namespace = dict(namespace)
        self.namespace[EARLY] = Returned
        self.provided = None if provided is None else frozenset(provided)
        self._check(allowed_stubs)
        self.function_object = self._compile()

    def site(self, node: ast.AST) -> Site:
        line = getattr(node, "lineno", 1)
        return Site(self.rel, line, self.lines[line - 1].strip() if 0 < line <= len(self.lines) else "")

    def _check(self, allowed_stubs: Collection[str]) -> None:
        inside = {id(n) for n in ast.walk(self.function)}
        early = {id(r) for r in self.slice.early}
        for stmt in self.slice.statements:
            if id(stmt) in early or stmt is self.stop:
                continue
            for node in _reads(stmt):
                if self.provided is not None and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and node.value.id == "self" and isinstance(node.ctx, ast.Load) and node.attr not in self.provided:
                    raise self._refusal(node, f"reads self.{node.attr}, which the adapter does not stand in for")
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                        and not any(id(d) in inside for d in self.chains.of(node)):
                    value = self.namespace.get(node.id, getattr(builtins, node.id, _MISSING))
                    if value is _MISSING:
                        raise self._refusal(node, f"reads {node.id}, which {self.rel} does not define where the adapter runs it")
                    if node.id not in allowed_stubs and isinstance(value, (Stub, StubModule)):
                        raise self._refusal(node, f"uses {node.id} ({value!r}), code the adapter does not run (a stub)")

    def _refusal(self, node: ast.AST, why: str) -> FollowError:
        at = self.site(node)
        return FollowError(f"{at} `{at.text}` {why}; the value reaches what the adapter reads of {self.qualname}")

    def _prune(self, body: list[ast.stmt], keep: frozenset[int], early: frozenset[int]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            if stmt is self.stop:
                values = ast.Tuple(elts=[copy.deepcopy(t) for t in self.targets], ctx=ast.Load())
                out.append(ast.copy_location(ast.Return(value=values), stmt))
                break  # nothing after it runs
            if id(stmt) not in keep or stmt.lineno > self.stop.lineno:
                continue
            out.append(_kept(stmt, early, lambda body: self._prune(body, keep, early)))
        return out

    def _compile(self) -> Callable[..., Any]:
        node = copy.copy(self.function)
        keep = self.slice.ids() | {id(self.stop)}
        node.body = self._prune(self.function.body, keep, frozenset(id(r) for r in self.slice.early))
        node.decorator_list = []
        node.returns = None
        args = copy.copy(node.args)
        args.args = [ast.arg(a.arg, None) for a in node.args.args]
        args.kwonlyargs = [ast.arg(a.arg, None) for a in node.args.kwonlyargs]
        args.posonlyargs = [ast.arg(a.arg, None) for a in node.args.posonlyargs]
        node.args = ast.fix_missing_locations(args)
        tree = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
        scope = self.namespace
        exec(compile(tree, self.path, "exec"), scope)
        function: Callable[..., Any] = scope.pop(node.name)
        return function

    def parameters(self) -> tuple[str, ...]:
        """The function's parameters, in order (``self`` first for a method)."""
        a = self.function.args
        return tuple(p.arg for p in a.posonlyargs + a.args + a.kwonlyargs)

    def run(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """The targets' values where the function reaches its stop (Returned when it returns before)."""
        found = self.function_object(*args, **kwargs)
        if not isinstance(found, tuple):
            raise FollowError(f"{self.rel}: {self.qualname} did not reach {self.site(self.stop)} on this batch")
        return found

    def tally(self) -> Tally:
        return Tally(self.qualname, len(self.slice.statements), self.slice.total)


_MISSING = object()


class _Runner:
    """The base of a compiled slice's class: instances carry the stand-ins as plain attributes."""


def imports(sandbox: Sandbox, module_name: str) -> Any:
    """A loader for ``Program``: the namespace of ``module_name``'s file after running its top-level imports
    (and nothing else of it) inside ``sandbox``; an import that fails leaves its names undefined (a slice
    that reads one is refused)."""

    def load(module: ast.Module, path: str) -> dict[str, Any]:
        namespace: dict[str, Any] = {"__name__": module_name, "__file__": path}
        with sandbox:
            for node in module.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
                    try:
                        exec(code, namespace)
                    except ImportError:
                        continue
        return namespace

    return load


# -- what ran: the lines of the tree a call ran, for citations ------------------------------------------------
def code_objects(functions: Iterator[Any] | list[Any]) -> frozenset[types.CodeType]:
    """The code objects of ``functions`` (functions or classes' methods) and those nested in them
    (comprehensions, lambdas): the compiled slices' code, told apart from the code run whole."""
    out: set[types.CodeType] = set()
    pending = [getattr(f, "__code__", None) for f in functions]
    while pending:
        code = pending.pop()
        if not isinstance(code, types.CodeType) or code in out:
            continue
        out.add(code)
        pending += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return frozenset(out)


@dataclass(frozen=True)
class Ran:
    """A line of the tree that ran: ``file`` (relative to the root), ``line``, and whether its code is one of
    the compiled slices (``sliced``) or code run whole (a real module's function)."""

    file: str
    line: int
    sliced: bool


def run_traced(root: str, sliced: frozenset[types.CodeType], call: Callable[[], Any]) -> tuple[list[Ran], BaseException | None]:
    """``call()`` run with a line tracer on every code object whose file is under ``root``: the lines it ran,
    in the order first run, and the exception it ended with (None: it returned). The tracer in place before
    (a coverage tool's) is put back."""
    prefix = os.path.abspath(root) + os.sep
    seen: dict[tuple[str, int], Ran] = {}
    relative: dict[str, str] = {}

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            code = frame.f_code
            key = (code.co_filename, frame.f_lineno)
            if key not in seen:
                rel = relative.get(code.co_filename)
                if rel is None:
                    rel = relative[code.co_filename] = os.path.relpath(code.co_filename, root)
                seen[key] = Ran(rel, frame.f_lineno, code in sliced)
            elif not seen[key].sliced and code in sliced:
                seen[key] = Ran(seen[key].file, frame.f_lineno, True)
        return local

    def calls(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "call" and os.path.abspath(frame.f_code.co_filename).startswith(prefix):
            return local
        return None

    before = sys.gettrace()
    sys.settrace(calls)
    failed: BaseException | None = None
    try:
        call()
    except Exception as exc:  # a refusal or the release's own exception: the lines that ran up to it are the answer
        failed = exc
    finally:
        sys.settrace(before)
    return list(seen.values()), failed


def statements_at(path: str) -> dict[int, ast.stmt]:
    """Each line of ``path`` -> the innermost statement it belongs to (a compound statement owns only its
    header's lines, up to its first inner statement); lines outside any statement are absent."""
    module, _ = parse(path)
    out: dict[int, ast.stmt] = {}
    for stmt in ast.walk(module):  # outer statements first, so an inner one overrides its lines
        if not isinstance(stmt, ast.stmt):
            continue
        end = stmt.end_lineno or stmt.lineno
        inner = [s for s in ast.iter_child_nodes(stmt) if isinstance(s, ast.stmt)]
        if inner:
            end = min(end, min(s.lineno for s in inner) - 1)
        for line in range(stmt.lineno, max(end, stmt.lineno) + 1):
            out[line] = stmt
    return out


def _kept(stmt: ast.stmt, early: Collection[int], prune: Callable[[list[ast.stmt]], list[ast.stmt]]) -> ast.stmt:
    """``stmt`` as a pruned body keeps it: a raise of ``EARLY`` (its line) where the slice stops early, a shallow
    copy of a compound statement whose bodies are ``prune``d (an emptied body becomes ``pass``), else itself."""
    if id(stmt) in early:
        raised = ast.Raise(exc=ast.Call(func=ast.Name(EARLY, ast.Load()), args=[ast.Constant(stmt.lineno)], keywords=[]), cause=None)
        return ast.copy_location(raised, stmt)
    if not isinstance(stmt, COMPOUND):
        return stmt
    shallow = copy.copy(stmt)
    shallow.body = prune(stmt.body) or [ast.copy_location(ast.Pass(), stmt)]
    if hasattr(stmt, "orelse"):
        shallow.orelse = prune(stmt.orelse)  # type: ignore[union-attr]
    if isinstance(stmt, ast.Try):
        handlers = []
        for handler in stmt.handlers:
            h = copy.copy(handler)
            h.body = prune(handler.body) or [ast.copy_location(ast.Pass(), handler)]
            handlers.append(h)
        shallow.handlers = handlers  # type: ignore[union-attr]
        shallow.finalbody = prune(stmt.finalbody)  # type: ignore[union-attr]
    return shallow
