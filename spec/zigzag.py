"""Zigzag layout: 2P blocks per sequence (remainder to the leading blocks), rank r owns blocks r and 2P-1-r.

For one sequence of length L = S*q + m (S = 2P, 0 <= m < S):
    block j holds     q + [j < m]
    rank r holds      2q + [r < m] + [2P-1-r < m]
Ranks and cp_size may be Python ints (linear facts) or z3 terms (the symbolic-P form, nonlinear).
"""

from __future__ import annotations

from spec.arith import DivMod, divmod_by
from spec.terms import IntLike, IntTerm, Loads, indicator, int_term


def block_count(cp_size: IntLike) -> IntTerm:
    """S = 2P blocks per sequence."""
    return 2 * int_term(cp_size)


def zigzag_split(length: IntLike, cp_size: IntLike, name: str) -> DivMod:
    """L = 2P*q + m with 0 <= m < 2P: q tokens in every block, one more in each of the first m."""
    return divmod_by(length, 2 * cp_size, name)


def zigzag_owned_blocks(rank: IntLike, cp_size: IntLike) -> tuple[IntLike, IntLike]:
    """Rank r owns one early and one late block: (r, 2P-1-r)."""
    return (rank, 2 * cp_size - 1 - rank)


def zigzag_block_len(split: DivMod, block: IntLike) -> IntTerm:
    """Tokens in block j: q + [j < m]."""
    return split.quotient + indicator(int_term(block) < split.remainder)


def zigzag_rank_load(split: DivMod, rank: IntLike, cp_size: IntLike) -> IntTerm:
    """Tokens of one sequence on rank r: the sizes of its two owned blocks."""
    early, late = zigzag_owned_blocks(rank, cp_size)
    return zigzag_block_len(split, early) + zigzag_block_len(split, late)


def zigzag_request_loads(length: IntLike, cp_size: int, name: str) -> Loads:
    """Per-rank loads of one sequence under zigzag, for a concrete P (one term per rank)."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    split = zigzag_split(length, cp_size, name)
    return Loads(tuple(zigzag_rank_load(split, r, cp_size) for r in range(cp_size)), split.holds)
