"""Deliberately wrong variants of the spec's formulas, each with the verdict its theorem must give.

Deliberately wrong variants of the spec's formulas, each substituted into a theorem, with the verdict it
must get. A theorem that cannot be refuted proves nothing: every theorem in the registry has at least one
variant here that it refutes. A few variants are equivalent rewrites and must stay proved (they document
why, e.g., "skip a bucket above F*n" is as good as "stop" on a sorted list).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import z3

from cpgraph.spec.logic import And, Implies, Not
from cpgraph.proofs.theorems import arith, batch, capacity, dual_chunk_swap, selection, strategies, zigzag
from cpgraph.proofs.teeth.variants import end_to_end as variants_end_to_end, ep_graphs as variants_ep_graphs, graph_paths as variants_graph_paths, local as variants_local
from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.teeth.variants.end_to_end import first_8_buckets
from cpgraph.spec.admission import Decision, RankSetup, rank_decision
from cpgraph.spec.replay import tripwire
from cpgraph.spec.selection import CaptureList, Selection, Window, is_least_fitting, scan_select
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, all_of, any_of
from cpgraph.proofs.teeth.variants.terms import (
    class_batch_under,
    class_batch_with_untied_quotient,
    BATCH_FACTS_WITHOUT,
    _add_without_quotient,
    _align_up_folding_down,
    _align_up_folding_zero_to_a_block,
    _any_head,
    _count_two,
    _fits,
    _fits_first_at_or_above_n_only,
    _fits_ignoring_capacity,
    _fits_ignoring_record,
    _fits_strictly_above_n,
    _fits_strictly_below_top,
    _fits_with_room_to_spare,
    _fits_without_lower_limit,
    _fits_without_upper_limit,
    _forget_new_request,
    _off_list_relation,
    _prefers_later_bucket,
    _relation,
    _reports_head_without_room,
    _room_ignoring_record,
    _room_strict,
    _step,
    _unsorted_ok,
    _window_one_short,
    align_down,
    batch_loads_keeping_first_facts,
    capture_of_mean,
    captured_ignoring_requests,
    contiguous_dropping_remainder,
    contiguous_first_cut_late,
    contiguous_last_takes_rest,
    dcp_copying_below_2p,
    dcs_class_form,
    dual_chunk_swap_full_chunks,
    even_share_one_extra,
    first_rank_short,
    headroom_bound_minus_one_per_request,
    interleave_even_share_one_extra,
    interleave_one_remainder_token_short,
    interleave_rank_one_extra,
    interleave_remainder_to_rank_zero,
    interleave_without_remainder,
    last_rank_short,
    loose_divmod,
    next_multiple,
    no_rounding,
    paired_rank_load,
    rank_one_extra,
    remainder_untied,
    wrong_partner_owned,
    wrong_partner_request_loads,
)


@dataclass(frozen=True)
class Variant:
    """A wrong (or equivalent) formula substituted into ``theorem`` at ``parameter``: must get ``expected``."""

    name: str
    theorem: str
    description: str
    parameter: int
    expected: Status
    build: Callable[[int], tuple[Query, ...]]


def scan_of_the_first_8_buckets(capture: CaptureList, window: Window, required: IntLike) -> Selection:
    """spec.selection.scan_select, but the fold stops after the first 8 buckets of the list (issue 21's
    planted change: a scan that stops early, unseen by 3-bucket end-to-end lists)."""
    return scan_select(first_8_buckets(capture), window, required)


def tripwire_of_the_first_8_buckets(capture: CaptureList, bucket: IntTerm, loads: tuple[IntTerm, ...]) -> BoolTerm:
    """spec.replay.tripwire, but reading only the first 8 buckets of the list (a capacity lookup that stops
    early: replay would refuse every bucket past the 8th, unseen by 3-bucket end-to-end lists)."""
    return tripwire(first_8_buckets(capture), bucket, loads)


def decision_of_the_first_8_buckets_from_p_4(loads: Loads, rank: IntLike, setup: RankSetup, num_tokens: IntLike,
                                             name: str) -> Decision:
    """spec.admission.rank_decision, but from P = 4 on it scans only the first 8 buckets of the rank's list (an
    early stop that only some P take: unseen at P <= 3 and on 3-bucket lists)."""
    if setup.cp_size >= 4:
        setup = dataclasses.replace(setup, capture=first_8_buckets(setup.capture))
    return rank_decision(loads, rank, setup, num_tokens, name)


def tripwire_of_the_first_8_buckets_from_p_4(capture: CaptureList, bucket: IntTerm, loads: tuple[IntTerm, ...]) -> BoolTerm:
    """spec.replay.tripwire, but with 4 or more ranks' loads it reads only the first 8 buckets of the list."""
    return (tripwire_of_the_first_8_buckets if len(loads) >= 4 else tripwire)(capture, bucket, loads)


