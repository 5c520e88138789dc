"""End-to-end theorems, one per invariant id: admission and replay, built independently, against claims
written from scratch, for every batch of any number of requests.

Each theorem takes one cp_size P and quantifies over:
- every batch of any size (spec/batch.py's ClassBatch: R and every length are variables; proofs/theorems/batch.py
  proves the abstraction covers every concrete batch), CP-active or not (the gates are modelled);
- every ``num_tokens`` n >= sum(extend_seq_lens) (DP/CP padding);
- every sorted capture list of ``LIST_LENGTH`` buckets (and of ``LONG_LIST_LENGTH`` at ``LONG_LIST_CP_SIZES``)
  with any capacities, some missing (and, for
  capacity_fit, capacities recorded by the real capture rule: each bucket's own capture layout);
- the strategy's default alignment and every padding factor of ``FACTORS`` (rational ones included).

The sides never share a term: admission (spec/admission.py) and replay (spec/replay.py) build their own
loads, maxima and alignments under their own names, and each claim below restates its invariant from
the definitions (a fitting bucket, the rows a layout needs, the padding window n <= B <= F*n) without
calling the spec's builders. A spec change that breaks an invariant therefore breaks its theorem.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Sequence

import z3

from cpgraph.spec.logic import And, Implies
from cpgraph.proofs.theorems.claims import (
    bucket_fits,
    chosen_bucket_has_room,
    chosen_bucket_is_one_with_room,
    layout_within_rows,
    same_decision,
    same_rows,
    is_active,
    is_listed_with_room,
    within_window,
)
from cpgraph.proofs.engine.obligation import Query
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.spec.admission import Decision, RankSetup, admit
from cpgraph.spec.replay import ReplayLayout, live_layout, replay
from cpgraph.spec.selection import Selection, capture_list_is_sorted, symbolic_capture_list
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, all_of, any_of

from cpgraph.proofs.theorems.setting import (
    Admit as Admit,
    ReplayFn as ReplayFn,
    FACTORS as FACTORS,
    LIST_LENGTH as LIST_LENGTH,
    list_lengths_at as list_lengths_at,
    OTHER_STRATEGIES_MAX_P as OTHER_STRATEGIES_MAX_P,
    PADDING_FACTORS as PADDING_FACTORS,
    RLIMIT as RLIMIT,
    STRATEGIES_FULL_SCOPE as STRATEGIES_FULL_SCOPE,
    Setting as Setting,
    setting as setting,
    _settings as _settings,
    Step as Step,
    _sides as _sides,
    every_rank_alike as every_rank_alike,
    rank_sides as rank_sides,
    ranks_at as ranks_at,
    strategies_at as strategies_at,
)


# -- the theorems -----------------------------------------------------------------------------------------------


def admitted_batches_replay_the_admitted_bucket(
    cp_size: int, *, admit_fn: Admit = admit, replay_fn: ReplayFn = replay, layout: ReplayLayout = live_layout
) -> tuple[Query, ...]:
    """admission_replay: for every batch of any number of requests and any padded n, replay succeeds
    exactly when admission admitted, only a CP-active batch (the strategy's gate) is admitted, and replay
    then pads to the admitted bucket."""
    out: list[Query] = []
    for s in _settings(cp_size):
        a, r = _sides(s, admit_fn, replay_fn, layout)
        claim = And(  # replay runs iff admitted, the same bucket; and nothing but a CP-active batch is admitted
            same_decision(a.selection, Selection(r.succeeded, r.selection.bucket))[1],
            Implies(a.selection.admitted, is_active(s.batch, s.n, s.strategy)),
        )
        steps = (*_sides_agree_and_fit(s, a, r), ("admission_replay", claim, ()))
        out += s.chain("admitted_batches_replay_the_admitted_bucket", steps, (a.holds, r.holds),
                       (("admitted", a.selection.bucket), ("replayed", r.selection.bucket)))
    return tuple(out)


def _sides_agree_and_fit(s: Any, a: Any, r: Any) -> tuple[tuple[Any, ...], ...]:
    """The chain steps both replay theorems share: admission and replay compute the same rows and decision, the
    chosen bucket is listed with room for them, and replay's layout stays within them."""
    return (
        same_rows(a.required, r.required),
        same_decision(a.selection, r.selection),
        (*chosen_bucket_is_one_with_room(s.capture, a.selection, a.required), (a.holds,)),
        (*chosen_bucket_has_room(s.capture, a.selection, a.required), ()),
        (*layout_within_rows(r.layout_loads, r.required), (r.holds,)),
    )


def admitted_batches_fit_every_rank(
    cp_size: int, *, admit_fn: Admit = admit, replay_fn: ReplayFn = replay, layout: ReplayLayout = live_layout
) -> tuple[Query, ...]:
    """capacity_fit: when a batch is admitted, every rank's rows of the layout replay builds fit the recorded
    capacity of the admitted bucket and of the bucket replay pads to, for any capacity table and for the
    real capture rule (each bucket's own capture layout)."""
    out: list[Query] = []
    for captured in (False, True) if cp_size <= OTHER_STRATEGIES_MAX_P else (False,):
        # The capture rule's capacities on the 3-bucket lists; on the long ones any capacities, which include them.
        for s in _settings(cp_size, captured=captured, lengths=(LIST_LENGTH,) if captured else None):
            a, r = _sides(s, admit_fn, replay_fn, layout)
            # The rows replay lays out go into the bucket replay pads to; in a sound system that is the admitted
            # one, so both must have room (a stale admission or a second selector breaks one of the two).
            claim = Implies(
                a.selection.admitted,
                And(
                    is_listed_with_room(s.capture, a.selection.bucket, r.layout_loads),
                    is_listed_with_room(s.capture, r.selection.bucket, r.layout_loads),
                ),
            )
            steps = (*_sides_agree_and_fit(s, a, r),
                     ("capacity_fit, captured capacities" if captured else "capacity_fit, any capacities", claim, ()))
            out += s.chain("admitted_batches_fit_every_rank", steps, (a.holds, r.holds),
                           (("admitted", a.selection.bucket), ("rows", a.required)))
    return tuple(out)


def admitted_bucket_is_captured(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """captured_bucket: an admitted batch's bucket is in the capture list and has a recorded capacity."""
    out: list[Query] = []
    for s in _settings(cp_size):
        a = s.admitted(admit_fn)
        b = a.selection.bucket
        claim = Implies(a.selection.admitted, any_of(And(b == x, rec) for x, rec in zip(s.capture.buckets, s.capture.recorded)))
        out += s.chain("admitted_bucket_is_captured", (("captured_bucket", claim),), (a.holds,), (("admitted", b),))
    return tuple(out)


def admitted_bucket_is_within_padding_limit(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """padding_limit: an admitted batch's bucket B satisfies n <= B <= F*n, for rational F in 1..4."""
    out: list[Query] = []
    for s in _settings(cp_size, PADDING_FACTORS):
        a = s.admitted(admit_fn)
        claim = Implies(a.selection.admitted, within_window(a.selection.bucket, s.n, s.factor))
        out += s.chain("admitted_bucket_is_within_padding_limit", (("padding_limit", claim),), (a.holds,),
                       (("admitted", a.selection.bucket),))
    return tuple(out)


def admitted_bucket_is_the_least_that_fits(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """minimal_bucket: no captured bucket smaller than the admitted one fits the batch."""
    out: list[Query] = []
    for s in _settings(cp_size):
        a = s.admitted(admit_fn)
        need, facts = s.rows_needed("truth")
        b = a.selection.bucket
        claim = Implies(
            a.selection.admitted,
            all_of(Implies(bucket_fits(s.capture, i, s.n, s.factor, need), b <= s.capture.buckets[i]) for i in range(len(s.capture))),
        )
        out += s.chain("admitted_bucket_is_the_least_that_fits", (same_rows(need, a.required), ("minimal_bucket", claim)),
                       (a.holds, facts), (("admitted", b), ("rows needed", need)))
    return tuple(out)


def active_batches_that_fit_are_admitted(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """no_needless_fallback: a CP-active batch for which some captured bucket fits is admitted, and only
    such a batch is (the CP-active gates P > 1, n >= 2P and no request under 2P, restated, are exact)."""
    out: list[Query] = []
    for s in _settings(cp_size):
        a = s.admitted(admit_fn)
        need, facts = s.rows_needed("truth")
        some = any_of(bucket_fits(s.capture, i, s.n, s.factor, need) for i in range(len(s.capture)))
        # Both directions: a batch the gates let through that some bucket fits is admitted, and nothing
        # else is (an inactive batch, or one no bucket fits, never replays a graph).
        claim = a.selection.admitted == And(is_active(s.batch, s.n, s.strategy), some)
        out += s.chain("active_batches_that_fit_are_admitted", (same_rows(need, a.required), ("no_needless_fallback", claim)),
                       (a.holds, facts), (("rows needed", need),))
    return tuple(out)


def _any_decision(loads: Loads, rank: IntLike, setup: RankSetup, num_tokens: IntLike, name: str) -> Decision:
    """A selector that may choose anything: any admit verdict, any bucket (listed or not), any rows, any key."""
    del loads, rank, setup, num_tokens
    chosen = Selection(z3.Bool(f"{name}.any.admitted"), z3.Int(f"{name}.any.bucket"))
    return Decision(chosen, z3.Int(f"{name}.any.rows"), z3.BoolVal(True), z3.Int(f"{name}.any.key"))


def replay_runs_only_into_a_listed_bucket_with_room(
    cp_size: int, *, replay_fn: ReplayFn = replay, layout: ReplayLayout = live_layout
) -> tuple[Query, ...]:
    """replay's tripwire: whatever bucket replay's selector call chose (any verdict, any bucket, listed or
    not), replay succeeds only for a CP-active batch, into a listed bucket with a recorded capacity that
    holds every rank's rows of the layout it built."""
    out: list[Query] = []
    for s in _settings(cp_size, FACTORS[:1]):
        r = s.replayed(replay_fn, layout=layout, decide=_any_decision)
        claim = Implies(
            r.succeeded,
            And(r.selection.admitted, is_active(s.batch, s.n, s.strategy), is_listed_with_room(s.capture, r.selection.bucket, r.layout_loads)),
        )
        out += s.chain("replay_runs_only_into_a_listed_bucket_with_room", (("tripwire", claim),), (r.holds,),
                       (("replayed", r.selection.bucket),))
    return tuple(out)


SHARED_INPUTS = ("capture_num_tokens", "bucket_local_tokens", "max_padding_factor", "align_size")


def ranks_sharing_their_capture_state_agree(
    cp_size: int, *, admit_fn: Admit = admit, replay_fn: ReplayFn = replay, shared: Sequence[str] = SHARED_INPUTS
) -> tuple[Query, ...]:
    """rank_consensus: two ranks, each deciding from its own capture list, capacities, factor and alignment
    (and free to read its own load), decide the same admit and bucket for every batch whenever those
    inputs agree: the capture list, the recorded capacities, F and A are what ranks must share. And every
    rank (each of them up to P = 8; ranks 0, P/2 and P-1 above) decides and replays exactly as
    rank 0 does, for every layout (any per-rank loads), so a rule that reads the deciding rank is refuted."""
    out: list[Query] = []
    for s in _settings(cp_size):
        other_capture = symbolic_capture_list(len(s.capture), "cap2")
        factor = s.factor if "max_padding_factor" in shared else s.factor + 1
        align = s.setup.align_size if "align_size" in shared else 2 * s.setup.align_size
        other = RankSetup(s.strategy, s.cp_size, align, factor, other_capture)
        first = admit_fn(s.batch, s.n, s.setup, 0, "rank0")
        second = admit_fn(s.batch, s.n, other, s.cp_size - 1, "rankP")
        # The second rank's list is sorted and its capacities >= 0 as the first's are: stated only where not shared.
        agree: list[BoolTerm] = []
        if "capture_num_tokens" in shared:
            agree += [x == y for x, y in zip(s.capture.buckets, other_capture.buckets)]
        else:
            agree.append(capture_list_is_sorted(other_capture))
        if "bucket_local_tokens" in shared:
            agree += [x == y for x, y in zip(s.capture.capacities, other_capture.capacities)]
            agree += [x == y for x, y in zip(s.capture.recorded, other_capture.recorded)]
        else:
            agree += [c >= 0 for c in other_capture.capacities]
        claim = same_decision(first.selection, second.selection)[1]  # the same admit verdict, and bucket when admitted
        out += s.chain("ranks_sharing_their_capture_state_agree", (same_rows(first.required, second.required), ("rank_consensus", claim)),
                       (first.holds, second.holds, *agree),
                       (("rank 0 bucket", first.selection.bucket), ("rank P-1 bucket", second.selection.bucket)))
    for k in list_lengths_at(cp_size):
        every = setting(cp_size, STRATEGIES_FULL_SCOPE[0], FACTORS[0], form="any", list_length=k)
        out += every_rank_alike("ranks_sharing_their_capture_state_agree", every, admit_fn, replay_fn)
    return tuple(out)


THEOREM_OF_INVARIANT = {
    "rank_consensus": ranks_sharing_their_capture_state_agree,
    "admission_replay": admitted_batches_replay_the_admitted_bucket,
    "captured_bucket": admitted_bucket_is_captured,
    "padding_limit": admitted_bucket_is_within_padding_limit,
    "capacity_fit": admitted_batches_fit_every_rank,
    "minimal_bucket": admitted_bucket_is_the_least_that_fits,
    "no_needless_fallback": active_batches_that_fit_are_admitted,
}
assert set(THEOREM_OF_INVARIANT) == set(INVARIANT_TABLE), "one end-to-end theorem per invariant id"
