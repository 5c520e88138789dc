"""Theorems about vLLM's DualChunkSwap rows of spec/strategies.py, per request, for every length.

- conservation: a prefill's loads sum to its tokens, for any number of requests (request lemma, base, step);
- the class threshold: for L = 2P*q + m with q >= 2P-2 the loads are 2q on every rank plus
  g(m) = (m-2P+2, 2, ..., 2) for m > 0 (g(0) = 0); for the dcp row from q >= 2P-1 (it copies
  L = 2P(2P-2) + 1). Both thresholds are tight (one lower, the form fails; the variant
  ``threshold_one_short`` is refuted), and the remainder-class form
  q*loads(2P) + loads(m) is false below it (``class_form_for_every_length`` is refuted: L = 9, P = 4 gives
  (2, 2, 2, 3), not (3, 2, 2, 2)), which is why the DualChunkSwap rows are not class-encodable
  (spec/strategies.py);
- the per-request excess: P*l_r <= L + E for a non-empty request, E = 2P-1 (dual_chunk_swap, P >= 2) and
  (P-1)(2P-1)^2 (dcp: the longest copied prefill, 2P(2P-2)+1 tokens, on every rank), 0 at P = 1, each
  reached by one length (so E is the least such bound: what the reference's ``request_excess`` must be);
- the dcp rule: the dcp row copies a prefill whole to every rank exactly when it does not fill all 2P
  chunks ((2P-1)*c >= L, c the least with 2P*c >= L) and lays out every other one as dual_chunk_swap does.

The claims restate the definitions (the least c with 2P*c >= L as a relation, the split form, the bound)
and never call the builder they check, except the dcp rule, which compares the two rows' builders.
Scope: P in SMALL_CP_SIZES (each rank's load is two of 2P If-chunks; one query at P = 64 costs seconds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import z3

from cpgraph.spec.logic import And, If, Not
from cpgraph.proofs.theorems.claims import same_definitions
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.engine.replay import batch_replay
from cpgraph.proofs.theorems.induction import conservation_over_requests, loads_shown, request_terms
from cpgraph.spec.strategies import (
    RequestLoads,
    dual_chunk_swap_chunk,
    dual_chunk_swap_chunk_size,
    dual_chunk_swap_dcp_request_loads,
    dual_chunk_swap_request_loads,
)
from cpgraph.spec.terms import BoolTerm, IntTerm, all_of, any_of



def chunks_fill_in_order(length: IntTerm, cp_size: int, name: str) -> tuple[tuple[str, BoolTerm], ...]:
    """Lemmas about the spec's DualChunkSwap build of ``length`` under ``name`` (its chunk size c): chunk j
    holds min(L, (j+1)c) - min(L, jc), the chunks fill the prefill's tokens in order. One small query each;
    together they telescope, so a sum of chunks is a difference of two minima (what keeps the conservation
    claims linear and small)."""
    c, _ = dual_chunk_swap_chunk_size(length, cp_size, name)

    def filled(j: int) -> IntTerm:
        return If(j * c <= length, j * c, length)

    return tuple(
        (f"chunk {j} ({name})", dual_chunk_swap_chunk(length, c, j) == filled(j + 1) - filled(j))
        for j in range(2 * cp_size)
    )


def dual_chunk_swap_loads_sum_to_tokens(
    cp_size: int, *, request_loads: RequestLoads = dual_chunk_swap_request_loads
) -> tuple[Query, ...]:
    """Under DualChunkSwap (every one of its three rows, for a batch of prefills), the ranks' loads sum to
    the batch's tokens: per request (the 2P chunks of ceil(L/2P) tokens, the trailing ones short or
    empty, hold L tokens between them: each chunk holds the next tokens in order, a lemma per chunk), and
    for any number of requests."""
    length, loads = request_terms(request_loads, cp_size)
    lemmas = chunks_fill_in_order(length, cp_size, "req")
    facts = (length >= 0, loads.holds)
    request, base, step = conservation_over_requests(cp_size, "dual_chunk_swap", request_loads, "dual_chunk_swap_loads_sum_to_tokens")
    chained = dataclasses.replace(request, hypotheses=(*request.hypotheses, *(claim for _, claim in lemmas)))
    return (*(Query(part, claim, facts) for part, claim in lemmas), chained, base, step)


def _split_form(cp_size: int, quotient: IntTerm, remainder: IntTerm, rank: int) -> IntTerm:
    """2q + g(m)[r]: g(m) = (m - 2P + 2, 2, ..., 2) for m > 0, zero for m = 0."""
    partial = If(remainder > 0, z3.IntVal(1), z3.IntVal(0))
    return 2 * quotient + partial * ((remainder - 2 * cp_size + 2) if rank == 0 else z3.IntVal(2))


SplitForm = Callable[[int, IntTerm, IntTerm, int], IntTerm]


def _form_holds_at(builder: RequestLoads, form: SplitForm, p: int, q: int) -> tuple[BoolTerm, tuple[BoolTerm, ...]]:
    """Every remainder's loads at quotient ``q`` (the literal lengths 2Pq + m, m < 2P) follow the split form."""
    built = [(m, builder(z3.IntVal(2 * p * q + m), p, f"at{q}.{m}")) for m in range(2 * p)]
    return (all_of(x == form(p, z3.IntVal(q), z3.IntVal(m), r) for m, b in built for r, x in enumerate(b.loads)),
            tuple(b.holds for _, b in built))