P, K = 4, 3  # where the variants are checked: a small cp_size and capture-list length that show each bug
REFUTED, PROVED = Status.REFUTED, Status.PROVED


_EDGE_THEOREMS = ("scan_selects_first_bucket_at_or_above_n_when_it_has_room", "scan_never_falls_back_when_a_bucket_fits",
                  "scan_selects_minimal_bucket")

def _last_bucket_wrong(chosen: Selection, capture: CaptureList, window: Window, required: IntLike, how: str) -> BoolTerm:
    """The least-fitting relation, wrong only at the list's last bucket: ``larger`` names it B + 1 (a size past
    the list), ``skipped`` never admits into it; each is refuted only by a claim that reads the last bucket."""
    members = [_fits(capture, i, window, required) for i in range(len(capture))]
    named = [*capture.buckets[:-1], capture.buckets[-1] + 1] if how == "larger" else list(capture.buckets)
    tried = members if how == "larger" else members[:-1]
    member = any_of(And(f, chosen.bucket == b) for f, b in zip(tried, named))
    least = all_of(Implies(f, chosen.bucket <= b) for f, b in zip(tried, named))
    return And(chosen.admitted == any_of(tried), Implies(chosen.admitted, And(member, least)))


def _right_bucket_never_admitted(chosen: Selection, capture: CaptureList, window: Window, required: IntLike) -> BoolTerm:
    """The least fitting bucket reported, but the verdict always "not admitted" (the eager path taken)."""
    right = Selection(z3.Bool("right.admitted"), chosen.bucket)
    return And(is_least_fitting(right, capture, window, required), Not(chosen.admitted))


