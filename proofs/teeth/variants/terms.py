"""The wrong term builders the variants (proofs/teeth/variants/catalogue.py) swap into a theorem: wrong layouts, wrong
arithmetic and capacities, wrong scan steps and fitting relations, a wrong class-batch step. Each is a
small, plausible bug; none is used by a theorem itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import z3

from cpgraph.spec.logic import And, If, Implies, Not, Or, Sum
from cpgraph.proofs.theorems import batch, selection
from cpgraph.spec.arith import DivMod, align_up, divmod_by, floor_div
from cpgraph.spec.capacity import capture_local_tokens
from cpgraph.spec.strategies import (
    STRATEGIES,
    contiguous_request_loads,
    dual_chunk_swap_chunk_size,
    dual_chunk_swap_request_loads,
    rank_loads,
)
from cpgraph.spec.selection import (
    NO_SELECTION,
    CaptureSet,
    CaptureList,
    Selection,
    Window,
    above_top,
    at_or_below_top,
    has_room,
    within_padding_limit,
)
from cpgraph.spec.batch import ClassBatch, class_batch
from cpgraph.spec.terms import BoolTerm, Defined, IntLike, IntTerm, Loads, all_of, any_of, int_term, literal
from cpgraph.spec.zigzag import zigzag_block_len, zigzag_rank_load, zigzag_split



# -- wrong layouts -------------------------------------------------------------------------------------------

def wrong_partner_request_loads(length: IntLike, cp_size: int, name: str) -> Loads:
    """Rank r owns blocks r and 2P-2-r (off by one): block 2P-1 is lost, one block is counted twice."""
    split = zigzag_split(length, cp_size, name)
    loads = tuple(zigzag_block_len(split, r) + zigzag_block_len(split, 2 * cp_size - 2 - r) for r in range(cp_size))
    return Loads(loads, split.holds)


def paired_rank_load(split: DivMod, rank: IntLike, cp_size: IntLike) -> IntTerm:
    """Rank r owns blocks 2r and 2r+1 (contiguous pairs): both remainder tokens can land on rank 0."""
    r = int_term(rank)
    return zigzag_block_len(split, 2 * r) + zigzag_block_len(split, 2 * r + 1)


def last_rank_short(split: DivMod, rank: IntLike, cp_size: IntLike) -> IntTerm:
    """Zigzag, but rank P-1 holds one token fewer when L mod 2P > P (the one case where it is the busiest)."""
    r = int_term(rank)
    short = And(r == int_term(cp_size) - 1, split.remainder > int_term(cp_size))
    return zigzag_rank_load(split, rank, cp_size) - If(short, z3.IntVal(1), z3.IntVal(0))


def rank_one_extra(split: DivMod, rank: IntLike, cp_size: IntLike) -> IntTerm:
    """Zigzag, but rank 1 holds one token more: ceil(L/P) + 1 where it was the busiest."""
    return zigzag_rank_load(split, rank, cp_size) + If(int_term(rank) == 1, z3.IntVal(1), z3.IntVal(0))


def even_share_one_extra(split: DivMod, rank: IntLike, cp_size: IntLike) -> IntTerm:
    """Zigzag, but rank 0 holds one token more when L is a multiple of 2P: L/P + 1 exactly where the share
    divides evenly (a bound ceil(L/P) stated one too loose, P*(a - 1) <= L, lets it through)."""
    return zigzag_rank_load(split, rank, cp_size) + If(And(int_term(rank) == 0, split.remainder == 0),
                                                          z3.IntVal(1), z3.IntVal(0))


def interleave_rank_one_extra(split: DivMod, rank: IntLike) -> IntTerm:
    """Interleave, but rank 1 holds one token more."""
    from cpgraph.spec.strategies import interleave_rank_load

    return interleave_rank_load(split, rank) + If(int_term(rank) == 1, z3.IntVal(1), z3.IntVal(0))


def first_rank_short(split: DivMod, rank: IntLike, cp_size: IntLike) -> IntTerm:
    """Zigzag, but rank 0 holds one token fewer when 0 < L mod 2P <= P (the case where it is the busiest), at
    P >= 2 only: at P = 1 rank 0 is also rank P-1, and the claim's last-rank half would refute it there, so only
    its rank-0 half tells it apart."""
    m, p = split.remainder, int_term(cp_size)
    short = And(int_term(rank) == 0, m > 0, m <= p, p >= 2)
    return zigzag_rank_load(split, rank, cp_size) - If(short, z3.IntVal(1), z3.IntVal(0))


def wrong_partner_owned(rank: IntLike, cp_size: IntLike) -> tuple[IntLike, IntLike]:
    return (rank, 2 * cp_size - 2 - rank)


def contiguous_dropping_remainder(length: IntLike, cp_size: int, name: str) -> Loads:
    """Every rank gets floor(L/P): the remainder tokens vanish."""
    split = divmod_by(length, cp_size, name)
    return Loads(tuple(split.quotient for _ in range(cp_size)), split.holds)


def contiguous_last_takes_rest(length: IntLike, cp_size: int, name: str) -> Loads:
    """Ranks get floor(L/P), the last one also the whole remainder (unbalanced)."""
    split = divmod_by(length, cp_size, name)
    loads = tuple(split.quotient + (split.remainder if r == cp_size - 1 else 0) for r in range(cp_size))
    return Loads(loads, split.holds)


def interleave_without_remainder(total: IntLike, cp_size: int, name: str) -> Loads:
    split = divmod_by(total, cp_size, name)
    return Loads(tuple(split.quotient for _ in range(cp_size)), split.holds)


def interleave_one_remainder_token_short(split: DivMod, rank: IntLike) -> IntTerm:
    """q + [r < m - 1]: the remainder's last token is lost, so with N mod P = 1 no rank holds ceil(N/P)."""
    return split.quotient + If(int_term(rank) < split.remainder - 1, 1, 0)


