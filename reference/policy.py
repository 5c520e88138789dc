"""The reference as a policy (the protocol of ``cpgraph check``): admit, replay_bucket, local_rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reference.capacity import required_local_tokens
from reference.layout import rank_loads
from reference.selection import is_cp_active, select_replay_bucket


def _select(
    *,
    cp_size: int,
    align_size: int,
    num_tokens: int,
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int,
) -> int | None:
    if not is_cp_active(extend_seq_lens, num_tokens=num_tokens, cp_size=cp_size):
        return None
    required = required_local_tokens(extend_seq_lens, cp_size=cp_size, align_size=align_size)
    return select_replay_bucket(
        num_tokens=num_tokens,
        required_local_tokens=required,
        capture_num_tokens=capture_num_tokens,
        bucket_local_tokens=bucket_local_tokens,
        max_padding_factor=max_padding_factor,
    )


def admit(
    *,
    cp_rank: int,
    cp_size: int,
    align_size: int,
    num_tokens: int,
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int,
) -> bool:
    """Would this rank replay a graph for this batch? (Rank-invariant: ``cp_rank`` is not used.)"""
    return (
        _select(
            cp_size=cp_size,
            align_size=align_size,
            num_tokens=num_tokens,
            extend_seq_lens=extend_seq_lens,
            capture_num_tokens=capture_num_tokens,
            bucket_local_tokens=bucket_local_tokens,
            max_padding_factor=max_padding_factor,
        )
        is not None
    )


def replay_bucket(
    *,
    cp_rank: int,
    cp_size: int,
    align_size: int,
    num_tokens: int,
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int,
) -> int:
    """The bucket this rank pads to; raises LookupError when the batch was not admitted."""
    bucket = _select(
        cp_size=cp_size,
        align_size=align_size,
        num_tokens=num_tokens,
        extend_seq_lens=extend_seq_lens,
        capture_num_tokens=capture_num_tokens,
        bucket_local_tokens=bucket_local_tokens,
        max_padding_factor=max_padding_factor,
    )
    if bucket is None:
        raise LookupError(f"no captured bucket fits num_tokens={num_tokens}, extend_seq_lens={tuple(extend_seq_lens)}")
    return bucket


def local_rows(
    *,
    bucket: int,
    cp_rank: int,
    cp_size: int,
    align_size: int,
    num_tokens: int,
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int,
) -> tuple[int, ...]:
    """Physical rows per rank when replaying at ``bucket``: every rank pads to align_up(max load, A)."""
    rows = required_local_tokens(extend_seq_lens, cp_size=cp_size, align_size=align_size)
    return tuple(rows for _ in rank_loads(extend_seq_lens, cp_size=cp_size))