def split_threshold(cp_size: int, kind: str) -> int:
    """The least quotient from which the split form holds: 2P-2 for dual_chunk_swap, 2P-1 for the dcp row
    (which copies L = 2P(2P-2) + 1, quotient 2P-2), 0 at P = 1."""
    if cp_size == 1:
        return 0
    return 2 * cp_size - 2 if kind == "dual_chunk_swap" else 2 * cp_size - 1


SPLIT_ROWS = (("dual_chunk_swap", dual_chunk_swap_request_loads), ("dual_chunk_swap_dcp", dual_chunk_swap_dcp_request_loads))


def dual_chunk_swap_long_requests_split_by_remainder(
    cp_size: int, *, rows: tuple[tuple[str, RequestLoads], ...] = SPLIT_ROWS,
    threshold: Callable[[int, str], int] = split_threshold, form: SplitForm = _split_form,
) -> tuple[Query, ...]:
    """Under DualChunkSwap, a prefill of L = 2P*q + m tokens (0 <= m < 2P) with q >= 2P-2 puts 2q tokens
    on every rank plus g(m): m - 2P + 2 more on rank 0 and 2 more on every other rank when m > 0, nothing
    more when m = 0; under dual_chunk_swap_dcp the same from q >= 2P-1 (it copies L = 2P(2P-2) + 1).
    From that threshold on a request's loads depend on its remainder class alone (the fact a class
    encoding of DualChunkSwap would rest on); below it they do not (see the module docstring), so the
    threshold, tight for both rows, is part of the statement."""
    p = cp_size
    out: list[Query] = []
    for kind, builder in rows:
        length, loads = request_terms(builder, p)
        q, m = z3.Int("q"), z3.Int("m")
        facts = (length == 2 * p * q + m, m >= 0, m < 2 * p, q >= threshold(p, kind), loads.holds)  # so L >= 0
        claim = all_of(x == form(p, q, m, r) for r, x in enumerate(loads.loads))
        out.append(Query(
            kind, claim, facts, size=length, shown=loads_shown(loads),
            replay=batch_replay(theorem="dual_chunk_swap_long_requests_split_by_remainder", cp_size=p, strategy=kind,
                                length_names=("L",),
                                claim="all(x == 2 * (N // (2 * P)) + (0 if N % (2 * P) == 0 else "
                                      "(N % (2 * P) - 2 * P + 2 if r == 0 else 2)) for r, x in enumerate(loads))"),
        ))
        t = threshold(p, kind)
        if t >= 1:  # tight: the form holds at quotient t and some remainder leaves it at t - 1 (literal lengths; at
            # P = 1 the threshold is 0 and nothing is below it)
            at, at_facts = _form_holds_at(builder, form, p, t)
            below, below_facts = _form_holds_at(builder, form, p, t - 1)
            out.append(Query(f"tight below {kind}", And(at, Not(below)), (*at_facts, *below_facts)))
    return tuple(out)


def dcs_excess(cp_size: int) -> int:
    """The most one non-empty DualChunkSwap prefill puts on a rank beyond its mean, P*l_r - L: 2P-1 (first at
    L = 4P+1, on rank P-1), and 0 at P = 1 (one rank holds everything)."""
    return 2 * cp_size - 1 if cp_size > 1 else 0


def dcp_excess(cp_size: int) -> int:
    """The same for the dcp row: the longest prefill it copies, 2P(2P-2)+1 tokens, on every rank:
    (P-1)(2P-1)^2 (0 at P = 1)."""
    return (cp_size - 1) * (2 * cp_size - 1) ** 2


def _excess_witness(cp_size: int, kind: str) -> int:
    """The least length whose loads reach the excess: 4P+1 under dual_chunk_swap (rank P-1: c = 3 at P = 4,
    chunks 3 and 3), 2P(2P-2)+1 under dcp (the longest prefill it copies); 0 at P = 1 (E = 0: every length)."""
    p = cp_size
    if p == 1:
        return 0
    return 4 * p + 1 if kind == "dual_chunk_swap" else 2 * p * (2 * p - 2) + 1


