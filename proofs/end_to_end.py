"""End-to-end theorems, one per invariant id: admission and replay, built independently, against claims
written from scratch, for every batch of any number of requests.

Each theorem takes one cp_size P and quantifies over:
- every batch of any size (spec/batch.py's ClassBatch: R and every length are variables; proofs/batch.py
  proves the abstraction covers every concrete batch), CP-active or not (the gates are modelled);
- every ``num_tokens`` n >= sum(extend_seq_lens) (DP/CP padding);
- every sorted capture list of ``LIST_LENGTH`` buckets with any capacities, some missing (and, for
  capacity_fit, capacities recorded by the real capture rule: each bucket's own capture layout);
- the strategy's default alignment and every padding factor of ``FACTORS`` (rational ones included).

The sides never share a term: admission (spec/admission.py) and replay (spec/replay.py) build their own
loads, maxima and alignments under their own names, and each claim below restates its invariant from
the definitions (a fitting bucket, the rows a layout needs, the padding window n <= B <= F*n) without
calling the spec's builders. A spec change that breaks an invariant therefore breaks its theorem.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import z3

from cpgraph.proofs.claims import (
    ALIGN_FACTOR,
    bucket_fits,
    chosen_bucket_has_room,
    layout_within_rows,
    same_decision,
    same_rows,
    is_active,
    is_listed_with_room,
    rows_needed,
    within_window,
)
from cpgraph.proofs.obligation import Query
from cpgraph.proofs.replay_batch import class_batch_replay
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.spec.admission import Admission, RankSetup, admit
from cpgraph.spec.batch import ClassBatch, class_batch, class_loads
from cpgraph.spec.capacity import capture_local_tokens
from cpgraph.spec.replay import Replay, ReplayLayout, live_layout, replay
from cpgraph.spec.selection import Selection, capture_list_is_sorted, symbolic_capture_list
from cpgraph.spec.strategies import STRATEGIES
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, all_of, any_of

LIST_LENGTH = 3  # buckets per capture list here; the scan itself is proved for every list length
FACTORS = (Fraction(2), Fraction(3, 2))  # F for every theorem (F = 2 only above P = 8); padding_limit: PADDING_FACTORS
PADDING_FACTORS = (Fraction(1), Fraction(5, 4), Fraction(3, 2), Fraction(2), Fraction(4))
STRATEGIES_FULL_SCOPE = ("zigzag", "zigzag_pad")  # every P; the other strategies up to OTHER_STRATEGIES_MAX_P
OTHER_STRATEGIES_MAX_P = 8
RLIMIT = 20_000_000  # z3 resource units per query (deterministic); the costliest here needs ~5M at P = 32

Admit = Callable[[ClassBatch, IntTerm, RankSetup, int, str], Admission]
ReplayFn = Callable[..., Replay]


def strategies_at(cp_size: int) -> tuple[str, ...]:
    """The strategies each end-to-end theorem covers at ``cp_size``."""
    return tuple(STRATEGIES) if cp_size <= OTHER_STRATEGIES_MAX_P else STRATEGIES_FULL_SCOPE


# -- the setting shared by every theorem ---------------------------------------------------------------------


class Setting:
    """One batch, one n, one capture list and a rank's setup, for P, a strategy and a factor."""

    def __init__(self, cp_size: int, strategy: str, factor: Fraction, *, captured: bool = False) -> None:
        p = cp_size
        self.cp_size, self.strategy, self.factor = p, strategy, factor
        self.align = ALIGN_FACTOR[strategy] * p  # the claim side's A
        spec_align = STRATEGIES[strategy].align_size(p)  # the runner's A, from the spec's table
        self.batch = class_batch(p, "batch")
        self.n = z3.Int("n")
        self.capture = symbolic_capture_list(LIST_LENGTH, "cap")
        self.setup = RankSetup(strategy, p, spec_align, factor, self.capture)
        facts = [
            self.batch.holds,
            self.n >= self.batch.tokens,
            capture_list_is_sorted(self.capture),
            *[c >= 0 for c in self.capture.capacities],
        ]
        if captured:  # capacities recorded by the capture rule: each bucket's own capture layout
            for i, b in enumerate(self.capture.buckets):
                rule = capture_local_tokens(b, p, spec_align, f"capture{i}", strategy)
                facts += [rule.holds, self.capture.capacities[i] == rule.value, self.capture.recorded[i]]
        self.hypotheses: tuple[BoolTerm, ...] = tuple(facts)
        self.size = self.n + 4096 * self.batch.requests  # fewest requests first, then fewest tokens

    def rows_needed(self, name: str) -> tuple[IntTerm, BoolTerm]:
        """The claim side's own live loads (the class formula) and the rows they need, with their facts."""
        loads = class_loads(self.batch, self.strategy, name)
        need, facts = rows_needed(loads.loads, self.align, name)
        return need, z3.And(loads.holds, facts)

    def chain(
        self,
        theorem: str,
        steps: Sequence[tuple[str, BoolTerm] | tuple[str, BoolTerm, Sequence[BoolTerm]]],
        facts: Sequence[BoolTerm],
        shown: Sequence[tuple[str, IntTerm]],
    ) -> tuple[Query, ...]:
        """One checked chain: step i is proved under the setting, every earlier step's claim, and ``facts``
        (or the step's own subset of facts, its third element: fewer hypotheses make a stronger lemma);
        the last step is the theorem's claim. A lemma is stated once (its builder) and used as proved."""
        shown_all = (("n", self.n), ("requests", self.batch.requests), *shown)
        replay_of = class_batch_replay(
            theorem=theorem, cp_size=self.cp_size, strategy=self.strategy, factor=self.factor,
            list_length=LIST_LENGTH, batch_name="batch",
        )
        out: list[Query] = []
        proved: list[BoolTerm] = []
        final = steps[-1][1]
        for i, step in enumerate(steps):
            part, lemma = step[0], step[1]
            # A lemma is proved where the theorem's claim fails (Not(final) => lemma): the chain proves the
            # same theorem, and a refuted lemma's model is a counterexample to the theorem itself.
            claim = lemma if i == len(steps) - 1 else z3.Implies(z3.Not(final), lemma)
            own = tuple(step[2]) if len(step) == 3 else tuple(facts)
            out.append(
                Query(
                    f"{part} ({self.strategy}, F={self.factor})",
                    claim,
                    (*self.hypotheses, *own, *proved),
                    size=self.size,
                    shown=tuple(shown_all),
                    replay=replay_of,
                    rlimit=RLIMIT,
                )
            )
            proved.append(claim)
        return tuple(out)


