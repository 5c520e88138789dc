"""Shared rungs for the mutants: zigzag loads, alignment, the correct selection built from its rungs
(``selector``: a mutant passes the one rung it changes) and the protocol built from one selector.

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


Batch = Mapping[str, Any]
Rung = Callable[[int, Batch], bool]  # (bucket, batch) -> whether the scan's window rung holds


def busiest_rows(batch: Batch) -> int:
    """The correct sizing: the busiest rank's zigzag load, aligned up to A."""
    return align_up(max(zigzag_loads(batch["extend_seq_lens"], batch["cp_size"])), batch["align_size"])


def below_n(bucket: int, batch: Batch) -> bool:
    """The correct lower end: a bucket below n is skipped."""
    return bool(bucket < batch["num_tokens"])


def past_fn(bucket: int, batch: Batch) -> bool:
    """The correct upper end: the scan stops past F*n."""
    return bool(bucket > batch["max_padding_factor"] * batch["num_tokens"])  # F may be a Fraction


def never(bucket: int, batch: Batch) -> bool:
    return False


def fits(rows: int | None, required: int) -> bool:
    """The correct fit: a recorded capacity of at least the required rows (an absent one never fits)."""
    return rows is not None and rows >= required


def walk(
    required: int, batch: Batch, skip: Rung = below_n, stop: Rung = past_fn, fit: Callable[[int | None, int], bool] = fits
) -> int | None:
    """The scan over the captured buckets: ``skip`` passes a bucket over, ``stop`` ends the scan, the
    first bucket whose rows ``fit`` the required ones is taken."""
    for bucket in batch["capture_num_tokens"]:
        if skip(bucket, batch):
            continue
        if stop(bucket, batch):
            break
        if fit(batch["bucket_local_tokens"].get(bucket), required):
            return int(bucket)
    return None


def scan(
    required: int,
    num_tokens: int,
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int],
    max_padding_factor: int,
) -> int | None:
    """The correct scan: skip buckets below n, stop above F*n, skip absent capacities."""
    batch = {
        "num_tokens": num_tokens, "capture_num_tokens": capture_num_tokens,
        "bucket_local_tokens": bucket_local_tokens, "max_padding_factor": max_padding_factor,
    }
    return walk(required, batch)


def selector(
    required: Callable[[Batch], int] = busiest_rows,
    *,
    skip: Rung = below_n,
    stop: Rung = past_fn,
    fit: Callable[[int | None, int], bool] = fits,
    pick: Callable[[int, Batch], int | None] | None = None,
) -> Selector:
    """The correct selection with the one rung a mutant changes replaced: ``required`` sizes the busiest
    rank, ``skip``/``stop``/``fit`` are the scan's rungs (see ``walk``), ``pick`` replaces the whole scan.
    None when context parallelism is off for the batch."""

    def select(**batch: Any) -> int | None:
        if not cp_active(batch["extend_seq_lens"], batch["num_tokens"], batch["cp_size"]):
            return None
        need = required(batch)
        return walk(need, batch, skip, stop, fit) if pick is None else pick(need, batch)

    return select


correct_select: Selector = selector()
"""The spec's selection, written plainly (the base every mutant perturbs)."""


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
