"""The subjects a check judges, each passed through the same stages: generate cases, call the policy under
supervision (calls.py: the per-call timeout, exits, protocol breaks, alike on every subject), judge against
``reference``, minimise (a subject's "smaller" moves), report (one ``CheckReport``, findings that read alike:
verdict.py), emit a test.

- prefill batches (``batches.py``): a policy with the prefill protocol (``admit``, ``replay_bucket``, ...;
  protocol.py); its stages are generate.py, asking.py, judging.py, minimize.py + canon.py, report.py, emit.py,
  and its findings are the report's own ``violations``.
- graph-path steps with DP ranks (``paths.py``): a policy that offers path drivers (``graph_path_drivers``, or
  is a driver: ``PathDriver``); its findings are a ``Part`` of the report, under ``graph_paths``.
- EP steps (``ep.py``): a policy that offers an EP driver (``ep_step_driver()``, Megatron-Core's adapter); its
  findings are a ``Part`` of the report, under ``ep_steps``.

Every finding, on every subject, is the one record cpgraph/check/finding.py ``Violation`` with the subject's
witness (``BatchWitness``, ``PathWitness``, ``EpWitness``). A subject that reports as a part implements
``Subject`` and supervises its driver's calls (``path_calls.py``, ``ep_calls.py``); it is a module here and a
row of ``PART_SUBJECTS``, and its sentences a column of reference/invariants.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from cpgraph.check.options import CheckOptions


@runtime_checkable
class Finding(Protocol):
    """A minimised violation on any subject, as the report reads it: the one record (finding.py ``Violation``)
    satisfies it; one headline (verdict.py), the invariant, where, why, its text and JSON."""

    @property
    def invariant(self) -> str: ...

    @property
    def why(self) -> str: ...

    @property
    def where(self) -> str: ...

    def text(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


@runtime_checkable
class Part(Protocol):
    """A subject's part of the one report: its verdict, a one-line summary and its findings."""

    @property
    def ok(self) -> bool: ...

    @property
    def violations(self) -> Sequence[Any]: ...

    def summary(self) -> str: ...

    def junit_cases(self, suite: str) -> list[Any]: ...

    def to_json(self) -> dict[str, Any]: ...


class Subject(Protocol):
    """A subject the pipeline runs beside the prefill batches: ``key`` (its JSON key and name), ``column`` (its
    sentence column in reference/invariants.py), ``offered`` (what the policy ``obj`` offers of it, None: nothing) and
    ``check`` (the stages over it, calls supervised by the session the pipeline opened)."""

    key: str
    column: str

    def offered(self, obj: object, options: CheckOptions) -> Sequence[Any] | None: ...

    def check(self, obj: object, offered: Sequence[Any], options: CheckOptions, name: str,
              progress: Callable[[str], None] | None) -> Part: ...