def _settings(cp_size: int, factors: Sequence[Fraction] | None = None, *, captured: bool = False) -> list[Setting]:
    if factors is None:
        factors = FACTORS if cp_size <= OTHER_STRATEGIES_MAX_P else FACTORS[:1]
    return [Setting(cp_size, s, f, captured=captured) for s in strategies_at(cp_size) for f in factors]


def _sides(s: Setting, admit_fn: Admit, replay_fn: ReplayFn, layout: ReplayLayout) -> tuple[Admission, Replay]:
    a = admit_fn(s.batch, s.n, s.setup, 0, "admit")
    r = replay_fn(s.batch, s.n, s.setup, 0, "replay", layout=layout)
    return a, r


# -- the theorems -----------------------------------------------------------------------------------------------


def admitted_batches_replay_the_admitted_bucket(
    cp_size: int, *, admit_fn: Admit = admit, replay_fn: ReplayFn = replay, layout: ReplayLayout = live_layout
) -> tuple[Query, ...]:
    """admission_replay: for every batch of any number of requests and any padded n, replay succeeds
    exactly when admission admitted, and then pads to the admitted bucket."""
    out: list[Query] = []
    for s in _settings(cp_size):
        a, r = _sides(s, admit_fn, replay_fn, layout)
        claim = z3.And(
            a.selection.admitted == r.succeeded,
            z3.Implies(a.selection.admitted, r.selection.bucket == a.selection.bucket),
        )
        steps = (
            same_rows(a.required, r.required),
            same_decision(a.selection, r.selection),
            (*chosen_bucket_has_room(s.capture, a.selection, a.required), (a.holds,)),
            (*layout_within_rows(r.layout_loads, r.required), (r.holds,)),
            ("admission_replay", claim, ()),
        )
        out += s.chain("admitted_batches_replay_the_admitted_bucket", steps, (a.holds, r.holds),
                       (("admitted", a.selection.bucket), ("replayed", r.selection.bucket)))
    return tuple(out)


