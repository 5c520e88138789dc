"""Theorems about spec/selection.py: the scan selects exactly the least fitting bucket, and the invariants.

Theorems about spec/selection.py: upstream's scan of a sorted capture list selects exactly the least
fitting bucket (or falls back exactly when none fits), and so meets every selection invariant.

Every theorem is proved for every capture list of 1..32 buckets with unbounded values, unbounded
capacities (or missing ones), any n >= 1, any required rows, and any padding window [n, H] with H >= n:
a window with a symbolic upper end covers every padding factor F >= 1 at once
(padding_window_holds_n_for_every_factor shows F*n >= n).

The scan is proved to compute the declarative relation (least fitting bucket, or none) by induction over
the list; each invariant is then proved of any decision satisfying the relation, so it holds of the scan.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction

import z3

from cpgraph.spec.logic import And, Implies, Not, Or, Sum
from cpgraph.proofs.engine.obligation import Query, flag
from cpgraph.proofs.engine.parameters import FOLD_CP_SIZES as FOLD_CP_SIZES
from cpgraph.proofs.engine.replay import selection_replay
from cpgraph.spec.admission import Decision, RankSetup, rank_decision
from cpgraph.spec.invariants import (
    admission_replay,
    capacity_fit,
    captured_bucket,
    minimal_bucket,
    no_needless_fallback,
    padding_limit,
    rank_consensus,
)
from cpgraph.spec.selection import (
    EMPTY_CAPTURE_SET,
    NO_SELECTION,
    CaptureList,
    CaptureSet,
    below_every_member,
    is_least_fitting_in_set,
    symbolic_capture_set,
    with_head,
    Selection,
    Window,
    capture_list_is_sorted,
    capture_list_is_well_formed,
    is_least_fitting,
    scan_select,
    padding_window,
    scan_step,
    symbolic_capture_list,
)
from cpgraph.spec.replay import tripwire as spec_tripwire
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, all_of

Step = Callable[[CaptureList, int, Window, IntLike, Selection], Selection]
Relation = Callable[[Selection, CaptureList, Window, IntLike], BoolTerm]
WellFormed = Callable[[CaptureList], BoolTerm]


@functools.lru_cache(maxsize=128)
def _setting(length: int, well_formed: WellFormed) -> tuple[CaptureList, Window, IntTerm, tuple[BoolTerm, ...], IntTerm]:
    """A symbolic sorted capture list, window [n, high], required rows; the hypotheses; a size to shrink."""
    capture = symbolic_capture_list(length, "cap")
    n, high, required = z3.Int("n"), z3.Int("high"), z3.Int("required")
    hypotheses = (well_formed(capture), n >= 1, high >= n, required >= 0)
    size = Sum([*capture.buckets, *capture.capacities, high, required])
    return capture, Window(n, high), required, hypotheses, size


def _tail(capture: CaptureList) -> CaptureList:
    return CaptureList(capture.buckets[1:], capture.capacities[1:], capture.recorded[1:])


def scan_selects_least_fitting_bucket(
    length: int, *, step: Step = scan_step, well_formed: WellFormed = capture_list_is_well_formed
) -> tuple[Query, ...]:
    """The scan (skip below n, stop at the first above F*n, skip a bucket without room or capacity) admits
    exactly when some bucket fits, and then selects the least fitting bucket: the declarative relation.
    By induction over the list from its end: if scanning the buckets after the first gives the least
    fitting bucket of those, one more scan step gives the least fitting bucket of the whole list (the
    empty list falls back, which is the relation for no buckets)."""
    capture, window, required, hypotheses, size = _setting(length, well_formed)
    rest = Selection(z3.Bool("rest.admitted"), z3.Int("rest.bucket"))
    chosen = step(capture, 0, window, required, rest)
    return (
        Query(
            "step",
            is_least_fitting(chosen, capture, window, required),
            (*hypotheses, is_least_fitting(rest, _tail(capture), window, required)),
            size=size,
            shown=(("admitted", flag(chosen.admitted)), ("bucket", chosen.bucket)),
            replay=selection_replay(theorem="scan_selects_least_fitting_bucket", length=length),
        ),
    )


Select = Callable[[CaptureList, Window, IntLike], Selection]


Tripwire = Callable[[CaptureList, IntTerm, tuple[IntTerm, ...]], BoolTerm]
Decide = Callable[[Loads, IntLike, RankSetup, IntLike, str], Decision]


def scan_select_is_the_step_folded_over_the_whole_list(
    length: int, *, select: Select = scan_select, tripwire: Tripwire = spec_tripwire, decide: Decide = rank_decision
) -> tuple[Query, ...]:
    """The scan admission and replay call (spec/selection.py scan_select) is the scan step folded over the
    whole list: on a list of K buckets its decision is one scan step at the first bucket over its decision on
    the other K-1 (for a window with an upper end, and for the local keying's window with none), on the
    empty list it falls back, and admission's decision (spec/admission.py rank_decision, both keyings, at each
    P of FOLD_CP_SIZES) is that scan over its whole keyed list; and replay's tripwire (spec/replay.py, both
    keyings, the same P) reads the whole keyed list: it passes exactly when the bucket is listed with room for every rank's rows (proofs/theorems/claims.py,
    restated). With scan_selects_least_fitting_bucket and local_scan_meets_every_invariant (the step,
    K = 1..32), induction over K gives: the decision admission and replay take meets the declarative relation on
    every sorted list of 1..32 buckets, so a scan or a tripwire that stops early is refuted, not only
    sampled."""
    from cpgraph.proofs.theorems.claims import is_listed_with_room, sizes_holding_themselves
    from cpgraph.spec.keying import keying as keying_row
    from cpgraph.spec.selection import same_selection, unbounded_window

    capture, window, required, hypotheses, size = _setting(length, capture_list_is_well_formed)
    tail, empty = _tail(capture), CaptureList((), (), ())
    shown = (("n", window.low), ("required", required))
    out = [Query("empty list", is_least_fitting(select(empty, window, required), empty, window, required), hypotheses[1:])]
    for part, w in (("fold", window), ("fold, no upper end", unbounded_window(window.low))):
        folded = scan_step(capture, 0, w, required, select(tail, w, required))
        out.append(Query(part, same_selection(select(capture, w, required), folded), hypotheses, size=size, shown=shown))
    # At each P of FOLD_CP_SIZES (a rule that reads the list differently at some P is seen there), any P ranks'
    # loads, negative ones too: both equalities hold for every integer load, so no bound is assumed.
    keyed_lists = (("global", capture), ("local", sizes_holding_themselves(capture)))
    bucket = z3.Int("replay.bucket")
    for p in FOLD_CP_SIZES:
        loads = Loads(tuple(z3.Int(f"load{r}") for r in range(p)), z3.BoolVal(True))
        for keying, listed in keyed_lists:
            setup = RankSetup("zigzag", p, 2 * p, Fraction(2), capture, keying)
            decided = decide(loads, 0, setup, window.low, f"decide{p}")
            keyed = keying_row(keying).inputs(window.low, loads, 2 * p, Fraction(2), capture, f"decide{p}")
            whole = select(listed, keyed.window, keyed.required)
            out.append(Query(f"admission's call, {keying}, P={p}", same_selection(decided.selection, whole),
                             (*hypotheses, decided.holds, keyed.holds), size=size, shown=shown))
            passes = tripwire(keying_row(keying).capacities(capture), bucket, loads.loads)
            out.append(Query(f"replay's tripwire, {keying}, P={p}", passes == is_listed_with_room(listed, bucket, loads.loads),
                             hypotheses, size=size, shown=(*shown, ("bucket", bucket))))
    return tuple(out)


@functools.lru_cache(maxsize=128)
def _relation_of(relation: Relation, length: int, well_formed: WellFormed) -> BoolTerm:
    """relation(chosen) over the shared setting, built once per relation and length."""
    capture, window, required, _, _ = _setting(length, well_formed)
    return relation(Selection(z3.Bool("chosen.admitted"), z3.Int("chosen.bucket")), capture, window, required)


def scan_selects_least_fitting_bucket_for_any_list_length(
    parameter: int, *, step: Step = scan_step, sorted_head: Callable[[IntTerm, CaptureSet], BoolTerm] = below_every_member
) -> tuple[Query, ...]:
    """For capture lists of every length: the scan of the empty list falls back (the relation for no
    buckets), and if scanning a list's tail gives its least fitting bucket, one more scan step at a head
    smaller than every tail bucket gives the least fitting bucket of the whole list. The tail is any set
    of buckets with any capacities (uninterpreted functions), so the induction covers every length."""
    del parameter
    tail = symbolic_capture_set("rest")
    n, high, required = z3.Int("n"), z3.Int("high"), z3.Int("required")
    window = Window(n, high)
    setting = (n >= 1, high >= n, required >= 0)
    base = Query("base", is_least_fitting_in_set(NO_SELECTION, EMPTY_CAPTURE_SET, window, required), setting)
    head, capacity, recorded = z3.Int("head.bucket"), z3.Int("head.capacity"), z3.Bool("head.recorded")
    rest = Selection(z3.Bool("rest.admitted"), z3.Int("rest.bucket"))
    chosen = step(CaptureList((head,), (capacity,), (recorded,)), 0, window, required, rest)
    whole = with_head(tail, head, capacity, recorded)
    induction = Query(
        "step",
        is_least_fitting_in_set(chosen, whole, window, required),
        (*setting, head >= 1, sorted_head(head, tail), is_least_fitting_in_set(rest, tail, window, required)),
        shown=(("admitted", flag(chosen.admitted)), ("bucket", chosen.bucket)),
    )
    return (base, induction)


def _from_relation(length: int, relation: Relation, claim: Callable[[Selection, CaptureList, Window, IntTerm], BoolTerm],
                   well_formed: WellFormed, part: str = "relation") -> tuple[Query, ...]:
    capture, window, required, hypotheses, size = _setting(length, well_formed)
    chosen = Selection(z3.Bool("chosen.admitted"), z3.Int("chosen.bucket"))
    return (
        Query(
            part,
            claim(chosen, capture, window, required),
            (*hypotheses, _relation_of(relation, length, well_formed)),
            size=size,
            shown=(("admitted", flag(chosen.admitted)), ("bucket", chosen.bucket)),
        ),
    )


def scan_selects_a_captured_bucket(
    length: int, *, relation: Relation = is_least_fitting, well_formed: WellFormed = capture_list_is_well_formed
) -> tuple[Query, ...]:
    """captured_bucket: the scan's bucket (the least fitting one) is in the capture list and has a recorded
    capacity."""
    return _from_relation(length, relation, lambda s, c, w, r: captured_bucket(s, c), well_formed)


def scan_respects_padding_limit(
    length: int, *, relation: Relation = is_least_fitting, well_formed: WellFormed = capture_list_is_well_formed
) -> tuple[Query, ...]:
    """padding_limit: the scan's bucket B satisfies n <= B <= F*n."""
    return _from_relation(length, relation, lambda s, c, w, r: padding_limit(s, w), well_formed)


