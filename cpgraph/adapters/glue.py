"""What an adapter assumes about a release (its glue), checked against the release's own files, and a
failure of that glue told apart from the release's own behaviour.

An adapter drives a release's real code, but it has to call that code: the constructors and signatures it
calls, the attributes it sets on objects it builds without their constructor, the configuration fields it
fills, the names it reads back. Each of those is an ``Assumption`` about the release's source, read from its
syntax tree before the first batch (``check_release``): a release that changed one is refused with a
``GlueError`` naming the adapter, the release, each change at the release's file:line, and the releases the
adapter was read against. The command line reports it as a usage error (exit 2), never as a violation: a
false alarm about a stack must not look like a real one.

During a run, ``classify`` sorts an exception out of the release's code: one raised by a ``raise`` or
``assert`` statement in the release's own file is the release's (a guard it raises by design: the check
judges it); anything else (an AttributeError or TypeError from the interpreter, an error in a stub or a
stand-in) is a broken assumption and becomes a ``GlueError`` naming where it came from.
"""

from __future__ import annotations

import ast
import os
import traceback
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from cpgraph.adapters import AdapterError

KINDS = ("signature", "defines", "reads", "members", "calls")


class GlueError(AdapterError):
    """The adapter's glue does not fit this release (what changed is named, at the release's file:line);
    a usage error (exit 2), not a finding about the release."""


@dataclass(frozen=True)
class Assumption:
    """One thing an adapter assumes about a release's source ``files`` (relative to the root; the first that
    defines ``qualname`` is read, and a file the release lacks is passed over).

    ``signature``: ``qualname`` ('Class.method' or 'function') takes ``positional`` first (by these names,
    after ``self``) and every keyword in ``names``, and needs nothing else. ``defines``: ``qualname`` is
    defined. ``reads``: the files (or ``qualname`` in them, when given) read each attribute in ``names``
    (what the adapter sets or fills must be what the release reads). ``members``: the class ``qualname``
    defines each name in ``names`` (enum members, dataclass fields, class attributes). ``calls``: the files
    call ``qualname`` (a method or function name) with every keyword in ``names``. A name or qualname
    written 'a|b' is kept when either is (a release has one spelling or the other). ``why`` says what the
    adapter does with it."""

    kind: str
    files: tuple[str, ...]
    qualname: str
    names: tuple[str, ...] = ()
    positional: tuple[str, ...] = ()
    why: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Assumption kind must be one of {', '.join(KINDS)}; got {self.kind!r}")


@dataclass(frozen=True)
class Change:
    """An assumption the release does not keep: the changed ``name``, where (``file:line``) and what the
    release has instead."""

    name: str
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


Files = str | Sequence[str]


def _files(files: Files) -> tuple[str, ...]:
    return (files,) if isinstance(files, str) else tuple(files)


def signature(files: Files, qualname: str, positional: Sequence[str] = (), keywords: Sequence[str] = (), why: str = "") -> Assumption:
    return Assumption("signature", _files(files), qualname, tuple(keywords), tuple(positional), why)


def defines(files: Files, qualname: str, why: str = "") -> Assumption:
    return Assumption("defines", _files(files), qualname, why=why)


def reads(files: Files, names: Iterable[str], qualname: str = "", why: str = "") -> Assumption:
    return Assumption("reads", _files(files), qualname, tuple(names), why=why)


def members(files: Files, qualname: str, names: Iterable[str], why: str = "") -> Assumption:
    return Assumption("members", _files(files), qualname, tuple(names), why=why)


def calls(files: Files, name: str, keywords: Iterable[str], why: str = "") -> Assumption:
    return Assumption("calls", _files(files), name, tuple(keywords), why=why)


@lru_cache(maxsize=256)
def _parsed(path: str, mtime: float) -> ast.Module:
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), filename=path)


def tree_of(root: str, file: str) -> ast.Module | None:
    """The parsed file (cached by path and modification time), or None when the release has no such file."""
    path = os.path.join(root, file)
    if not os.path.isfile(path):
        return None
    return _parsed(path, os.path.getmtime(path))


