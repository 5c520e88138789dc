"""Theorems about spec/strategies.py and spec/zigzag.py: conservation and per-request balance.

Theorems about spec/strategies.py and spec/zigzag.py: conservation (loads sum to tokens) and per-request
balance (the busiest rank holds ceil(L/P)), for every strategy in the table, every cp_size and every length;
conservation for any number of requests by induction (the step adds one request's loads rank-wise).

Claims "for every rank" use one symbolic rank 0 <= r < P where the strategy's rank load allows it (zigzag,
interleave): the same statement, a much smaller query.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import z3

from cpgraph.spec.logic import And, If, Or, Sum
from cpgraph.proofs.theorems.dual_chunk_swap import chunks_fill_in_order
from cpgraph.proofs.theorems.induction import conservation_over_requests, loads_shown, request_terms
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.engine.replay import batch_replay
from cpgraph.spec.arith import DivMod, divmod_by
from cpgraph.spec.invariants import conservation, per_request_balance
from cpgraph.spec.strategies import (
    CLASS_ENCODABLE,
    STRATEGIES,
    RequestLoads,
    contiguous_request_loads,
    interleave_loads,
    interleave_rank_load,
    rank_loads,
)
from cpgraph.spec.terms import IntLike, IntTerm, Loads
from cpgraph.spec.zigzag import zigzag_rank_load, zigzag_request_loads, zigzag_split

ZigzagRankLoad = Callable[[DivMod, IntLike, IntLike], IntTerm]
Split = Callable[[IntLike, IntLike, str], DivMod]
InterleaveRankLoad = Callable[[DivMod, IntLike], IntTerm]


def _ceil_share_replay(theorem: str, cp_size: int, strategy: str) -> Callable[..., str]:
    return batch_replay(
        theorem=theorem, cp_size=cp_size, strategy=strategy, length_names=("L",), claim="max(loads) == -(-N // P)"
    )


def zigzag_loads_sum_to_tokens(cp_size: int, *, request_loads: RequestLoads = zigzag_request_loads) -> tuple[Query, ...]:
    """Under zigzag, the ranks' loads sum to the batch's tokens: per request, and for any number of requests."""
    return conservation_over_requests(cp_size, "zigzag", request_loads, "zigzag_loads_sum_to_tokens")


def contiguous_loads_sum_to_tokens(
    cp_size: int, *, request_loads: RequestLoads = contiguous_request_loads
) -> tuple[Query, ...]:
    """Under contiguous sharding, the ranks' loads sum to the batch's tokens, for any number of requests."""
    return conservation_over_requests(cp_size, "contiguous", request_loads, "contiguous_loads_sum_to_tokens")


def interleave_loads_sum_to_tokens(cp_size: int, *, batch_loads: RequestLoads = interleave_loads) -> tuple[Query, ...]:
    """Under interleave, the ranks' loads sum to the batch's tokens (they depend only on the total N)."""
    total, loads = request_terms(batch_loads, cp_size)
    return (
        Query(
            "batch",
            conservation(loads, total),
            (total >= 0, loads.holds),
            size=total,
            shown=loads_shown(loads),
            replay=batch_replay(
                theorem="interleave_loads_sum_to_tokens",
                cp_size=cp_size,
                strategy="interleave",
                length_names=("L",),
                claim="sum(loads) == N",
            ),
        ),
    )


TABLE_ROWS_MAX_P = 8  # every row up to here; above it the class-encodable rows (DualChunkSwap's cost grows with P)


def same_builder_groups(ids: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """``ids`` grouped by the per-request builder their rows share (dual_chunk_swap and
    dual_chunk_swap_replicated lay out prefills with one builder): a theorem about a builder's terms checks
    each group once and names every id of it. Rows without a per-request builder stay apart."""
    groups: dict[object, list[str]] = {}
    for sid in ids:
        builder = STRATEGIES[sid].request_loads
        groups.setdefault(sid if builder is None else builder, []).append(sid)
    return tuple(tuple(group) for group in groups.values())


def table_rows_at(cp_size: int) -> tuple[tuple[str, ...], ...]:
    """The rows table_batch_loads_sum_to_tokens checks at ``cp_size``, grouped by shared builder: every row
    up to P = 8, the class-encodable ones above."""
    return same_builder_groups(tuple(STRATEGIES) if cp_size <= TABLE_ROWS_MAX_P else CLASS_ENCODABLE)


def table_batch_loads_sum_to_tokens(cp_size: int, *, batch_loads: Callable[..., Loads] = rank_loads) -> tuple[Query, ...]:
    """For every strategy of the table, the whole-batch loads the table builds for a batch of several
    requests of any lengths (the first request's loads plus each further one's, with every request's
    defining facts kept; interleave from the total) sum to the batch's tokens; under dual_chunk_swap_dcp,
    to the tokens with every prefill too short to fill 2P chunks ((2P-1)*c >= L, c the least with
    2P*c >= L) counted once per rank, since it is copied to every rank."""
    p = cp_size
    lengths = (z3.Int("L0"), z3.Int("L1"))
    chunks = tuple(z3.Int(f"c{i}") for i in range(len(lengths)))
    least = [And(2 * p * c >= x, 2 * p * (c - 1) < x) for c, x in zip(chunks, lengths)]
    copied = [If((2 * p - 1) * c >= x, p * x, x) for c, x in zip(chunks, lengths)]
    from cpgraph.spec.strategies import dual_chunk_swap_chunk_size

    out: list[Query] = []
    for group in table_rows_at(p):
        sid, label = group[0], " ".join(group)  # one check per shared builder, naming every row it lays out
        loads = batch_loads(lengths, cp_size, f"batch.{sid}", sid)
        tokens = Sum(copied) if sid == "dual_chunk_swap_dcp" else Sum(list(lengths))
        facts = (*(x >= 0 for x in lengths), *least, loads.holds)
        lemmas: list[z3.BoolRef] = []
        row = STRATEGIES[sid]
        if row.decodes is not None and row.request_loads is not None:
            # DualChunkSwap, request by request: its chunks fill its tokens in order, its chunk size is the
            # claim's c, so its loads sum to its tokens (copied by dcp: P times them). Lemmas, each proved.
            for i, (x, c, whole) in enumerate(zip(lengths, chunks, copied)):
                name = f"batch.{sid}.req{i}"
                chunk_lemmas = chunks_fill_in_order(x, p, name)
                size, _ = dual_chunk_swap_chunk_size(x, p, name)
                one = row.request_loads(x, p, name)
                steps = (*chunk_lemmas, (f"chunk size is c{i} ({name})", size == c),
                         (f"request {i} sums to its tokens ({name})", conservation(one, whole if sid == "dual_chunk_swap_dcp" else x)))
                for part, claim in steps:
                    out.append(Query(f"{part} {sid}", claim, (*facts, *lemmas)))
                    lemmas.append(claim)
        out.append(Query(label, conservation(loads, tokens), (*facts, *lemmas), size=Sum(list(lengths)), shown=loads_shown(loads)))
    # Every row of the table is in scope here, so here the runner's alignment (the spec's table) is held to the
    # documented one (claims.ALIGN_FACTOR) for each row: the end-to-end theorems compare the two only for the
    # class-encodable rows (the labels name the row in brackets, so they never count as a row's loads query).
    from cpgraph.proofs.theorems.claims import documented_align

    for sid, row in STRATEGIES.items():
        out.append(Query(f"alignment[{sid}]", z3.BoolVal(row.align_size(p) == documented_align(sid, p)), ()))
    return tuple(out)


def zigzag_busiest_rank_holds_ceil_share(
    cp_size: int, *, split: Split = zigzag_split, rank_load: ZigzagRankLoad = zigzag_rank_load
) -> tuple[Query, ...]:
    """Under zigzag, for one request of any length L the busiest rank holds exactly ceil(L/P) tokens: every
    rank holds at most that; rank 0 holds it exactly when m = L mod 2P <= P, and rank P-1 exactly when m = 0
    or m >= P (so one of the two always does, both at m = 0 and m = P)."""
    p = cp_size
    length, rank = z3.Int("L"), z3.Int("r")
    parts = split(length, p, "req")
    m = parts.remainder
    load, first, last = rank_load(parts, rank, p), rank_load(parts, 0, p), rank_load(parts, p - 1, p)
    return (
        Query(
            "request",
            And(p * (load - 1) < length, (p * first >= length) == (m <= p), (p * last >= length) == Or(m == 0, m >= p)),
            (length >= 0, parts.holds, rank >= 0, rank < p),
            size=length,
            shown=(("l_r", load), ("l_0", first), ("l_last", last)),
            replay=_ceil_share_replay("zigzag_busiest_rank_holds_ceil_share", p, "zigzag"),
        ),
    )


def contiguous_busiest_rank_holds_ceil_share(
    cp_size: int, *, request_loads: RequestLoads = contiguous_request_loads
) -> tuple[Query, ...]:
    """Under contiguous sharding, for one request of any length L the busiest rank holds exactly ceil(L/P)."""
    length, loads = request_terms(request_loads, cp_size)
    return (
        Query(
            "request",
            per_request_balance(loads, length),
            (length >= 0, loads.holds),
            size=length,
            shown=loads_shown(loads),
            replay=_ceil_share_replay("contiguous_busiest_rank_holds_ceil_share", cp_size, "contiguous"),
        ),
    )


def interleave_busiest_rank_holds_ceil_share(
    cp_size: int, *, rank_load: InterleaveRankLoad = interleave_rank_load
) -> tuple[Query, ...]:
    """Under interleave, for any batch of N tokens the busiest rank holds exactly ceil(N/P) tokens (every
    rank at most that; rank 0 holds it)."""
    p = cp_size
    total, rank = z3.Int("L"), z3.Int("r")
    parts = divmod_by(total, p, "batch")
    load, first = rank_load(parts, rank), rank_load(parts, 0)
    return (
        Query(
            "batch",
            And(p * (load - 1) < total, p * first >= total),
            (total >= 0, parts.holds, rank >= 0, rank < p),
            size=total,
            shown=(("l_r", load), ("l_0", first)),
            replay=_ceil_share_replay("interleave_busiest_rank_holds_ceil_share", p, "interleave"),
        ),
    )