def scan_bucket_has_room_for_required_rows(
    length: int, *, relation: Relation = is_least_fitting, well_formed: WellFormed = capture_list_is_well_formed
) -> tuple[Query, ...]:
    """capacity_fit: the scan's bucket has a recorded capacity >= the live batch's required rows."""
    return _from_relation(length, relation, lambda s, c, w, r: capacity_fit(s, c, r), well_formed)


def scan_selects_minimal_bucket(
    length: int, *, relation: Relation = is_least_fitting, well_formed: WellFormed = capture_list_is_well_formed
) -> tuple[Query, ...]:
    """minimal_bucket: no smaller captured bucket would do."""
    return _from_relation(length, relation, minimal_bucket, well_formed)


def scan_never_falls_back_when_a_bucket_fits(
    length: int, *, relation: Relation = is_least_fitting, well_formed: WellFormed = capture_list_is_well_formed
) -> tuple[Query, ...]:
    """no_needless_fallback: if some captured bucket fits, the scan admits the batch."""
    return _from_relation(length, relation, no_needless_fallback, well_formed)


def least_fitting_bucket_is_unique(
    length: int, *, relation: Relation = is_least_fitting, well_formed: WellFormed = capture_list_is_well_formed,
    parts: tuple[str, ...] = ("admission_replay", "rank_consensus"),
) -> tuple[Query, ...]:
    """The declarative relation is a function: two decisions that both satisfy it are the same decision, so
    any two ranks (or admission and replay) that compute it from the same inputs agree."""
    capture, window, required, hypotheses, size = _setting(length, well_formed)
    first = Selection(z3.Bool("first.admitted"), z3.Int("first.bucket"))
    second = Selection(z3.Bool("second.admitted"), z3.Int("second.bucket"))
    claims = {"admission_replay": admission_replay(first, second), "rank_consensus": rank_consensus((first, second))}
    return tuple(
        Query(
            part,
            claims[part],
            (*hypotheses, relation(first, capture, window, required), relation(second, capture, window, required)),
            size=size,
        )
        for part in parts
    )