def dual_chunk_swap_request_excess_is_tight(
    cp_size: int, *, excess: Callable[[int, str], int] = lambda p, kind: dcs_excess(p) if kind == "dual_chunk_swap" else dcp_excess(p),
) -> tuple[Query, ...]:
    """For one prefill of any length L, every rank holds P*l_r <= L + E (E only when L >= 1): E = 2P-1
    under dual_chunk_swap and (P-1)(2P-1)^2 under dual_chunk_swap_dcp (0 at P = 1 for both), and the least
    length reaching it is L = 4P+1 (on rank P-1; dcp: L = 2P(2P-2)+1, copied; L = 0 at P = 1), so E is
    exactly the most a request puts on a rank beyond its mean: the headroom capacity's per-request excess."""
    p = cp_size
    out: list[Query] = []
    for kind, builder in (("dual_chunk_swap", dual_chunk_swap_request_loads), ("dual_chunk_swap_dcp", dual_chunk_swap_dcp_request_loads)):
        length, loads = request_terms(builder, p)
        e = excess(p, kind)
        nonempty = If(length >= 1, z3.IntVal(1), z3.IntVal(0))
        most = length + e * nonempty  # P times the most rows a rank may hold: the bound, and what is reached
        bound = all_of(p * x <= most for x in loads.loads)
        out.append(Query(f"bound {kind}", bound, (length >= 0, loads.holds), size=length, shown=loads_shown(loads),
                         replay=batch_replay(theorem="dual_chunk_swap_request_excess_is_tight", cp_size=p, strategy=kind,
                                             length_names=("L",), claim=f"all(P * x <= N + {e} * (N >= 1) for x in loads)")))
        witness = _excess_witness(p, kind)
        # The bound is met with equality at the witness (E is reached) and at L = 0 (no excess without a token),
        # so it is the bound itself that is tight, not a looser statement of it.
        met = any_of(p * x == most for x in loads.loads)
        out.append(Query(f"reached {kind}", met, (length == witness, loads.holds), shown=loads_shown(loads)))
        if witness == 0:  # P = 1: L = 0 reaches any E (no excess without a token); E itself is reached at L = 1
            out.append(Query(f"reached by a non-empty request {kind}", met, (length == 1, loads.holds), shown=loads_shown(loads)))
        if witness > 0:  # no length below it (at P = 1 every length reaches E = 0, the least is 0)
            out.append(Query(f"reached by the empty request {kind}", met, (length == 0, loads.holds), shown=loads_shown(loads)))
            reached: BoolTerm = any_of(p * x == length + e for x in loads.loads)
            out.append(Query(f"reached first at the witness {kind}", Not(reached), (length >= 0, length < witness, loads.holds),
                             size=length, shown=loads_shown(loads)))
    return tuple(out)


def dual_chunk_swap_dcp_copies_exactly_the_short_prefills(
    cp_size: int, *, request_loads: RequestLoads = dual_chunk_swap_dcp_request_loads,
) -> tuple[Query, ...]:
    """Under dual_chunk_swap_dcp (vLLM with decode context parallel), a prefill of any length L is copied
    whole to every rank exactly when it does not fill all 2P chunks, (2P-1)*c >= L with c the least
    integer such that 2P*c >= L, and is otherwise laid out exactly as dual_chunk_swap lays it out."""
    p = cp_size
    length, loads = request_terms(request_loads, p)
    split = dual_chunk_swap_request_loads(length, p, "split")
    c = z3.Int("c")
    least = And(2 * p * c >= length, 2 * p * (c - 1) < length)
    short = (2 * p - 1) * c >= length
    claim = all_of(If(short, x == length, x == y) for x, y in zip(loads.loads, split.loads))
    facts = (length >= 0, least, loads.holds, split.holds)
    # Lemmas first: the two rows' builds define the same chunk size, which is the c of the claim (each
    # proved from the facts, divmod uniqueness).
    same = same_definitions((*loads.loads, loads.holds), "req", (*split.loads, split.holds), "split")
    chunk, _ = dual_chunk_swap_chunk_size(length, p, "split")
    return (
        Query("definitions agree", same, facts),
        Query("chunk size is the least c", chunk == c, facts),
        Query("request", claim, (*facts, same, chunk == c), size=length, shown=loads_shown(loads),
              replay=batch_replay(theorem="dual_chunk_swap_dcp_copies_exactly_the_short_prefills", cp_size=p,
                                  strategy="dual_chunk_swap_dcp", length_names=("L",),
                                  claim="loads == ((N,) * P if (2 * P - 1) * -(-N // (2 * P)) >= N else "
                                        "rank_loads(lengths, cp_size=P, strategy='dual_chunk_swap'))")),
    )
