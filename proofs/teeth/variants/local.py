"""Wrong sides substituted into the local-keying end-to-end theorems (proofs/theorems/end_to_end_local.py), each with
the verdict it must get: vLLM's shipped bug first.

vLLM 0.26-0.28 (``vllm_0_28_split``): admission dispatched the least captured size >= n, the GLOBAL token
count, while the PIECEWISE replay was keyed by the unpadded largest rank-local row count m: the size
admitted is not the one replayed (P = 4, [170, 161, 153]: dispatched 496, replayed under 126, never
captured). It must be refuted by admission_replay with a minimal counterexample that is a real batch
(the theorems' DualChunkSwap instances come first, so a model is a list of lengths, replayed through the
reference); vLLM 0.29's design (spec/admission.py and spec/replay.py under ``keying="local"``) is proved.

Every variant is built from the spec's own pieces (spec/keying.py's local row, spec/selection.py's scan)
with one piece swapped: the key (the global count, the rank's own rows, rank 0's rows, one short), the
window (sglang's padding factor on the key), the capacity table (the recorded one), the gate, the
selector (the largest size), replay's key (unpadded) or its tripwire. One equivalent rewrite stays proved.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction

import z3

from cpgraph.spec.logic import And, If, Or
from cpgraph.proofs.theorems import end_to_end_local as local
from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.teeth.variants.end_to_end import LONG_P, middle_ranks_own_load_admit, middle_ranks_own_load_replay, of_the_first_8_buckets
from cpgraph.spec.admission import Admission, Decision, RankSetup, admit, cp_active
from cpgraph.spec.batch import LiveBatch
from cpgraph.spec.capacity import busiest_load
from cpgraph.spec.keying import keying as keying_row
from cpgraph.spec.replay import Replay, replay, tripwire
from cpgraph.spec.selection import NO_SELECTION, CaptureList, Selection, Window, padding_window, scan_select, unbounded_window
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, any_of, int_term

# (loads, num_tokens, deciding rank, name) -> (key, facts)
KeyOf = Callable[[Loads, IntLike, IntLike, str], tuple[IntTerm, BoolTerm]]
WindowOf = Callable[[IntTerm, str], Window]
Sizes = Callable[[RankSetup], CaptureList]
Select = Callable[[CaptureList, Window, IntTerm], Selection]


def busiest_key(loads: Loads, n: IntLike, rank: IntLike, name: str) -> tuple[IntTerm, BoolTerm]:
    """vLLM 0.29's key: the largest rank-local rows over all ranks (the spec's local key)."""
    top = busiest_load(loads, f"{name}.key")
    return top.value, top.holds


def tokens_key(loads: Loads, n: IntLike, rank: IntLike, name: str) -> tuple[IntTerm, BoolTerm]:
    """vLLM 0.26-0.28's dispatch key: the batch's global token count n."""
    return int_term(n), loads.holds


def own_rows_key(loads: Loads, n: IntLike, rank: IntLike, name: str) -> tuple[IntTerm, BoolTerm]:
    """The deciding rank's own rows (consensus lost: ranks key different graphs)."""
    r = rank if isinstance(rank, int) else 0
    return loads.loads[r], loads.holds


def rank_zero_key(loads: Loads, n: IntLike, rank: IntLike, name: str) -> tuple[IntTerm, BoolTerm]:
    """Rank 0's rows on every rank (consensus kept, but DualChunkSwap's rank 0 is its lightest)."""
    return loads.loads[0], loads.holds


def key_one_short(loads: Loads, n: IntLike, rank: IntLike, name: str) -> tuple[IntTerm, BoolTerm]:
    """The largest rows minus one (an off-by-one in the max)."""
    key, facts = busiest_key(loads, n, rank, name)
    return key - 1, facts


def no_window(key: IntTerm, name: str) -> Window:
    return unbounded_window(key)


def doubled_window(key: IntTerm, name: str) -> Window:
    """sglang's padding window on the local key: m <= s <= 2m."""
    return padding_window(key, Fraction(2), f"{name}.window")


