"""Wrong sides substituted into the end-to-end theorems: each must be refuted (the pre-fix behaviour first).

Each variant replaces one side (admission, replay, replay's layout, or the inputs ranks share) with a
wrong one built from the spec's own pieces, and names the verdict its theorem must give at a cp_size.
tests/quality/test_proof_variants.py checks every variant; benchmarks/mutation.py mutates the spec's
source itself.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TypeVar
from fractions import Fraction

import z3

from cpgraph.spec.logic import And, If, Implies, Not, Or
from cpgraph.proofs.theorems import end_to_end as e2e
from cpgraph.proofs.theorems import whole_list
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.theorems.setting import LONG_LIST_CP_SIZES
from cpgraph.spec.admission import Admission, Decision, RankSetup, admit, cp_active, gate, rank_decision
from cpgraph.spec.arith import align_up
from cpgraph.spec.batch import ClassBatch, LiveBatch
from cpgraph.spec.capacity import required_local_tokens
from cpgraph.spec.replay import Replay, capacity_of, tripwire
from cpgraph.spec.replay import replay as spec_replay
from cpgraph.spec.selection import NO_SELECTION, CaptureList, Selection, Window, padding_window, scan_select
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, all_of, int_term

Select = Callable[[RankSetup, Window, IntTerm], Selection]
T = TypeVar("T")


def _scan(setup: RankSetup, window: Window, rows: IntTerm) -> Selection:
    return scan_select(setup.capture, window, rows)


def smallest_at_or_above_n(setup: RankSetup, window: Window, rows: IntTerm) -> Selection:
    """The pre-fix selector (sglang 0.5.17's load_batch): the first bucket >= n, none above F*n; no room check."""
    del rows
    chosen = NO_SELECTION
    for b in reversed(setup.capture.buckets):
        below, above = b < window.low, b > window.high
        chosen = Selection(
            If(below, chosen.admitted, Not(above)), If(below, chosen.bucket, If(above, z3.IntVal(0), b))
        )
    return chosen


def smallest_at_or_above_n_unbounded(setup: RankSetup, window: Window, rows: IntTerm) -> Selection:
    """The pre-fix selector with no padding limit (0.5.17 padded to the first bucket >= n however far
    above n it was): the first bucket >= n of the list, no room check."""
    top = setup.capture.buckets[-1] if setup.capture.buckets else window.low
    return smallest_at_or_above_n(setup, Window(window.low, If(top > window.low, top, window.low)), rows)


def first_bucket_only(setup: RankSetup, window: Window, rows: IntTerm) -> Selection:
    """Only the first bucket >= n is tried: admitted if it is within F*n and has room, else fall back."""
    first = smallest_at_or_above_n(setup, window, rows)
    capture = setup.capture
    room = Or([And(first.bucket == b, rec, c >= rows) for b, c, rec in zip(capture.buckets, capture.capacities, capture.recorded)])
    return Selection(And(first.admitted, room), first.bucket)


def largest_fitting(setup: RankSetup, window: Window, rows: IntTerm) -> Selection:
    """The greatest fitting bucket instead of the least."""
    chosen = NO_SELECTION
    capture = setup.capture
    for b, c, rec in zip(capture.buckets, capture.capacities, capture.recorded):
        ok = And(window.low <= b, b <= window.high, rec, c >= rows)
        chosen = Selection(Or(ok, chosen.admitted), If(ok, b, chosen.bucket))
    return chosen


def _scan_with_room(room: Callable[[BoolTerm, IntTerm, IntTerm], BoolTerm]) -> Select:
    """Upstream's scan (skip below n, stop above F*n, take the first with room) with another room test."""

    def select(setup: RankSetup, window: Window, rows: IntTerm) -> Selection:
        capture = setup.capture
        chosen = NO_SELECTION
        for b, c, rec in reversed(tuple(zip(capture.buckets, capture.capacities, capture.recorded))):
            ok = And(window.low <= b, b <= window.high, room(rec, c, rows))
            chosen = Selection(If(b > window.high, z3.BoolVal(False), Or(ok, chosen.admitted)), If(ok, b, chosen.bucket))
        return chosen

    return select


# A bucket with no recorded capacity counts as room.
missing_capacity_fits = _scan_with_room(lambda rec, c, rows: Or(Not(rec), c >= rows))
# A bucket fits only with capacity > required (an exact fit is refused).
strict_capacity = _scan_with_room(lambda rec, c, rows: And(rec, c > rows))


def window_one_past(num_tokens: IntLike, factor: Fraction, name: str) -> Window:
    """[n, F*n + 1]: one bucket too many."""
    w = padding_window(num_tokens, factor, name)
    assert w.high is not None  # a padding factor's window has an upper end
    return Window(w.low, w.high + 1, w.holds)


def window_one_below(num_tokens: IntLike, factor: Fraction, name: str) -> Window:
    """[n - 1, F*n]: a bucket one below n admitted (truncation)."""
    w = padding_window(num_tokens, factor, name)
    return Window(w.low - 1, w.high, w.holds)


def off_list_bucket(setup: RankSetup, window: Window, rows: IntTerm) -> Selection:
    """The right decision, but the bucket reported one above the chosen one (not a captured value)."""
    chosen = _scan(setup, window, rows)
    return Selection(chosen.admitted, chosen.bucket + 1)


def last_bucket_reported_one_past(setup: RankSetup, window: Window, rows: IntTerm) -> Selection:
    """The right decision, but when it is the list's last bucket, the bucket reported one past it: wrong only
    at the last index, so a claim that quantifies over every bucket but the last misses it."""
    chosen, last = _scan(setup, window, rows), setup.capture.buckets[-1]
    return Selection(chosen.admitted, If(chosen.bucket == last, last + 1, chosen.bucket))


def unlisted_bucket(setup: RankSetup, window: Window, rows: IntTerm) -> Selection:
    """The right decision, but the bucket reported as 0, below every listed bucket (a list is sorted from 1)."""
    chosen = _scan(setup, window, rows)
    return Selection(chosen.admitted, z3.IntVal(0))


def rank_zero_rows(xs: tuple[IntTerm, ...], name: str) -> tuple[IntTerm, BoolTerm]:
    """Rows from rank 0's load instead of the busiest rank's."""
    return xs[0], z3.BoolVal(True)


def _decision(
    loads: tuple[IntTerm, ...], holds: BoolTerm, setup: RankSetup, n: IntLike, name: str, *,
    select: Select = _scan, window_of: Callable[[IntLike, Fraction, str], Window] = padding_window,
    busiest: Callable[[tuple[IntTerm, ...], str], tuple[IntTerm, BoolTerm]] | None = None,
) -> Decision:
    if busiest is None:
        from cpgraph.spec.terms import Loads

        rows = required_local_tokens(Loads(loads, holds), setup.align_size, f"{name}.rows")
        value, facts = rows.value, rows.holds
    else:
        top, top_facts = busiest(loads, name)
        up = align_up(top, setup.align_size, f"{name}.rows")
        value, facts = up.value, And(top_facts, up.holds)
    window = window_of(n, setup.max_padding_factor, f"{name}.window")
    return Decision(select(setup, window, value), value, And(holds, facts, window.holds), int_term(n))  # the global key: n


def make_admit(**how: object) -> Callable[[LiveBatch, IntTerm, RankSetup, int, str], Admission]:
    """An admission built like spec.admission.admit but with one piece swapped (``select``, ``window_of``,
    ``busiest``, or ``gated=False``)."""
    gated = bool(how.pop("gated", True))

    def admit(batch: LiveBatch, n: IntTerm, setup: RankSetup, rank: int, name: str) -> Admission:
        loads = batch.layout_loads(setup.strategy, f"{name}.live")
        busiest = how.get("busiest")
        if busiest == "local":
            how_local = dict(how, busiest=lambda xs, nm: (xs[rank], z3.BoolVal(True)))
            chosen = _decision(loads.loads, loads.holds, setup, n, name, **how_local)  # type: ignore[arg-type]
        else:
            chosen = _decision(loads.loads, loads.holds, setup, n, name, **how)  # type: ignore[arg-type]
        return chosen.admission(cp_active(batch, n, setup.strategy) if gated else z3.BoolVal(True))

    return admit


def scaled_alignment(strategy: str, scale: int) -> Callable[[LiveBatch, IntTerm, RankSetup, int, str], Admission]:
    """The spec's admission, but under ``strategy`` it pads to ``scale`` times the documented alignment
    (interleave or contiguous aligned like zigzag to 2P, zigzag to 4P): rows past what the batch needs."""

    def admit_fn(batch: LiveBatch, n: IntTerm, setup: RankSetup, rank: int, name: str) -> Admission:
        if setup.strategy == strategy:
            setup = dataclasses.replace(setup, align_size=scale * setup.align_size)
        return admit(batch, n, setup, rank, name)

    return admit_fn


def middle_ranks_select(other: Select) -> Callable[[LiveBatch, IntTerm, RankSetup, int, str], Admission]:
    """The spec's admission on the first and last rank, ``other`` as the selector on a middle rank (0 < r < P-1):
    the two ends a pairwise comparison reads agree, so only a claim on every rank sees it."""
    theirs = make_admit(select=other)

    def admit_fn(batch: LiveBatch, n: IntTerm, setup: RankSetup, rank: int, name: str) -> Admission:
        middle = 0 < rank < setup.cp_size - 1
        return theirs(batch, n, setup, rank, name) if middle else admit(batch, n, setup, rank, name)

    return admit_fn


def middle_ranks_never_admit(batch: LiveBatch, n: IntTerm, setup: RankSetup, rank: int, name: str) -> Admission:
    """The spec's admission, but a middle rank (0 < r < P-1) never admits (it always takes the eager path) while
    its bucket is the spec's: the verdicts differ, every bucket agrees, and the ends a pairwise comparison reads
    are untouched, so only the every-rank claim's verdict half sees it."""
    own = admit(batch, n, setup, rank, name)
    if 0 < rank < setup.cp_size - 1:
        return dataclasses.replace(own, selection=Selection(z3.BoolVal(False), own.selection.bucket))
    return own


def middle_ranks_admit_their_own_rows(batch: LiveBatch, n: IntTerm, setup: RankSetup, rank: int, name: str) -> Admission:
    """The spec's admission, but a middle rank (0 < r < P-1) reports its own layout rows (its own load) as the rows
    it holds, while its decision is the spec's (from the busiest rank): every verdict and bucket agrees, so only
    the every-rank claim's admission-rows half sees it."""
    own = admit(batch, n, setup, rank, name)
    if 0 < rank < setup.cp_size - 1:
        loads = batch.layout_loads(setup.strategy, f"{name}.live")  # the loads admit built (same names, same terms)
        return dataclasses.replace(own, required=loads.loads[rank], holds=And(own.holds, loads.holds))
    return own


def middle_ranks_replay_their_own_rows(batch: LiveBatch, n: IntTerm, setup: RankSetup, rank: int, name: str,
                                       **how: object) -> Replay:
    """The spec's replay, but a middle rank reports its own layout rows as the rows it pads, while its decision is
    the spec's: only the every-rank claim's replay-rows half sees it."""
    own = spec_replay(batch, n, setup, rank, name, **how)  # type: ignore[arg-type]
    if 0 < rank < setup.cp_size - 1:
        return dataclasses.replace(own, required=own.layout_loads[rank])
    return own


def per_rank_select(other: Select) -> Callable[[LiveBatch, IntTerm, RankSetup, int, str], Admission]:
    """The spec's admission on rank 0, ``other`` as the selector on every other rank (same admit verdict
    whenever ``other`` admits exactly when some bucket fits, a different bucket)."""
    theirs = make_admit(select=other)

    def admit_fn(batch: LiveBatch, n: IntTerm, setup: RankSetup, rank: int, name: str) -> Admission:
        return admit(batch, n, setup, rank, name) if rank == 0 else theirs(batch, n, setup, rank, name)

    return admit_fn


def per_rank_replay(other: Callable[..., Replay]) -> Callable[..., Replay]:
    """The spec's replay on rank 0, ``other`` on every other rank (admission untouched: with ``other`` a
    replay that succeeds exactly when the spec's does, only the replayed bucket differs between ranks)."""

    def replay_fn(batch: LiveBatch, n: IntLike, setup: RankSetup, rank: IntLike, name: str, **how: object) -> Replay:
        if rank == 0:
            return spec_replay(batch, n, setup, rank, name, **how)  # type: ignore[arg-type]
        return other(batch, n, setup, rank, name, **how)

    return replay_fn


def make_replay(
    *, select: Select = _scan, busiest: Callable[[tuple[IntTerm, ...], str], tuple[IntTerm, BoolTerm]] | None = None,
    strict_tripwire: bool = False,
) -> Callable[..., Replay]:
    """A replay built like spec.replay.replay (live layout, its own selector call, the capacity tripwire)
    with one piece swapped: the selector, the busiest load, or a tripwire that refuses an exact fit."""

    def replay(batch: LiveBatch, n: IntLike, setup: RankSetup, rank: IntLike, name: str, *, layout: object = None) -> Replay:
        del rank, layout
        loads = batch.layout_loads(setup.strategy, f"{name}.layout")
        decided = _decision(loads.loads, loads.holds, setup, n, name, select=select, busiest=busiest)
        chosen = decided.selection
        selection = Selection(And(cp_active(batch, n, setup.strategy), chosen.admitted), chosen.bucket)
        if strict_tripwire:
            capture = setup.capture
            fits = all_of(
                Or([And(chosen.bucket == b, rec, c > x) for b, c, rec in zip(capture.buckets, capture.capacities, capture.recorded)])
                for x in loads.loads
            )
        else:
            fits = all_of(capacity_of(setup.capture, chosen.bucket, x) for x in loads.loads)
        return Replay(selection, And(selection.admitted, fits), loads.loads, decided.required, decided.holds, decided.key)

    return replay


def _with_tripwire(tripwire: Callable[[Replay, RankSetup], BoolTerm]) -> Callable[..., Replay]:
    """The spec's replay with another tripwire (given the replay as built and the rank's setup)."""

    def replay_fn(batch: LiveBatch, n: IntLike, setup: RankSetup, rank: IntLike, name: str, **how: object) -> Replay:
        r = spec_replay(batch, n, setup, rank, name, **how)  # type: ignore[arg-type]
        return Replay(r.selection, And(r.selection.admitted, tripwire(r, setup)), r.layout_loads, r.required, r.holds, r.key)

    return replay_fn


# No tripwire: replay runs whatever its selector chose.
replay_without_tripwire = _with_tripwire(lambda r, setup: z3.BoolVal(True))

# The tripwire reads the capacity number but not whether it was recorded.
tripwire_ignoring_record = _with_tripwire(lambda r, setup: all_of(
    Or([And(r.selection.bucket == b, c >= x) for b, c in zip(setup.capture.buckets, setup.capture.capacities)])
    for x in r.layout_loads
))

# The tripwire checks the room of every listed bucket equal to the chosen one, and that some capacity was
# recorded, but not that the chosen bucket is listed at all: an unlisted bucket passes (no entry to refuse it).
tripwire_ignoring_membership = _with_tripwire(lambda r, setup: And(
    Or(list(setup.capture.recorded)),
    all_of(Implies(r.selection.bucket == b, And(rec, c >= x)) for x in r.layout_loads
           for b, c, rec in zip(setup.capture.buckets, setup.capture.capacities, setup.capture.recorded)),
))


def replay_ignoring_its_decision(batch: LiveBatch, n: IntLike, setup: RankSetup, rank: IntLike, name: str, **how: object) -> Replay:
    """spec.replay that runs whenever the tripwire passes, even when its own selector call said run eagerly."""
    r = spec_replay(batch, n, setup, rank, name, **how)  # type: ignore[arg-type]
    return Replay(r.selection, And(cp_active(batch, n, setup.strategy), tripwire(setup.capture, r.selection.bucket, r.layout_loads)),
                  r.layout_loads, r.required, r.holds, r.key)


def ungated_replay(batch: LiveBatch, n: IntLike, setup: RankSetup, rank: IntLike, name: str, *,
                   decide: Callable[..., Decision] = rank_decision, **how: object) -> Replay:
    """spec.replay without the CP-active gates: it replays whatever its selector call chose, for a batch
    with a request shorter than 2P or with P = 1 too (the tripwire still checks the room). The spec's own
    replay builds the layout and calls the selector; only its gated verdict is replaced by the raw one."""
    raw: list[Selection] = []

    def noting(*args: object) -> Decision:
        decided = decide(*args)
        raw.append(decided.selection)
        return decided

    r = spec_replay(batch, n, setup, rank, name, decide=noting, **how)  # type: ignore[arg-type]
    chosen = raw[0]
    return Replay(chosen, And(chosen.admitted, tripwire(setup.capture, chosen.bucket, r.layout_loads)),
                  r.layout_loads, r.required, r.holds, r.key)


def middle_ranks_own_load(loads: Loads, rank: IntLike, setup: RankSetup, num_tokens: IntLike, name: str) -> Decision:
    """The spec's rank_decision, but a middle rank (0 < r < P-1) decides from its own load instead of the
    busiest rank's (rank consensus lost, and only where neither end rank looks: issue 21's planted change)."""
    if isinstance(rank, int) and 0 < rank < setup.cp_size - 1:
        loads = Loads((loads.loads[rank],) * setup.cp_size, loads.holds)  # every rank as loaded as this one
    return rank_decision(loads, rank, setup, num_tokens, name)


def admit_deciding_by(decide: Callable[..., Decision]) -> Callable[[LiveBatch, IntTerm, RankSetup, int, str], Admission]:
    """spec.admission.admit (its layout, its keying's gate) with ``decide`` as the rank's decision."""

    def admit_fn(batch: LiveBatch, n: IntTerm, setup: RankSetup, rank: int, name: str) -> Admission:
        loads = batch.layout_loads(setup.strategy, f"{name}.live")
        chosen = decide(loads, rank, setup, n, name)
        return chosen.admission(gate(batch, n, setup))

    return admit_fn


# Issue 21's planted change: the middle ranks' admission decides from their own load (replay as the spec's),
# and the same rule in the decision both sides call.
middle_ranks_own_load_admit = admit_deciding_by(middle_ranks_own_load)
middle_ranks_own_load_replay = functools.partial(spec_replay, decide=middle_ranks_own_load)


# sglang 0.5.17's replay: pad to the first bucket >= n (no capacity check), lay out the live lengths.
prefix_replay = make_replay(select=smallest_at_or_above_n)


def single_request_batch(length: IntTerm | int, cp_size: int, name: str) -> ClassBatch:
    """The ClassBatch of one request of ``length`` tokens (L >= 0): its class and quotient as fresh
    variables ``{name}.q`` / ``{name}.m`` with L = 2P*q + m."""
    s = 2 * cp_size
    q, m = z3.Int(f"{name}.q"), z3.Int(f"{name}.m")
    long_counts = tuple(If(And(q >= 1, m == j), z3.IntVal(1), z3.IntVal(0)) for j in range(s))
    short_counts = tuple(If(And(q == 0, m == j), z3.IntVal(1), z3.IntVal(0)) for j in range(s))
    holds = And(length == s * q + m, m >= 0, m < s, q >= 0)
    return ClassBatch(cp_size, q, long_counts, short_counts, holds)


def one_request_layout(batch: LiveBatch, n: IntLike, name: str) -> ClassBatch:
    """The pre-fix capture model: replay lays the batch out as ONE request of n tokens."""
    return single_request_batch(n, batch.cp_size, name)


P = 4  # the cp_size of the seed example; tests also run a few at 2 and 64
LONG_P = LONG_LIST_CP_SIZES[0]  # where a variant that only a long capture list shows is checked


def first_8_buckets(capture: CaptureList) -> CaptureList:
    """The first 8 buckets of ``capture`` (with their capacities): what a side that stops reading early sees."""
    return CaptureList(capture.buckets[:8], capture.capacities[:8], capture.recorded[:8])


def of_the_first_8_buckets(
    side: Callable[..., T], *, from_p: int = 1, keying: str = "", middle_ranks: bool = False, strategy: str = ""
) -> Callable[..., T]:
    """``side`` (an admission or a replay, as the spec's are called) handed only the first 8 buckets of its
    rank's capture list: a side that stops reading the list early, unseen by a 3-bucket end-to-end chain. With
    ``from_p`` only at P >= from_p, with ``keying`` only under that keying, with ``middle_ranks`` only on a
    literal rank 0 < r < P-1, with ``strategy`` only under that strategy id: a side that stops early where the
    32-bucket chains (``LONG_LIST_CP_SIZES``) do not run, on ranks no rank-0 check looks at, or for one layout."""

    def truncated(batch: LiveBatch, n: IntLike, setup: RankSetup, rank: IntLike, name: str, **how: object) -> T:
        middle = isinstance(rank, int) and 0 < rank < setup.cp_size - 1
        acts = keying in ("", setup.keying) and strategy in ("", setup.strategy)
        if setup.cp_size >= from_p and acts and (middle or not middle_ranks):
            setup = dataclasses.replace(setup, capture=first_8_buckets(setup.capture))
        return side(batch, n, setup, rank, name, **how)

    return truncated


def aligned_twice_on_long_lists(side: Callable[..., T]) -> Callable[..., T]:
    """``side`` computing its rows with twice the alignment when its list is longer than 8 buckets, from P = 4
    on: its decision is the right one for those rows, but they are not the rows the 3-bucket chains proved."""

    def widened(batch: LiveBatch, n: IntLike, setup: RankSetup, rank: IntLike, name: str, **how: object) -> T:
        if setup.cp_size >= 4 and len(setup.capture) > 8:
            setup = dataclasses.replace(setup, align_size=2 * setup.align_size)
        return side(batch, n, setup, rank, name, **how)

    return widened


def replay_with_tripwire_of_the_first_8_buckets_from_p_4(batch: LiveBatch, n: IntLike, setup: RankSetup, rank: IntLike, name: str,
                                             **how: object) -> Replay:
    """The spec's replay whose selector call reads the whole list, but whose tripwire, from P = 4 on, checks the
    chosen bucket's room in the first 8 buckets only (a 9th bucket chosen is never run)."""
    whole = setup.capture

    def decide(loads: Loads, rank: IntLike, setup: RankSetup, n: IntLike, name: str) -> Decision:
        return rank_decision(loads, rank, dataclasses.replace(setup, capture=whole), n, name)

    return of_the_first_8_buckets(spec_replay, from_p=4)(batch, n, setup, rank, name, decide=decide, **how)


def variants() -> tuple[tuple[str, str, str, int, Callable[[int], tuple[Query, ...]]], ...]:
    """(name, theorem, description, cp_size, builder) for every end-to-end variant; all must be refuted."""
    prefix_admit = make_admit(select=smallest_at_or_above_n)
    rows = [
        ("one_request_replay", "admitted_batches_replay_the_admitted_bucket", "replay lays the batch out as one request of n tokens",
         functools.partial(e2e.admitted_batches_replay_the_admitted_bucket, layout=one_request_layout)),
        ("prefix_replay", "admitted_batches_replay_the_admitted_bucket", "replay pads to the first bucket >= n (0.5.17)",
         functools.partial(e2e.admitted_batches_replay_the_admitted_bucket, replay_fn=prefix_replay)),
        ("prefix_admission", "admitted_batches_replay_the_admitted_bucket", "admission takes the first bucket >= n",
         functools.partial(e2e.admitted_batches_replay_the_admitted_bucket, admit_fn=prefix_admit)),
        ("ungated_admission", "admitted_batches_replay_the_admitted_bucket", "admission skips the CP-active gates",
         functools.partial(e2e.admitted_batches_replay_the_admitted_bucket, admit_fn=make_admit(gated=False))),
        ("prefix_replay", "admitted_batches_fit_every_rank", "replay pads to the first bucket >= n (0.5.17)",
         functools.partial(e2e.admitted_batches_fit_every_rank, replay_fn=prefix_replay)),
        ("prefix_admission", "admitted_batches_fit_every_rank", "admission takes the first bucket >= n, no room check",
         functools.partial(e2e.admitted_batches_fit_every_rank, admit_fn=prefix_admit)),
        ("prefix_admission", "admitted_bucket_is_captured", "admission takes the first bucket >= n, recorded or not",
         functools.partial(e2e.admitted_bucket_is_captured, admit_fn=prefix_admit)),
        ("prefix_admission", "admitted_bucket_is_within_padding_limit", "admission takes the first bucket >= n, however far above F*n",
         functools.partial(e2e.admitted_bucket_is_within_padding_limit, admit_fn=make_admit(select=smallest_at_or_above_n_unbounded))),
        ("local_load", "ranks_sharing_their_capture_state_agree", "each rank decides from its own load",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, admit_fn=make_admit(busiest="local"))),
        ("other_rank_largest", "ranks_sharing_their_capture_state_agree", "rank P-1 picks the greatest fitting bucket",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, admit_fn=per_rank_select(largest_fitting))),
        ("middle_ranks_own_load", "ranks_sharing_their_capture_state_agree",
         "a middle rank's admission decides from its own load, not the busiest rank's",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, admit_fn=middle_ranks_own_load_admit)),
        ("middle_ranks_own_load_both", "ranks_sharing_their_capture_state_agree",
         "a middle rank's decision (admission and replay) reads its own load, not the busiest rank's",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, admit_fn=middle_ranks_own_load_admit,
                           replay_fn=middle_ranks_own_load_replay)),
        ("middle_ranks_never_admit", "ranks_sharing_their_capture_state_agree",
         "a middle rank never admits (the same bucket, another verdict; ranks 0 and P-1 as the spec)",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, admit_fn=middle_ranks_never_admit)),
        ("middle_ranks_admit_their_own_rows", "ranks_sharing_their_capture_state_agree",
         "a middle rank's admission holds its own rows, not the busiest rank's (the spec's decision)",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, admit_fn=middle_ranks_admit_their_own_rows)),
        ("middle_ranks_replay_their_own_rows", "ranks_sharing_their_capture_state_agree",
         "a middle rank's replay pads its own rows, not the busiest rank's (the spec's decision)",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, replay_fn=middle_ranks_replay_their_own_rows)),
        ("middle_ranks_admit_largest", "ranks_sharing_their_capture_state_agree",
         "a middle rank admits the greatest fitting bucket (same verdict, another bucket; ranks 0 and P-1 as the spec)",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, admit_fn=middle_ranks_select(largest_fitting))),
        ("other_ranks_replay_largest", "ranks_sharing_their_capture_state_agree",
         "every rank but 0 replays the greatest fitting bucket (same verdict, another bucket)",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, replay_fn=per_rank_replay(make_replay(select=largest_fitting)))),
        ("other_ranks_strict_tripwire", "ranks_sharing_their_capture_state_agree",
         "every rank but 0 refuses an exact fit at replay (same bucket, another verdict)",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, replay_fn=per_rank_replay(make_replay(strict_tripwire=True)))),
        ("per_rank_capacities", "ranks_sharing_their_capture_state_agree", "ranks keep their own recorded capacities",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, shared=("capture_num_tokens", "max_padding_factor", "align_size"))),
        ("per_rank_factor", "ranks_sharing_their_capture_state_agree", "ranks keep their own padding factor",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, shared=("capture_num_tokens", "bucket_local_tokens", "align_size"))),
        ("missing_capacity_fits", "admitted_bucket_is_captured", "a missing capacity counts as room",
         functools.partial(e2e.admitted_bucket_is_captured, admit_fn=make_admit(select=missing_capacity_fits))),
        ("window_one_past", "admitted_bucket_is_within_padding_limit", "window [n, F*n + 1]",
         functools.partial(e2e.admitted_bucket_is_within_padding_limit, admit_fn=make_admit(window_of=window_one_past))),
        ("largest_fitting", "admitted_bucket_is_the_least_that_fits", "the greatest fitting bucket",
         functools.partial(e2e.admitted_bucket_is_the_least_that_fits, admit_fn=make_admit(select=largest_fitting))),
        ("window_one_below", "admitted_bucket_is_within_padding_limit", "window [n - 1, F*n]",
         functools.partial(e2e.admitted_bucket_is_within_padding_limit, admit_fn=make_admit(window_of=window_one_below))),
        ("last_bucket_reported_one_past", "admitted_bucket_is_the_least_that_fits",
         "the last bucket, when chosen, reported one past it (a smaller listed bucket fits: the last one)",
         functools.partial(e2e.admitted_bucket_is_the_least_that_fits, admit_fn=make_admit(select=last_bucket_reported_one_past))),
        ("off_list_bucket", "admitted_bucket_is_captured", "the bucket reported is one above the chosen one",
         functools.partial(e2e.admitted_bucket_is_captured, admit_fn=make_admit(select=off_list_bucket))),
        ("unlisted_bucket", "admitted_batches_fit_every_rank", "the right decision reported as bucket 0 (never listed)",
         functools.partial(e2e.admitted_batches_fit_every_rank, admit_fn=make_admit(select=unlisted_bucket))),
        ("rank_zero_rows", "admitted_batches_fit_every_rank", "rows from rank 0's load, not the busiest rank's",
         functools.partial(e2e.admitted_batches_fit_every_rank, admit_fn=make_admit(busiest=rank_zero_rows),
                           replay_fn=make_replay(busiest=rank_zero_rows))),
        ("largest_replay", "admitted_batches_replay_the_admitted_bucket", "replay pads to the greatest fitting bucket",
         functools.partial(e2e.admitted_batches_replay_the_admitted_bucket, replay_fn=make_replay(select=largest_fitting))),
        ("strict_tripwire", "admitted_batches_replay_the_admitted_bucket", "replay refuses an exact fit",
         functools.partial(e2e.admitted_batches_replay_the_admitted_bucket, replay_fn=make_replay(strict_tripwire=True))),
        ("per_rank_alignment", "ranks_sharing_their_capture_state_agree", "ranks keep their own alignment",
         functools.partial(e2e.ranks_sharing_their_capture_state_agree, shared=("capture_num_tokens", "bucket_local_tokens", "max_padding_factor"))),
        ("strict_capacity", "admitted_bucket_is_the_least_that_fits", "a bucket fits only with room to spare",
         functools.partial(e2e.admitted_bucket_is_the_least_that_fits, admit_fn=make_admit(select=strict_capacity))),
        ("strict_capacity", "active_batches_that_fit_are_admitted", "a bucket fits only with room to spare",
         functools.partial(e2e.active_batches_that_fit_are_admitted, admit_fn=make_admit(select=strict_capacity))),
        ("first_bucket_only", "active_batches_that_fit_are_admitted", "admission tries only the first bucket >= n",
         functools.partial(e2e.active_batches_that_fit_are_admitted, admit_fn=make_admit(select=first_bucket_only))),
    ]
    rows += [
        ("no_tripwire", "replay_runs_only_into_a_listed_bucket_with_room", "replay runs whatever its selector chose",
         functools.partial(e2e.replay_runs_only_into_a_listed_bucket_with_room, replay_fn=replay_without_tripwire)),
        ("tripwire_ignores_record", "replay_runs_only_into_a_listed_bucket_with_room", "the tripwire ignores the recorded flag",
         functools.partial(e2e.replay_runs_only_into_a_listed_bucket_with_room, replay_fn=tripwire_ignoring_record)),
        ("ungated_replay", "replay_runs_only_into_a_listed_bucket_with_room", "replay skips the CP-active gates",
         functools.partial(e2e.replay_runs_only_into_a_listed_bucket_with_room, replay_fn=ungated_replay)),
        ("replay_ignores_decision", "replay_runs_only_into_a_listed_bucket_with_room", "replay runs when its selector said eager",
         functools.partial(e2e.replay_runs_only_into_a_listed_bucket_with_room, replay_fn=replay_ignoring_its_decision)),
        ("tripwire_ignores_membership", "replay_runs_only_into_a_listed_bucket_with_room",
         "the tripwire accepts a bucket that is not in the list",
         functools.partial(e2e.replay_runs_only_into_a_listed_bucket_with_room, replay_fn=tripwire_ignoring_membership)),
    ]
    rows += [
        (f"doubled_alignment_{sid}", "admitted_bucket_is_the_least_that_fits", f"{sid} pads to twice its alignment",
         functools.partial(e2e.admitted_bucket_is_the_least_that_fits, admit_fn=scaled_alignment(sid, 2)))
        for sid in ("zigzag", "interleave", "contiguous")
    ]
    long_rows = [
        ("admission_of_the_first_8_buckets", "active_batches_that_fit_are_admitted",
         "admission scans only the first 8 buckets of the list (a 9th that fits is never admitted)",
         functools.partial(e2e.active_batches_that_fit_are_admitted, admit_fn=of_the_first_8_buckets(admit))),
        ("replay_of_the_first_8_buckets", "admitted_batches_replay_the_admitted_bucket",
         "replay selects from the first 8 buckets of the list only",
         functools.partial(e2e.admitted_batches_replay_the_admitted_bucket, replay_fn=of_the_first_8_buckets(spec_replay))),
    ]
    # Sides that stop early only from P = 4 on, where no 32-bucket chain runs: the whole-list theorem's teeth.
    whole = whole_list.admission_and_replay_read_the_whole_list
    whole_rows = [
        ("admission_of_the_first_8_buckets_from_p_4", "admission scans only the first 8 buckets of the list from P = 4 on",
         functools.partial(whole, admit_fn=of_the_first_8_buckets(admit, from_p=4))),
        ("replay_of_the_first_8_buckets_from_p_4", "replay reads only the first 8 buckets of the list from P = 4 on",
         functools.partial(whole, replay_fn=of_the_first_8_buckets(spec_replay, from_p=4))),
        ("replay_tripwire_of_the_first_8_buckets_from_p_4",
         "replay's tripwire checks room in the first 8 buckets only, from P = 4 on (its selector reads them all)",
         functools.partial(whole, replay_fn=replay_with_tripwire_of_the_first_8_buckets_from_p_4)),
        ("local_admission_of_the_first_8_sizes_from_p_4",
         "under the local keying only, admission scans the first 8 sizes from P = 4 on",
         functools.partial(whole, admit_fn=of_the_first_8_buckets(admit, from_p=4, keying="local"))),
        ("local_replay_of_the_first_8_sizes_from_p_4", "under the local keying only, replay reads the first 8 sizes from P = 4 on",
         functools.partial(whole, replay_fn=of_the_first_8_buckets(spec_replay, from_p=4, keying="local"))),
        ("dcp_admission_of_the_first_8_sizes_from_p_3",
         "for the DualChunkSwap dcp layout only, admission scans the first 8 sizes from P = 3 on",
         functools.partial(whole, admit_fn=of_the_first_8_buckets(admit, from_p=3, strategy="dual_chunk_swap_dcp"))),
        ("dcp_replay_of_the_first_8_sizes_from_p_3",
         "for the DualChunkSwap dcp layout only, replay reads the first 8 sizes from P = 3 on",
         functools.partial(whole, replay_fn=of_the_first_8_buckets(spec_replay, from_p=3, strategy="dual_chunk_swap_dcp"))),
        ("middle_rank_admission_of_the_first_8_buckets_from_p_4",
         "from P = 4 on, a middle rank's admission (0 < r < P-1) scans only the first 8 buckets; rank 0 reads them all",
         functools.partial(whole, admit_fn=of_the_first_8_buckets(admit, from_p=4, middle_ranks=True))),
        ("middle_rank_replay_of_the_first_8_buckets_from_p_4",
         "from P = 4 on, a middle rank's replay (0 < r < P-1) reads only the first 8 buckets; rank 0 reads them all",
         functools.partial(whole, replay_fn=of_the_first_8_buckets(spec_replay, from_p=4, middle_ranks=True))),
        ("prefix_admission_on_long_lists", "admission takes the first bucket >= n whatever its room (0.5.17's selector)",
         functools.partial(whole, admit_fn=prefix_admit)),
        ("admission_aligned_twice_on_long_lists_from_p_4",
         "admission pads its rows to twice the alignment on a list of more than 8 buckets, from P = 4 on",
         functools.partial(whole, admit_fn=aligned_twice_on_long_lists(admit))),
        ("replay_aligned_twice_on_long_lists_from_p_4",
         "replay pads its rows to twice the alignment on a list of more than 8 buckets, from P = 4 on",
         functools.partial(whole, replay_fn=aligned_twice_on_long_lists(spec_replay))),
    ]
    return (*((name, theorem, description, P, build) for name, theorem, description, build in rows),
            *((name, theorem, description, LONG_P, build) for name, theorem, description, build in long_rows),
            *((name, "admission_and_replay_read_the_whole_list", description, P, build)
              for name, description, build in whole_rows))
