"""Rows a batch needs on every rank, and rows a bucket is captured with (the capture layout, or headroom).

Every strategy-dependent number comes from the strategy table (reference/strategies.py)."""

from __future__ import annotations

from cpgraph.reference.layout import rank_loads
from cpgraph.reference.strategies import capture_lengths, strategy_row
from cpgraph.reference.validate import check_cp_size, check_int, check_lengths, check_strategy


def align_up(value: int, align_size: int) -> int:
    """The smallest multiple of ``align_size`` that is >= ``value``."""
    check_int("value", value, minimum=0)
    check_int("align_size", align_size, minimum=1)
    return -(-value // align_size) * align_size


def default_align_size(*, cp_size: int, strategy: str = "zigzag") -> int:
    """Upstream's alignment: the strategy row's factor times P (2P for zigzag, P for interleave and contiguous,
    1 for the dual_chunk_swap rows, which align nothing)."""
    check_cp_size("cp_size", cp_size)
    return strategy_row(strategy).align_size(cp_size)


def required_local_tokens(
    extend_seq_lens: object, *, cp_size: object, align_size: object, strategy: object = "zigzag"
) -> int:
    """Physical rows every rank pads to for this live batch: align_up(max_r l_r, A).

    Built from the live lengths; never from a padded token count (that folds the pad into the last
    request and changes the loads).
    """
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    p = check_cp_size("cp_size", cp_size)
    a = check_int("align_size", align_size, minimum=1)
    return align_up(max(rank_loads(lengths, cp_size=p, strategy=check_strategy(strategy))), a)


def capture_local_tokens(
    num_tokens: object,
    *,
    cp_size: object,
    align_size: object,
    strategy: object = "zigzag",
    context_len: object = None,
) -> int:
    """``bucket_local_tokens[B]`` as upstream records it: the rows of the capture layout, one request of B
    tokens, or (B above ``context_len``) context-length requests and one with the rest."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    ctx = None if context_len is None else check_int("context_len", context_len, minimum=1)
    lengths = capture_lengths(n, context_len=ctx)
    return required_local_tokens(lengths, cp_size=cp_size, align_size=align_size, strategy=strategy)


def headroom_bound(num_tokens: int, *, cp_size: int, max_requests: int, strategy: str = "zigzag") -> int:
    """floor((N + R*e) / P): the most rows any rank occupies over batches of at most R requests and at most
    N tokens, where e is the strategy's per-request excess (P*l_r - L <= e: P-1 for zigzag, so each
    request's busiest rank exceeds its mean by at most 1 - 1/P). Interleave, whose loads depend on N
    only, gets ceil(N/P) for every R.

    R is capped at N: a batch of N tokens has at most N non-empty requests.
    """
    n = check_int("num_tokens", num_tokens, minimum=0)
    p = check_cp_size("cp_size", cp_size)
    r = min(check_int("max_requests", max_requests, minimum=1), n)
    excess = strategy_row(strategy).request_excess
    if excess is None:
        return -(-n // p)
    return (n + r * excess(p)) // p


def headroom_local_tokens(
    num_tokens: object, *, cp_size: object, align_size: object, max_requests: object, strategy: object = "zigzag"
) -> int:
    """Capacity that fits every batch of at most ``max_requests`` requests and ``num_tokens`` tokens."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    p = check_cp_size("cp_size", cp_size)
    a = check_int("align_size", align_size, minimum=1)
    r = check_int("max_requests", max_requests, minimum=1)
    return align_up(headroom_bound(n, cp_size=p, max_requests=r, strategy=check_strategy(strategy)), a)
