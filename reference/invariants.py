"""The invariant ids of SEMANTICS.md, stated once: every checker, review and spec uses these names."""

from __future__ import annotations

from typing import Final

SAFETY: Final = ("rank_consensus", "admission_replay", "captured_bucket", "padding_limit", "capacity_fit")
EFFICIENCY: Final = ("minimal_bucket", "no_needless_fallback")
INVARIANTS: Final = SAFETY + EFFICIENCY
