"""Rows a batch needs on every rank, and rows a bucket is captured with (single-request or headroom)."""

from __future__ import annotations

from cpgraph.reference.layout import rank_loads
from cpgraph.reference.validate import check_int, check_lengths, check_strategy


def align_up(value: int, align_size: int) -> int:
    """The smallest multiple of ``align_size`` that is >= ``value``."""
    check_int("value", value, minimum=0)
    check_int("align_size", align_size, minimum=1)
    return -(-value // align_size) * align_size


def default_align_size(*, cp_size: int, strategy: str = "zigzag") -> int:
    """Upstream's alignment: 2P for zigzag (two blocks a rank), P for interleave and contiguous."""
    check_int("cp_size", cp_size, minimum=1)
    return 2 * cp_size if check_strategy(strategy) == "zigzag" else cp_size


def required_local_tokens(
    extend_seq_lens: object, *, cp_size: object, align_size: object, strategy: object = "zigzag"
) -> int:
    """Physical rows every rank pads to for this live batch: align_up(max_r l_r, A).

    Built from the live lengths; never from a padded token count (that folds the pad into the last
    request and changes the loads).
    """
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    p = check_int("cp_size", cp_size, minimum=1)
    a = check_int("align_size", align_size, minimum=1)
    return align_up(max(rank_loads(lengths, cp_size=p, strategy=check_strategy(strategy))), a)


def capture_local_tokens(
    num_tokens: object, *, cp_size: object, align_size: object, strategy: object = "zigzag"
) -> int:
    """``bucket_local_tokens[B]`` as upstream records it: the rows of one request of B tokens."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    return required_local_tokens((n,), cp_size=cp_size, align_size=align_size, strategy=strategy)


def headroom_bound(num_tokens: int, *, cp_size: int, max_requests: int) -> int:
    """floor((N + R(P-1)) / P): the most real tokens any rank holds, over zigzag batches of at most R
    requests and at most N tokens (each request's busiest rank exceeds its mean by at most 1 - 1/P).

    R is capped at N: a batch of N tokens has at most N non-empty requests.
    """
    n = check_int("num_tokens", num_tokens, minimum=0)
    p = check_int("cp_size", cp_size, minimum=1)
    r = min(check_int("max_requests", max_requests, minimum=1), n)
    return (n + r * (p - 1)) // p


def headroom_local_tokens(num_tokens: object, *, cp_size: object, align_size: object, max_requests: object) -> int:
    """Capacity that fits every zigzag batch of at most ``max_requests`` requests and ``num_tokens`` tokens."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    p = check_int("cp_size", cp_size, minimum=1)
    a = check_int("align_size", align_size, minimum=1)
    r = check_int("max_requests", max_requests, minimum=1)
    return align_up(headroom_bound(n, cp_size=p, max_requests=r), a)
