"""Mutation testing: how many planted bugs the proofs and the tests kill (issue 8, item 4).

    python benchmarks/mutation.py --target spec|proofs|reference|impl [--limit N] [--jobs J] [--rev REV]

Why an own AST mutator and not mutmut or cosmic-ray: the mutants that matter here are semantic edits of Z3
term builders (a flipped comparison inside ``z3.And``, a dropped conjunct of a claim, an off-by-one in a
residue), and the kill command is not a test run but ``cpgraph prove`` at a small scope. mutmut rewrites the
package in place and drives pytest; cosmic-ray needs a session database and its own worker configuration;
neither has a "drop one argument of z3.And / all_of" operator, and both would mutate the shared working tree
or need one. This file is one dependency-free module: a fixed, named operator list applied as exact text
edits at AST positions (the rest of the file stays byte-identical, so a reported line is the real line),
each mutant run on a private copy of the repository (``/tmp/mut-*``, ``PYTHONPATH`` pointing there, no
bytecode written), a named kill command per target, and a report that lists every survivor.

Operators (``OPERATORS``): comparison flips (< <=, > >=, == !=), arithmetic (+ -, * //, // *, % //),
integer constants +1 and -1, ``and``/``or`` swap, ``not`` removal (``not x`` and ``z3.Not(x)`` become x),
dropping one argument of ``z3.And``/``z3.Or``/``all_of``/``any_of``, swapping the branches of ``z3.If``,
and replacing a return value with a constant of its declared type (bool, int, z3 Bool term). Not mutated:
docstrings, annotations, f-strings, ``raise`` statements (error messages), lines marked ``# pragma: no
mutate``.

Two scope operators (issue 21: a theorem must fail when the scope it claims shrinks), applied only where a
scope is declared:
- ``narrow-range``: (a) a declared range, i.e. a tuple, list or set of two or more distinct constants (or
  calls of constants, ``Fraction(3, 2)``) assigned to an UPPER_CASE name (cp sizes, factors, the strategies or
  layouts in scope, the shared inputs), loses its first or its last element (one mutant each; a one-element
  tuple keeps its comma); (b) a ``range(...)`` that a claim or a loop quantifies over (the iterable of a
  ``for``, or of a comprehension passed to z3.And/Or/all_of/any_of; ``reversed(range(...))`` too) with a stop
  that is not a bare constant gets ``stop - 1`` (a constant stop, e.g. ``OTHER_STRATEGIES_MAX_P = 8``, is
  already moved by the constant operator).
- ``bounding-hypothesis``: a hypotheses literal (a tuple or list assigned to a name containing "hypothes" or
  "facts", a Query's third argument, or a ``hypotheses=`` / ``facts=`` keyword) gains one conjunct per variable
  that its comparisons bound from below only (``n >= 0``, ``self.n >= self.batch.tokens``; not ``rank`` with
  ``rank < p``, not a variable fixed by ``==``): ``p <= 4`` for a cp size (p, P, cp, cp_size) and
  ``x <= 4096`` for anything else, so "every P" or "all lengths" becomes a bounded claim.

Kill commands (``TARGETS``):
- spec, proofs: every theorem of the registry at cp_size 1..8, then the teeth pass (``_prove`` below: the
  obligations and variants ``cpgraph prove --cp-max 8 --jobs 1`` runs, through the same ``run_task``, and the
  teeth pass's coverage (non-vacuity, domain bounds) and the spec's domain guards, which it checks first; it
  stops at the first failure, so a killed mutant costs less than a full run). Killed = a theorem refuted or
  unknown, a variant, bound or guard that got the wrong verdict, or any error. The proofs target mutates the modules the registry imports (the theorem
  statements).
- reference, impl: a targeted pytest selection (``-x``; killed = a test fails or errors).
A mutant that runs past its timeout (``--timeout-factor`` times the unmutated run, at least 60 s) is
"timed out": reported apart, and not counted as killed. The score is killed / (mutants - timed out).

Results go to ``benchmarks/results/<date>-mutation-<target>.json``; every run also rewrites
``<date>-mutation.md`` and ``<date>-mutation.json``, which combine all targets measured that day. With
``--label L`` a run writes ``<date>-mutation-L-<target>.json`` and ``.md`` instead, and leaves the day's
combined report alone (a pilot, or one round of a fresh-sample series).

The fresh measurement of issue 21 (item 6), run at a committed revision after the branches merge, one target
at a time (or both at once on two cores), each mutant killed by ``cpgraph prove`` alone:

    python benchmarks/mutation.py --target spec --stages prove --limit 80 --sample-seed 91 --jobs 1 \
        --rev HEAD --label fresh-e
    python benchmarks/mutation.py --target proofs --stages prove --limit 100 --sample-seed 92 --jobs 1 \
        --rev HEAD --label fresh-e

The scope operators alone (``--operators`` keeps only their mutants, before any sample):

    python benchmarks/mutation.py --target proofs --stages prove --operators narrow-range bounding-hypothesis \
        --jobs 1 --rev HEAD --label fresh-e-scope
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import dataclasses
import datetime
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PYTHON = sys.executable
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "build", "*.egg-info", "__pycache__", ".hypothesis", ".mypy_cache", ".pytest_cache"
)

# -- mutants ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """One text edit of one file: ``source[start:end]`` becomes ``replacement``."""

    path: str  # relative to the repository root
    line: int
    operator: str
    description: str  # what changed, e.g. "<= -> <" or "drop argument 2 of z3.And"
    start: int
    end: int
    replacement: str
    text: str = ""  # the original line, stripped (what an equivalence argument is matched on)

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}: {self.operator}: {self.description}"

    def apply(self, source: str) -> str:
        return source[: self.start] + self.replacement + source[self.end :]


COMPARISON_FLIPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
ARITHMETIC_SWAPS = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "*"),
                    ast.Mod: ("%", "//")}
CONJUNCTIONS = {"And", "Or", "all_of", "any_of"}
OPERATORS = ("comparison", "arithmetic", "constant", "boolean", "not", "drop-argument", "if-swap", "return",
             "narrow-range", "bounding-hypothesis")
# The scope operators (issue 21): a hypotheses literal is a tuple or list that is assigned to a name that says so,
# passed as a Query's third argument, or passed as ``hypotheses=`` / ``facts=``.
_HYPOTHESES_NAME = re.compile(r"hypothes|facts", re.IGNORECASE)
_CP_SIZE_NAMES = {"p", "P", "cp", "cp_size"}
CP_SIZE_BOUND = 4  # ``p <= 4``: every theorem vacuous above P = 4
LENGTH_BOUND = 4096  # ``n <= 4096``: "all lengths" becomes a bounded claim
_UPPER_CASE = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
_COMPARISON_TOKEN = re.compile(r"<=|>=|==|!=|<|>")


class _Offsets:
    """(line, utf-8 column) positions of the ast to string offsets."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, col: int) -> int:
        text = self.lines[line - 1].encode("utf-8")[:col].decode("utf-8")
        return self.starts[line - 1] + len(text)

    def span(self, node: ast.AST) -> tuple[int, int]:
        end_line, end_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        return self.at(node.lineno, node.col_offset), self.at(end_line, end_col)  # type: ignore[attr-defined]


