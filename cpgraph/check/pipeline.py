"""The one pipeline: a target loaded once, every subject it offers checked in one supervised session, one report.

``check_all(policy, **options)`` is the API (``cpgraph.check_all``); ``check_one(target, options)`` is what the command
line runs, once per release with ``--release`` and once per tree with ``--baseline``: the target imported under
the call timeout (an adapter's policy built from ``root`` when given), the prefill batches checked when it has
the prefill protocol (run.py), each other subject it offers (subjects/: the graph paths, the EP steps) after them,
every call of every subject bounded by the one session's timer, and a policy call that stops the check recorded
in the report (exit 1), or a usage error (exit 2) when it broke the protocol or an adapter cannot drive its
release.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from cpgraph.adapters import AdapterError, policy_at
from cpgraph.check.calls import PolicyStop, load_bounded, session
from cpgraph.check.options import CheckOptions, make_options
from cpgraph.check.protocol import Policy, as_policy, load_object
from cpgraph.check.report import CheckReport
from cpgraph.check.run import run_check
from cpgraph.check.subjects import Subject
from cpgraph.check.subjects.ep import EP_STEPS
from cpgraph.check.subjects.paths import GRAPH_PATHS
from cpgraph.output import UsageError

PART_SUBJECTS: Final[tuple[Subject, ...]] = (GRAPH_PATHS, EP_STEPS)  # beside the prefill batches, in the order they run


@dataclass(frozen=True)
class Loaded:
    """A target read once: its ``name``, its object, the prefill protocol when it has one, and what it offers
    of every other subject."""

    name: str
    obj: object
    policy: Policy | None
    offered: tuple[tuple[Subject, Sequence[Any]], ...]


def read(obj: object, name: str, options: CheckOptions) -> Loaded:
    """``obj`` (a module, an instance, or a class built with no arguments) read as a target; TypeError naming
    what is missing when it offers no subject, ValueError when an option asks what it does not offer."""
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as exc:
            raise TypeError(f"policy {name} is a class that cannot be built with no arguments: {exc}") from exc
    prefill = all(callable(getattr(obj, fn, None)) for fn in ("admit", "replay_bucket"))
    policy = as_policy(obj, name) if prefill else None
    offered = tuple((s, found) for s in PART_SUBJECTS if (found := s.offered(obj, options)))
    if policy is None and not offered:
        raise TypeError(f"policy {name} must have callable admit(**batch) and replay_bucket(**batch) (the prefill protocol), "
                        "or offer graph paths (graph_path_drivers(dcp_sizes), see cpgraph.PathDriver) or EP steps (ep_step_driver()); it has none")
    return Loaded(name, obj, policy, offered)


def run_subjects(loaded: Loaded, options: CheckOptions, progress: Callable[[str], None] | None = None, *,
                 workers: int | None = None) -> CheckReport:
    """Every subject of ``loaded`` through the stages, inside the caller's session: the prefill batches first,
    then each part; a policy call that stops a subject ends the check, recorded as the report's ``stop``."""
    root, family, version = (getattr(loaded.obj, name, None) for name in ("root", "family", "version"))
    about: dict[str, Any] = {"root": root if isinstance(root, str) else None, "family": str(family) if family else None,
                             "version": str(version) if version else None, "seed": options.seed}
    checked = tuple(i for i in options.invariants if i in options.checked)
    if loaded.policy is not None:
        try:
            report = replace(run_check(loaded.policy, options, progress, workers=workers), **about)
        except PolicyStop as stopped:
            return CheckReport(loaded.name, (), 0, 0.0, checked, (), "policy call", stopped.stop, **about)
    else:
        report = CheckReport(loaded.name, (), 0, 0.0, (), (), "no prefill protocol", batches=False, **about)
    parts: list[tuple[str, Any]] = []
    for subject, offered in loaded.offered:
        try:
            parts.append((subject.key, subject.check(loaded.obj, offered, options, loaded.name, progress)))
        except PolicyStop as stopped:
            return replace(report, parts=tuple(parts), stop=stopped.stop, stopped="policy call")
    return replace(report, parts=tuple(parts))


def check_all(policy: object, *, progress: Callable[[str], None] | None = None, workers: int | None = None,
          **options: Any) -> CheckReport:
    """Check ``policy`` (a module, an instance, a class, or 'MODULE:ATTR') on every subject it offers: the prefill
    batches (the prefill protocol) and its graph paths (``graph_path_drivers``, or a ``PathDriver`` itself).
    Options as ``make_options`` (``check_policy``'s, the graph-path ones, ``call_timeout_s``). Raises
    TypeError/ValueError on bad options or a policy that offers nothing, ImportError when a 'MODULE:ATTR'
    cannot be imported, and cpgraph.check.calls.PolicyStop when a call hangs, exits or breaks the protocol."""
    opts = make_options(**options)
    if workers is not None and workers not in (1, 2):
        raise ValueError(f"workers must be 1 or 2 (search processes), got {workers!r}")
    name = policy if isinstance(policy, str) else str(getattr(policy, "__name__", None) or type(policy).__name__)
    loaded = read(load_object(policy) if isinstance(policy, str) else policy, name, opts)
    with session(opts.call_timeout_s):
        report = run_subjects(loaded, opts, progress, workers=workers)
    if report.stop is not None:
        raise PolicyStop(report.stop)
    return report


def check_one(target: str, options: CheckOptions, *, root: str | None = None, progress: Callable[[str], None] | None = None,
              hard_exit: bool = False) -> CheckReport:
    """The command line's check of one target (module docstring): ``target`` imported under the call timeout
    (with ``root``, the adapter's policy over the release unpacked there), every subject checked, one report.
    UsageError when it cannot be loaded, breaks the protocol or cannot be driven; the policy's printing goes to
    stderr, so a report on stdout stays whole."""
    with session(options.call_timeout_s, hard_exit=hard_exit), contextlib.redirect_stdout(sys.stderr):
        try:
            obj = load_bounded(lambda: load_object(target) if root is None else policy_at(target, root), target)
            loaded = read(obj, target, options)
        except (ImportError, TypeError, ValueError, AdapterError) as exc:
            raise UsageError(f"cannot load policy {target!r}: {exc}") from None
        report = run_subjects(loaded, options, progress)
    stop = report.stop
    if stop is not None and stop.kind == "glue":
        raise UsageError(f"adapter glue: {stop.detail}; batch: {stop.batch}")
    if stop is not None and stop.protocol_error:
        raise UsageError(f"protocol error: {stop.line()}")
    return report
