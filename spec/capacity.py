"""Rows a live batch needs on every rank, and rows a bucket is captured with (single request or headroom).

    required_local_tokens = align_up(max_r l_r, A)            (from the live lengths)
    capture_local_tokens  = required_local_tokens of one request of B tokens
    headroom_bound        = floor((N + min(R, N)(P-1)) / P)   (most real tokens a rank holds, <= R requests)
    headroom_local_tokens = align_up(headroom_bound, A)
"""

from __future__ import annotations

from cpgraph.spec.logic import And, If
from cpgraph.spec.arith import align_up, floor_div, max_of
from cpgraph.spec.strategies import rank_loads
from cpgraph.spec.terms import Defined, IntLike, Loads, int_term


def busiest_load(loads: Loads, name: str) -> Defined:
    """max_r l_r: the rank-invariant quantity every rank decides from (never its own load)."""
    top = max_of(loads.loads, f"{name}.busiest")
    return Defined(top.value, And(loads.holds, top.holds))


def required_local_tokens(loads: Loads, align_size: IntLike, name: str) -> Defined:
    """align_up(max_r l_r, A): the physical rows every rank pads to for this live batch."""
    return aligned_rows(busiest_load(loads, name), align_size, name)


def aligned_rows(busiest: Defined, align_size: IntLike, name: str) -> Defined:
    """align_up of an already built busiest load (``busiest_load``), its facts kept: the rows every rank pads to."""
    rows = align_up(busiest.value, align_size, f"{name}.rows")
    return Defined(rows.value, And(busiest.holds, rows.holds))


def capture_local_tokens(
    num_tokens: IntLike, cp_size: int, align_size: IntLike, name: str, kind: str = "zigzag"
) -> Defined:
    """``bucket_local_tokens[B]`` as upstream records it: the rows of one request of B tokens."""
    return required_local_tokens(rank_loads((num_tokens,), cp_size, f"{name}.capture", kind), align_size, name)


def headroom_bound(num_tokens: IntLike, cp_size: int, max_requests: IntLike, name: str) -> Defined:
    """floor((N + min(R, N)(P-1)) / P): R is capped at N (a batch of N tokens has at most N non-empty requests)."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    n, r = int_term(num_tokens), int_term(max_requests)
    requests = If(r <= n, r, n)
    return floor_div(n + requests * (cp_size - 1), cp_size, f"{name}.headroom")


def headroom_local_tokens(
    num_tokens: IntLike, cp_size: int, align_size: IntLike, max_requests: IntLike, name: str
) -> Defined:
    """align_up(headroom_bound, A): a capacity that fits every zigzag batch of <= R requests and <= N tokens."""
    bound = headroom_bound(num_tokens, cp_size, max_requests, name)
    rows = align_up(bound.value, align_size, f"{name}.rows")
    return Defined(rows.value, And(bound.holds, rows.holds))
