"""Theorems about spec/zigzag.py with a symbolic cp_size: each is one query for every P >= 1 at once.

With P symbolic, L = 2P*q + m is nonlinear; these forms stay stable in the solver because every claim is
linear once the products P*q are treated as atoms. (Conservation sums over P ranks and is proved per P in
proofs/theorems/strategies.py.)
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from cpgraph.spec.logic import And, If, Or
from cpgraph.proofs.theorems.induction import induction_chain, request_excess, state_so_far, within_headroom
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.theorems.strategies import Split, ZigzagRankLoad
from cpgraph.spec.terms import IntLike
from cpgraph.spec.zigzag import zigzag_owned_blocks, zigzag_rank_load, zigzag_split


def _symbolic(split: Split, rank_load: ZigzagRankLoad) -> tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.ArithRef, tuple[z3.BoolRef, ...], object]:
    p, rank, length = z3.Int("P"), z3.Int("r"), z3.Int("L")
    parts = split(length, p, "req")
    load = rank_load(parts, rank, p)
    # P >= 1 is not written: 0 <= r < P implies it (a second copy would be a conjunct no verdict reads).
    return p, rank, length, load, (rank >= 0, rank < p, length >= 0, parts.holds), parts


def per_request_headroom_bound_holds_for_symbolic_cp_size(
    parameter: int, *, split: Split = zigzag_split, rank_load: ZigzagRankLoad = zigzag_rank_load
) -> tuple[Query, ...]:
    """For every P >= 1, every rank and every length L = 2Pq + m, a non-empty request puts at most
    (L + P - 1)/P tokens on a rank: P*l_r <= L + P - 1."""
    del parameter
    p, _, length, load, hypotheses, _ = _symbolic(split, rank_load)
    return (Query("request", request_excess(p, load, length), hypotheses, size=length),)


def _one_more_if_nonempty(requests: z3.ArithRef, length: z3.ArithRef) -> z3.ArithRef:
    return requests + If(length >= 1, z3.IntVal(1), z3.IntVal(0))


def headroom_bound_holds_for_symbolic_cp_size(
    parameter: int,
    *,
    split: Split = zigzag_split,
    rank_load: ZigzagRankLoad = zigzag_rank_load,
    count: Callable[[z3.ArithRef, z3.ArithRef], z3.ArithRef] = _one_more_if_nonempty,
) -> tuple[Query, ...]:
    """For every P >= 1, in any zigzag batch of N tokens in at most R requests every rank holds at most
    (N + min(R, N)(P-1))/P tokens: the request lemma, the base (the empty batch), the step (one more
    request re-establishes the invariant with one more request counted) and the bound, as one chain."""
    del parameter
    p, _, length, load, hypotheses, _ = _symbolic(split, rank_load)
    prior, tokens, requests = state_so_far()
    more, limit = z3.Int("l"), z3.Int("R")
    capped = If(limit <= tokens, limit, tokens)
    headroom = tokens + capped * (p - 1)  # the bound, stated once: P*a <= N + min(R, N)(P-1)
    return (
        Query("request", request_excess(p, load, length), hypotheses, size=length),
        *induction_chain(
            lambda a, n, k: within_headroom(p, a, n, k),
            step_to=(prior + more, tokens + length, count(requests, length)),
            # No P >= 1 in the base or the step: both hold for every integer P (the bound needs it).
            step_facts=(length >= 0, request_excess(p, more, length)),
            bound=p * prior <= headroom,
            bound_facts=(p >= 1, requests <= limit),  # no R >= 1: the bound holds for R = 0 too (the empty batch)
        ),
        # Not a weaker bound than the invariant gives: at the invariant's edge with R = k <= N requests, the
        # bound is met with equality (an identity for every P and R, so no P >= 1 or R >= 1 is assumed here).
        Query("bound attained", p * prior == headroom,
              (p * prior == tokens + requests * (p - 1), requests == limit, limit <= tokens)),
    )


def busiest_rank_holds_ceil_share_for_symbolic_cp_size(
    parameter: int, *, split: Split = zigzag_split, rank_load: ZigzagRankLoad = zigzag_rank_load
) -> tuple[Query, ...]:
    """For every P >= 1 and every length L, every rank holds at most ceil(L/P) tokens of one request; rank 0
    holds exactly that when m = L mod 2P <= P, and rank P-1 exactly when m = 0 or m >= P."""
    del parameter
    p, _, length, load, hypotheses, parts = _symbolic(split, rank_load)
    assert hasattr(parts, "remainder")
    m = parts.remainder
    first, last = rank_load(parts, 0, p), rank_load(parts, p - 1, p)  # type: ignore[arg-type]
    return (
        Query(
            "request",
            And(p * (load - 1) < length, (p * first >= length) == (m <= p), (p * last >= length) == Or(m == 0, m >= p)),
            hypotheses,
            size=length,
        ),
    )


def headroom_bound_is_tight_for_symbolic_cp_size(
    parameter: int, *, split: Split = zigzag_split, rank_load: ZigzagRankLoad = zigzag_rank_load
) -> tuple[Query, ...]:
    """For every P >= 2 and every length with L mod 2P = P+1, rank P-1 holds exactly (L + P - 1)/P tokens."""
    del parameter
    p, length, q = z3.Int("P"), z3.Int("L"), z3.Int("q")
    parts = split(length, p, "req")
    return (
        Query(
            "request",
            p * rank_load(parts, p - 1, p) == length + p - 1,
            (p >= 2, q >= 0, length == 2 * p * q + p + 1, parts.holds),
            size=length,
        ),
    )


Owned = Callable[[IntLike, IntLike], tuple[IntLike, IntLike]]


def zigzag_ownership_partitions_blocks_for_symbolic_cp_size(
    parameter: int, *, owned: Owned = zigzag_owned_blocks
) -> tuple[Query, ...]:
    """For every P >= 1, each of the 2P blocks is owned by exactly one rank: block j by rank j (j < P) or
    rank 2P-1-j (j >= P), and no other rank owns it (so no token is lost or duplicated). Stated as one
    equivalence over every rank r in [0, P): r owns block j iff r is j's owner (at r = owner: it owns j;
    at any other r: it does not)."""
    del parameter
    p, block, rank = z3.Int("P"), z3.Int("j"), z3.Int("r")
    owner = If(block < p, block, 2 * p - 1 - block)

    def owns(r: z3.ArithRef) -> z3.BoolRef:
        early, late = owned(r, p)
        return Or(block == early, block == late)

    return (
        Query(
            "blocks",
            owns(rank) == (rank == owner),
            (block >= 0, block < 2 * p, rank >= 0, rank < p),  # P >= 1 follows from 0 <= r < P
        ),
    )
