"""The reference as a policy (the protocol of ``cpgraph check``): admit, replay_bucket, local_rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict, Unpack

from cpgraph.reference.capacity import required_local_tokens
from cpgraph.reference.lists import compact
from cpgraph.reference.selection import is_cp_active, select_replay_bucket


class PolicyBatch(TypedDict):
    """The keywords every policy call receives, by name (the protocol of ``cpgraph check``)."""

    cp_rank: int
    cp_size: int
    align_size: int
    num_tokens: int
    extend_seq_lens: Sequence[int]
    capture_num_tokens: Sequence[int]
    bucket_local_tokens: Mapping[int, int | None]
    max_padding_factor: int


BATCH_KEYWORDS = frozenset(PolicyBatch.__annotations__)


def check_batch_keywords(caller: str, batch: Mapping[str, object]) -> None:
    """A policy function takes exactly the batch keywords; anything else is a TypeError, as a signature gives."""
    if batch.keys() != BATCH_KEYWORDS:
        missing, unexpected = sorted(BATCH_KEYWORDS - batch.keys()), sorted(batch.keys() - BATCH_KEYWORDS)
        raise TypeError(
            f"{caller}() takes exactly the batch keywords {sorted(BATCH_KEYWORDS)}; "
            f"missing {missing}, unexpected {unexpected}"
        )


def _select(caller: str, batch: PolicyBatch) -> int | None:
    check_batch_keywords(caller, batch)
    lengths, n, p = batch["extend_seq_lens"], batch["num_tokens"], batch["cp_size"]
    if not is_cp_active(lengths, num_tokens=n, cp_size=p):
        return None
    return select_replay_bucket(
        num_tokens=n,
        required_local_tokens=required_local_tokens(lengths, cp_size=p, align_size=batch["align_size"]),
        capture_num_tokens=batch["capture_num_tokens"],
        bucket_local_tokens=batch["bucket_local_tokens"],
        max_padding_factor=batch["max_padding_factor"],
    )


def admit(**batch: Unpack[PolicyBatch]) -> bool:
    """Would this rank replay a graph for this batch? (Rank-invariant: ``cp_rank`` is not used.)"""
    return _select("admit", batch) is not None


def replay_bucket(**batch: Unpack[PolicyBatch]) -> int:
    """The bucket this rank pads to; raises LookupError when the batch was not admitted."""
    bucket = _select("replay_bucket", batch)
    if bucket is None:
        raise LookupError(
            f"no captured bucket fits num_tokens={batch['num_tokens']}, "
            f"extend_seq_lens={compact(tuple(batch['extend_seq_lens']))}"
        )
    return bucket


def local_rows(*, bucket: int, **batch: Unpack[PolicyBatch]) -> tuple[int, ...]:
    """Physical rows per rank when replaying at ``bucket``: every rank pads to align_up(max load, A)."""
    check_batch_keywords("local_rows", batch)
    p = batch["cp_size"]
    return (required_local_tokens(batch["extend_seq_lens"], cp_size=p, align_size=batch["align_size"]),) * p