def sizes_holding_themselves(setup: RankSetup) -> CaptureList:
    return keying_row("local").capacities(setup.capture)


def recorded_capacities(setup: RankSetup) -> CaptureList:
    """The recorded capacity table (bucket_local_tokens) where a size holds itself."""
    return setup.capture


def _scan(capture: CaptureList, window: Window, required: IntTerm) -> Selection:
    return scan_select(capture, window, required)


def largest_size(capture: CaptureList, window: Window, required: IntTerm) -> Selection:
    """The greatest listed size at or above the key instead of the least."""
    chosen = NO_SELECTION
    for b, c, rec in zip(capture.buckets, capture.capacities, capture.recorded):
        ok = And(window.low <= b, rec, c >= required)
        chosen = Selection(Or(ok, chosen.admitted), If(ok, b, chosen.bucket))
    return chosen


def least_size_without_room_check(capture: CaptureList, window: Window, required: IntTerm) -> Selection:
    """The least listed size at or above the key, with no capacity test (a size holds itself: equivalent)."""
    chosen = NO_SELECTION
    for b in reversed(capture.buckets):
        chosen = Selection(If(b < window.low, chosen.admitted, z3.BoolVal(True)), If(b < window.low, chosen.bucket, b))
    return chosen


def _decide(
    loads: Loads, n: IntLike, rank: IntLike, setup: RankSetup, name: str, *, key_of: KeyOf, window_of: WindowOf,
    sizes: Sizes, select: Select,
) -> Decision:
    key, facts = key_of(loads, n, rank, name)
    window = window_of(key, name)
    return Decision(select(sizes(setup), window, key), key, And(facts, window.holds), key)


def make_admit(
    *, key_of: KeyOf = busiest_key, window_of: WindowOf = no_window, sizes: Sizes = sizes_holding_themselves,
    select: Select = _scan, gated: bool = False,
) -> Callable[[LiveBatch, IntTerm, RankSetup, int, str], Admission]:
    """An admission built like spec.admission.admit under the local keying with one piece swapped."""

    def admit(batch: LiveBatch, n: IntTerm, setup: RankSetup, rank: int, name: str) -> Admission:
        loads = batch.layout_loads(setup.strategy, f"{name}.live")
        chosen = _decide(loads, n, rank, setup, name, key_of=key_of, window_of=window_of, sizes=sizes, select=select)
        return chosen.admission(cp_active(batch, n, setup.strategy) if gated else z3.BoolVal(True))

    return admit


def unpadded_selection(capture: CaptureList, window: Window, required: IntTerm) -> Selection:
    """vLLM 0.26-0.28's replay: the graph keyed by the unpadded rows m itself (replayed only if m is a
    captured size)."""
    return Selection(any_of(b == window.low for b in capture.buckets), window.low)


def make_replay(
    *, key_of: KeyOf = busiest_key, select: Select = _scan, checked: bool = True,
) -> Callable[..., Replay]:
    """A replay built like spec.replay.replay under the local keying (live layout, its own selector call, the
    tripwire: every rank's rows within the size) with one piece swapped: the key, the selector, or no
    tripwire at all."""

    def replay(batch: LiveBatch, n: IntLike, setup: RankSetup, rank: IntLike, name: str, *, layout: object = None,
               decide: object = None) -> Replay:
        del layout
        loads = batch.layout_loads(setup.strategy, f"{name}.layout")
        if decide is not None:
            chosen: Decision = decide(loads, rank, setup, n, name)  # type: ignore[operator]
        else:
            chosen = _decide(loads, n, rank, setup, name, key_of=key_of, window_of=no_window,
                             sizes=sizes_holding_themselves, select=select)
        picked = chosen.selection
        fits = tripwire(sizes_holding_themselves(setup), picked.bucket, loads.loads) if checked else z3.BoolVal(True)
        return Replay(picked, And(picked.admitted, fits), loads.loads, chosen.required, chosen.holds, chosen.key)

    return replay


P = 4  # where the local variants are checked (DualChunkSwap instances and any layout at P = 4)
REFUTED, PROVED = Status.REFUTED, Status.PROVED

