"""cpgraph: invariants, proofs and checkers for context-parallel prefill under CUDA graphs.

The API: ``check_all(policy, **options)`` checks a policy on every subject it offers (prefill batches through the
prefill protocol, graph-path steps through ``PathDriver``s, EP steps through an ``ep_step_driver()``) and returns
one ``CheckReport``, every finding in it one ``cpgraph.check.Violation`` record; ``check_policy``
checks the prefill batches alone. A graph-path driver answers with ``PathAnswer``s about ``GraphStep``s under a
``GraphConfig``'s ``Graph``s. A prefill policy may show the layout a rank built (its optional ``local_layout``) as a
``LaidOut`` record. Importing the package is cheap: the names load on first use, and nothing here
imports torch, z3 or matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cpgraph.check import CheckReport, PathDriver, check_all, check_policy
    from cpgraph.reference.graph_paths import Graph, GraphConfig, GraphStep, PathAnswer
    from cpgraph.reference.laid_out import LaidOut

__all__ = ["CheckReport", "Graph", "GraphConfig", "GraphStep", "LaidOut", "PathAnswer", "PathDriver", "check_all", "check_policy"]
_FROM_CHECK = ("CheckReport", "PathDriver", "check_all", "check_policy")


def __getattr__(name: str) -> Any:
    if name in _FROM_CHECK:
        import cpgraph.check

        return getattr(cpgraph.check, name)
    if name == "LaidOut":
        from cpgraph.reference import laid_out

        return laid_out.LaidOut
    if name in __all__:
        from cpgraph.reference import graph_paths

        return getattr(graph_paths, name)
    raise AttributeError(f"module 'cpgraph' has no attribute {name!r}")
