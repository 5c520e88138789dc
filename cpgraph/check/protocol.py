"""The policy protocol: load a policy by MODULE:ATTR and ask every rank about a batch, capturing errors."""

from __future__ import annotations

import importlib
import importlib.util
import operator
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cpgraph.check.batch import Batch

REFUSED = "refused"  # replay_bucket raised (or returned None): the rank runs eagerly


@dataclass(frozen=True)
class RankAnswer:
    """What one rank answered. ``admit`` is None when admit raised (``admit_error`` says what);
    ``bucket`` is None when replay_bucket refused (raised or returned None); ``rows`` is the
    local_rows answer for ``bucket`` (None when not asked or when it raised, see ``rows_error``)."""

    rank: int
    admit: bool | None
    admit_error: str | None
    bucket: object
    replay_error: str | None
    rows: tuple[object, ...] | None
    rows_error: str | None

    @property
    def decision(self) -> tuple[object, object]:
        """What ranks must agree on: (admit or 'raised', bucket or 'refused')."""
        return ("raised" if self.admit is None else self.admit, REFUSED if self.bucket is None else self.bucket)

    def describe(self) -> str:
        admit = f"raised {self.admit_error}" if self.admit is None else str(self.admit)
        replay = f"raised {self.replay_error}" if self.replay_error is not None else repr(self.bucket)
        text = f"admit={admit} replay_bucket={replay}"
        if self.rows is not None:
            text += f" local_rows={list(self.rows)}"
        elif self.rows_error is not None:
            text += f" local_rows raised {self.rows_error}"
        return text


@dataclass(frozen=True)
class Policy:
    """A policy's protocol functions, resolved once. ``local_rows`` is None when the policy has none."""

    name: str
    admit: Callable[..., Any]
    replay_bucket: Callable[..., Any]
    local_rows: Callable[..., Any] | None


def _error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 160 else text[:157] + "..."


def as_policy(policy: object, name: str | None = None) -> Policy:
    """Resolve the protocol functions of a module, an instance or a class (instantiated with no
    arguments). Raises TypeError naming what is missing."""
    if isinstance(policy, Policy):
        return policy
    label = name or getattr(policy, "__name__", None) or type(policy).__name__
    if isinstance(policy, type):
        try:
            policy = policy()
        except Exception as exc:
            raise TypeError(f"policy {label} is a class that cannot be built with no arguments: {_error(exc)}") from exc
    missing = [fn for fn in ("admit", "replay_bucket") if not callable(getattr(policy, fn, None))]
    if missing:
        raise TypeError(
            f"policy {label} must have callable admit(**batch) and replay_bucket(**batch); missing {', '.join(missing)}"
        )
    rows = getattr(policy, "local_rows", None)
    if rows is not None and not callable(rows):
        raise TypeError(f"policy {label}.local_rows must be callable when present, got {rows!r}")
    return Policy(str(label), getattr(policy, "admit"), getattr(policy, "replay_bucket"), rows)


def load_policy(target: str) -> Policy:
    """Import ``MODULE[:ATTR]`` (MODULE a dotted name or a .py path; ATTR may be dotted). The working
    directory is put on sys.path first, as pytest does. Raises ValueError, ImportError or TypeError
    with the reason."""
    if not isinstance(target, str) or not target or target.startswith(":"):
        raise ValueError(f"policy must be MODULE:ATTR (e.g. reference.policy or mypkg.sel:policy), got {target!r}")
    module_name, _, attr = target.partition(":") if ":" in target else (target, "", "")
    if not module_name or (":" in target and not attr) or ":" in attr:
        raise ValueError(f"policy must be MODULE:ATTR (e.g. reference.policy or mypkg.sel:policy), got {target!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise ImportError(f"cannot import policy module {module_name!r}: no such file {path}")
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)  # its sibling modules import as they would from there
        stem = os.path.splitext(os.path.basename(path))[0]
        name = f"cpgraph_policy_{stem}"
        loaded = sys.modules.get(name)
        if loaded is not None and getattr(loaded, "__file__", None) == path:
            module = loaded  # one module object per file, as an import would give
        else:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import policy module from {path!r}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[spec.name]
                raise ImportError(f"importing policy module {path!r} failed: {_error(exc)}") from exc
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ImportError(f"cannot import policy module {module_name!r}: {_error(exc)}") from exc
        except Exception as exc:
            raise ImportError(f"importing policy module {module_name!r} failed: {_error(exc)}") from exc
    obj: object = module
    for part in attr.split(".") if attr else ():
        if not hasattr(obj, part):
            raise ImportError(f"policy module {module_name!r} has no attribute {attr!r} (missing {part!r})")
        obj = getattr(obj, part)
    return as_policy(obj, target)


def _as_int(value: object) -> object:
    """Integer-likes (numpy ints, IntEnum) become int so they compare as buckets; bools and others stay."""
    if isinstance(value, bool) or isinstance(value, int) and type(value) is int:
        return value
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return value


def ask(policy: Policy, batch: Batch, ranks: Sequence[int] | None = None) -> tuple[RankAnswer, ...]:
    """Ask every rank (by keyword) admit, replay_bucket and, when the rank names a bucket and the policy
    has it, local_rows(bucket=...). Exceptions are answers, never crashes. Each rank gets its own copy
    of the capacity mapping, so a policy that writes to it cannot change what another rank sees.
    ``bool(admit)`` is taken as the answer; integer-likes (``__index__``) are read as ints."""
    base = batch.kwargs()
    table = base.pop("bucket_local_tokens")
    answers = []
    for rank in range(batch.cp_size) if ranks is None else ranks:
        kw = dict(base, cp_rank=rank, bucket_local_tokens=dict(table))
        admit: bool | None
        admit_error = replay_error = rows_error = None
        rows: tuple[object, ...] | None = None
        try:
            admit = bool(policy.admit(**kw))
        except Exception as exc:
            admit, admit_error = None, _error(exc)
        bucket: object
        try:
            bucket = _as_int(policy.replay_bucket(**kw))
        except Exception as exc:
            bucket, replay_error = None, _error(exc)
        if policy.local_rows is not None and bucket is not None:
            try:
                rows = tuple(_as_int(r) for r in policy.local_rows(bucket=bucket, **kw))
            except Exception as exc:
                rows_error = _error(exc)
        answers.append(RankAnswer(rank, admit, admit_error, bucket, replay_error, rows, rows_error))
    return tuple(answers)