# vLLM 0.26-0.28, both sides: admission dispatches by n, replay is keyed by the unpadded m.
vllm_0_28_admit = make_admit(key_of=tokens_key)
vllm_0_28_replay = make_replay(select=unpadded_selection)


def variants() -> tuple[tuple[str, str, str, int, Status, Callable[[int], tuple[Query, ...]]], ...]:
    """(name, theorem, description, cp_size, expected verdict, builder) for every local variant."""
    rows: list[tuple[str, str, str, Status, Callable[[int], tuple[Query, ...]]]] = [
        ("vllm_0_28_split", "local_admitted_batches_replay_the_admitted_size",
         "vLLM 0.26-0.28: admission dispatches the least size >= n, replay is keyed by the unpadded rank-local rows", REFUTED,
         functools.partial(local.local_admitted_batches_replay_the_admitted_size, admit_fn=vllm_0_28_admit, replay_fn=vllm_0_28_replay)),
        ("dispatch_by_tokens", "local_admitted_batches_replay_the_admitted_size",
         "0.28's admission (least size >= n) with 0.29's replay", REFUTED,
         functools.partial(local.local_admitted_batches_replay_the_admitted_size, admit_fn=vllm_0_28_admit)),
        ("replay_under_unpadded_key", "local_admitted_batches_replay_the_admitted_size",
         "0.29's admission with 0.28's replay (the graph keyed by m itself)", REFUTED,
         functools.partial(local.local_admitted_batches_replay_the_admitted_size, replay_fn=vllm_0_28_replay)),
        ("dispatch_by_tokens", "local_admitted_size_is_the_least_that_fits", "admission keyed by the global count n", REFUTED,
         functools.partial(local.local_admitted_size_is_the_least_that_fits, admit_fn=vllm_0_28_admit)),
        ("dispatch_by_tokens", "local_batches_that_fit_are_admitted", "admission keyed by the global count n", REFUTED,
         functools.partial(local.local_batches_that_fit_are_admitted, admit_fn=vllm_0_28_admit)),
        ("own_rows_key", "local_ranks_sharing_their_sizes_agree", "each rank keys by its own rows (consensus lost)", REFUTED,
         functools.partial(local.local_ranks_sharing_their_sizes_agree, admit_fn=make_admit(key_of=own_rows_key))),
        ("middle_ranks_own_load", "local_ranks_sharing_their_sizes_agree",
         "a middle rank's admission keys by its own rows, not the largest", REFUTED,
         functools.partial(local.local_ranks_sharing_their_sizes_agree, admit_fn=middle_ranks_own_load_admit)),
        ("middle_ranks_own_load_both", "local_ranks_sharing_their_sizes_agree",
         "a middle rank's decision (admission and replay) keys by its own rows", REFUTED,
         functools.partial(local.local_ranks_sharing_their_sizes_agree, admit_fn=middle_ranks_own_load_admit,
                           replay_fn=middle_ranks_own_load_replay)),
        ("per_rank_sizes", "local_ranks_sharing_their_sizes_agree", "ranks keep their own lists of sizes", REFUTED,
         functools.partial(local.local_ranks_sharing_their_sizes_agree, shared=())),
        ("doubled_window", "local_batches_that_fit_are_admitted", "sglang's window m <= s <= 2m on the local key", REFUTED,
         functools.partial(local.local_batches_that_fit_are_admitted, admit_fn=make_admit(window_of=doubled_window))),
        ("recorded_capacities", "local_batches_that_fit_are_admitted", "sizes read as recorded capacities (bucket_local_tokens)",
         REFUTED, functools.partial(local.local_batches_that_fit_are_admitted, admit_fn=make_admit(sizes=recorded_capacities))),
        ("gated", "local_batches_that_fit_are_admitted", "the CP-active gate on a local keying", REFUTED,
         functools.partial(local.local_batches_that_fit_are_admitted, admit_fn=make_admit(gated=True))),
        ("largest_size", "local_admitted_size_is_the_least_that_fits", "the greatest size at or above the key", REFUTED,
         functools.partial(local.local_admitted_size_is_the_least_that_fits, admit_fn=make_admit(select=largest_size))),
        ("key_one_short", "local_admitted_size_is_at_or_above_the_key", "the key is the largest rows minus one", REFUTED,
         functools.partial(local.local_admitted_size_is_at_or_above_the_key, admit_fn=make_admit(key_of=key_one_short))),
        ("key_one_short", "local_admitted_batches_fit_every_rank", "both sides key by the largest rows minus one", REFUTED,
         functools.partial(local.local_admitted_batches_fit_every_rank, admit_fn=make_admit(key_of=key_one_short),
                           replay_fn=make_replay(key_of=key_one_short, checked=False))),
        ("rank_zero_key", "local_admitted_batches_fit_every_rank", "both sides key by rank 0's rows (DualChunkSwap's lightest)",
         REFUTED, functools.partial(local.local_admitted_batches_fit_every_rank, admit_fn=make_admit(key_of=rank_zero_key),
                                    replay_fn=make_replay(key_of=rank_zero_key, checked=False))),
        # Replay alone wrong, its rows and layout right: the size it pads to is not the admitted one and has no
        # room (only the claim's second half, the size replay pads to, tells it apart).
        ("replay_pads_one_below", "local_admitted_batches_fit_every_rank",
         "replay pads to one below the size it chose, with no tripwire", REFUTED,
         functools.partial(local.local_admitted_batches_fit_every_rank,
                           replay_fn=make_replay(select=lambda c, w, r: _shifted(_scan(c, w, r), -1), checked=False))),
        ("last_size_reported_one_past", "local_admitted_size_is_the_least_that_fits",
         "the last size, when chosen, reported one past it (wrong only at the last index)", REFUTED,
         functools.partial(local.local_admitted_size_is_the_least_that_fits,
                           admit_fn=make_admit(select=lambda c, w, r: _last_shifted(_scan(c, w, r), c)))),
        ("off_list_size", "local_admitted_size_is_captured", "the size reported one above the chosen one", REFUTED,
         functools.partial(local.local_admitted_size_is_captured,
                           admit_fn=make_admit(select=lambda c, w, r: _shifted(_scan(c, w, r))))),
        ("no_tripwire", "local_replay_runs_only_into_a_listed_size_holding_every_rank", "replay runs whatever its selector chose",
         REFUTED, functools.partial(local.local_replay_runs_only_into_a_listed_size_holding_every_rank, replay_fn=make_replay(checked=False))),
        ("no_room_check", "local_admitted_batches_replay_the_admitted_size",
         "both sides take the least size >= m with no capacity test (a size holds itself: equivalent)", PROVED,
         functools.partial(local.local_admitted_batches_replay_the_admitted_size,
                           admit_fn=make_admit(select=least_size_without_room_check),
                           replay_fn=make_replay(select=least_size_without_room_check))),
    ]
    long_rows: list[tuple[str, str, str, Status, Callable[[int], tuple[Query, ...]]]] = [
        ("admission_of_the_first_8_sizes", "local_batches_that_fit_are_admitted",
         "admission keys into the first 8 sizes of the list only (a 9th at or above the key is never admitted)", REFUTED,
         functools.partial(local.local_batches_that_fit_are_admitted, admit_fn=of_the_first_8_buckets(admit))),
        ("replay_of_the_first_8_sizes", "local_admitted_batches_replay_the_admitted_size",
         "replay keys into the first 8 sizes of the list only", REFUTED,
         functools.partial(local.local_admitted_batches_replay_the_admitted_size, replay_fn=of_the_first_8_buckets(replay))),
    ]
    return (*((name, theorem, description, P, expected, build) for name, theorem, description, expected, build in rows),
            *((name, theorem, description, LONG_P, expected, build) for name, theorem, description, expected, build in long_rows))


def _shifted(chosen: Selection, by: int = 1) -> Selection:
    return Selection(chosen.admitted, chosen.bucket + by)


def _last_shifted(chosen: Selection, capture: CaptureList) -> Selection:
    last = capture.buckets[-1]
    return Selection(chosen.admitted, If(chosen.bucket == last, last + 1, chosen.bucket))