def admitted_batches_fit_every_rank(
    cp_size: int, *, admit_fn: Admit = admit, replay_fn: ReplayFn = replay, layout: ReplayLayout = live_layout
) -> tuple[Query, ...]:
    """capacity_fit: when a batch is admitted, every rank's rows of the layout replay builds fit the recorded
    capacity of the admitted bucket and of the bucket replay pads to, for any capacity table and for the
    real capture rule (each bucket's own capture layout)."""
    out: list[Query] = []
    for captured in (False, True) if cp_size <= OTHER_STRATEGIES_MAX_P else (False,):
        for s in _settings(cp_size, captured=captured):
            a, r = _sides(s, admit_fn, replay_fn, layout)
            # The rows replay lays out go into the bucket replay pads to; in a sound system that is the admitted
            # one, so both must have room (a stale admission or a second selector breaks one of the two).
            claim = z3.Implies(
                a.selection.admitted,
                z3.And(
                    is_listed_with_room(s.capture, a.selection.bucket, r.layout_loads),
                    is_listed_with_room(s.capture, r.selection.bucket, r.layout_loads),
                ),
            )
            steps = (
                same_rows(a.required, r.required),
                same_decision(a.selection, r.selection),
                (*chosen_bucket_has_room(s.capture, a.selection, a.required), (a.holds,)),
                (*layout_within_rows(r.layout_loads, r.required), (r.holds,)),
                ("capacity_fit, captured capacities" if captured else "capacity_fit, any capacities", claim, ()),
            )
            out += s.chain("admitted_batches_fit_every_rank", steps, (a.holds, r.holds),
                           (("admitted", a.selection.bucket), ("rows", a.required)))
    return tuple(out)


