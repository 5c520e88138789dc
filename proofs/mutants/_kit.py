"""Shared rungs for the mutants: zigzag loads, alignment, and the protocol built from one selector.

Each mutant module changes exactly one rung of the correct selection (the bug it models) and states
the invariant ``cpgraph check`` must catch it on as ``CAUGHT_AS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Selector = Callable[..., "int | None"]


def align_up(value: int, align: int) -> int:
    return -(-value // align) * align


def zigzag_loads(lengths: Sequence[int], cp_size: int) -> list[int]:
    """Per-rank real tokens: rank r owns blocks r and 2P-1-r; block j has floor(L/2P) + [j < L mod 2P]."""
    s = 2 * cp_size
    loads = [0] * cp_size
    for length in lengths:
        q, m = divmod(length, s)
        for r in range(cp_size):
            loads[r] += 2 * q + (r < m) + (s - 1 - r < m)
    return loads


def cp_active(lengths: Sequence[int], num_tokens: int, cp_size: int) -> bool:
    return cp_size > 1 and num_tokens >= 2 * cp_size and all(length >= 2 * cp_size for length in lengths)


def scan(
    required: int,
    num_tokens: int,
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int],
    max_padding_factor: int,
) -> int | None:
    """The correct scan: skip buckets below n, stop above F*n, skip absent capacities."""
    for bucket in capture_num_tokens:
        if bucket < num_tokens:
            continue
        if bucket > max_padding_factor * num_tokens:
            break
        rows = bucket_local_tokens.get(bucket)
        if rows is not None and rows >= required:
            return bucket
    return None


def correct_select(**batch: Any) -> int | None:
    """The spec's selection, written plainly (the base every mutant perturbs)."""
    lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
    if not cp_active(lengths, n, p):
        return None
    required = align_up(max(zigzag_loads(lengths, p)), batch["align_size"])
    return scan(required, n, batch["capture_num_tokens"], batch["bucket_local_tokens"], batch["max_padding_factor"])


def protocol(select: Selector) -> tuple[Callable[..., bool], Callable[..., int]]:
    """(admit, replay_bucket) that both call ``select``; replay raises LookupError when it returns None."""

    def admit(**batch: Any) -> bool:
        return select(**batch) is not None

    def replay_bucket(**batch: Any) -> int:
        bucket = select(**batch)
        if bucket is None:
            raise LookupError(f"no captured bucket fits num_tokens={batch['num_tokens']}; run eagerly")
        return bucket

    return admit, replay_bucket
