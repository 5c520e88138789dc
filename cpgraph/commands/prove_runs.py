"""The run record: a proved `cpgraph prove` run, reused whole when no file of the package, version or flag changed."""

from __future__ import annotations

import argparse
import dataclasses
import enum
import hashlib
import os
import platform
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cpgraph.proofs.engine import cache

RECORD_FORMAT = 1  # bumped when a record's layout or what it stands for changes
KEEP = 16  # records kept (the newest by mtime); a record is one run's results, about 1 MB


@dataclasses.dataclass(frozen=True)
class Recorded:
    """A run read back: its results and bites, how many solver calls it made, and when it was recorded."""

    results: list[Any]
    bites: tuple[Any, ...]
    solver_calls: int
    when: str
    key: str


def package_digest(root: Path | None = None) -> str:
    """The sha256 of every file of the installed package (cpgraph/ with spec/, proofs/, reference/ and impl/ linked
    into it; bytecode and caches left out), by relative path and content: any edit anywhere changes it."""
    import cpgraph

    top = root or Path(cpgraph.__file__).resolve().parent
    digest = hashlib.sha256()
    found: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(top, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in files:
            if not name.endswith((".pyc", ".pyo")) and not name.startswith("."):
                path = Path(folder) / name
                found.append((path.relative_to(top).as_posix(), path))
    for relative, path in sorted(found):
        digest.update(relative.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def run_key(args: argparse.Namespace, versions: str) -> str:
    """The run's key: the package's files, Python's, the platform's and the solvers' versions (``versions``), and
    every flag that changes what a run proves (not --jobs, not the output format)."""
    flags = {"cp_max": args.cp_max, "only": list(dict.fromkeys(args.only or [])), "teeth": args.teeth,
             "cross_check": args.cross_check, "seeds": args.seeds}
    parts = (f"cpgraph-prove-run {RECORD_FORMAT}", package_digest(), sys.version, platform.platform(), versions,
             repr(sorted(flags.items())))
    return cache.key("\n".join(parts), "run", "", "")


def _path(setting: cache.Setting, key: str) -> Path:
    assert setting.root is not None
    return setting.root / "runs" / f"{key}.json"


def load(setting: cache.Setting, key: str) -> Recorded | None:
    """The proved run recorded under ``key``, or None (a miss: absent, damaged, or not decodable)."""
    if not setting.reads:
        return None
    body = cache.read(_path(setting, key), key)
    if body is None:
        return None
    from cpgraph.proofs.engine.results import Bite, ObligationResult

    try:
        results = [_decode(ObligationResult, r) for r in _list(body["results"])]
        bites = tuple(_decode(Bite, b) for b in _list(body["bites"]))
        return Recorded(results, bites, int(str(body["solver_calls"])), str(body["when"]), key)
    except (KeyError, TypeError, ValueError):
        return None


def store(setting: cache.Setting, key: str, results: list[Any], bites: tuple[Any, ...], solver_calls: int,
          when: str) -> None:
    """Record a proved run under ``key`` (atomically, like every entry), keeping the ``KEEP`` newest records."""
    if not setting.writes:
        return
    path = _path(setting, key)
    body = {"results": [_encode(r) for r in results], "bites": [_encode(b) for b in bites],
            "solver_calls": solver_calls, "when": when}
    if not cache.write(path, key, body):
        return
    try:
        records = sorted((e.stat().st_mtime, e.path) for e in os.scandir(path.parent) if e.name.endswith(".json"))
        for _, old in records[: max(0, len(records) - KEEP)]:
            os.unlink(old)
    except OSError:
        pass


def _list(raw: object) -> list[Any]:
    if not isinstance(raw, list):
        raise TypeError("not a list")
    return raw


def _encode(value: Any) -> Any:
    """A record (frozen dataclasses of str, int, float, bool, enums, tuples and maps) as JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a run record holds no {type(value).__name__}")


def _decode(kind: Any, data: Any) -> Any:
    """``data`` read back as ``kind`` (a type hint of the records); anything off is a TypeError or ValueError."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return _decode(option, data)
            except (TypeError, ValueError):
                continue
        raise TypeError(f"{data!r} is none of {kind}")
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if not isinstance(data, dict):
            raise TypeError(f"{kind.__name__}: not an object")
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: _decode(hints[f.name], data[f.name]) for f in dataclasses.fields(kind) if f.init})
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(data)
    if origin is tuple:
        items = _list(data)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v) for v in items)
        if len(items) != len(args):
            raise ValueError("a tuple of another length")
        return tuple(_decode(a, v) for a, v in zip(args, items))
    if origin in (Mapping, dict, typing.Mapping) or kind is dict:
        if not isinstance(data, dict):
            raise TypeError("not a map")
        value_kind = args[1] if args else Any
        return {k: _decode(value_kind, v) for k, v in data.items()}
    if kind is Any:
        return data
    if kind is float and isinstance(data, (int, float)) and not isinstance(data, bool):
        return float(data)
    if kind in (str, int, bool) and type(data) is kind:
        return data
    if kind is type(None) and data is None:
        return None
    raise TypeError(f"{data!r} is not a {kind}")