def interleave_even_share_one_extra(split: DivMod, rank: IntLike) -> IntTerm:
    """Interleave, but rank 0 holds N/P + 1 when P divides N (a bound stated one too loose lets it through)."""
    from cpgraph.spec.strategies import interleave_rank_load

    return interleave_rank_load(split, rank) + If(And(int_term(rank) == 0, split.remainder == 0),
                                                     z3.IntVal(1), z3.IntVal(0))


def interleave_remainder_to_rank_zero(split: DivMod, rank: IntLike) -> IntTerm:
    return split.quotient + If(int_term(rank) == 0, split.remainder, 0)


# -- wrong arithmetic and capacities ---------------------------------------------------------------------------

def loose_divmod(dividend: IntLike, divisor: IntLike, name: str) -> DivMod:
    """0 <= m <= S instead of m < S: the quotient is no longer unique."""
    n, d = int_term(dividend), int_term(divisor)
    q, m = z3.Int(f"{name}.q"), z3.Int(f"{name}.m")
    return DivMod(n, d, q, m, And(n == d * q + m, m >= 0, m <= d))


def remainder_untied(dividend: IntLike, divisor: IntLike, name: str) -> DivMod:
    """The quotient pinned (0 <= L - S*q < S) but the remainder only bounded (0 <= m < S), never tied to L:
    the quotient is unique, the remainder is not."""
    n, d = int_term(dividend), int_term(divisor)
    q, m = z3.Int(f"{name}.q"), z3.Int(f"{name}.m")
    return DivMod(n, d, q, m, And(n - d * q >= 0, n - d * q < d, m >= 0, m < d))


def next_multiple(value: IntLike, align_size: IntLike, name: str) -> Defined:
    """A*(floor(v/A) + 1): one block too many when v is already a multiple of A."""
    down = floor_div(value, align_size, name)
    return Defined(int_term(align_size) * (down.value + 1), down.holds)


def no_rounding(value: IntLike, align_size: IntLike, name: str) -> Defined:
    """v itself: at least v and below v + A, but not a multiple of A. Its facts keep align_up's domain (A >= 1),
    so only the claim's multiple-of-A half tells it apart (with no domain, A <= 0 would refute it anyway)."""
    return Defined(int_term(value), int_term(align_size) >= 1)


def _align_up_folding_zero_to_a_block(value: IntLike, align_size: IntLike, name: str) -> Defined:
    # A fold that gives every literal at least one block (align_up(0, A) = A) while the term gives 0.
    if isinstance(value, int) and isinstance(align_size, int) and value == 0:
        return Defined(z3.IntVal(align_size), z3.BoolVal(True))
    return align_up(value, align_size, name)