def _callee(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _skipped_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes never mutated: docstrings, annotations, f-strings, raise statements, decorators."""
    skipped: set[int] = set()

    def skip(node: ast.AST | None) -> None:
        if node is not None:
            skipped.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Raise, ast.JoinedStr)):
            skip(node)
        elif isinstance(node, ast.AnnAssign):
            skip(node.annotation)
        elif isinstance(node, ast.arg):
            skip(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skip(node.returns)
            for decorator in node.decorator_list:
                skip(decorator)
        elif isinstance(node, ast.Assert) and node.msg is not None:
            skip(node.msg)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip(body[0])
    return skipped


def _return_constants(function: ast.FunctionDef | ast.AsyncFunctionDef, z3_imported: bool) -> tuple[str, ...]:
    annotation = ast.unparse(function.returns).strip("'\"") if function.returns is not None else ""
    if annotation == "bool":
        return ("True", "False")
    if annotation == "int":
        return ("0",)
    if annotation in ("BoolTerm", "z3.BoolRef") and z3_imported:
        return ("z3.BoolVal(True)",)
    return ()


def _is_declared_value(node: ast.expr) -> bool:
    """A constant, or a call of constants (``Fraction(5, 4)``): an element of a declared range."""
    if isinstance(node, ast.Constant):
        return True
    return (isinstance(node, ast.Call) and not node.keywords
            and all(isinstance(a, ast.Constant) for a in node.args))


def _declared_ranges(tree: ast.AST) -> Iterator[ast.Tuple | ast.List | ast.Set]:
    """Literals of two or more constants assigned to an UPPER_CASE name: a declared range (cp sizes, factors,
    strategies in scope, shared inputs)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if (isinstance(target, ast.Name) and _UPPER_CASE.match(target.id)
                and isinstance(value, (ast.Tuple, ast.List, ast.Set)) and len(value.elts) >= 2
                and all(_is_declared_value(e) for e in value.elts)
                and len({ast.dump(e) for e in value.elts}) == len(value.elts)):  # a set of values, not a record
            yield value


def _scope_ranges(tree: ast.AST) -> Iterator[ast.Call]:
    """``range(...)`` calls that a claim or a loop quantifies over (the iterable of a ``for`` statement, or of a
    comprehension passed to z3.And/Or/all_of/any_of), with a stop that is not a bare constant (the constant
    operator already moves those)."""
    def unwrap(node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Call) and _callee(node) == "reversed" and len(node.args) == 1:
            return node.args[0]
        return node

    iterables: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.For):
            iterables.append(unwrap(node.iter))
        elif isinstance(node, ast.Call) and _callee(node) in CONJUNCTIONS:
            for arg in node.args:
                if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
                    iterables.extend(unwrap(g.iter) for g in arg.generators)
    for it in iterables:
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords and not isinstance(it.args[min(len(it.args), 2) - 1], ast.Constant)):
            yield it


def _hypotheses_literals(tree: ast.AST) -> Iterator[ast.Tuple | ast.List]:
    """Tuples and lists of hypotheses: assigned to a name that says so (``hypotheses``, ``facts``), a Query's
    third argument, or a ``hypotheses=`` / ``facts=`` keyword."""
    for node in ast.walk(tree):
        found: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if (node.value is not None and len(targets) == 1 and isinstance(targets[0], ast.Name)
                    and _HYPOTHESES_NAME.search(targets[0].id)):
                found.append(node.value)
        elif isinstance(node, ast.Call):
            if _callee(node) == "Query" and len(node.args) >= 3:
                found.append(node.args[2])
            found.extend(k.value for k in node.keywords if k.arg is not None and _HYPOTHESES_NAME.search(k.arg))
        for value in found:
            if isinstance(value, (ast.Tuple, ast.List)):
                yield value


def _bounded_below_only(literal: ast.Tuple | ast.List) -> list[str]:
    """Names (or attributes, ``self.n``) the literal's comparisons bound from below and never from above (nor fix with ==): the integer
    variables whose declared range is open above, in order of first mention."""
    below: list[str] = []
    above: set[str] = set()
    for element in literal.elts:
        if not isinstance(element, ast.Compare):
            continue
        operands = [element.left, *element.comparators]
        for op, left, right in zip(element.ops, operands, operands[1:]):
            for name_node, lower in ((left, isinstance(op, (ast.GtE, ast.Gt))), (right, isinstance(op, (ast.LtE, ast.Lt)))):
                if not isinstance(name_node, (ast.Name, ast.Attribute)):
                    continue
                name = ast.unparse(name_node)  # n, or self.n
                if lower:
                    if name not in below:
                        below.append(name)
                else:
                    above.add(name)  # an upper bound, or an equation (==, !=: never open above)
    return [name for name in below if name not in above]


