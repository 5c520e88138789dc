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


def dual_chunk_swap_loads(lengths: Sequence[int], flags: Sequence[bool] | None, cp_size: int) -> list[int]:
    """Per-rank rows under vLLM's DualChunkSwap, written plainly: a prefill cut into 2P chunks of
    ceil(L/2P) (rank r takes chunks r and 2P-1-r), the k-th decode on rank k mod P."""
    s = 2 * cp_size
    loads = [0] * cp_size
    decode = 0
    for i, length in enumerate(lengths):
        if flags is not None and not flags[i]:
            loads[decode % cp_size] += length
            decode += 1
            continue
        c = -(-length // s)
        for r in range(cp_size):
            loads[r] += max(0, min(c, length - r * c)) + max(0, min(c, length - (s - 1 - r) * c))
    return loads


def local_protocol(dispatch: Selector, replay: Selector) -> tuple[Callable[..., bool], Callable[..., int], Selector]:
    """(admit, replay_bucket, admitted_bucket) of a local-keyed policy whose admission dispatches with
    ``dispatch`` and whose replay pads to ``replay``'s size (the two must be one selector when correct)."""

    def admit(**batch: Any) -> bool:
        return dispatch(**batch) is not None

    def replay_bucket(**batch: Any) -> int:
        if dispatch(**batch) is None:
            raise LookupError("no captured size holds this batch; run eagerly")
        size = replay(**batch)
        assert size is not None
        return size

    return admit, replay_bucket, dispatch


def local_select(**batch: Any) -> int | None:
    """The local keying's selection: the least captured size >= the largest rank-local rows."""
    key = max(dual_chunk_swap_loads(batch["extend_seq_lens"], batch.get("is_prefilling"), batch["cp_size"]))
    return next((s for s in batch["capture_num_tokens"] if s >= key), None)
