"""Memoises the decision by the batch's lengths only, not the capture table: a bucket chosen under one
table is replayed under another (a dispatcher cache keyed too coarsely)."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import correct_select, protocol

CAUGHT_AS: Final = "capacity_fit"

_memo: dict[tuple[int, tuple[int, ...]], int | None] = {}


def select(**batch: Any) -> int | None:
    key = (batch["cp_size"], tuple(batch["extend_seq_lens"]))
    if key not in _memo:
        _memo[key] = correct_select(**batch)
    return _memo[key]


admit, replay_bucket = protocol(select)
