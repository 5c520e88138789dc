"""Bucket selection: the smallest captured bucket within the padding limit whose capacity fits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from cpgraph.reference.validate import check_capacities, check_capture_list, check_cp_size, check_int, check_lengths, check_padding_factor


def is_cp_active(extend_seq_lens: object, *, num_tokens: object, cp_size: object) -> bool:
    """A batch takes the CP graph path only when P > 1, n >= 2P and every length >= 2P."""
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    n = check_int("num_tokens", num_tokens, minimum=1)
    p = check_cp_size("cp_size", cp_size)
    return p > 1 and n >= 2 * p and all(length >= 2 * p for length in lengths)


def fitting_buckets(
    *,
    num_tokens: int,
    required_local_tokens: int,
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int | Fraction,
) -> tuple[int, ...]:
    """Every captured bucket B with n <= B <= F*n and a recorded capacity >= required (the fitting set)."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    required = check_int("required_local_tokens", required_local_tokens, minimum=0)
    buckets = check_capture_list("capture_num_tokens", capture_num_tokens)
    capacities = check_capacities("bucket_local_tokens", bucket_local_tokens)
    factor = check_padding_factor("max_padding_factor", max_padding_factor)
    return tuple(
        b for b in buckets if n <= b <= factor * n and b in capacities and capacities[b] >= required
    )


def select_replay_bucket(
    *,
    num_tokens: int,
    required_local_tokens: int,
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int | Fraction,
) -> int | None:
    """The least element of the fitting set, or None when no captured bucket fits (run eagerly).

    A bucket with no recorded capacity is skipped, not treated as a fit. The sorted capture list is
    scanned: buckets below n are skipped and the scan stops at the first bucket above F*n.
    """
    fitting = fitting_buckets(
        num_tokens=num_tokens,
        required_local_tokens=required_local_tokens,
        capture_num_tokens=capture_num_tokens,
        bucket_local_tokens=bucket_local_tokens,
        max_padding_factor=max_padding_factor,
    )
    return fitting[0] if fitting else None
