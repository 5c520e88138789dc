"""End-to-end theorems for the local graph keying (vLLM 0.29 on), one per invariant id, plus replay's tripwire.

Under the local keying a graph is captured for a size s of rank-local rows; every rank computes the key
m = the largest rank-local row count of the batch over all ranks, takes the least captured size s >= m
(no padding factor), lays the batch out in s rows and replays the graph of size s; a size holds s rows on
every rank; every batch is keyed (no CP-active gate). Every invariant therefore reads the batch only
through its per-rank loads, and each theorem here is proved for:

- ANY layout (spec/batch.py ``AnyLayout``): P free loads l_r >= 0, any n, a free capture list of sorted
  sizes. That is every batch under every strategy at once (the DualChunkSwap rows, any future one);
- and, as instances whose models are real batches (so a wrong variant's counterexample is replayed through
  the reference), DualChunkSwap's loads of up to ``REQUESTS`` prefills of any lengths, for the
  dual_chunk_swap row (whose prefill loads are dual_chunk_swap_replicated's too) and the dcp row, at
  P <= ``INSTANCE_MAX_P``.

Admission (spec/admission.py) and replay (spec/replay.py) are built independently under
``RankSetup(keying="local")``; each claim restates its invariant from the definitions in
proofs/theorems/claims.py (the key as "the least value at or above every load", a size at or above it, a size
holding itself), never from spec/keying.py. The chains, lemma by lemma, are those of proofs/theorems/end_to_end.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from cpgraph.spec.logic import And, Implies
from cpgraph.proofs.theorems.claims import (
    is_listed_with_room,
    layout_within_rows,
    same_decision,
    same_rows,
    size_fits,
    sizes_holding_themselves,
)
from cpgraph.proofs.theorems import end_to_end
from cpgraph.proofs.theorems.end_to_end import _any_decision
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.theorems.setting import Admit, ReplayFn, Setting, every_rank_alike, list_lengths_at, setting
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.spec.admission import RankSetup, admit
from cpgraph.spec.keying import KEYINGS
from cpgraph.spec.replay import ReplayLayout, live_layout, replay
from cpgraph.spec.selection import Selection, capture_list_is_sorted, symbolic_capture_list
from cpgraph.spec.terms import BoolTerm, IntTerm, all_of, any_of

KEYING = "local"
INSTANCES = ("dual_chunk_swap", "dual_chunk_swap_dcp")  # DualChunkSwap's two distinct prefill layouts
INSTANCE_MAX_P = 8  # the instances run here and below; the any-layout setting at every P
ANY_LAYOUT = "dual_chunk_swap"  # the strategy id an any-layout RankSetup names (its loads are free: never read)
FACTOR = Fraction(2)  # F is not read under the local keying; the setup still carries one


def local_settings(cp_size: int) -> list[Setting]:
    """The settings every local theorem covers at ``cp_size``, for each capture-list length there
    (``list_lengths_at``): the DualChunkSwap instances first (their models are real batches), then any layout."""
    out: list[Setting] = []
    for k in list_lengths_at(cp_size):
        out += [setting(cp_size, sid, FACTOR, keying=KEYING, form="requests", list_length=k)
                for sid in INSTANCES if cp_size <= INSTANCE_MAX_P]
        out.append(setting(cp_size, ANY_LAYOUT, FACTOR, keying=KEYING, form="any", list_length=k))
    return out


Step = tuple[str, BoolTerm] | tuple[str, BoolTerm, Sequence[BoolTerm]]


def _chosen_size_holds(s: Setting, chosen: Selection, rows: IntTerm, facts: Sequence[BoolTerm]) -> Step:
    """An admitted size is listed and holds the rows the decision required (a size holds itself), under
    ``facts`` (the deciding side's own)."""
    claim = Implies(chosen.admitted, is_listed_with_room(sizes_holding_themselves(s.capture), chosen.bucket, (rows,)))
    return ("chosen size holds its rows", claim, facts)


def local_admitted_batches_replay_the_admitted_size(
    cp_size: int, *, admit_fn: Admit = admit, replay_fn: ReplayFn = replay, layout: ReplayLayout = live_layout
) -> tuple[Query, ...]:
    """admission_replay under the local keying: for every batch (any layout: any per-rank loads) and any
    n, replay succeeds exactly when admission admitted, and then replays the size admission chose (vLLM
    0.26-0.28 broke this: admission dispatched by the global token count, replay was keyed by the
    rank-local rows)."""
    out: list[Query] = []
    for s in local_settings(cp_size):
        a = s.admitted(admit_fn)
        r = s.replayed(replay_fn, layout=layout)
        claim = same_decision(a.selection, Selection(r.succeeded, r.selection.bucket))[1]  # replay runs iff admitted, the same bucket
        steps = (
            *s.layouts_agree("admit.live", "replay.layout"),
            same_rows(a.required, r.required),
            same_decision(a.selection, r.selection),
            _chosen_size_holds(s, a.selection, a.required, (a.holds,)),
            (*layout_within_rows(r.layout_loads, r.required), (r.holds,)),
            ("admission_replay", claim, ()),
        )
        out += s.chain("local_admitted_batches_replay_the_admitted_size", steps, (a.holds, r.holds),
                       (("admitted", a.selection.bucket), ("replayed", r.selection.bucket)))
    return tuple(out)


def local_admitted_batches_fit_every_rank(
    cp_size: int, *, admit_fn: Admit = admit, replay_fn: ReplayFn = replay, layout: ReplayLayout = live_layout
) -> tuple[Query, ...]:
    """capacity_fit under the local keying: when a batch is admitted, every rank's rows of the layout
    replay builds fit the admitted size and the size replay pads to (a size s holds s rows on every rank)."""
    out: list[Query] = []
    for s in local_settings(cp_size):
        a = s.admitted(admit_fn)
        r = s.replayed(replay_fn, layout=layout)
        sizes = sizes_holding_themselves(s.capture)
        claim = Implies(
            a.selection.admitted,
            And(is_listed_with_room(sizes, a.selection.bucket, r.layout_loads),
                   is_listed_with_room(sizes, r.selection.bucket, r.layout_loads)),
        )
        steps = (
            *s.layouts_agree("admit.live", "replay.layout"),
            same_rows(a.required, r.required),
            same_decision(a.selection, r.selection),
            _chosen_size_holds(s, a.selection, a.required, (a.holds,)),
            (*layout_within_rows(r.layout_loads, r.required), (r.holds,)),
            ("capacity_fit", claim, ()),
        )
        out += s.chain("local_admitted_batches_fit_every_rank", steps, (a.holds, r.holds),
                       (("admitted", a.selection.bucket), ("rows", a.required)))
    return tuple(out)


def local_admitted_size_is_captured(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """captured_bucket under the local keying: an admitted batch's size is one of the captured sizes."""
    out: list[Query] = []
    for s in local_settings(cp_size):
        a = s.admitted(admit_fn)
        claim = Implies(a.selection.admitted, any_of(a.selection.bucket == b for b in s.capture.buckets))
        out += s.chain("local_admitted_size_is_captured", (("captured_bucket", claim),), (a.holds,),
                       (("admitted", a.selection.bucket),))
    return tuple(out)


def local_admitted_size_is_at_or_above_the_key(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """padding_limit under the local keying (no padding factor): an admitted batch's size s is at or above
    the key m, the largest rank-local row count of the batch over all ranks: m <= s."""
    out: list[Query] = []
    for s in local_settings(cp_size):
        a = s.admitted(admit_fn)
        key, facts = s.rows_needed("truth")
        claim = Implies(a.selection.admitted, key <= a.selection.bucket)
        out += s.chain("local_admitted_size_is_at_or_above_the_key", (*s.layouts_agree("truth", "admit.live"), same_rows(key, a.required), ("padding_limit", claim)),
                       (a.holds, facts), (("admitted", a.selection.bucket), ("key", key)))
    return tuple(out)


def local_admitted_size_is_the_least_that_fits(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """minimal_bucket under the local keying: no captured size smaller than the admitted one is at or above
    the key m."""
    out: list[Query] = []
    for s in local_settings(cp_size):
        a = s.admitted(admit_fn)
        key, facts = s.rows_needed("truth")
        b = a.selection.bucket
        claim = Implies(
            a.selection.admitted,
            all_of(Implies(size_fits(s.capture, i, key), b <= s.capture.buckets[i]) for i in range(len(s.capture))),
        )
        out += s.chain("local_admitted_size_is_the_least_that_fits", (*s.layouts_agree("truth", "admit.live"), same_rows(key, a.required), ("minimal_bucket", claim)),
                       (a.holds, facts), (("admitted", b), ("key", key)))
    return tuple(out)


def local_batches_that_fit_are_admitted(cp_size: int, *, admit_fn: Admit = admit) -> tuple[Query, ...]:
    """no_needless_fallback under the local keying: a batch is admitted exactly when some captured size is
    at or above its key m (every batch is keyed: no CP-active gate; none above the largest size: eager)."""
    out: list[Query] = []
    for s in local_settings(cp_size):
        a = s.admitted(admit_fn)
        key, facts = s.rows_needed("truth")
        claim = a.selection.admitted == any_of(size_fits(s.capture, i, key) for i in range(len(s.capture)))
        out += s.chain("local_batches_that_fit_are_admitted", (*s.layouts_agree("truth", "admit.live"), same_rows(key, a.required), ("no_needless_fallback", claim)),
                       (a.holds, facts), (("key", key),))
    return tuple(out)


def local_replay_runs_only_into_a_listed_size_holding_every_rank(
    cp_size: int, *, replay_fn: ReplayFn = replay, layout: ReplayLayout = live_layout
) -> tuple[Query, ...]:
    """replay's tripwire under the local keying (vLLM's _build_batch_layout raising ValueError): whatever
    size replay's selector call chose (any verdict, any value, listed or not), replay succeeds only into a
    captured size at or above every rank's rows of the layout it built."""
    out: list[Query] = []
    for s in local_settings(cp_size):
        r = s.replayed(replay_fn, layout=layout, decide=_any_decision)
        claim = Implies(
            r.succeeded,
            And(r.selection.admitted, is_listed_with_room(sizes_holding_themselves(s.capture), r.selection.bucket, r.layout_loads)),
        )
        out += s.chain("local_replay_runs_only_into_a_listed_size_holding_every_rank", (("tripwire", claim),), (r.holds,),
                       (("replayed", r.selection.bucket),))
    return tuple(out)


SHARED_INPUTS = ("capture_num_tokens",)  # under the local keying ranks need to share the sizes only


def local_ranks_sharing_their_sizes_agree(
    cp_size: int, *, admit_fn: Admit = admit, replay_fn: ReplayFn = replay, shared: Sequence[str] = SHARED_INPUTS
) -> tuple[Query, ...]:
    """rank_consensus under the local keying: two ranks, each deciding from its own list of captured sizes
    (and free to read its own load), decide the same admit and size for every batch whenever their size
    lists agree: the key m is computed from the whole batch, never from a rank's own rows. And every rank
    (each of them up to P = 8; ranks 0, P/2 and P-1 above) decides and replays exactly as rank 0 does, for
    every layout (any per-rank loads), so a rule that reads the deciding rank is refuted."""
    out: list[Query] = []
    for s in local_settings(cp_size):
        other_capture = symbolic_capture_list(len(s.capture), "cap2")
        other = RankSetup(s.strategy, s.cp_size, s.setup.align_size, s.factor, other_capture, KEYING)
        first = admit_fn(s.batch, s.n, s.setup, 0, "rank0")
        second = admit_fn(s.batch, s.n, other, s.cp_size - 1, "rankP")
        agree: list[BoolTerm] = (  # the second rank's list is sorted as the first's is: stated only where not shared
            [x == y for x, y in zip(s.capture.buckets, other_capture.buckets)] if "capture_num_tokens" in shared
            else [capture_list_is_sorted(other_capture)])
        claim = same_decision(first.selection, second.selection)[1]  # the same admit verdict, and bucket when admitted
        out += s.chain("local_ranks_sharing_their_sizes_agree", (*s.layouts_agree("rank0.live", "rankP.live"), same_rows(first.required, second.required), ("rank_consensus", claim)),
                       (first.holds, second.holds, *agree),
                       (("rank 0 size", first.selection.bucket), ("rank P-1 size", second.selection.bucket)))
    for every in [x for x in local_settings(cp_size) if x.form == "any"]:  # any layout: every strategy's loads at once
        out += every_rank_alike("local_ranks_sharing_their_sizes_agree", every, admit_fn, replay_fn)
    return tuple(out)


THEOREM_OF_INVARIANT = {
    "rank_consensus": local_ranks_sharing_their_sizes_agree,
    "admission_replay": local_admitted_batches_replay_the_admitted_size,
    "captured_bucket": local_admitted_size_is_captured,
    "padding_limit": local_admitted_size_is_at_or_above_the_key,
    "capacity_fit": local_admitted_batches_fit_every_rank,
    "minimal_bucket": local_admitted_size_is_the_least_that_fits,
    "no_needless_fallback": local_batches_that_fit_are_admitted,
}
assert set(THEOREM_OF_INVARIANT) == set(INVARIANT_TABLE), "one local end-to-end theorem per invariant id"

# Each keying of the table (spec/keying.py) with its end-to-end theorem per invariant id.
THEOREMS_BY_KEYING = {"global": end_to_end.THEOREM_OF_INVARIANT, "local": THEOREM_OF_INVARIANT}
assert set(THEOREMS_BY_KEYING) == set(KEYINGS), "one set of end-to-end theorems per keying"