def contiguous_first_cut_late(length: IntLike, cp_size: int, name: str) -> Loads:
    """The first cut one token late (rank 0 takes one of rank 1's tokens): ceil(L/P) + 1 on rank 0 when P
    divides L."""
    loads = contiguous_request_loads(length, cp_size, name)
    if cp_size < 2:
        return loads
    shift = If(loads.loads[1] >= 1, z3.IntVal(1), z3.IntVal(0))
    moved = (loads.loads[0] + shift, loads.loads[1] - shift, *loads.loads[2:])
    return Loads(moved, loads.holds)


def batch_loads_keeping_first_facts(lengths: Sequence[IntLike], cp_size: int, name: str, kind: str = "zigzag") -> Loads:
    """The batch's loads summed rank-wise, keeping only the first request's defining facts: the later
    requests' quotients and remainders float free (interleave: from the total, unchanged)."""
    row = STRATEGIES[kind]
    if row.request_loads is None:
        return rank_loads(lengths, cp_size, name, kind)
    parts = [row.request_loads(x, cp_size, f"{name}.req{i}") for i, x in enumerate(lengths)]
    loads = tuple(Sum([part.loads[r] for part in parts]) for r in range(cp_size))
    return Loads(loads, parts[0].holds)


def align_down(value: IntLike, align_size: IntLike, name: str) -> Defined:
    down = floor_div(value, align_size, name)
    return Defined(int_term(align_size) * down.value, down.holds)


def headroom_bound_minus_one_per_request(num_tokens: IntLike, cp_size: int, max_requests: IntLike, name: str) -> Defined:
    """floor((N + R(P-2))/P): one token per request too little."""
    n, r = int_term(num_tokens), int_term(max_requests)
    return floor_div(n + If(r <= n, r, n) * (cp_size - 2), cp_size, f"{name}.headroom")


def capture_of_mean(num_tokens: IntLike, cp_size: int, align_size: IntLike, name: str, kind: str = "zigzag") -> Defined:
    """align_up(floor(B/P), A): the mean, not the busiest rank."""
    mean = floor_div(num_tokens, cp_size, f"{name}.mean")
    rows = align_up(mean.value, align_size, f"{name}.rows")
    return Defined(rows.value, And(mean.holds, rows.holds))


def captured_ignoring_requests(num_tokens: IntLike, cp_size: int, align_size: IntLike, max_requests: IntLike, name: str) -> Defined:
    """Upstream's capture rule (one request of B tokens) where headroom for R requests was meant."""
    return capture_local_tokens(num_tokens, cp_size, align_size, name)


def _step(below_stops: bool = False, above_skips: bool = False,
          room: Callable[[CaptureList, int, IntLike], BoolTerm] = has_room) -> selection.Step:
    def step(capture: CaptureList, index: int, window: Window, required: IntLike, rest: Selection) -> Selection:
        b = capture.buckets[index]
        below, above, fits = b < window.low, above_top(b, window), room(capture, index, required)
        on_below = NO_SELECTION if below_stops else rest
        on_above = rest if above_skips else NO_SELECTION
        admitted = If(below, on_below.admitted, If(above, on_above.admitted, Or(fits, rest.admitted)))
        bucket = If(below, on_below.bucket, If(above, on_above.bucket, If(fits, b, rest.bucket)))
        return Selection(admitted, bucket)

    return step


def _prefers_later_bucket(capture: CaptureList, index: int, window: Window, required: IntLike, rest: Selection) -> Selection:
    # Within the window, keep the later buckets' choice when there is one: a fitting bucket, not the least.
    b = capture.buckets[index]
    below, above, fits = b < window.low, above_top(b, window), has_room(capture, index, required)
    admitted = If(below, rest.admitted, If(above, z3.BoolVal(False), Or(fits, rest.admitted)))
    bucket = If(below, rest.bucket, If(above, z3.IntVal(0), If(rest.admitted, rest.bucket, b)))
    return Selection(admitted, bucket)


def _reports_head_without_room(capture: CaptureList, index: int, window: Window, required: IntLike, rest: Selection) -> Selection:
    # Admits on a later bucket but reports the first bucket in the window, room or not.
    b = capture.buckets[index]
    below, above, room = b < window.low, above_top(b, window), has_room(capture, index, required)
    admitted = If(below, rest.admitted, If(above, z3.BoolVal(False), Or(room, rest.admitted)))
    bucket = If(below, rest.bucket, If(above, z3.IntVal(0), b))
    return Selection(admitted, bucket)


