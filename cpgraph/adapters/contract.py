"""The contract every stack adapter implements: one package under ``cpgraph/adapters/`` per serving stack.

A stack adapter is a folder ``cpgraph/adapters/<stack>/`` whose package (``cpgraph.adapters.<stack>``)
provides, at module level, what ``StackAdapter`` declares below, and whose policies provide what
``ReleasePolicy`` declares. ``cpgraph.adapters.stacks()`` finds the stacks from the folders that exist and
``conformance(module)`` names what a folder is missing; ``tests/unit/test_adapters_contract.py`` holds every
stack to it. The recipe for a new stack is CONTRIBUTING.md's "Adding a stack".

The rule the contract serves: run the stack's own decision code, never retype it. What cannot run on a CPU
without a server (a collective, the scheduler, a GPU tensor) is stood in for, each stand-in listed in
``STOOD_IN``; a line of the release that changes a value reaching the graph decision and that the adapter
cannot drive is refused with the release's file:line (an ``AdapterError`` or a glue error, exit 2), never
ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Driven:
    """A piece of the release the adapter executes from the release's own files: ``what`` (a function,
    method or module) and ``where`` (its file inside the release)."""

    what: str
    where: str


@dataclass(frozen=True)
class StandIn:
    """Something the adapter stands in for, because a CPU process cannot have the real one: ``what`` the
    release would get at run time and ``why`` a stand-in is sound for the decision being checked."""

    what: str
    why: str


class StackAdapter(Protocol):
    """What the package ``cpgraph.adapters.<stack>`` provides at module level.

    Finding and loading a release: ``PACKAGE`` is the stack's distribution on the package index (also the
    name ``--release`` fetches, cpgraph/adapters/releases.py); ``installed_root()`` the folder holding the
    installed package (an ``AdapterError`` naming what to install when it is missing); ``policy_from(root,
    name)`` builds policy ``name`` from a release unpacked under ``root`` (only its .py files are needed),
    checking first that the adapter's glue fits that release (exit 2 naming the release's file:line when it
    does not). ``POLICIES`` are the names ``cpgraph check cpgraph.adapters.<stack>:<name>`` serves; the
    package's ``__getattr__`` builds each from the installed release on first use.

    A stack whose import package has another name than its distribution declares ``IMPORT_PACKAGE``, and one
    whose wheels need pip arguments to download (a Python version, say) ``DOWNLOAD_ARGS``: both optional,
    read by cpgraph/adapters/releases.py, which lists the stacks' distributions from the folders.

    The support range: ``READ_AGAINST``, the releases the adapter was read against (oldest first), and
    ``NEWEST`` the last of them. A newer release is driven when its code fits, else refused.

    What runs and what does not: ``EXECUTED`` lists what the adapter runs from the release's own files and
    ``STOOD_IN`` what it stands in for (README and the adapter's docs say no more than these)."""

    STACK: str
    PACKAGE: str
    POLICIES: tuple[str, ...]
    READ_AGAINST: tuple[str, ...]
    NEWEST: str
    EXECUTED: tuple[Driven, ...]
    STOOD_IN: tuple[StandIn, ...]

    def installed_root(self) -> str: ...

    def policy_from(self, root: str, policy: str = ...) -> object: ...


@runtime_checkable
class ReleasePolicy(Protocol):
    """What a stack adapter's policy provides beside the checked protocol (``admit`` / ``replay_bucket`` /
    ``local_rows`` for prefill batches, cpgraph/check/protocol.py): the release it drives (``root``,
    ``version``), where each decision it drives is in the release (``citations()``: step -> file:line), and
    the file each executed function came from (``code_files()``: name -> path inside ``root``), so a
    report cites the release and a test can check nothing ran from elsewhere.

    A policy that also drives graph paths has ``graph_path_drivers(dcp_sizes)`` (cpgraph/check/paths.py's
    ``PathDriver``).

    Where the release decides, one method for every subject:
    ``decided_at(invariant: str, batch: Mapping[str, object] | None = None) -> tuple[str, ...]``, the
    release's lines (``file:line`` inside ``root``) that decide a finding of ``invariant``; with ``batch``
    (one rank's keyword arguments, as ``admit`` takes them) the lines that decided that prefill batch, the
    lines its answer depends on where the adapter can narrow them (sglang: the lines changed from the
    pristine release that ran, else every line that ran in the deciding functions); without it, the lines
    that decide a step's graph (graph paths). ``cpgraph check`` fills a prefill finding's ``decided_at``
    from it on the minimised batch. An adapter may still offer the one-argument form
    ``decided_at(invariant)``; the check then cites those lines for prefill findings too."""

    root: str
    version: str

    def citations(self) -> Mapping[str, str]: ...

    def code_files(self) -> Mapping[str, str]: ...


REQUIRED: tuple[str, ...] = ("STACK", "PACKAGE", "POLICIES", "READ_AGAINST", "NEWEST", "EXECUTED", "STOOD_IN",
                             "installed_root", "policy_from")


def conformance(module: object) -> list[str]:
    """What ``module`` (a stack adapter's package) lacks of ``StackAdapter``: one line per missing or
    mistyped name; empty when it conforms."""
    problems: list[str] = []
    for name in REQUIRED:
        if not hasattr(module, name):
            problems.append(f"{name} is missing")
    for name in ("STACK", "PACKAGE", "NEWEST"):
        value = getattr(module, name, "")
        if hasattr(module, name) and (not isinstance(value, str) or not value):
            problems.append(f"{name} must be a non-empty str, got {value!r}")
    for name, kind in (("POLICIES", str), ("READ_AGAINST", str), ("EXECUTED", Driven), ("STOOD_IN", StandIn)):
        value = getattr(module, name, ())
        if hasattr(module, name) and (not isinstance(value, tuple) or not value or not all(isinstance(v, kind) for v in value)):
            problems.append(f"{name} must be a non-empty tuple of {kind.__name__}, got {value!r}")
    for name in ("installed_root", "policy_from"):
        if hasattr(module, name) and not callable(getattr(module, name)):
            problems.append(f"{name} must be callable")
    read: Sequence[str] = getattr(module, "READ_AGAINST", ())
    if isinstance(read, tuple) and read and getattr(module, "NEWEST", None) != read[-1]:
        problems.append(f"NEWEST must be READ_AGAINST's last release {read[-1]!r}, got {getattr(module, 'NEWEST', None)!r}")
    return problems
