"""An adapter's policy over one release of its stack: the release a counterexample came from, named so that
an emitted test runs against it again (``release_policy``), and the stack an adapter module drives."""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from cpgraph.adapters import policy_at, stack_targets
from cpgraph.adapters.releases import fetch, release_version
from cpgraph.check.protocol import Policy, as_policy, load_policy
from cpgraph.reference.graph_paths import GraphConfig, GraphStep, judge_dp

ENV = "CPGRAPH_RELEASE"  # set to 'installed': an emitted test runs against the installed stack instead
INSTALLED = "installed"


@dataclass(frozen=True)
class Release:
    """One release an adapter drives: its ``package`` ('vllm', 'sglang'), ``version`` and the folder it was
    unpacked in (``root``)."""

    package: str
    version: str
    root: str

    @property
    def label(self) -> str:
        return f"{'vLLM' if self.package == 'vllm' else self.package} {self.version}"


def adapter_package(target: str) -> str:
    """The stack the adapter module of ``target`` (MODULE:ATTR) drives: its ``PACKAGE``; ValueError when the
    module is no adapter."""
    module_name = target.partition(":")[0]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--release needs an adapter policy ({', '.join(stack_targets())}); "
                         f"cannot import {module_name!r}: {exc}") from None
    package = getattr(module, "PACKAGE", None)
    if not isinstance(package, str) or not callable(getattr(module, "policy_from", None)):
        raise ValueError(f"--release needs an adapter policy ({', '.join(stack_targets())}); "
                         f"{module_name!r} drives no released stack")
    return package


def release_at(target: str, root: str) -> Release:
    """The release unpacked under ``root`` that the adapter of ``target`` drives."""
    package = adapter_package(target)
    return Release(package, release_version(os.path.abspath(root), package), os.path.abspath(root))


def release_object(target: str, version: str, root: str | None = None) -> object:
    """The adapter's own object ``target`` over release ``version`` of its stack: unpacked under ``root`` when
    that folder holds the package, else fetched from the package index (cpgraph.adapters.releases.fetch).
    With the environment variable CPGRAPH_RELEASE=installed, the installed stack's instead (a maintainer runs
    an emitted test in their own checkout)."""
    if os.environ.get(ENV) == INSTALLED:
        module_name, _, attr = target.partition(":")
        return getattr(importlib.import_module(module_name), attr)
    package = adapter_package(target)
    if root is None or not os.path.isdir(os.path.join(root, package)):
        root = str(fetch(package, version))
    return policy_at(target, root)


def release_policy(target: str, version: str, root: str | None = None) -> Policy:
    """The policy ``target`` over release ``version`` (see release_object), for the protocol's checks."""
    if os.environ.get(ENV) == INSTALLED:
        return load_policy(target)
    return as_policy(release_object(target, version, root), target)


def path_broken(target: str, version: str, root: str | None, steps: GraphStep | Sequence[GraphStep], config: GraphConfig,
                invariant: str, *, dcp_size: int = 1) -> str:
    """Why the release's graph path breaks ``invariant`` on ``steps`` (one per DP rank, or one step) under
    ``config`` (every rank's answer listed), or '' when it keeps it: what an emitted graph-path test asserts."""
    driver = paths_driver(release_object(target, version, root), dcp_size)
    placed = tuple(replace(s, placement=driver.placement(s.cp_size)) for s in ((steps,) if isinstance(steps, GraphStep) else steps))
    answers = driver.answers_dp(placed, config)
    found = [f for f in judge_dp(list(zip(placed, answers)), driver.captured(config)) if f.invariant == invariant]
    ranks = "\n".join(f"  DP rank {d} rank {a.rank}: {a.describe()}" for d, group in enumerate(answers) for a in group)
    return f"{found[0].why}\n{ranks}" if found else ""


def paths_driver(obj: object, dcp_size: int = 1) -> Any:
    """The graph-path driver of an adapter's object (``graph_path_drivers``); ValueError when it has none."""
    drivers = getattr(obj, "graph_path_drivers", None)
    if not callable(drivers):
        raise ValueError(f"{obj!r} drives no graph paths beside the prefill bucket (no graph_path_drivers)")
    return drivers((dcp_size,))[0]
