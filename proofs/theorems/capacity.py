"""Theorems about spec/capacity.py: headroom bound and tightness, captured and headroom capacities.

Theorems about spec/capacity.py: the headroom bound for any number of requests and its tightness, the
captured capacity as an aligned ceil share, headroom capacities fitting every bucket at or above n, and
required rows covering every rank.

The induction over requests works one rank at a time: the claims are "for every rank" and a rank's load
in a batch is the sum of its loads per request, so a symbolic rank (or one symbolic prior load) suffices.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from cpgraph.spec.logic import And
from cpgraph.proofs.theorems.induction import induction_chain, request_excess, state_so_far, symbolic_loads, within_headroom
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.engine.replay import batch_replay
from cpgraph.proofs.theorems.strategies import Split, ZigzagRankLoad
from cpgraph.spec.arith import align_up, ceil_div, divmod_by
from cpgraph.spec.capacity import capture_local_tokens, headroom_bound, headroom_local_tokens, required_local_tokens
from cpgraph.spec.strategies import STRATEGIES
from cpgraph.spec.terms import BoolTerm, Defined, IntLike, indicator
from cpgraph.spec.zigzag import zigzag_rank_load, zigzag_split

HeadroomBound = Callable[[IntLike, int, IntLike, str], Defined]
Capture = Callable[[IntLike, int, IntLike, str, str], Defined]
HeadroomCapacity = Callable[[IntLike, int, IntLike, IntLike, str], Defined]


def headroom_bound_holds_for_any_number_of_requests(
    cp_size: int,
    *,
    split: Split = zigzag_split,
    rank_load: ZigzagRankLoad = zigzag_rank_load,
    bound: HeadroomBound = headroom_bound,
) -> tuple[Query, ...]:
    """Under zigzag, in any batch of N tokens in at most R requests every rank holds at most
    floor((N + R(P-1))/P) tokens. Request: a non-empty request of L tokens puts at most (L + P - 1)/P on a
    rank (an empty one puts nothing). Step: adding a request keeps P*a_r <= N + k(P-1) with k the non-empty
    requests so far. Bound: that inequality with k <= R gives the floor (R capped at N)."""
    p = cp_size
    length, rank = z3.Int("L"), z3.Int("r")
    parts = split(length, p, "req")
    load = rank_load(parts, rank, p)
    request = Query(
        "request",
        request_excess(p, load, length),
        (length >= 0, parts.holds, rank >= 0, rank < p),
        size=length,
        shown=(("l_r", load),),
        replay=batch_replay(
            theorem="headroom_bound_holds_for_any_number_of_requests",
            cp_size=p,
            strategy="zigzag",
            length_names=("L",),
            claim="P * max(loads) <= N + P - 1",
        ),
    )
    prior, tokens, requests = state_so_far()
    more, nonempty, limit = z3.Int("l"), z3.Int("j"), z3.Int("R")
    capped = bound(tokens, p, limit, "bound")
    # The step uses the request lemma through the same builder that states it (request_excess).
    return (
        request,
        *induction_chain(
            lambda a, n, k: within_headroom(p, a, n, k),
            step_to=(prior + more, tokens + length, requests + nonempty),
            step_facts=(length >= 0, nonempty == indicator(length >= 1), request_excess(p, more, length)),
            bound=prior <= capped.value,
            bound_facts=(capped.holds, limit >= 1, requests <= limit),
        ),
    )


def headroom_bound_is_tight(
    cp_size: int,
    *,
    split: Split = zigzag_split,
    rank_load: ZigzagRankLoad = zigzag_rank_load,
    bound: HeadroomBound = headroom_bound,
) -> tuple[Query, ...]:
    """The headroom bound is attained: in any batch of R requests whose every length has L mod 2P = P+1,
    rank P-1 holds exactly floor((N + R(P-1))/P) tokens (so with the bound above, it is the busiest)."""
    p = cp_size
    length = z3.Int("L")
    parts = split(length, p, "req")
    clause = divmod_by(length, 2 * p, "tight")
    request = Query(
        "request",
        p * rank_load(parts, p - 1, p) == length + p - 1,
        (clause.quotient >= 0, parts.holds, clause.holds, clause.remainder == (p + 1) % (2 * p)),  # L = 2Pq + (P+1) mod 2P, q >= 0
        size=length,
        replay=batch_replay(
            theorem="headroom_bound_is_tight",
            cp_size=p,
            strategy="zigzag",
            length_names=("L",),
            claim="P * loads[-1] == N + P - 1",
        ),
    )
    prior, tokens, requests = state_so_far()
    more = z3.Int("l")
    exact = bound(tokens, p, requests, "bound")

    def so_far(a: IntLike, n: IntLike, k: IntLike) -> BoolTerm:
        # Rank P-1 of a batch of k requests (each at the edge, so each >= 1 token) holds (N + k(P-1))/P.
        return And(k >= 0, k <= n, p * a == n + k * (p - 1))

    return (
        request,
        *induction_chain(
            so_far,
            step_to=(prior + more, tokens + length, requests + 1),
            step_facts=(length >= 1, p * more == length + (p - 1)),
            bound=prior == exact.value,
            bound_facts=(exact.holds, requests >= 1),
        ),
    )


def capture_capacity_is_aligned_ceil_share(cp_size: int, *, capture: Capture = capture_local_tokens) -> tuple[Query, ...]:
    """Under zigzag (A = 2P) and interleave (A = P), the capacity recorded when bucket B is captured as one
    request is align_up(ceil(B/P), A) (the busiest rank of one request holds ceil(B/P)). Contiguous follows
    the same way from contiguous_busiest_rank_holds_ceil_share; it is left out to keep the run short."""
    p = cp_size
    bucket = z3.Int("B")
    queries = []
    for kind in ("zigzag", "interleave"):
        row = STRATEGIES[kind]
        a = row.align_size(p)
        recorded = capture(bucket, p, a, "capture", kind)
        share = ceil_div(bucket, p, "share")
        aligned = align_up(share.value, a, "aligned")
        queries.append(
            Query(
                kind,
                recorded.value == aligned.value,
                (bucket >= 1, recorded.holds, share.holds, aligned.holds),
                size=bucket,
                shown=(("capture_local_tokens", recorded.value), ("align_up(ceil(B/P), A)", aligned.value)),
            )
        )
    return tuple(queries)


def headroom_capture_fits_first_bucket_at_or_above_n(
    cp_size: int, *, capacity: HeadroomCapacity = headroom_local_tokens
) -> tuple[Query, ...]:
    """Under zigzag with A = 2P, when every bucket B is captured with headroom for R requests, any batch of
    at most R requests and N <= n tokens fits every bucket B >= n, so it fits the first bucket at or above
    n (its loads are those of the headroom theorem: P*a_r <= N + k(P-1), k non-empty requests)."""
    p = cp_size
    a = STRATEGIES["zigzag"].align_size(p)
    loads = symbolic_loads(p, "a")
    tokens, requests, limit, n, bucket = z3.Int("N"), z3.Int("k"), z3.Int("R"), z3.Int("n"), z3.Int("B")
    rows = required_local_tokens(loads, a, "required")
    room = capacity(bucket, p, a, limit, "capacity")
    return (
        Query(
            "batch",
            rows.value <= room.value,
            (
                loads.holds, rows.holds, room.holds, requests >= 0, requests <= tokens, requests <= limit,
                limit >= 1, tokens <= n, n <= bucket, n >= 1,
                *[p * x <= tokens + requests * (p - 1) for x in loads.loads],
            ),
            size=bucket,
            shown=(("required", rows.value), ("capacity", room.value)),
        ),
    )