VARIANTS: tuple[Variant, ...] = (
    Variant("loose_remainder", "divmod_quotient_and_remainder_are_unique", "0 <= m <= S", 0, REFUTED,
            functools.partial(arith.divmod_quotient_and_remainder_are_unique, divide=loose_divmod)),
    Variant("remainder_untied", "divmod_quotient_and_remainder_are_unique", "the remainder is not tied to L", 0, REFUTED,
            functools.partial(arith.divmod_quotient_and_remainder_are_unique, divide=remainder_untied)),
    Variant("next_multiple", "align_up_is_least_multiple_at_or_above", "A*(floor(v/A) + 1)", 0, REFUTED,
            functools.partial(arith.align_up_is_least_multiple_at_or_above, align=next_multiple)),
    Variant("no_rounding", "align_up_is_least_multiple_at_or_above", "v itself, not a multiple of A", 0, REFUTED,
            functools.partial(arith.align_up_is_least_multiple_at_or_above, align=no_rounding)),
    Variant("folds_zero_to_a_block", "folded_literals_equal_their_terms", "align_up folds 0 to A", P, REFUTED,
            functools.partial(arith.folded_literals_equal_their_terms, align=_align_up_folding_zero_to_a_block)),
    Variant("first_cut_late", "contiguous_busiest_rank_holds_ceil_share", "rank 0 takes one token of rank 1", P, REFUTED,
            functools.partial(strategies.contiguous_busiest_rank_holds_ceil_share, request_loads=contiguous_first_cut_late)),
    Variant("later_facts_dropped", "table_batch_loads_sum_to_tokens", "only the first request's facts kept", P, REFUTED,
            functools.partial(strategies.table_batch_loads_sum_to_tokens, batch_loads=batch_loads_keeping_first_facts)),
    Variant("folds_down", "folded_literals_equal_their_terms", "align_up folds literals down, not up", P, REFUTED,
            functools.partial(arith.folded_literals_equal_their_terms, align=_align_up_folding_down)),
    Variant("align_down", "align_up_is_least_multiple_at_or_above", "align down instead of up", 0, REFUTED,
            functools.partial(arith.align_up_is_least_multiple_at_or_above, align=align_down)),
    Variant("wrong_partner", "zigzag_loads_sum_to_tokens", "rank r owns blocks r and 2P-2-r", P, REFUTED,
            functools.partial(strategies.zigzag_loads_sum_to_tokens, request_loads=wrong_partner_request_loads)),
    Variant("dropped_remainder", "contiguous_loads_sum_to_tokens", "every rank gets floor(L/P)", P, REFUTED,
            functools.partial(strategies.contiguous_loads_sum_to_tokens, request_loads=contiguous_dropping_remainder)),
    Variant("no_remainder", "interleave_loads_sum_to_tokens", "every rank gets floor(N/P)", P, REFUTED,
            functools.partial(strategies.interleave_loads_sum_to_tokens, batch_loads=interleave_without_remainder)),
    Variant("paired_blocks", "zigzag_busiest_rank_holds_ceil_share", "rank r owns blocks 2r and 2r+1", P, REFUTED,
            functools.partial(strategies.zigzag_busiest_rank_holds_ceil_share, rank_load=paired_rank_load)),
    Variant("last_takes_rest", "contiguous_busiest_rank_holds_ceil_share", "the last rank takes the remainder", P, REFUTED,
            functools.partial(strategies.contiguous_busiest_rank_holds_ceil_share, request_loads=contiguous_last_takes_rest)),
    Variant("full_chunks", "dual_chunk_swap_loads_sum_to_tokens", "every chunk a full ceil(L/2P) (the request padded, zigzag_pad)",
            P, REFUTED, functools.partial(dual_chunk_swap.dual_chunk_swap_loads_sum_to_tokens, request_loads=dual_chunk_swap_full_chunks)),
    Variant("class_form_for_every_length", "dual_chunk_swap_long_requests_split_by_remainder",
            "q*loads(2P) + loads(m) for every q (a class encoding's assumption: L = 9, P = 4 is (2, 2, 2, 3))", P, REFUTED,
            functools.partial(dual_chunk_swap.dual_chunk_swap_long_requests_split_by_remainder,
                              rows=dual_chunk_swap.SPLIT_ROWS[:1], threshold=lambda p, kind: 0, form=dcs_class_form)),
    Variant("threshold_one_short", "dual_chunk_swap_long_requests_split_by_remainder",
            "the split form one quotient earlier (q >= 2P-3; dcp q >= 2P-2)", P, REFUTED,
            functools.partial(dual_chunk_swap.dual_chunk_swap_long_requests_split_by_remainder,
                              threshold=lambda p, kind: dual_chunk_swap.split_threshold(p, kind) - 1)),
    Variant("threshold_one_late", "dual_chunk_swap_long_requests_split_by_remainder",
            "the split form claimed only from one quotient later (q >= 2P-1; dcp q >= 2P): true, but not tight", P, REFUTED,
            functools.partial(dual_chunk_swap.dual_chunk_swap_long_requests_split_by_remainder,
                              threshold=lambda p, kind: dual_chunk_swap.split_threshold(p, kind) + 1)),
    Variant("threshold_one_short_dcp", "dual_chunk_swap_long_requests_split_by_remainder",
            "the dcp row's split form from q >= 2P-2 (dual_chunk_swap's threshold)", P, REFUTED,
            functools.partial(dual_chunk_swap.dual_chunk_swap_long_requests_split_by_remainder,
                              rows=dual_chunk_swap.SPLIT_ROWS[1:], threshold=lambda p, kind: 2 * p - 2)),
    Variant("excess_one_short", "dual_chunk_swap_request_excess_is_tight", "E - 1: a bound some request breaks", P, REFUTED,
            functools.partial(dual_chunk_swap.dual_chunk_swap_request_excess_is_tight,
                              excess=lambda p, kind: (dual_chunk_swap.dcs_excess(p) if kind == "dual_chunk_swap" else dual_chunk_swap.dcp_excess(p)) - 1)),
    Variant("excess_one_more", "dual_chunk_swap_request_excess_is_tight", "E + 1: a bound no request reaches", P, REFUTED,
            functools.partial(dual_chunk_swap.dual_chunk_swap_request_excess_is_tight,
                              excess=lambda p, kind: (dual_chunk_swap.dcs_excess(p) if kind == "dual_chunk_swap" else dual_chunk_swap.dcp_excess(p)) + 1)),
    Variant("copies_below_2p", "dual_chunk_swap_dcp_copies_exactly_the_short_prefills",
            "dcp copies the prefills shorter than 2P, not those that do not fill 2P chunks", P, REFUTED,
            functools.partial(dual_chunk_swap.dual_chunk_swap_dcp_copies_exactly_the_short_prefills, request_loads=dcp_copying_below_2p)),
    Variant("remainder_to_rank_zero", "interleave_busiest_rank_holds_ceil_share", "rank 0 takes the remainder", P, REFUTED,
            functools.partial(strategies.interleave_busiest_rank_holds_ceil_share, rank_load=interleave_remainder_to_rank_zero)),
    Variant("one_remainder_token_short", "interleave_busiest_rank_holds_ceil_share", "rank r holds q + [r < m - 1]", P,
            REFUTED, functools.partial(strategies.interleave_busiest_rank_holds_ceil_share,
                                       rank_load=interleave_one_remainder_token_short)),
    Variant("wrong_partner", "zigzag_ownership_partitions_blocks_for_symbolic_cp_size", "rank r owns r and 2P-2-r", 0, REFUTED,
            functools.partial(zigzag.zigzag_ownership_partitions_blocks_for_symbolic_cp_size, owned=wrong_partner_owned)),
    Variant("paired_blocks", "busiest_rank_holds_ceil_share_for_symbolic_cp_size", "rank r owns 2r and 2r+1", 0, REFUTED,
            functools.partial(zigzag.busiest_rank_holds_ceil_share_for_symbolic_cp_size, rank_load=paired_rank_load)),
    Variant("paired_blocks", "per_request_headroom_bound_holds_for_symbolic_cp_size", "rank r owns 2r and 2r+1", 0, REFUTED,
            functools.partial(zigzag.per_request_headroom_bound_holds_for_symbolic_cp_size, rank_load=paired_rank_load)),
    Variant("forgets_new_request", "headroom_bound_holds_for_symbolic_cp_size", "the step keeps k requests", 0, REFUTED,
            functools.partial(zigzag.headroom_bound_holds_for_symbolic_cp_size, count=_forget_new_request)),
    Variant("counts_two", "headroom_bound_holds_for_symbolic_cp_size", "the step counts k + 2 requests", 0, REFUTED,
            functools.partial(zigzag.headroom_bound_holds_for_symbolic_cp_size, count=_count_two)),
    Variant("paired_blocks", "headroom_bound_is_tight_for_symbolic_cp_size", "rank r owns 2r and 2r+1", 0, REFUTED,
            functools.partial(zigzag.headroom_bound_is_tight_for_symbolic_cp_size, rank_load=paired_rank_load)),
    Variant("paired_blocks", "headroom_bound_holds_for_any_number_of_requests", "rank r owns 2r and 2r+1", P, REFUTED,
            functools.partial(capacity.headroom_bound_holds_for_any_number_of_requests, rank_load=paired_rank_load)),
    Variant("bound_too_small", "headroom_bound_holds_for_any_number_of_requests", "floor((N + R(P-2))/P)", P, REFUTED,
            functools.partial(capacity.headroom_bound_holds_for_any_number_of_requests, bound=headroom_bound_minus_one_per_request)),
    Variant("bound_too_small", "headroom_bound_is_tight", "floor((N + R(P-2))/P)", P, REFUTED,
            functools.partial(capacity.headroom_bound_is_tight, bound=headroom_bound_minus_one_per_request)),
    Variant("capture_of_mean", "capture_capacity_is_aligned_ceil_share", "align_up(floor(B/P), A)", P, REFUTED,
            functools.partial(capacity.capture_capacity_is_aligned_ceil_share, capture=capture_of_mean)),
    Variant("single_request_capture", "headroom_capture_fits_first_bucket_at_or_above_n",
            "upstream's capture rule: one request of B tokens (the crash)", P, REFUTED,
            functools.partial(capacity.headroom_capture_fits_first_bucket_at_or_above_n, capacity=captured_ignoring_requests)),
    Variant("skip_above_limit", "scan_selects_least_fitting_bucket", "skip (not stop at) a bucket above F*n", K, PROVED,
            functools.partial(selection.scan_selects_least_fitting_bucket, step=_step(above_skips=True))),
    Variant("stop_below_n", "scan_selects_least_fitting_bucket", "stop (not skip) at a bucket below n", K, REFUTED,
            functools.partial(selection.scan_selects_least_fitting_bucket, step=_step(below_stops=True))),
    Variant("missing_capacity_fits", "scan_selects_least_fitting_bucket", "a missing capacity counts as room", K, REFUTED,
            functools.partial(selection.scan_selects_least_fitting_bucket, step=_step(room=_room_ignoring_record))),
    Variant("strict_capacity", "scan_selects_least_fitting_bucket", "capacity > required (not >=)", K, REFUTED,
            functools.partial(selection.scan_selects_least_fitting_bucket, step=_step(room=_room_strict))),
    Variant("unsorted_list", "scan_selects_least_fitting_bucket", "the capture list need not be sorted", K, REFUTED,
            functools.partial(selection.scan_selects_least_fitting_bucket, well_formed=_unsorted_ok)),
    Variant("stop_below_n", "scan_selects_least_fitting_bucket_for_any_list_length", "stop at a bucket below n", 0,
            REFUTED, functools.partial(selection.scan_selects_least_fitting_bucket_for_any_list_length,
                                       step=_step(below_stops=True))),
    Variant("prefers_later_bucket", "scan_selects_least_fitting_bucket_for_any_list_length",
            "a fitting bucket, not the least", 0, REFUTED,
            functools.partial(selection.scan_selects_least_fitting_bucket_for_any_list_length, step=_prefers_later_bucket)),
    Variant("reports_head_without_room", "scan_selects_least_fitting_bucket_for_any_list_length",
            "admits on a later bucket, reports the first in the window", 0, REFUTED,
            functools.partial(selection.scan_selects_least_fitting_bucket_for_any_list_length, step=_reports_head_without_room)),
    Variant("unsorted_list", "scan_selects_least_fitting_bucket_for_any_list_length", "the head need not be smallest",
            0, REFUTED, functools.partial(selection.scan_selects_least_fitting_bucket_for_any_list_length,
                                          sorted_head=_any_head)),
    Variant("missing_capacity_fits", "scan_selects_a_captured_bucket", "fitting ignores the recorded flag", K, REFUTED,
            functools.partial(selection.scan_selects_a_captured_bucket, relation=_relation(_fits_ignoring_record))),
    Variant("rank_one_extra", "zigzag_busiest_rank_holds_ceil_share", "rank 1 holds one token more", P, REFUTED,
            functools.partial(strategies.zigzag_busiest_rank_holds_ceil_share, rank_load=rank_one_extra)),
    Variant("rank_one_extra", "busiest_rank_holds_ceil_share_for_symbolic_cp_size", "rank 1 holds one token more", 0,
            REFUTED, functools.partial(zigzag.busiest_rank_holds_ceil_share_for_symbolic_cp_size, rank_load=rank_one_extra)),
    Variant("even_share_one_extra", "busiest_rank_holds_ceil_share_for_symbolic_cp_size",
            "rank 0 holds L/P + 1 when L is a multiple of 2P", 0, REFUTED,
            functools.partial(zigzag.busiest_rank_holds_ceil_share_for_symbolic_cp_size, rank_load=even_share_one_extra)),
    Variant("even_share_one_extra", "zigzag_busiest_rank_holds_ceil_share", "rank 0 holds L/P + 1 when L is a multiple of 2P",
            P, REFUTED, functools.partial(strategies.zigzag_busiest_rank_holds_ceil_share, rank_load=even_share_one_extra)),
    Variant("first_rank_short", "busiest_rank_holds_ceil_share_for_symbolic_cp_size",
            "rank 0 one token short when 0 < L mod 2P <= P", 0, REFUTED,
            functools.partial(zigzag.busiest_rank_holds_ceil_share_for_symbolic_cp_size, rank_load=first_rank_short)),
    Variant("last_rank_short", "busiest_rank_holds_ceil_share_for_symbolic_cp_size",
            "rank P-1 one token short when L mod 2P > P", 0, REFUTED,
            functools.partial(zigzag.busiest_rank_holds_ceil_share_for_symbolic_cp_size, rank_load=last_rank_short)),
    Variant("even_share_one_extra", "interleave_busiest_rank_holds_ceil_share", "rank 0 holds N/P + 1 when P divides N",
            P, REFUTED, functools.partial(strategies.interleave_busiest_rank_holds_ceil_share,
                                          rank_load=interleave_even_share_one_extra)),
    Variant("rank_one_extra", "interleave_busiest_rank_holds_ceil_share", "rank 1 holds one token more", P, REFUTED,
            functools.partial(strategies.interleave_busiest_rank_holds_ceil_share, rank_load=interleave_rank_one_extra)),
    Variant("first_rank_short", "zigzag_busiest_rank_holds_ceil_share", "rank 0 one token short when 0 < L mod 2P <= P",
            P, REFUTED, functools.partial(strategies.zigzag_busiest_rank_holds_ceil_share, rank_load=first_rank_short)),
    Variant("last_rank_short", "zigzag_busiest_rank_holds_ceil_share", "rank P-1 one token short when L mod 2P > P", P,
            REFUTED, functools.partial(strategies.zigzag_busiest_rank_holds_ceil_share, rank_load=last_rank_short)),
    Variant("off_list_bucket", "scan_selects_a_captured_bucket", "the bucket reported one above the chosen one", K, REFUTED,
            functools.partial(selection.scan_selects_a_captured_bucket, relation=_off_list_relation)),
    Variant("missing_capacity_fits", "scan_bucket_has_room_for_required_rows", "fitting ignores the recorded flag", K,
            REFUTED, functools.partial(selection.scan_bucket_has_room_for_required_rows,
                                       relation=_relation(_fits_ignoring_record))),
    Variant("off_list_bucket", "scan_bucket_has_room_for_required_rows", "the bucket reported one above the chosen one",
            K, REFUTED, functools.partial(selection.scan_bucket_has_room_for_required_rows, relation=_off_list_relation)),
    Variant("no_lower_limit", "scan_respects_padding_limit", "no n limit: a bucket below n fits", K, REFUTED,
            functools.partial(selection.scan_respects_padding_limit, relation=_relation(_fits_without_lower_limit))),
    Variant("no_upper_limit", "scan_respects_padding_limit", "no F*n limit", K, REFUTED,
            functools.partial(selection.scan_respects_padding_limit, relation=_relation(_fits_without_upper_limit))),
    Variant("ignore_capacity", "scan_bucket_has_room_for_required_rows", "fitting ignores capacity", K, REFUTED,
            functools.partial(selection.scan_bucket_has_room_for_required_rows, relation=_relation(_fits_ignoring_capacity))),
    Variant("largest_fitting", "scan_selects_minimal_bucket", "the greatest fitting bucket", K, REFUTED,
            functools.partial(selection.scan_selects_minimal_bucket, relation=_relation(_fits, "greatest"))),
    Variant("first_bucket_only", "scan_never_falls_back_when_a_bucket_fits", "only the first bucket >= n is tried", K, REFUTED,
            functools.partial(selection.scan_never_falls_back_when_a_bucket_fits, relation=_relation(_fits_first_at_or_above_n_only))),
    Variant("any_fitting", "least_fitting_bucket_is_unique", "any fitting bucket (no minimality)", K, REFUTED,
            functools.partial(selection.least_fitting_bucket_is_unique, relation=_relation(_fits, "any"))),
    Variant("any_fitting_ranks", "least_fitting_bucket_is_unique", "any fitting bucket: two ranks may differ", K, REFUTED,
            functools.partial(selection.least_fitting_bucket_is_unique, relation=_relation(_fits, "any"),
                              parts=("rank_consensus",))),
    Variant("any_fitting_replay", "least_fitting_bucket_is_unique", "any fitting bucket: replay may differ from admission", K,
            REFUTED, functools.partial(selection.least_fitting_bucket_is_unique, relation=_relation(_fits, "any"),
                                       parts=("admission_replay",))),
    Variant("right_bucket_never_admitted", "scan_selects_first_bucket_at_or_above_n_when_it_has_room",
            "the right bucket reported, never admitted", K, REFUTED,
            functools.partial(selection.scan_selects_first_bucket_at_or_above_n_when_it_has_room, relation=_right_bucket_never_admitted)),
    Variant("largest_fitting", "scan_selects_first_bucket_at_or_above_n_when_it_has_room", "the greatest fitting bucket", K, REFUTED,
            functools.partial(selection.scan_selects_first_bucket_at_or_above_n_when_it_has_room, relation=_relation(_fits, "greatest"))),
    *(  # each edge of the fitting test moved in by one, against every theorem whose claim reads that edge
        Variant(name, theorem, description, K, REFUTED, functools.partial(getattr(selection, theorem), relation=_relation(fits)))
        for name, description, fits, theorems in (
            ("skips_bucket_equal_to_n", "a bucket equal to n is skipped (n < B)", _fits_strictly_above_n, _EDGE_THEOREMS),
            ("skips_bucket_equal_to_top", "a bucket equal to F*n is skipped (B < F*n)", _fits_strictly_below_top,
             _EDGE_THEOREMS[:2]),  # minimality holds when the top bucket is skipped: it only admits less
            ("exact_fit_is_no_room", "an exact fit is not room (capacity > required)", _fits_with_room_to_spare, _EDGE_THEOREMS),
        )
        for theorem in theorems
    ),
    Variant("keyed_as_global", "local_scan_meets_every_invariant", "sizes read as the global keying reads buckets (window, recorded capacities)",
            K, REFUTED, functools.partial(selection.local_scan_meets_every_invariant, keying="global")),
    Variant("stop_below_key", "local_scan_meets_every_invariant", "the scan stops (not skips) at a size below the key", K, REFUTED,
            functools.partial(selection.local_scan_meets_every_invariant, step=_step(below_stops=True))),
    Variant("scan_of_the_first_8_buckets", "scan_select_is_the_step_folded_over_the_whole_list",
            "the scan stops after the first 8 buckets of the list", 9, REFUTED,
            functools.partial(selection.scan_select_is_the_step_folded_over_the_whole_list, select=scan_of_the_first_8_buckets)),
    Variant("tripwire_of_the_first_8_buckets", "scan_select_is_the_step_folded_over_the_whole_list",
            "replay's tripwire reads only the first 8 buckets of the list", 9, REFUTED,
            functools.partial(selection.scan_select_is_the_step_folded_over_the_whole_list, tripwire=tripwire_of_the_first_8_buckets)),
    Variant("decision_of_the_first_8_buckets_from_p_4", "scan_select_is_the_step_folded_over_the_whole_list",
            "admission's decision scans only the first 8 buckets at P >= 4", 9, REFUTED,
            functools.partial(selection.scan_select_is_the_step_folded_over_the_whole_list,
                              decide=decision_of_the_first_8_buckets_from_p_4)),
    Variant("tripwire_of_the_first_8_buckets_from_p_4", "scan_select_is_the_step_folded_over_the_whole_list",
            "replay's tripwire reads only the first 8 buckets at P >= 4", 9, REFUTED,
            functools.partial(selection.scan_select_is_the_step_folded_over_the_whole_list,
                              tripwire=tripwire_of_the_first_8_buckets_from_p_4)),
    Variant("window_one_short", "padding_window_holds_n_for_every_factor", "window [n, F*n - 1]", 0, REFUTED,
            functools.partial(selection.padding_window_holds_n_for_every_factor, window_of=_window_one_short)),
    Variant("forgets_quotient", "class_loads_track_request_loads", "a request adds no quotient blocks", P, REFUTED,
            functools.partial(batch.class_loads_track_request_loads, add=_add_without_quotient)),
    Variant("untied_quotient", "class_loads_track_request_loads", "class_batch's quotient sum is not the one its facts constrain",
            P, REFUTED, functools.partial(batch.class_loads_track_request_loads, batch_of=class_batch_with_untied_quotient)),
    *(
        Variant(f"batch_facts_without_{name}", "class_loads_track_request_loads", description, P, REFUTED,
                functools.partial(batch.class_loads_track_request_loads, batch_facts=BATCH_FACTS_WITHOUT[name],
                                  batch_of=class_batch_under(BATCH_FACTS_WITHOUT[name])))
        for name, description in (
            ("counts", "class_batch checks the sums of the class counts, not each count"),
            ("quotients", "class_batch admits fewer quotient blocks than long requests"),
            ("no_long_no_quotient", "class_batch admits quotient blocks with no long request"),
            ("requests", "class_batch admits the empty batch"),
        )
    ),
    *(
        Variant(name, theorem, description, parameter, REFUTED, build)
        for name, theorem, description, parameter, build in variants_end_to_end.variants()
    ),
    *(
        Variant(name, theorem, description, parameter, expected, build)
        for name, theorem, description, parameter, expected, build in variants_local.variants()
    ),
    *(
        Variant(name, theorem, description, parameter, expected, build)
        for name, theorem, description, parameter, expected, build in variants_graph_paths.variants()
    ),
    *(
        Variant(name, theorem, description, parameter, expected, build)
        for name, theorem, description, parameter, expected, build in variants_ep_graphs.variants()
    ),
    # The last bucket of the list, where a scan or a claim that stops one short differs (issue 21).
    Variant("last_bucket_read_one_larger", "scan_selects_minimal_bucket", "the largest bucket taken as B + 1", K,
            REFUTED, functools.partial(selection.scan_selects_minimal_bucket, relation=functools.partial(_last_bucket_wrong, how="larger"))),
    Variant("stops_before_last_bucket", "scan_never_falls_back_when_a_bucket_fits", "the scan never tries the last bucket",
            K, REFUTED, functools.partial(selection.scan_never_falls_back_when_a_bucket_fits,
                                          relation=functools.partial(_last_bucket_wrong, how="skipped"))),
    # A claim stated bucket by bucket must hold at every index, not only at the first: wrong only at the last.
    *(
        Variant(f"{name}_first_bucket_at_or_above_n", "scan_selects_first_bucket_at_or_above_n_when_it_has_room", description,
                K, REFUTED, functools.partial(selection.scan_selects_first_bucket_at_or_above_n_when_it_has_room,
                                              relation=functools.partial(_last_bucket_wrong, how=how)))
        for name, how, description in (
            ("last_bucket_read_one_larger", "larger", "the largest bucket taken as B + 1"),
            ("stops_before_last_bucket", "skipped", "the scan never tries the last bucket"),
        )
    ),
    Variant("last_bucket_read_one_larger_captured", "scan_selects_a_captured_bucket", "the largest bucket taken as B + 1", K,
            REFUTED, functools.partial(selection.scan_selects_a_captured_bucket, relation=functools.partial(_last_bucket_wrong, how="larger"))),
)

