"""The abstraction behind every end-to-end theorem: a batch of any size is its remainder-class counts.

spec/batch.py describes a batch by Q (the sum of the quotients L div 2P) and counts c[m], s[m] of long
and short requests per remainder m = L mod 2P, with loads Q*loads(2P) + sum_m (c[m]+s[m])*loads(m). This
module proves, for one P and every class-encodable strategy of the table (spec/strategies.py
``CLASS_ENCODABLE``: zigzag, contiguous, interleave; the DualChunkSwap rows are not class-encodable, see
proofs/theorems/strategies.py ``dual_chunk_swap_long_requests_split_by_remainder`` and the variant that refutes the
class form for them), by induction over the requests of a batch:

- base: the empty batch is the class state with every count 0 and Q = 0, which has zero loads, zero
  tokens and satisfies the state invariant;
- step: adding one request of any length L >= 0 to a state that satisfies the invariant gives a state
  that satisfies it, whose loads are the old loads plus the spec's own per-request loads of L, and whose
  tokens are the old tokens plus L.

So every concrete batch maps to a ClassBatch with the same loads and tokens; a claim proved for every
ClassBatch (proofs/theorems/end_to_end.py) holds for every batch of any number of requests. The invariant, the
base and the step are all built from ``spec.batch.is_reachable`` / ``add_request`` (one builder: the
invariant class_batch assumes is the one proved here).
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from cpgraph.spec.logic import And, If, Or, Sum
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.theorems.setting import OTHER_STRATEGIES_MAX_P, STRATEGIES_FULL_SCOPE  # the end-to-end theorems' scope, one source
from cpgraph.spec.batch import ClassBatch, class_batch, class_loads, is_a_batch, is_reachable
from cpgraph.spec.strategies import CLASS_ENCODABLE, STRATEGIES, rank_loads
from cpgraph.spec.terms import BoolTerm, IntTerm, Loads, all_of, literal

RequestLoads = Callable[[IntTerm, int, str, str], Loads]


def _spec_request_loads(length: IntTerm, cp_size: int, name: str, kind: str) -> Loads:
    return rank_loads((length,), cp_size, name, kind)


def state(cp_size: int, name: str) -> ClassBatch:
    """Any class state (counts and Q unconstrained; the invariant says which are reachable)."""
    s = 2 * cp_size
    return ClassBatch(
        cp_size,
        z3.Int(f"{name}.Q"),
        tuple(z3.Int(f"{name}.c{m}") for m in range(s)),
        tuple(z3.Int(f"{name}.s{m}") for m in range(s)),
        z3.BoolVal(True),
    )


def empty_state(cp_size: int) -> ClassBatch:
    """The class state of the empty batch: every count of ``state``'s classes 0."""
    zeros = tuple(z3.IntVal(0) for _ in state(cp_size, "empty").long_counts)
    return ClassBatch(cp_size, z3.IntVal(0), zeros, zeros, z3.BoolVal(True))


def add_request(batch: ClassBatch, length: IntTerm, name: str) -> tuple[ClassBatch, BoolTerm]:
    """The state after one more request of ``length`` tokens: L = 2P*q + m (fresh ``{name}.q``/``.m``)."""
    s = 2 * batch.cp_size
    q, m = z3.Int(f"{name}.q"), z3.Int(f"{name}.m")
    facts = And(length == s * q + m, m >= 0, m < s, q >= 0)
    one, zero = z3.IntVal(1), z3.IntVal(0)
    longs = tuple(c + If(And(q >= 1, m == j), one, zero) for j, c in enumerate(batch.long_counts))
    shorts = tuple(c + If(And(q == 0, m == j), one, zero) for j, c in enumerate(batch.short_counts))
    return ClassBatch(batch.cp_size, batch.quotients + q, longs, shorts, z3.BoolVal(True)), facts


def _ints(values: tuple[IntTerm, ...]) -> tuple[int, ...]:
    out = [literal(v) for v in values]
    if any(v is None for v in out):
        raise ValueError("per-class loads must be numerals (a concrete length and cp_size)")
    return tuple(v for v in out if v is not None)


def _strategies_with_request_loads(cp_size: int) -> tuple[str, ...]:
    """The class-encodable rows with per-request loads the lemma covers at ``cp_size`` (the end-to-end
    theorems' scope): the DualChunkSwap rows are outside it by declaration (``CLASS_ENCODABLE``)."""
    return tuple(
        sid
        for sid in CLASS_ENCODABLE
        if STRATEGIES[sid].request_loads is not None and (sid in STRATEGIES_FULL_SCOPE or cp_size <= OTHER_STRATEGIES_MAX_P)
    )


BatchFacts = Callable[[ClassBatch], BoolTerm]