def admitted_bucket_is_captured(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """captured_bucket: an admitted batch's bucket is in the capture list and has a recorded capacity."""
    out: list[Query] = []
    for s in _settings(cp_size):
        a = admit_fn(s.batch, s.n, s.setup, 0, "admit")
        b = a.selection.bucket
        claim = z3.Implies(a.selection.admitted, any_of(z3.And(b == x, rec) for x, rec in zip(s.capture.buckets, s.capture.recorded)))
        out += s.chain("admitted_bucket_is_captured", (("captured_bucket", claim),), (a.holds,), (("admitted", b),))
    return tuple(out)


def admitted_bucket_is_within_padding_limit(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """padding_limit: an admitted batch's bucket B satisfies n <= B <= F*n, for rational F in 1..4."""
    out: list[Query] = []
    for s in _settings(cp_size, PADDING_FACTORS):
        a = admit_fn(s.batch, s.n, s.setup, 0, "admit")
        claim = z3.Implies(a.selection.admitted, within_window(a.selection.bucket, s.n, s.factor))
        out += s.chain("admitted_bucket_is_within_padding_limit", (("padding_limit", claim),), (a.holds,),
                       (("admitted", a.selection.bucket),))
    return tuple(out)


def admitted_bucket_is_the_least_that_fits(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """minimal_bucket: no captured bucket smaller than the admitted one fits the batch."""
    out: list[Query] = []
    for s in _settings(cp_size):
        a = admit_fn(s.batch, s.n, s.setup, 0, "admit")
        need, facts = s.rows_needed("truth")
        b = a.selection.bucket
        claim = z3.Implies(
            a.selection.admitted,
            all_of(z3.Implies(bucket_fits(s.capture, i, s.n, s.factor, need), b <= s.capture.buckets[i]) for i in range(LIST_LENGTH)),
        )
        out += s.chain("admitted_bucket_is_the_least_that_fits", (same_rows(need, a.required), ("minimal_bucket", claim)),
                       (a.holds, facts), (("admitted", b), ("rows needed", need)))
    return tuple(out)


def active_batches_that_fit_are_admitted(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """no_needless_fallback: a CP-active batch for which some captured bucket fits is admitted, and only
    such a batch is (the CP-active gates P > 1, n >= 2P and no request under 2P, restated, are exact)."""
    out: list[Query] = []
    for s in _settings(cp_size):
        a = admit_fn(s.batch, s.n, s.setup, 0, "admit")
        need, facts = s.rows_needed("truth")
        some = any_of(bucket_fits(s.capture, i, s.n, s.factor, need) for i in range(LIST_LENGTH))
        # Both directions: a batch the gates let through that some bucket fits is admitted, and nothing
        # else is (an inactive batch, or one no bucket fits, never replays a graph).
        claim = a.selection.admitted == z3.And(is_active(s.batch, s.n), some)
        out += s.chain("active_batches_that_fit_are_admitted", (same_rows(need, a.required), ("no_needless_fallback", claim)),
                       (a.holds, facts), (("rows needed", need),))
    return tuple(out)


def _any_decision(loads: Loads, rank: IntLike, setup: RankSetup, num_tokens: IntLike, name: str) -> tuple[Selection, IntTerm, BoolTerm]:
    """A selector that may choose anything: any admit verdict, any bucket (listed or not), any rows."""
    del loads, rank, setup, num_tokens
    return Selection(z3.Bool(f"{name}.any.admitted"), z3.Int(f"{name}.any.bucket")), z3.Int(f"{name}.any.rows"), z3.BoolVal(True)


def replay_runs_only_into_a_listed_bucket_with_room(
    cp_size: int, *, replay_fn: ReplayFn = replay, layout: ReplayLayout = live_layout
) -> tuple[Query, ...]:
    """replay's tripwire: whatever bucket replay's selector call chose (any verdict, any bucket, listed or
    not), replay succeeds only for a CP-active batch, into a listed bucket with a recorded capacity that
    holds every rank's rows of the layout it built."""
    out: list[Query] = []
    for s in _settings(cp_size, FACTORS[:1]):
        r = replay_fn(s.batch, s.n, s.setup, 0, "replay", layout=layout, decide=_any_decision)
        claim = z3.Implies(
            r.succeeded,
            z3.And(r.selection.admitted, is_active(s.batch, s.n), is_listed_with_room(s.capture, r.selection.bucket, r.layout_loads)),
        )
        out += s.chain("replay_runs_only_into_a_listed_bucket_with_room", (("tripwire", claim),), (r.holds,),
                       (("replayed", r.selection.bucket),))
    return tuple(out)


SHARED_INPUTS = ("capture_num_tokens", "bucket_local_tokens", "max_padding_factor", "align_size")


def ranks_sharing_their_capture_state_agree(
    cp_size: int, *, admit_fn: Admit = admit, shared: Sequence[str] = SHARED_INPUTS
) -> tuple[Query, ...]:
    """rank_consensus: two ranks, each deciding from its own capture list, capacities, factor and alignment
    (and free to read its own load), decide the same admit and bucket for every batch whenever those
    inputs agree: the capture list, the recorded capacities, F and A are what ranks must share."""
    out: list[Query] = []
    for s in _settings(cp_size):
        other_capture = symbolic_capture_list(LIST_LENGTH, "cap2")
        factor = s.factor if "max_padding_factor" in shared else s.factor + 1
        align = s.setup.align_size if "align_size" in shared else 2 * s.setup.align_size
        other = RankSetup(s.strategy, s.cp_size, align, factor, other_capture)
        first = admit_fn(s.batch, s.n, s.setup, 0, "rank0")
        second = admit_fn(s.batch, s.n, other, s.cp_size - 1, "rankP")
        agree: list[BoolTerm] = [capture_list_is_sorted(other_capture), *[c >= 0 for c in other_capture.capacities]]
        if "capture_num_tokens" in shared:
            agree += [x == y for x, y in zip(s.capture.buckets, other_capture.buckets)]
        if "bucket_local_tokens" in shared:
            agree += [x == y for x, y in zip(s.capture.capacities, other_capture.capacities)]
            agree += [x == y for x, y in zip(s.capture.recorded, other_capture.recorded)]
        claim = z3.And(
            first.selection.admitted == second.selection.admitted,
            z3.Implies(first.selection.admitted, first.selection.bucket == second.selection.bucket),
        )
        out += s.chain("ranks_sharing_their_capture_state_agree", (same_rows(first.required, second.required), ("rank_consensus", claim)),
                       (first.holds, second.holds, *agree),
                       (("rank 0 bucket", first.selection.bucket), ("rank P-1 bucket", second.selection.bucket)))
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
