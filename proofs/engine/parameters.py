"""The parameters the theorems run at: what ``cpgraph prove`` checks, beside proofs/engine/scope.py's declaration
of what it claims (two statements on purpose: the teeth pass fails a theorem when they differ). Kept apart so
that the obligations, the theorems and the scope's README sentences read one value without importing each
other."""

from __future__ import annotations

MAX_LIST_LENGTH = 32  # selection theorems: every capture list of 1..32 buckets (values unbounded)
SAMPLED_CP_SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32)  # the end-to-end theorems' default cp_sizes
SMALL_CP_SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16)  # DualChunkSwap's per-request theorems (2P If-chunks per rank)
FOLD_CP_SIZES = (1, 2, 3, 4, 8)  # the P at which the fold theorem calls admission's decision and replay's tripwire
EVERY_RANK_MAX_P = 8  # the consensus theorems compare every rank up to here; above, the ranks of ``ranks_at``
