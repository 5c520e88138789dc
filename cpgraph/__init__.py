"""cpgraph: invariants, proofs and checkers for context-parallel prefill under CUDA graphs.

Importing the package is cheap: ``check_policy`` (and its report type) load on first use, and
nothing here imports torch, z3 or matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cpgraph.check import CheckReport, check_policy

__all__ = ["CheckReport", "check_policy"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from cpgraph import check

        return getattr(check, name)
    raise AttributeError(f"module 'cpgraph' has no attribute {name!r}")