def find(tree: ast.AST, qualname: str) -> ast.AST | None:
    """The definition of ``qualname`` ('Class', 'Class.method', 'function') at any depth of ``tree``."""
    head, _, rest = qualname.partition(".")
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == head:
            if not rest:
                return node
            if isinstance(node, ast.ClassDef):
                inner = next((n for n in node.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                              and n.name == rest.partition(".")[0]), None)
                if inner is not None:
                    return inner if "." not in rest else find(inner, rest)
    return None


def _attributes(node: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _call_keywords(node: ast.AST, name: str) -> set[str]:
    """The keywords of every call of ``name`` (a function, or a method of anything) under ``node``."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if called == name:
                out.update(k.arg for k in n.keywords if k.arg is not None)
                out.add("")  # called at all
    return out


def _kept(name: str, present: set[str]) -> bool:
    return any(alternative in present for alternative in name.split("|"))


def _class_names(node: ast.ClassDef) -> set[str]:
    out: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.Assign):
            out.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            out.add(item.target.id)
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(item.name)
    return out


def _signature_changes(a: Assumption, node: ast.FunctionDef | ast.AsyncFunctionDef, where: str) -> Iterator[Change]:
    args = node.args
    ordered = [p.arg for p in args.posonlyargs + args.args]
    if ordered[:1] in (["self"], ["cls"]):
        ordered = ordered[1:]
    keyword_only = [p.arg for p in args.kwonlyargs]
    shown = f"{a.qualname}({', '.join(ordered + (['*'] if keyword_only and not args.vararg else []) + keyword_only)})"
    for i, name in enumerate(a.positional):
        if i >= len(ordered):
            if args.vararg is None:
                yield Change(name, where, f"{shown} takes {len(ordered)} positional parameters; the adapter passes {name!r} as number {i + 1}")
        elif ordered[i] != name:
            yield Change(name, where, f"{shown} takes {ordered[i]!r} where the adapter passes {name!r} (positional {i + 1})")
    for name in a.names:
        if name not in ordered and name not in keyword_only and args.kwarg is None:
            yield Change(name, where, f"{shown} takes no {name!r}, which the adapter passes by keyword")
    given = set(a.positional) | set(a.names)
    plain_defaults = len(args.defaults)
    required = ordered[len(a.positional):len(ordered) - plain_defaults] if plain_defaults else ordered[len(a.positional):]
    required += [p.arg for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    for name in required:
        if name not in given:
            yield Change(name, where, f"{shown} requires {name!r}, which the adapter does not pass")


def _locate(root: str, a: Assumption) -> tuple[str, ast.AST] | Change:
    """The file and definition an assumption reads (the whole file when it names no qualname, or for
    ``calls``), or the Change saying it is not there."""
    trees = [(f, t) for f in a.files if (t := tree_of(root, f)) is not None]
    if not trees:
        return Change(a.files[0], a.files[0], f"no such file (the adapter reads {a.qualname or 'its code'} there)")
    if not a.qualname or a.kind == "calls":
        return trees[0]
    for file, tree in trees:
        for qualname in a.qualname.split("|"):
            node = find(tree, qualname)
            if node is not None:
                return file, node
    shown = " or ".join(a.qualname.split("|"))
    return Change(a.qualname.split("|")[0].split(".")[-1], trees[0][0], f"no {shown} (the adapter {a.why or 'calls it'})")


def _changes_of(root: str, a: Assumption) -> Iterator[Change]:
    located = _locate(root, a)
    if isinstance(located, Change):
        yield located
        return
    file, scope = located
    where = f"{file}:{getattr(scope, 'lineno', 1)}"
    everywhere = [t for f in a.files if (t := tree_of(root, f)) is not None]
    if a.kind == "signature":
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield Change(a.qualname, where, f"{a.qualname} is not a function")
        else:
            yield from _signature_changes(a, scope, where)
    elif a.kind == "reads":
        seen = _attributes(scope) if a.qualname else set().union(*(_attributes(t) for t in everywhere))
        for name in a.names:
            if not _kept(name, seen):
                shown = " or .".join(name.split("|"))
                yield Change(name, where if a.qualname else file, f"{a.qualname or ', '.join(a.files)} no longer reads .{shown} ({a.why or 'the adapter sets it'})")
    elif a.kind == "members":
        defined = _class_names(scope) if isinstance(scope, ast.ClassDef) else set()
        for name in a.names:
            if not _kept(name, defined):
                yield Change(name, where, f"{a.qualname} has no {name!r} ({a.why or 'the adapter reads it'})")
    elif a.kind == "calls":
        used = set().union(*(_call_keywords(t, a.qualname) for t in everywhere))
        if "" not in used:
            yield Change(a.qualname, file, f"{', '.join(a.files)} no longer calls {a.qualname}() ({a.why or 'the adapter stands in for it'})")
        for name in a.names:
            if "" in used and not _kept(name, used):
                yield Change(name, file, f"{a.qualname}() is no longer called with {name}= ({a.why or 'the adapter stands in for it'})")


def changes(root: str, assumptions: Iterable[Assumption]) -> list[Change]:
    """Every assumption the release under ``root`` does not keep (empty: the glue fits)."""
    return [c for a in assumptions for c in _changes_of(root, a)]


def check_release(adapter: str, release: str, root: str, assumptions: Iterable[Assumption], read_against: str) -> None:
    """GlueError (one message) unless the release under ``root`` keeps every assumption."""
    found = changes(root, assumptions)
    if found:
        listed = "; ".join(str(c) for c in found)
        raise GlueError(
            f"{adapter} cannot drive {release} under {root}: the release changed what the adapter's glue assumes "
            f"({listed}). The adapter was read against {read_against}; this is a limit of cpgraph's adapter, not a "
            f"finding about the release"
        )


@lru_cache(maxsize=256)
def _statements(path: str, mtime: float) -> tuple[tuple[int, int], ...]:
    """The line spans of every raise and assert statement in the file."""
    tree = _parsed(path, mtime)
    return tuple((n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree) if isinstance(n, (ast.Raise, ast.Assert)))


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), root]) == root
    except ValueError:
        return False


def raised_by_release(exc: BaseException, root: str) -> bool:
    """Did a ``raise`` or ``assert`` statement in a file under ``root`` raise ``exc`` (its innermost frame)?"""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    if not _under(last.filename, root) or last.lineno is None or not os.path.isfile(last.filename):
        return False
    spans = _statements(last.filename, os.path.getmtime(last.filename))
    return any(low <= last.lineno <= high for low, high in spans)


def classify(exc: Exception, adapter: str, release: str, root: str, read_against: str) -> Exception:
    """``exc`` itself when the release raised it by design (see raised_by_release); else the GlueError it
    stands for, naming the exception and the frame it came from (the release's file:line when it is there)."""
    if isinstance(exc, AdapterError) or raised_by_release(exc, os.path.abspath(root)):
        return exc
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if _under(f.filename, os.path.abspath(root))]
    at = inside[-1] if inside else (frames[-1] if frames else None)
    where = ""
    if at is not None:
        shown = os.path.relpath(at.filename, root) if _under(at.filename, os.path.abspath(root)) else at.filename
        where = f" in {at.name} at {shown}:{at.lineno}"
    return GlueError(
        f"{adapter} cannot drive {release} under {root}: {type(exc).__name__}: {exc}{where}, not raised by the "
        f"release's own code (no raise or assert there) but by the adapter's glue, which this release does not fit. "
        f"The adapter was read against {read_against}; this is a limit of cpgraph's adapter, not a finding about "
        f"the release"
    )


def adapter_frames_dir() -> str:
    """The folder of cpgraph's adapters: their frames are cpgraph's glue, never a policy's own."""
    return os.path.dirname(os.path.abspath(__file__))
