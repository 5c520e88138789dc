"""The policy protocol (v2): load a policy by MODULE:ATTR and ask every rank about a batch, capturing errors.

Upstream's call contract: ``can_run_graph`` first, and ``load_batch`` (which pads to the bucket) only after
it said yes. So ``ask`` asks ``admit`` on every rank and ``replay_bucket`` only on a rank that admitted
(``ask_replay='admitted'``, the default); ``ask_replay='always'`` asks it on every rank, for policies that
promise a total replay function (refusing what admission refused).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import operator
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cpgraph.check.batch import Batch, Factor, parse_factor
from cpgraph.reference.keying import keying_row
from cpgraph.reference.validate import check_strategy
from cpgraph.reference.judge import NOT_ASKED as NOT_ASKED, REFUSED as REFUSED, RankAnswer as RankAnswer, rank_answer

ASK_REPLAY = ("admitted", "always")  # protocol v2 (replay only after admission) / the strict total replay

KNOBS = ("max_padding_factor", "align_size", "strategy", "keying")  # fixed knobs a policy may declare as attributes


@dataclass(frozen=True)
class Policy:
    """A policy's protocol functions, resolved once. ``local_rows`` is None when the policy has none.
    ``knobs``: the fixed knobs it declares as attributes (``max_padding_factor`` as an int or exact
    rational, ``align_size`` as an int or 'kP', ``strategy`` as a strategy id), which the check honours
    when no flag or option sets them."""

    name: str
    admit: Callable[..., Any]
    replay_bucket: Callable[..., Any]
    local_rows: Callable[..., Any] | None
    knobs: tuple[tuple[str, object], ...] = ()
    asker: Any = field(default=None, compare=False, repr=False)  # calls.RankAsker, set by calls.bound
    admitted_bucket: Callable[..., Any] | None = None  # optional: the size admission chose
    takes_prefilling: bool = False  # its functions accept ``is_prefilling`` (batches with decodes)
    decided_at: Callable[..., Any] | None = field(default=None, compare=False, repr=False)  # optional: where it decides
    local_layout: Callable[..., Any] | None = None  # optional: the layout a rank built for its bucket (a LaidOut)

    def knob(self, name: str) -> object:
        """The declared value of knob ``name``, or None."""
        return dict(self.knobs).get(name)


def align_text(label: str, value: object) -> str:
    """An alignment as the check writes it: an int ('16') or a multiple of cp_size ('P', '2P').
    TypeError/ValueError name ``label``, the value and what is allowed."""
    allowed = "an int >= 1 or a multiple of cp_size written kP (P, 2P, 4P)"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{label} must be {allowed}, got {value!r} ({type(value).__name__})")
    text = str(value).strip().upper()
    digits = text[:-1] if text.endswith("P") else text
    if digits == "" and text == "P":
        return "P"
    if not digits.isdigit() or int(digits) < 1:
        raise ValueError(f"{label} must be {allowed}, got {value!r}")
    return f"{int(digits)}P" if text.endswith("P") else str(int(digits))


def _declared_knobs(policy: object, label: str) -> tuple[tuple[str, object], ...]:
    """The fixed knobs ``policy`` declares (attributes that are plain values; callables are ignored)."""
    out: list[tuple[str, object]] = []
    factor = getattr(policy, "max_padding_factor", None)
    if factor is not None and not callable(factor):
        declared: Factor = parse_factor(f"policy {label}.max_padding_factor", factor)
        out.append(("max_padding_factor", declared))
    align = getattr(policy, "align_size", None)
    if align is not None and not callable(align):
        out.append(("align_size", align_text(f"policy {label}.align_size", align)))
    strategy = getattr(policy, "strategy", None)
    if isinstance(strategy, str):
        out.append(("strategy", check_strategy(strategy)))
    keying = getattr(policy, "keying", None)
    if keying is not None and not callable(keying):
        try:
            out.append(("keying", keying_row(keying).id))
        except ValueError as exc:
            raise ValueError(f"policy {label}.keying: {exc}") from None
    return tuple(out)


def _takes_prefilling(*fns: Callable[..., Any] | None) -> bool:
    """Do all of ``fns`` accept the keyword ``is_prefilling`` (by name or through **kwargs)?"""
    for fn in fns:
        if fn is None:
            continue
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return False
        if not any(p.name == "is_prefilling" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return False
    return True


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
    admitted = getattr(policy, "admitted_bucket", None)
    if admitted is not None and not callable(admitted):
        raise TypeError(f"policy {label}.admitted_bucket must be callable when present, got {admitted!r}")
    layout = getattr(policy, "local_layout", None)
    if layout is not None and not callable(layout):
        raise TypeError(f"policy {label}.local_layout must be callable when present, got {layout!r}")
    knobs = _declared_knobs(policy, str(label))
    admit_fn, replay_fn = getattr(policy, "admit"), getattr(policy, "replay_bucket")
    takes = _takes_prefilling(admit_fn, replay_fn, rows, admitted)
    cites = getattr(policy, "decided_at", None)
    return Policy(str(label), admit_fn, replay_fn, rows, knobs, admitted_bucket=admitted, takes_prefilling=takes,
                  decided_at=cites if callable(cites) else None, local_layout=layout)


def load_policy(target: str) -> Policy:
    """Import ``MODULE[:ATTR]`` (MODULE a dotted name or a .py path; ATTR may be dotted). The working
    directory is put on sys.path first, as pytest does. Raises ValueError, ImportError or TypeError
    with the reason."""
    return as_policy(load_object(target), target)


def load_object(target: str) -> object:
    """The object ``MODULE[:ATTR]`` names (see load_policy), imported; not yet read as a policy."""
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
    return obj


def _as_int(value: object) -> object:
    """Integer-likes (numpy ints, IntEnum) become int so they compare as buckets; bools and others stay."""
    if isinstance(value, bool) or isinstance(value, int) and type(value) is int:
        return value
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return value


def ask(
    policy: Policy, batch: Batch, ranks: Sequence[int] | None = None, *, ask_replay: str = "admitted"
) -> tuple[RankAnswer, ...]:
    """Ask every rank (by keyword) admit, then replay_bucket (only where admit said True, unless
    ``ask_replay='always'``) and, when the rank names a bucket and the policy has it,
    local_rows(bucket=...). Exceptions are answers, never crashes. Each rank gets its own copy of the
    capacity mapping, so a policy that writes to it cannot change what another rank sees.
    ``bool(admit)`` is taken as the answer; integer-likes (``__index__``) are read as ints."""
    always = ask_replay == "always"
    if not always and ask_replay != "admitted":
        raise ValueError(f"ask_replay must be one of {', '.join(ASK_REPLAY)}; got {ask_replay!r}")
    asker = policy.asker
    if asker is not None and asker.serves(policy) and policy.admitted_bucket is None:  # bound: no wrapper between
        given: tuple[RankAnswer, ...] = asker(batch, ranks, always)
        return given
    base = batch.kwargs()
    table = base.pop("bucket_local_tokens")
    admit_fn, replay_fn, rows_fn = policy.admit, policy.replay_bucket, policy.local_rows
    admitted_fn, layout_fn = policy.admitted_bucket, policy.local_layout
    answers = []
    for rank in range(batch.cp_size) if ranks is None else ranks:
        kw = base.copy()
        kw["cp_rank"] = rank
        kw["bucket_local_tokens"] = table.copy()
        admit: bool | None
        admit_error = replay_error = rows_error = None
        rows: tuple[object, ...] | None = None
        try:
            admit = bool(admit_fn(**kw))
        except Exception as exc:
            admit, admit_error = None, _error(exc)
        admitted: object = None
        if admitted_fn is not None and admit is True:
            try:
                admitted = _as_int(admitted_fn(**kw))
            except Exception as exc:
                admit, admit_error = None, f"admitted_bucket raised {_error(exc)}"
        bucket: object = None
        asked = always or admit is True
        if asked:
            try:
                bucket = replay_fn(**kw)
                if type(bucket) is not int:
                    bucket = _as_int(bucket)
            except Exception as exc:
                bucket, replay_error = None, _error(exc)
        if rows_fn is not None and bucket is not None:
            try:
                rows = tuple(_as_int(r) for r in rows_fn(bucket=bucket, **kw))
            except Exception as exc:
                rows_error = _error(exc)
        layout: object = None
        if layout_fn is not None and bucket is not None:
            try:
                layout = layout_fn(bucket=bucket, **kw)
            except Exception as exc:
                layout = _error(exc)  # judged under capacity_fit, as a local_rows that raised is
        answers.append(rank_answer(rank, admit, admit_error, bucket, replay_error, rows, rows_error, asked, admitted, layout))
    return tuple(answers)