def scan_selects_first_bucket_at_or_above_n_when_it_has_room(
    length: int, *, relation: Relation = is_least_fitting, well_formed: WellFormed = capture_list_is_well_formed
) -> tuple[Query, ...]:
    """When the first captured bucket at or above n is within the padding limit and has room (e.g. every
    bucket captured with headroom), the scan selects it."""

    def claim(chosen: Selection, capture: CaptureList, window: Window, required: IntTerm) -> BoolTerm:
        b = capture.buckets
        cases = []
        for i in range(len(capture)):
            first = And(b[i] >= window.low, *([b[i - 1] < window.low] if i else []))
            room = And(b[i] <= window.high, capture.recorded[i], capture.capacities[i] >= required)
            cases.append(Implies(And(first, room), And(chosen.admitted, chosen.bucket == b[i])))
        return all_of(cases)

    return _from_relation(length, relation, claim, well_formed)


def padding_window_holds_n_for_every_factor(
    parameter: int, *, window_of: Callable[[IntLike, IntLike], Window] = padding_window
) -> tuple[Query, ...]:
    """For every padding factor F >= 1 and n >= 1 the window [n, F*n] is non-empty (F*n >= n), so the
    selection theorems, proved for every window [n, H] with H >= n, cover every F."""
    del parameter
    n, factor = z3.Int("n"), z3.Int("F")
    window = window_of(n, factor)
    return (Query("window", window.high >= window.low, (n >= 1, factor >= 1)),)