def _range_without(source: str, offsets: _Offsets, literal: ast.Tuple | ast.List | ast.Set, drop: int) -> str:
    """The literal's text with element ``drop`` left out (a one-element tuple keeps its comma)."""
    start, end = offsets.span(literal)
    text = source[start:end]
    opened = text[:1] if text[:1] in "([{" else ""
    closed = {"(": ")", "[": "]", "{": "}"}.get(opened, "")
    kept = [source[slice(*offsets.span(e))] for i, e in enumerate(literal.elts) if i != drop]
    comma = "," if isinstance(literal, ast.Tuple) and len(kept) == 1 else ""
    return f"{opened}{', '.join(kept)}{comma}{closed}"


def mutants_of(path: str, source: str) -> list[Mutant]:
    """Every mutant of one file, in source order (deterministic)."""
    tree = ast.parse(source)
    offsets = _Offsets(source)
    skipped = _skipped_nodes(tree)
    lines = source.splitlines()
    z3_imported = bool(re.search(r"^import z3$", source, re.MULTILINE))
    out: list[Mutant] = []

    def add(node: ast.AST, operator: str, description: str, start: int, end: int, replacement: str) -> None:
        line = getattr(node, "lineno", 1)
        if "pragma: no mutate" in lines[line - 1]:
            return
        out.append(Mutant(path, line, operator, description, start, end, replacement, lines[line - 1].strip()))

    def between(left: ast.AST, right: ast.AST) -> tuple[int, int]:
        return offsets.span(left)[1], offsets.span(right)[0]

    returns: dict[int, tuple[str, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            constants = _return_constants(node, z3_imported)
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and inner.value is not None:
                    returns.setdefault(id(inner), constants)  # innermost function wins (walk is outer-first)

    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, _ in enumerate(node.ops):
                lo, hi = between(operands[i], operands[i + 1])
                match = _COMPARISON_TOKEN.search(source, lo, hi)
                if match and match.group() in COMPARISON_FLIPS:
                    token = match.group()
                    add(node, "comparison", f"{token} -> {COMPARISON_FLIPS[token]}", match.start(), match.end(),
                        COMPARISON_FLIPS[token])
        elif isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC_SWAPS:
            token, swapped = ARITHMETIC_SWAPS[type(node.op)]
            lo, hi = between(node.left, node.right)
            at = source.find(token, lo, hi)
            if token == "*" and source.startswith("**", at):
                continue
            if at >= 0:
                add(node, "arithmetic", f"{token} -> {swapped}", at, at + len(token), swapped)
        elif isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
            token, swapped = ARITHMETIC_SWAPS[type(node.op)]
            lo, hi = between(node.target, node.value)
            at = source.find(token + "=", lo, hi)
            if at >= 0:
                add(node, "arithmetic", f"{token}= -> {swapped}=", at, at + 1, swapped)
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            start, end = offsets.span(node)
            for delta in (1, -1):
                add(node, "constant", f"{node.value} -> {node.value + delta}", start, end, str(node.value + delta))
        elif isinstance(node, ast.BoolOp):
            word, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            edits = []
            for left, right in zip(node.values, node.values[1:]):
                lo, hi = between(left, right)
                match = re.compile(rf"\b{word}\b").search(source, lo, hi)
                if match:
                    edits.append(match)
            if edits and len(edits) == len(node.values) - 1:
                start, end = edits[0].start(), edits[-1].end()
                text = source[start:end]
                replaced = re.sub(rf"\b{word}\b", other, text) if len(edits) > 1 else other
                add(node, "boolean", f"{word} -> {other}", start, end, replaced)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            start, end = offsets.span(node)
            operand = source[slice(*offsets.span(node.operand))]
            add(node, "not", "not x -> x", start, end, f"({operand})")
        elif isinstance(node, ast.Call):
            name = _callee(node)
            start, end = offsets.span(node)
            if name == "Not" and len(node.args) == 1 and not node.keywords:
                operand = source[slice(*offsets.span(node.args[0]))]
                add(node, "not", "z3.Not(x) -> x", start, end, f"({operand})")
            elif name in CONJUNCTIONS:
                items: Sequence[ast.expr] = node.args
                if len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
                    items = node.args[0].elts
                items = [a for a in items if not isinstance(a, ast.Starred)]
                if len(items) >= 2:
                    for i, item in enumerate(items):
                        a, b = offsets.span(item)
                        if i + 1 < len(items):
                            b = offsets.span(items[i + 1])[0]  # the argument and its comma
                        else:
                            a = offsets.span(items[i - 1])[1]  # the comma before the last argument
                        add(item, "drop-argument", f"drop argument {i + 1} of {name}", a, b, "")
            elif name == "If" and len(node.args) == 3:
                then_branch, else_branch = node.args[1], node.args[2]
                a, _ = offsets.span(then_branch)
                _, b = offsets.span(else_branch)
                swapped = source[slice(*offsets.span(else_branch))] + ", " + source[slice(*offsets.span(then_branch))]
                add(node, "if-swap", "z3.If(c, a, b) -> z3.If(c, b, a)", a, b, swapped)
        elif isinstance(node, ast.Return) and node.value is not None:
            start, end = offsets.span(node.value)
            for constant in returns.get(id(node), ()):
                if source[start:end] != constant:
                    add(node, "return", f"return {constant}", start, end, constant)
    # Scope operators (issue 21): narrow a declared range; add a bounding hypothesis.
    for literal in _declared_ranges(tree):
        if id(literal) in skipped:
            continue
        start, end = offsets.span(literal)
        ends = sorted({0, len(literal.elts) - 1})
        for i in ends:
            element = source[slice(*offsets.span(literal.elts[i]))]
            add(literal.elts[i], "narrow-range", f"drop {element} from the declared range", start, end,
                _range_without(source, offsets, literal, i))
    for call in _scope_ranges(tree):
        if id(call) in skipped:
            continue
        stop = call.args[0] if len(call.args) == 1 else call.args[1]
        a, b = offsets.span(stop)
        add(call, "narrow-range", "range stop -> stop - 1", a, b, f"({source[a:b]}) - 1")
    for literal in _hypotheses_literals(tree):
        if id(literal) in skipped or not literal.elts:
            continue
        after = offsets.span(literal.elts[-1])[1]
        for name in _bounded_below_only(literal):
            bound = CP_SIZE_BOUND if name in _CP_SIZE_NAMES else LENGTH_BOUND
            add(literal, "bounding-hypothesis", f"add hypothesis {name} <= {bound}", after, after,
                f", {name} <= {bound}")
    out.sort(key=lambda m: (m.start, m.operator, m.description))
    return [m for m in out if _parses(m.apply(source))]  # a mutant is a program, never a syntax error


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


# -- targets and kill commands --------------------------------------------------------------------------------

PROVE_CP_MAX = 8
BULK_SCALE = "0.1"  # the million-case conformance test at 10% (about 100 000 cases, 4 s) inside a kill command


@dataclass(frozen=True)
class Stage:
    """One kill command: argv after the python executable, run in the copy's root."""

    name: str
    argv: tuple[str, ...]

    def text(self) -> str:
        return "python " + " ".join(self.argv)


@dataclass(frozen=True)
class Target:
    """What to mutate and the kill stages, in order: a mutant is killed by the first stage that fails; later
    stages run only on the survivors of earlier ones (the first stage's score is reported on its own)."""

    name: str
    files: Callable[[Path], list[str]]
    stages: tuple[Stage, ...]
    doc: str


def _glob(pattern: str, *, exclude: Sequence[str] = ("__init__.py",)) -> Callable[[Path], list[str]]:
    def files(root: Path) -> list[str]:
        return sorted(str(p.relative_to(root)) for p in root.glob(pattern) if p.name not in exclude)

    return files


# The theorem statements are proofs/theorems/: the running machinery (proofs/engine/: checking, obligations,
# counterexample replay and realisation, evaluation, the constants walk; proofs/run.py, proofs/registry.py), the
# teeth pass and conformance are not mutated as statements.
THEOREMS = "cpgraph.proofs.theorems."


def _proof_imports(path: Path) -> list[str]:
    """The cpgraph.proofs.theorems modules ``path`` imports (either import form), as their names there."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == THEOREMS.rstrip("."):
            names.extend(alias.name for alias in node.names)  # from cpgraph.proofs.theorems import capacity, ...
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(THEOREMS):
            names.append((node.module or "")[len(THEOREMS):].split(".")[0])  # from cpgraph.proofs.theorems.capacity import ...
    return names


def _theorem_files(root: Path) -> list[str]:
    """The theorem statements: the modules of proofs/theorems/ that proofs/registry.py takes its theorems from,
    and the ones those build on (the induction chain, lemmas)."""
    found: list[str] = []
    todo = _proof_imports(root / "proofs" / "registry.py")
    while todo:
        name = todo.pop(0)
        path = root / "proofs" / "theorems" / f"{name}.py"
        if name in found or not path.exists():
            continue
        found.append(name)
        todo.extend(_proof_imports(path))
    return sorted(f"proofs/theorems/{n}.py" for n in found)


_BULK = "tests/differential/test_conformance_widened.py::test_ci_reference_and_impl_conform_on_the_bulk_plan"
_PROVE = Stage("prove", ("benchmarks/mutation.py", "_prove", "--cp-max", str(PROVE_CP_MAX)))
# The theorem statements: a weakened statement still proves and is caught by the teeth pass, so run it first
# (the same checks, in another order: only the time to the first failure changes).
_PROVE_TEETH_FIRST = Stage("prove", (*_PROVE.argv, "--teeth-first"))


def _pytest(name: str, *paths: str) -> Stage:
    return Stage(name, ("-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *paths))


TARGETS: dict[str, Target] = {
    "spec": Target(
        "spec", _glob("spec/*.py", exclude=("__init__.py", "design.py", "design_counts.py", "design_dcs.py", "logic.py")),
        (_PROVE, _pytest("tests", "tests/unit/test_spec_*.py", "tests/unit/test_proofs_boundaries.py",
                         "tests/differential/test_conformance_*.py", "tests/quality/test_proof_variants.py")),
        f"stage prove: every theorem of the registry at cp_size 1..{PROVE_CP_MAX} (the obligations of `cpgraph prove "
        f"--cp-max {PROVE_CP_MAX}`, stopping at the first failure); stage tests, on prove's survivors only: the "
        "spec's unit tests, the boundary and conformance tests and the proof-variant tests. spec/design.py, "
        "spec/design_counts.py and spec/design_dcs.py are the terms of `cpgraph review`, not of `cpgraph prove`: "
        "not in this target; nor is spec/logic.py, z3's own constructors without their coercion overhead (it states "
        "nothing: each call builds z3's term, on its fast path or through z3's function, and "
        "tests/unit/test_spec_logic.py compares the two)",
    ),
    "proofs": Target(
        "proofs", _theorem_files,
        (_PROVE_TEETH_FIRST, _pytest("tests", "tests/quality/test_proof_variants.py", "tests/unit/test_proofs_obligations.py")),
        f"stage prove: every theorem of the registry at cp_size 1..{PROVE_CP_MAX}; stage tests, on prove's "
        "survivors only: the proof-variant tests (each theorem refutes its wrong variants) and the non-vacuity tests",
    ),
    "reference": Target(
        "reference", _glob("reference/*.py"),
        (_pytest("tests", _BULK, "tests/unit/test_reference_*.py", "tests/unit/test_check_judge.py",
                 "tests/unit/test_check_fastpath.py", "tests/differential/test_judge_vs_spec.py",
                 "tests/differential/test_conformance_reference.py", "tests/stateful/test_reference_runner_machine.py"),),
        "pytest -x over the bulk conformance harness (the reference's decision path against the spec's mirror), the "
        "reference's unit, property, vector, conformance and state-machine tests, and the judge's tests (its fast path "
        "and the judge against the spec's terms included) "
        "(reference/judge.py is the verdict logic of `cpgraph check`)",
    ),
    "impl": Target(
        "impl", lambda root: ["impl/formulas.py", "impl/decision.py", "impl/lengths.py"],
        (_pytest("tests", _BULK, "tests/unit/test_impl_decision.py", "tests/unit/test_impl_lengths_forms.py",
                 "tests/unit/test_impl_boundary.py", "tests/unit/test_impl_fast_paths.py",
                 "tests/differential/test_impl_decisions.py"),),
        "pytest -x over the bulk conformance harness (impl's decision path against the spec's mirror), impl's "
        "decision tests and its differential tests against the reference",
    ),
}


def _existing(stage: Stage, root: Path) -> Stage:
    """The stage with its test globs expanded in this tree (a missing file would be a pytest error)."""
    argv: list[str] = []
    for arg in stage.argv:
        if arg.startswith("tests/"):
            pattern, _, test = arg.partition("::")
            argv.extend(sorted(str(p.relative_to(root)) + (f"::{test}" if test else "") for p in root.glob(pattern)))
        else:
            argv.append(arg)
    return Stage(stage.name, tuple(argv))


# -- running ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    status: str  # "killed", "survived", "timeout"
    seconds: float
    evidence: str  # the last line of the deciding kill command's output
    stage: str  # the stage that killed it (or timed out); "" for a survivor


def make_copy(rev: str | None) -> Path:
    """A private copy of the repository: the working tree, or the commit ``rev`` (git archive)."""
    root = Path(tempfile.mkdtemp(prefix="mut-"))
    if rev is None:
        shutil.copytree(ROOT, root, symlinks=True, ignore=COPY_IGNORE, dirs_exist_ok=True)
    else:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev],
                                 check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root, filter="tar")
    # The harness itself always comes from this checkout (it may be newer than rev).
    (root / "benchmarks").mkdir(exist_ok=True)
    shutil.copy2(Path(__file__), root / "benchmarks" / "mutation.py")
    return root


def run_kill(root: Path, argv: Sequence[str], timeout: float) -> tuple[str, float, str]:
    """Run the kill command in ``root``: ("killed" | "survived" | "timeout", seconds, last output line)."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1", "HYPOTHESIS_PROFILE": "ci",
           "CPGRAPH_BULK_SCALE": BULK_SCALE}
    env.pop("PYTHONSTARTUP", None)
    start = time.perf_counter()
    try:
        done = subprocess.run([PYTHON, *argv], cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start, f"ran past {timeout:.0f} s"
    seconds = time.perf_counter() - start
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    return ("survived" if done.returncode == 0 else "killed"), seconds, (lines[-1][:300] if lines else "")


def _worker(root: Path, stages: Sequence[Stage], timeouts: Sequence[float], mutants: Sequence[Mutant],
            report: Callable[[Outcome], None], stop: threading.Event, deadline: float | None) -> None:
    originals: dict[str, str] = {}
    for mutant in mutants:
        if stop.is_set() or (deadline is not None and time.time() >= deadline):
            return
        path = root / mutant.path
        original = originals.setdefault(mutant.path, path.read_text())
        path.write_text(mutant.apply(original))
        total = 0.0
        try:
            outcome = None
            for stage, timeout in zip(stages, timeouts):
                status, seconds, evidence = run_kill(root, stage.argv, timeout)
                total += seconds
                if status != "survived":
                    outcome = Outcome(mutant, status, total, evidence, stage.name)
                    break
            report(outcome or Outcome(mutant, "survived", total, "", ""))
        finally:
            path.write_text(original)


def run_target(target: Target, *, limit: int | None, jobs: int, rev: str | None, sample_seed: int,
               timeout_factor: float, files: Sequence[str] | None, stages_named: Sequence[str] | None = None,
               deadline: float | None = None, operators: Sequence[str] | None = None) -> dict[str, object]:
    """Run the chosen mutants (all, or a deterministic sample of ``limit``); ``stages_named`` keeps only those
    kill stages; past ``deadline`` (a time.time()) no new mutant starts and the report says how many ran."""
    if stages_named:
        unknown = set(stages_named) - {s.name for s in target.stages}
        if unknown:
            raise SystemExit(f"mutation: no stage {sorted(unknown)} in target {target.name}")
        target = dataclasses.replace(target, stages=tuple(s for s in target.stages if s.name in stages_named))
    revision = _head(rev) if rev else f"{_head()} + working tree (copied {time.strftime('%H:%M', time.gmtime())} UTC)"
    copies = [make_copy(rev) for _ in range(jobs)]
    try:
        root = copies[0]
        chosen = list(files) if files else target.files(root)
        stages = [_existing(stage, root) for stage in target.stages]
        everything = [m for f in chosen for m in mutants_of(f, (root / f).read_text())
                      if operators is None or m.operator in operators]
        picked = everything
        if limit is not None and limit < len(everything):
            indices = sorted(random.Random(sample_seed).sample(range(len(everything)), limit))
            picked = [everything[i] for i in indices]
        baselines: list[float] = []
        for stage in stages:
            status, seconds, evidence = run_kill(root, stage.argv, 1800)
            if status != "survived":
                raise SystemExit(f"mutation: stage {stage.name} fails on the unmutated tree ({evidence}); fix that first")
            baselines.append(seconds)
        timeouts = [max(60.0, timeout_factor * b) for b in baselines]
        baseline = sum(baselines)
        print(f"mutation: {target.name}: {len(picked)} of {len(everything)} mutants in {len(chosen)} files; "
              f"unmutated kill stages {', '.join(f'{s.name} {b:.1f} s' for s, b in zip(stages, baselines))}; "
              f"{jobs} job(s)", file=sys.stderr)
        outcomes: list[Outcome] = []
        start = time.perf_counter()

        def report(outcome: Outcome) -> None:
            outcomes.append(outcome)
            if outcome.status != "killed" or len(outcomes) % 10 == 0:
                print(f"  [{len(outcomes)}/{len(picked)}] {outcome.status}: {outcome.mutant.key}", file=sys.stderr)

        # A seeded shuffle: a run stopped at its deadline has measured a uniform sample, not the first files.
        order = random.Random(sample_seed + 1).sample(picked, len(picked))
        shards = [order[i::jobs] for i in range(jobs)]
        stop = threading.Event()
        if jobs == 1:
            _worker(copies[0], stages, timeouts, shards[0], report, stop, deadline)
        else:
            pool = concurrent.futures.ThreadPoolExecutor(jobs)
            try:
                futures = [pool.submit(_worker, copies[i], stages, timeouts, shards[i], report, stop, deadline)
                           for i in range(jobs)]
                for future in futures:
                    future.result()
            finally:
                stop.set()  # on an interrupt, each worker stops after the mutant it is running
                pool.shutdown(wait=True, cancel_futures=True)
        wall = time.perf_counter() - start
    finally:
        for copy in copies:
            shutil.rmtree(copy, ignore_errors=True)
    outcomes.sort(key=lambda o: (o.mutant.path, o.mutant.start, o.mutant.operator, o.mutant.description))
    result = summarise(target, chosen, stages, outcomes, len(everything), baseline, wall, revision, limit, sample_seed, jobs)
    result["planned"] = len(picked)
    result["operators_only"] = list(operators) if operators is not None else None
    result["stopped_at_deadline"] = len(outcomes) < len(picked)
    return result


def summarise(target: Target, files: Sequence[str], stages: Sequence[Stage], outcomes: Sequence[Outcome], total: int,
              baseline: float, wall: float, rev: str, limit: int | None, sample_seed: int,
              jobs: int) -> dict[str, object]:
    per_file = []
    for path in files:
        mine = [o for o in outcomes if o.mutant.path == path]
        per_file.append({"file": path, **_counts(mine)})
    return {
        "target": target.name,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "revision": rev,
        "kill_stages": [{"name": s.name, "command": s.text()} for s in stages],
        "killed_by_stage": {s.name: sum(o.status == "killed" and o.stage == s.name for o in outcomes) for s in stages},
        "first_stage_score": _first_stage_score(stages, outcomes),
        "kill_doc": target.doc,
        "mutants_in_files": total,
        "sampled": limit is not None and limit < total,
        "sample_seed": sample_seed if limit is not None and limit < total else None,
        "unmutated_kill_seconds": round(baseline, 2),
        "wall_seconds": round(wall, 1),
        "jobs": jobs,
        **_counts(outcomes),
        "per_file": per_file,
        "survivors": [_entry(o) for o in outcomes if o.status == "survived"],
        "timeouts": [_entry(o) for o in outcomes if o.status == "timeout"],
        "operators": {op: _counts([o for o in outcomes if o.mutant.operator == op]) for op in OPERATORS},
    }


def _first_stage_score(stages: Sequence[Stage], outcomes: Sequence[Outcome]) -> float | None:
    """Killed by the first stage alone (e.g. by `cpgraph prove`, without the tests) over the decided mutants."""
    decided = [o for o in outcomes if o.status != "timeout"]
    if not decided or not stages:
        return None
    return round(sum(o.status == "killed" and o.stage == stages[0].name for o in decided) / len(decided), 4)


def _counts(outcomes: Sequence[Outcome]) -> dict[str, object]:
    killed = sum(o.status == "killed" for o in outcomes)
    survived = sum(o.status == "survived" for o in outcomes)
    timed_out = sum(o.status == "timeout" for o in outcomes)
    decided = killed + survived
    return {"mutants": len(outcomes), "killed": killed, "survived": survived, "timed_out": timed_out,
            "score": round(killed / decided, 4) if decided else None}


def _entry(outcome: Outcome) -> dict[str, object]:
    m = outcome.mutant
    return {"where": f"{m.path}:{m.line}", "operator": m.operator, "mutation": m.description,
            "replacement": m.replacement, "seconds": round(outcome.seconds, 2), "stage": outcome.stage,
            "evidence": outcome.evidence, "line_text": m.text}


EQUIVALENTS = ROOT / "benchmarks" / "mutation_equivalents.json"


def _arguments() -> list[dict[str, str]]:
    """Written arguments that a surviving mutant is equivalent (or outside what its kill command can see):
    entries {file, line_text, mutation, argument}, matched on the file, the original line and the mutation
    (mutation "*": every mutation of that line, for a line no verdict reads, e.g. terms only printed)."""
    if not EQUIVALENTS.exists():
        return []
    entries = json.loads(EQUIVALENTS.read_text())
    return [e for e in entries if {"file", "line_text", "mutation", "argument"} <= e.keys()]


def _argument_for(survivor: dict[str, object], arguments: Sequence[dict[str, str]]) -> tuple[str, str] | None:
    """(kind, argument) written for this survivor: kind "equivalent" (no input tells it apart; left out of the
    score without equivalents) or anything else, e.g. "dead code" (counted as a survivor all the same)."""
    path = str(survivor["where"]).rsplit(":", 1)[0]
    for entry in arguments:
        if entry["file"] == path and entry["line_text"] == survivor.get("line_text") and entry["mutation"] in (survivor["mutation"], "*"):
            return entry.get("kind", "equivalent"), entry["argument"]
    return None


def _head(rev: str = "HEAD") -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


# -- reports ------------------------------------------------------------------------------------------------


def write_reports(result: dict[str, object], out: Path, label: str | None = None) -> tuple[Path, Path]:
    """Write this target's JSON, then the day's combined Markdown and JSON over every target measured; with a
    ``label``, this run's own JSON and Markdown (``<day>-mutation-<label>-<target>``) and nothing else."""
    out.mkdir(parents=True, exist_ok=True)
    day = str(result["date"])[:10]
    if label is not None:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", label):
            raise ValueError(f"label must be lower-case letters, digits and dashes; got {label!r}")
        stem = out / f"{day}-mutation-{label}-{result['target']}"
        stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
        stem.with_suffix(".md").write_text(render_markdown(f"{day} ({label})", [result]))
        return stem.with_suffix(".md"), stem.with_suffix(".json")
    (out / f"{day}-mutation-{result['target']}.json").write_text(json.dumps(result, indent=2) + "\n")
    return combine_reports(day, out)


def combine_reports(day: str, out: Path) -> tuple[Path, Path]:
    """The day's combined Markdown and JSON from every ``<day>-mutation-<target>.json`` in ``out``."""
    order = {name: i for i, name in enumerate(TARGETS)}
    paths = sorted((p for p in out.glob(f"{day}-mutation-*.json")
                    if "-" not in p.stem.removeprefix(f"{day}-mutation-")),  # not a labelled run's file
                   key=lambda p: (order.get(p.stem.removeprefix(f"{day}-mutation-"), len(order)), p.name))
    runs = [json.loads(p.read_text()) for p in paths]
    combined_json = out / f"{day}-mutation.json"
    combined_json.write_text(json.dumps({"date": day, "targets": runs}, indent=2) + "\n")
    combined_md = out / f"{day}-mutation.md"
    combined_md.write_text(render_markdown(day, runs))
    return combined_md, combined_json


def _score_without(run: dict[str, object], equivalent: int) -> float | None:
    killed, survived = int(run["killed"]), int(run["survived"]) - equivalent  # type: ignore[call-overload]
    return killed / (killed + survived) if killed + survived else None


def _pct(score: object) -> str:
    return "n/a" if score is None else f"{100 * float(score):.1f}%"  # type: ignore[arg-type]


def render_markdown(day: str, runs: Sequence[dict[str, object]]) -> str:
    lines = [
        f"# Mutation score, {day}",
        "",
        "Produced by `python benchmarks/mutation.py --target T` (see its docstring for the operators, the kill",
        "commands and why an own AST mutator). Each mutant is one exact text edit of one file, run on a private",
        "copy of the repository. Score = killed / (killed + survived); timed-out mutants are listed apart.",
        "",
        "| target | mutants | killed | survived | timed out | score | without argued equivalents | first stage alone | killed by stage | sampled | wall |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    arguments = _arguments()
    for run in runs:
        equivalent = sum((_argument_for(s, arguments) or ("", ""))[0] == "equivalent" for s in run["survivors"])  # type: ignore[attr-defined]
        sampled = f"{run['mutants']} of {run['mutants_in_files']} (seed {run['sample_seed']})" if run["sampled"] else "all"
        if run.get("stopped_at_deadline"):
            sampled = f"{run['mutants']} of {run['planned']} planned (stopped at the deadline; a seeded random order)"
        by_stage = ", ".join(f"{k} {v}" for k, v in run["killed_by_stage"].items())  # type: ignore[attr-defined]
        first = run["kill_stages"][0]["name"]  # type: ignore[index]
        lines.append(
            f"| {run['target']} | {run['mutants']} | {run['killed']} | {run['survived']} | {run['timed_out']} | "
            f"{_pct(run['score'])} | {_pct(_score_without(run, equivalent))} ({equivalent} argued) | "
            f"{_pct(run['first_stage_score'])} ({first}) | {by_stage} | {sampled} | "
            f"{run['wall_seconds']} s |"
        )
    for run in runs:
        lines += ["", f"## {run['target']}", "", f"Revision {run['revision']}, measured {run['date']}, "
                  f"{run['jobs']} job(s); unmutated kill run {run['unmutated_kill_seconds']} s. Kill: {run['kill_doc']}.",
                  "", *[f"- stage `{s['name']}`: `{s['command']}`" for s in run["kill_stages"]],  # type: ignore[attr-defined]
                  "", "| file | mutants | killed | survived | timed out | score |", "| --- | --- | --- | --- | --- | --- |"]
        for row in run["per_file"]:  # type: ignore[attr-defined]
            lines.append(f"| `{row['file']}` | {row['mutants']} | {row['killed']} | {row['survived']} | "
                         f"{row['timed_out']} | {_pct(row['score'])} |")
        lines += ["", "| operator | mutants | killed | survived | score |", "| --- | --- | --- | --- | --- |"]
        for op, row in run["operators"].items():  # type: ignore[attr-defined]
            if row["mutants"]:
                lines.append(f"| {op} | {row['mutants']} | {row['killed']} | {row['survived']} | {_pct(row['score'])} |")
        survivors = run["survivors"]
        arguments = _arguments()
        argued = [s for s in survivors if (_argument_for(s, arguments) or ("", ""))[0] == "equivalent"]  # type: ignore[attr-defined]
        lines += ["", f"Survivors ({len(survivors)}, of which {len(argued)} argued equivalent below; score without "  # type: ignore[arg-type]
                  f"them {_pct(_score_without(run, len(argued)))}):" if survivors else "No survivors."]
        for s in survivors:  # type: ignore[attr-defined]
            found = _argument_for(s, arguments)
            lines.append(f"- `{s['where']}` {s['operator']}: {s['mutation']} in `{s.get('line_text', '')}`"
                         + (f" ({'argued equivalent' if found[0] == 'equivalent' else found[0]}: {found[1]})" if found else ""))
        if run["timeouts"]:
            lines += ["", "Timed out:"]
            lines += [f"- `{s['where']}` {s['operator']}: {s['mutation']}" for s in run["timeouts"]]  # type: ignore[attr-defined]
    return "\n".join(lines) + "\n"


# -- the prove kill command ------------------------------------------------------------------------------------


def _teeth_failure(names: Sequence[str]) -> str | None:
    """The teeth pass of ``cpgraph prove`` (proofs/teeth/run.py: every variant, then each theorem's coverage),
    stopping at the first bite that gets the wrong verdict; its message, or None."""
    from cpgraph.proofs.teeth.minimal import PINNED, minimal_bite
    from cpgraph.proofs.teeth.run import Bite, bite, coverage, scope_edges
    from cpgraph.proofs.teeth.variants.catalogue import VARIANTS

    def bites() -> Iterator[Bite]:
        yield from scope_edges()
        for variant in VARIANTS:
            if variant.theorem in names:
                yield bite(variant)
        for name in names:
            yield from coverage(name)
        for pinned in PINNED:
            if pinned.theorem in names:
                yield minimal_bite(pinned)

    for lost in bites():
        if not lost.ok:
            return f"{lost.theorem} lost its teeth: variant {lost.variant} got {lost.got.value}, expected {lost.expected.value}"
    return None


def prove_fail_fast(cp_max: int, *, teeth_first: bool = False) -> int:
    """Every (obligation, parameter) of ``cpgraph prove --cp-max N`` through ``run_task`` (no counterexample
    minimisation), small parameters first (a wrong spec is usually refuted at P = 1 or 2, or a short list),
    and the teeth pass (variants, coverage, the domain guards, which go first: milliseconds; the spec-vs-reference
    agreement stage and the declared-scope checks, as `cpgraph prove` runs them for the whole registry); exit 1 at the
    first failure (an exception exits 1 too). ``teeth_first`` runs the teeth pass before the theorems."""
    from cpgraph.proofs.teeth.agreement.stage import FAMILIES as AGREEMENT_FAMILIES, agreement
    from cpgraph.proofs.registry import OBLIGATIONS
    from cpgraph.proofs.engine.results import TaskResult, summarise
    from cpgraph.proofs.run import run_task
    from cpgraph.proofs.engine.witness import scope_bites
    from cpgraph.proofs.teeth.run import guards, toothless

    for lost in toothless(guards()):
        print(f"domain guard of {lost.variant} moved: it no longer builds at its edge or no longer refuses past it")
        return 1
    names = [o.name for o in OBLIGATIONS]
    if teeth_first and (failure := _teeth_failure(names)) is not None:
        print(failure)
        return 1
    instances = sorted(
        ((parameter, index, obligation) for index, obligation in enumerate(OBLIGATIONS)
         for parameter in obligation.parameters(cp_max)),
        key=lambda t: (t[0], t[1]),
    )
    ran: dict[str, list[TaskResult]] = {o.name: [] for o in OBLIGATIONS}
    for parameter, _, obligation in instances:
        result = run_task(obligation, parameter, shrink=False, witnesses=True)
        if result.failure is not None:
            print(f"{obligation.name} {result.failure.label}: {result.failure.verdict.status.value} "
                  f"{result.failure.verdict.reason}".rstrip())
            return 1
        ran[obligation.name].append(result)
    # `cpgraph prove`'s teeth pass also checks, when the whole registry is checked, that the spec agrees with
    # the reference on its edge cases (proofs/teeth/agreement/stage.py) and that every theorem ran over its declared scope
    # with witnesses at its edges (proofs/engine/witness.py): the kill command runs them too, cheap ones first.
    for family in AGREEMENT_FAMILIES:
        for lost in toothless(agreement(family)):
            print(f"{lost.theorem}: {lost.variant}: {lost.description[:300]}")
            return 1
    for lost in toothless(scope_bites([summarise(o, cp_max, ran[o.name]) for o in OBLIGATIONS], cp_max)):
        print(f"{lost.theorem}: scope lost: {lost.variant}: {lost.description[:300]}")
        return 1
    # `cpgraph prove` also runs the teeth pass: every wrong variant must still get its verdict, so a
    # weakened theorem statement (which still proves) is killed here too.
    if not teeth_first and (failure := _teeth_failure(names)) is not None:
        print(failure)
        return 1
    print(f"{len(OBLIGATIONS)} theorems ({len(instances)} instances) proved at cp_size 1..{cp_max}; teeth pass clean")
    return 0


# -- command line -------------------------------------------------------------------------------------------


def _exit_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so every /tmp/mut-* copy is removed (the ``finally`` in run_target)."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["_prove"]:
        inner = argparse.ArgumentParser(prog="mutation.py _prove")
        inner.add_argument("--cp-max", type=int, default=PROVE_CP_MAX)
        inner.add_argument("--teeth-first", action="store_true")
        parsed = inner.parse_args(args[1:])
        return prove_fail_fast(parsed.cp_max, teeth_first=parsed.teeth_first)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--target", choices=sorted(TARGETS))
    parser.add_argument("--report", metavar="YYYY-MM-DD", default=None,
                        help="only rebuild that day's combined report from the per-target JSON files in --out")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="a deterministic sample of N mutants")
    parser.add_argument("--sample-seed", type=int, default=0, metavar="S", help="the sample's seed (default 0)")
    parser.add_argument("--jobs", type=int, default=1, metavar="J", help="mutants run at once, one copy each")
    parser.add_argument("--rev", default=None, help="mutate this commit (git archive) instead of the working tree")
    parser.add_argument("--files", nargs="+", default=None, help="only these files (paths from the repo root)")
    parser.add_argument("--timeout-factor", type=float, default=10.0, metavar="X")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the reports go (benchmarks/results)")
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    parser.add_argument("--stages", nargs="+", default=None, metavar="NAME",
                        help="run only these kill stages (e.g. prove: the proofs alone)")
    parser.add_argument("--operators", nargs="+", default=None, choices=OPERATORS, metavar="OP",
                        help="only mutants of these operators (sampled among them), e.g. narrow-range bounding-hypothesis")
    parser.add_argument("--label", default=None, metavar="L",
                        help="write <date>-mutation-L-<target>.json/.md and leave the day's combined report alone")
    parser.add_argument("--deadline", default=None, metavar="HH:MM",
                        help="start no mutant after this UTC time today; the report counts what ran")
    options = parser.parse_args(args)
    if options.report:
        md, js = combine_reports(options.report, options.out)
        print(f"mutation: {md}, {js}")
        return 0
    if options.target is None:
        parser.error("--target is required (or --report DAY)")
    target = TARGETS[options.target]
    if options.label is not None and not re.fullmatch(r"[a-z0-9][a-z0-9-]*", options.label):
        parser.error(f"--label must be lower-case letters, digits and dashes; got {options.label!r}")
    if options.jobs < 1 or (options.limit is not None and options.limit < 1):
        parser.error("--jobs and --limit must be >= 1")
    if options.list:
        files = options.files or target.files(ROOT)
        for path in files:
            for mutant in mutants_of(path, (ROOT / path).read_text()):
                if options.operators is None or mutant.operator in options.operators:
                    print(mutant.key)
        for stage in target.stages:
            print(f"stage {stage.name}: {_existing(stage, ROOT).text()}", file=sys.stderr)
        return 0
    _exit_on_sigterm()
    deadline = None
    if options.deadline:
        hour, minute = (int(x) for x in options.deadline.split(":"))
        now = datetime.datetime.now(datetime.timezone.utc)
        deadline = now.replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()
    result = run_target(target, limit=options.limit, jobs=options.jobs, rev=options.rev,
                        sample_seed=options.sample_seed, timeout_factor=options.timeout_factor, files=options.files,
                        stages_named=options.stages, deadline=deadline, operators=options.operators)
    md, js = write_reports(result, options.out, options.label)
    print(f"mutation: {result['target']}: {result['killed']} killed, {result['survived']} survived, "
          f"{result['timed_out']} timed out of {result['mutants']} (score {_pct(result['score'])}); {md}, {js}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
