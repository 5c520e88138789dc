"""Zigzag layout: 2P blocks per sequence (remainder to the leading blocks), rank r owns blocks r and 2P-1-r.

For one sequence of length L = S*q + m (S = 2P, 0 <= m < S):
    block j holds     q + [j < m]
    rank r holds      2q + [r < m] + [2P-1-r < m]
Ranks and cp_size may be Python ints (linear facts) or z3 terms (the symbolic-P form, nonlinear).
"""

from __future__ import annotations

from cpgraph.spec.arith import DivMod, divmod_by
import z3

from cpgraph.spec.terms import IntLike, IntTerm, Loads, check_index, indicator, int_term, literal, literals


def zigzag_split(length: IntLike, cp_size: IntLike, name: str) -> DivMod:
    """L = 2P*q + m with 0 <= m < 2P: q tokens in every block, one more in each of the first m."""
    return divmod_by(length, 2 * cp_size, name)


def zigzag_owned_blocks(rank: IntLike, cp_size: IntLike) -> tuple[IntLike, IntLike]:
    """Rank r owns one early and one late block: (r, 2P-1-r)."""
    return (rank, 2 * cp_size - 1 - rank)


def _block_len(quotient: IntLike, remainder: IntLike, block: IntLike) -> IntLike:
    # One ladder for both worlds: Python ints give an int, z3 terms give a term.
    return quotient + indicator(block < remainder)


def _rank_load(quotient: IntLike, remainder: IntLike, rank: IntLike, cp_size: IntLike) -> IntLike:
    early, late = zigzag_owned_blocks(rank, cp_size)
    return _block_len(quotient, remainder, early) + _block_len(quotient, remainder, late)


def zigzag_block_len(split: DivMod, block: IntLike) -> IntTerm:
    """Tokens in block j: q + [j < m]."""
    q, m, j = literal(split.quotient), literal(split.remainder), literal(block)
    if q is not None and m is not None and j is not None:
        return z3.IntVal(_block_len(q, m, j))
    return _block_len(split.quotient, split.remainder, int_term(block))


def zigzag_rank_load(split: DivMod, rank: IntLike, cp_size: IntLike) -> IntTerm:
    """Tokens of one sequence on rank r: the sizes of its two owned blocks (a literal rank outside 0..P-1 of
    a literal P is a ValueError)."""
    q, m, r, p = literal(split.quotient), literal(split.remainder), literal(rank), literal(cp_size)
    if p is not None:
        check_index("rank", rank, p, f"a rank of cp_size {p}")
    if q is not None and m is not None and r is not None and p is not None:
        return z3.IntVal(_rank_load(q, m, r, p))
    return zigzag_block_len(split, zigzag_owned_blocks(rank, cp_size)[0]) + zigzag_block_len(
        split, zigzag_owned_blocks(rank, cp_size)[1]
    )


def zigzag_request_loads(length: IntLike, cp_size: int, name: str) -> Loads:
    """Per-rank loads of one sequence under zigzag, for a concrete P (one term per rank)."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    split = zigzag_split(length, cp_size, name)
    folded = literals(split.quotient, split.remainder)
    if folded is not None:  # concrete length: fold the same ladder over Python ints
        q, m = folded
        return Loads(tuple(z3.IntVal(_rank_load(q, m, r, cp_size)) for r in range(cp_size)), split.holds)
    return Loads(tuple(zigzag_rank_load(split, r, cp_size) for r in range(cp_size)), split.holds)