def _least_size_at_or_above(chosen: Selection, capture: CaptureList, key: IntTerm) -> BoolTerm:
    """The local keying's declarative relation, restated: admitted iff some listed size is >= m, and then the
    least such size."""
    fitting = [b >= key for b in capture.buckets]
    return And(
        chosen.admitted == Or(fitting) if fitting else Not(chosen.admitted),
        Implies(chosen.admitted, And(
            Or([And(f, chosen.bucket == b) for f, b in zip(fitting, capture.buckets)]) if fitting else z3.BoolVal(False),
            all_of(Implies(f, chosen.bucket <= b) for f, b in zip(fitting, capture.buckets)),
        )),
    )


def local_scan_meets_every_invariant(length: int, *, keying: str = "local", step: Step = scan_step) -> tuple[Query, ...]:
    """Under the local keying (spec/keying.py: no window, a listed size holds itself), the scan over a
    sorted list of sizes admits exactly when some size is at or above the key m and then takes the least
    such size (by induction over the list from its end, as scan_selects_least_fitting_bucket); and any
    decision that does meets each invariant of spec/invariants.py stated under the local keying from the
    one keying table: captured_bucket, padding_limit (m <= s), capacity_fit, minimal_bucket and
    no_needless_fallback (rank_consensus and admission_replay: the relation is a function)."""
    from cpgraph.spec.keying import keying as keying_row

    capture = symbolic_capture_list(length, "cap")
    key = z3.Int("key")
    row = keying_row(keying)
    sizes = row.capacities(capture)
    window = row.window(key, 2, "window")
    hypotheses = (capture_list_is_sorted(capture), key >= 0, window.holds)
    size = Sum([*capture.buckets, key])
    rest = Selection(z3.Bool("rest.admitted"), z3.Int("rest.bucket"))
    stepped = step(sizes, 0, window, key, rest)
    out = [Query("step", _least_size_at_or_above(stepped, capture, key),
                 (*hypotheses, _least_size_at_or_above(rest, _tail(capture), key)), size=size,
                 shown=(("admitted", flag(stepped.admitted)), ("size", stepped.bucket)))]
    chosen = Selection(z3.Bool("chosen.admitted"), z3.Int("chosen.bucket"))
    other = Selection(z3.Bool("other.admitted"), z3.Int("other.bucket"))
    relation = _least_size_at_or_above(chosen, capture, key)
    claims = (
        ("captured_bucket", captured_bucket(chosen, capture, keying)),
        ("padding_limit", padding_limit(chosen, window, keying)),
        ("capacity_fit", capacity_fit(chosen, capture, key, keying)),
        ("minimal_bucket", minimal_bucket(chosen, capture, window, key, keying)),
        ("no_needless_fallback", no_needless_fallback(chosen, capture, window, key, keying)),
    )
    # One query for the five one-decision invariants, one for the two that compare decisions (a conjunction:
    # a refutation's model names the one that fails through the shown terms).
    every = And([claim for _, claim in claims])
    shown = tuple((part, flag(claim)) for part, claim in claims)
    out.append(Query(", ".join(part for part, _ in claims), every, (*hypotheses, relation), size=size, shown=shown))
    both = (*hypotheses, relation, _least_size_at_or_above(other, capture, key))
    pair = (("admission_replay", admission_replay(chosen, other, keying)), ("rank_consensus", rank_consensus((chosen, other), keying)))
    out.append(Query("admission_replay, rank_consensus", And([c for _, c in pair]), both, size=size,
                     shown=tuple((part, flag(c)) for part, c in pair)))
    return tuple(out)