def class_loads_track_request_loads(
    cp_size: int, *, request_loads: RequestLoads = _spec_request_loads,
    add: Callable[[ClassBatch, IntTerm, str], tuple[ClassBatch, BoolTerm]] = add_request,
    batch_facts: BatchFacts = is_a_batch,
    batch_of: Callable[[int, str], ClassBatch] = class_batch,
) -> tuple[Query, ...]:
    """Every batch of any number of requests has the loads and tokens of its remainder-class state:
    base (the empty batch) and step (one more request of any length moves the class formula exactly as
    the spec's per-request loads move the batch's loads), for zigzag at every P and for
    contiguous at P <= 8 (the class-encodable strategies; DualChunkSwap is not) (interleave's loads are a function of the total, so the tokens step covers it);
    and conversely every state a ClassBatch admits is realised by a non-empty batch."""
    p = cp_size
    out: list[Query] = []
    empty = empty_state(p)
    # (its tokens are 0 by construction, a sum of zero counts: the teeth pass's induction_base checks them)
    out.append(Query("base", is_reachable(empty), ()))
    before = state(p, "state")
    length = z3.Int("L")
    after, facts = add(before, length, "next")
    hypotheses = (is_reachable(before), facts)  # facts: L = 2P*q + m with q, m >= 0, so L >= 0
    out.append(Query("step invariant", is_reachable(after), hypotheses))
    # Coverage: the state of every non-empty batch is one class_batch admits (its own facts, one builder).
    out.append(Query("step covers", batch_facts(after), hypotheses))
    out.append(Query("step tokens", after.tokens == before.tokens + length, hypotheses))
    # Exactness, the converse: every state class_batch admits is one a non-empty batch has, so a model is a
    # real batch. Stated from what realising it needs (one long request per c[m] with quotient >= 1, the
    # surplus quotient on any one of them, s[m] requests of m tokens), not from spec.batch's builders.
    any_state = state(p, "any")
    longs = Sum(list(any_state.long_counts))
    realisable = all_of([
        any_state.requests >= 1,
        *[c >= 0 for c in (*any_state.long_counts, *any_state.short_counts)],
        any_state.quotients >= longs,
        Or(longs >= 1, any_state.quotients == 0),
    ])
    # Stated as an equivalence, not an implication: a weakened `realisable` (say a count >= -1) still
    # follows from the facts, but no longer implies them back, so only the exact statement proves.
    out.append(Query("exact", realisable == batch_facts(any_state), ()))
    # spec.batch.class_batch (what every end-to-end theorem quantifies over) is exactly this state: the same
    # Q and the same 2P long and 2P short counts (so the same tokens and requests), and it assumes exactly
    # is_a_batch.
    theirs = batch_of(p, "any")
    pairs = [(theirs.quotients, any_state.quotients), *zip(theirs.long_counts, any_state.long_counts),
             *zip(theirs.short_counts, any_state.short_counts)]
    same_classes = len(theirs.long_counts) == len(theirs.short_counts) == 2 * p
    out.append(Query("class_batch is the state", all_of([
        z3.BoolVal(same_classes), *[x == y for x, y in pairs], theirs.holds == batch_facts(any_state),
    ]), ()))
    for kind in _strategies_with_request_loads(p):
        old = class_loads(before, kind, f"{kind}.before")
        new = class_loads(after, kind, f"{kind}.after")
        request = request_loads(length, p, f"{kind}.request", kind)
        zero = class_loads(empty, kind, f"{kind}.empty")
        out.append(Query(f"base loads {kind}", all_of(x == 0 for x in zero.loads), (zero.holds,)))
        # Two steps of one chain, rank by rank: the request's loads split into a quotient part and a
        # class part (summation by parts: d_r(j) = loads(j)[r] - loads(j-1)[r] counted for m >= j), then
        # the class formula moves by exactly that split.
        q, m = z3.Int("next.q"), z3.Int("next.m")
        unit = rank_loads((2 * p,), p, f"{kind}.unit", kind).loads  # numerals: one request of 2P tokens
        classes = range(len(before.long_counts))  # the 2P remainder classes, as the state has them
        per_class = [_ints(rank_loads((j,), p, f"{kind}.cls{j}", kind).loads) for j in classes]
        splits = []
        for r, unit_load in enumerate(unit):  # every rank (no range to stop short of the last)
            steps = [(j, per_class[j][r] - (per_class[j - 1][r] if j else 0)) for j in classes]
            splits.append(q * unit_load + Sum([d * If(m >= j, z3.IntVal(1), z3.IntVal(0)) for j, d in steps if d]))
        split_claim = all_of(x == y for x, y in zip(request.loads, splits, strict=True))
        out.append(Query(f"request split {kind}", split_claim, (facts, request.holds), shown=(("L", length),)))
        # The suffix counts move by one class: T'[j] = T[j] + [m >= j] (class_loads names them .T{j}).
        # Proved from the last class down, each j from j + 1 (a chain of small queries).
        moved = [
            z3.Int(f"{kind}.after.T{j}") == z3.Int(f"{kind}.before.T{j}") + If(m >= j, z3.IntVal(1), z3.IntVal(0))
            for j in classes
        ]
        # Every class's step, the last first; step j assumes step j + 1 (proved just before it), the last none.
        hints = [*moved[1:], z3.BoolVal(True)]
        for j, (claim, hint) in reversed(list(enumerate(zip(moved, hints, strict=True)))):
            out.append(Query(f"suffix step {kind} T{j}", claim, (facts, old.holds, new.holds, hint)))
        suffix_claim = all_of(moved)
        out.append(
            Query(
                f"step loads {kind}",
                all_of(n == o + x for n, o, x in zip(new.loads, old.loads, splits, strict=True)),
                (facts, old.holds, new.holds, split_claim, suffix_claim),
                shown=(("L", length),),
            )
        )
    return tuple(out)