def _align_up_folding_down(value: IntLike, align_size: IntLike, name: str) -> Defined:
    # A fold that rounds down on literal inputs while the symbolic term rounds up.
    if isinstance(value, int) and isinstance(align_size, int):
        return Defined(z3.IntVal(value // align_size * align_size), z3.BoolVal(True))
    return align_up(value, align_size, name)


def dual_chunk_swap_full_chunks(length: IntLike, cp_size: int, name: str) -> Loads:
    """DualChunkSwap with every chunk a full c = ceil(L/2P) (the request padded to 2P*c, zigzag_pad's
    shape): 2c on every rank, more than L tokens between them when 2P does not divide L."""
    chunk, holds = dual_chunk_swap_chunk_size(length, cp_size, name)
    return Loads(tuple(2 * chunk for _ in range(cp_size)), holds)


def dcp_copying_below_2p(length: IntLike, cp_size: int, name: str) -> Loads:
    """The dcp row copying the prefills shorter than 2P (the CP-active gate's notion of short) instead of
    the ones that do not fill all 2P chunks."""
    split = dual_chunk_swap_request_loads(length, cp_size, name)
    n = int_term(length)
    return Loads(tuple(If(n < 2 * cp_size, n, x) for x in split.loads), split.holds)


def dcs_class_form(cp_size: int, quotient: IntTerm, remainder: IntTerm, rank: int) -> IntTerm:
    """The remainder-class form q*loads(2P) + loads(m) a class encoding would assume for DualChunkSwap
    (loads(2P) = 2 on every rank; loads(m) of m < 2P tokens, the spec's own, folded)."""
    table = [literal(dual_chunk_swap_request_loads(m, cp_size, "class").loads[rank]) for m in range(2 * cp_size)]
    return 2 * quotient + Sum([If(remainder == m, z3.IntVal(v), z3.IntVal(0)) for m, v in enumerate(table) if v])


def _room_ignoring_record(capture: CaptureList, index: int, required: IntLike) -> BoolTerm:
    return capture.capacities[index] >= required


def _room_strict(capture: CaptureList, index: int, required: IntLike) -> BoolTerm:
    return And(capture.recorded[index], capture.capacities[index] > required)


def _relation(fits: Callable[[CaptureList, int, Window, IntLike], BoolTerm], order: str = "least") -> selection.Relation:
    """A relation like is_least_fitting over a custom fitting test and order (least, greatest, any)."""

    def relation(selection: Selection, capture: CaptureList, window: Window, required: IntLike) -> BoolTerm:
        members = [fits(capture, i, window, required) for i in range(len(capture))]
        b = capture.buckets
        member = any_of(And(f, selection.bucket == b[i]) for i, f in enumerate(members))
        if order == "least":
            extreme = all_of(Implies(f, selection.bucket <= b[i]) for i, f in enumerate(members))
        elif order == "greatest":
            extreme = all_of(Implies(f, selection.bucket >= b[i]) for i, f in enumerate(members))
        else:
            extreme = z3.BoolVal(True)
        return And(selection.admitted == any_of(members), Implies(selection.admitted, And(member, extreme)))

    return relation


def _fits(capture: CaptureList, i: int, window: Window, required: IntLike) -> BoolTerm:
    return And(within_padding_limit(capture.buckets[i], window), has_room(capture, i, required))


def _fits_ignoring_record(capture: CaptureList, i: int, window: Window, required: IntLike) -> BoolTerm:
    return And(within_padding_limit(capture.buckets[i], window), capture.capacities[i] >= required)


def _fits_without_lower_limit(capture: CaptureList, i: int, window: Window, required: IntLike) -> BoolTerm:
    return And(at_or_below_top(capture.buckets[i], window), has_room(capture, i, required))


def _fits_strictly_above_n(capture: CaptureList, i: int, window: Window, required: IntLike) -> BoolTerm:
    """A bucket equal to n is skipped (n < B instead of n <= B)."""
    b = capture.buckets[i]
    return And(b > window.low, at_or_below_top(b, window), has_room(capture, i, required))


def _fits_strictly_below_top(capture: CaptureList, i: int, window: Window, required: IntLike) -> BoolTerm:
    """A bucket equal to F*n is skipped (B < F*n instead of B <= F*n)."""
    b = capture.buckets[i]
    return And(b >= window.low, Not(above_top(b + 1, window)), has_room(capture, i, required))


def _fits_with_room_to_spare(capture: CaptureList, i: int, window: Window, required: IntLike) -> BoolTerm:
    """An exact fit is not room (capacity > required instead of >=)."""
    return And(within_padding_limit(capture.buckets[i], window), _room_strict(capture, i, required))


def _off_list_relation(selection: Selection, capture: CaptureList, window: Window, required: IntLike) -> BoolTerm:
    """The least fitting bucket's decision, but the bucket reported one above it (not a listed value)."""
    shifted = Selection(selection.admitted, selection.bucket - 1)
    from cpgraph.spec.selection import is_least_fitting

    return is_least_fitting(shifted, capture, window, required)


def _fits_without_upper_limit(capture: CaptureList, i: int, window: Window, required: IntLike) -> BoolTerm:
    return And(capture.buckets[i] >= window.low, has_room(capture, i, required))


def _fits_ignoring_capacity(capture: CaptureList, i: int, window: Window, required: IntLike) -> BoolTerm:
    return And(within_padding_limit(capture.buckets[i], window), capture.recorded[i])


def _fits_first_at_or_above_n_only(capture: CaptureList, i: int, window: Window, required: IntLike) -> BoolTerm:
    first = And(capture.buckets[i] >= window.low, *([capture.buckets[i - 1] < window.low] if i else []))
    return And(first, _fits(capture, i, window, required))


def _window_one_short(num_tokens: IntLike, max_padding_factor: IntLike) -> Window:
    n = int_term(num_tokens)
    return Window(n, int_term(max_padding_factor) * n - 1)


def _unsorted_ok(capture: CaptureList) -> BoolTerm:
    return all_of(c >= 0 for c in capture.capacities)


def _any_head(bucket: IntTerm, capture: CaptureSet) -> BoolTerm:
    return z3.BoolVal(True)


def _add_without_quotient(state: ClassBatch, length: IntTerm, name: str) -> tuple[ClassBatch, BoolTerm]:
    after, facts = batch.add_request(state, length, name)
    return ClassBatch(after.cp_size, state.quotients, after.long_counts, after.short_counts, after.holds), facts


def _count_two(requests: z3.ArithRef, length: z3.ArithRef) -> z3.ArithRef:
    return requests + 2


def _forget_new_request(requests: z3.ArithRef, length: z3.ArithRef) -> z3.ArithRef:
    return requests


# -- wrong batch facts: what class_batch assumes, one conjunct short ------------------------------------------

def _batch_facts_without(dropped: str) -> Callable[[ClassBatch], BoolTerm]:
    def facts(state: ClassBatch) -> BoolTerm:
        longs, shorts = Sum(list(state.long_counts)), Sum(list(state.short_counts))
        parts = {
            "counts": all_of([c >= 0 for c in (*state.long_counts, *state.short_counts)]),
            "quotients": state.quotients >= longs,
            "no_long_no_quotient": Implies(longs == 0, state.quotients == 0),
            "requests": state.requests >= 1,
        }
        # What stands in for the dropped conjunct: nothing, except that without each count >= 0 the sums stay
        # checked (a negative count offset by another passes).
        weaker = {"counts": And(longs >= 0, shorts >= 0, state.quotients >= 0)}
        return all_of([weaker.get(name, z3.BoolVal(True)) if name == dropped else term for name, term in parts.items()])

    return facts


def class_batch_under(facts: Callable[[ClassBatch], BoolTerm]) -> Callable[[int, str], ClassBatch]:
    """spec.batch.class_batch's variables under other facts: the class_batch a wrong is_a_batch would give."""

    def build(cp_size: int, name: str) -> ClassBatch:
        fresh = batch.state(cp_size, name)
        return ClassBatch(cp_size, fresh.quotients, fresh.long_counts, fresh.short_counts, facts(fresh))

    return build


BATCH_FACTS_WITHOUT = {
    name: _batch_facts_without(name) for name in ("counts", "quotients", "no_long_no_quotient", "requests")
}


def class_batch_with_untied_quotient(cp_size: int, name: str) -> ClassBatch:
    """spec.batch.class_batch whose quotient sum is a fresh variable, not the one its facts constrain."""
    right = class_batch(cp_size, name)
    return ClassBatch(cp_size, z3.Int(f"{name}.Q'"), right.long_counts, right.short_counts, right.holds)
