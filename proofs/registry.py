"""Every proof obligation, with its scope: the list `cpgraph prove` runs and proofs/README.md describes."""

from __future__ import annotations

from cpgraph.proofs import arith, batch, capacity, dual_chunk_swap, end_to_end, end_to_end_local, selection, strategies, zigzag
from cpgraph.proofs.obligation import Obligation, obligation

_ANY_LENGTH = "P = 1..{cp_max}; every length L >= 0 (unbounded)"
_ANY_BATCH = "P = 1..{cp_max}; every length; any number of requests (request lemma + induction step)"
_LISTS = "sorted capture lists of 1..32 buckets, unbounded values and capacities, some missing; every n, F, required"
_SYMBOLIC = "every P >= 1 (symbolic cp_size); every length"
_CLASSES = (
    "P in {sampled} (the end-to-end theorems' P); any number of requests of any lengths (base + step); the "
    "class-encodable rows: zigzag every P, contiguous P <= 8 (interleave by its total; the DualChunkSwap rows are "
    "not class-encodable: dual_chunk_swap_long_requests_split_by_remainder)"
)
_E2E = (
    "P in {sampled} (zigzag; every class-encodable strategy P <= 8: zigzag, interleave, contiguous); global keying; "
    "any number of requests of any lengths, any padded n; sorted 3-bucket lists, any capacities; A = default, "
    "F in {{2, 3/2}} (F = 2 above P = 8)"
)
_LOCAL = (
    "P in {sampled}; local keying; any layout (free per-rank loads: every strategy, any number of requests of any "
    "lengths), any n; sorted 3-size lists; and DualChunkSwap's own loads (dual_chunk_swap, dual_chunk_swap_dcp) of up "
    "to 2 prefills of any lengths at P <= 8"
)
_DCS = "P in {small}; every length L >= 0 (unbounded)"

OBLIGATIONS: tuple[Obligation, ...] = (
    obligation(arith.divmod_quotient_and_remainder_are_unique, scope="every divisor >= 1 (symbolic); every integer", over="once"),
    obligation(arith.folded_literals_equal_their_terms, scope="P in {sampled}; L at every clause edge up to 4P, A in {{P, 2P}}, every strategy", over="cp_size_sampled"),
    obligation(arith.align_up_is_least_multiple_at_or_above, scope="every A >= 1 (symbolic); every value >= 0", over="once"),
    obligation(strategies.zigzag_loads_sum_to_tokens, scope=_ANY_BATCH, over="cp_size"),
    obligation(strategies.contiguous_loads_sum_to_tokens, scope=_ANY_BATCH, over="cp_size"),
    obligation(strategies.interleave_loads_sum_to_tokens, scope="P = 1..{cp_max}; every batch (loads depend on N only)", over="cp_size"),
    obligation(strategies.table_batch_loads_sum_to_tokens, scope="P in {sampled}; every strategy P <= 8 (dual_chunk_swap_dcp: short prefills counted on every rank), the class-encodable ones above; a batch of two requests of any lengths, through the table's batch_loads", over="cp_size_sampled"),
    obligation(strategies.zigzag_busiest_rank_holds_ceil_share, scope=_ANY_LENGTH + "; one request", over="cp_size"),
    obligation(strategies.contiguous_busiest_rank_holds_ceil_share, scope=_ANY_LENGTH + "; one request", over="cp_size"),
    obligation(dual_chunk_swap.dual_chunk_swap_loads_sum_to_tokens, scope=_DCS + "; any number of requests (request lemma + induction step)", over="cp_size_small"),
    obligation(dual_chunk_swap.dual_chunk_swap_long_requests_split_by_remainder, scope=_DCS + " with L div 2P >= 2P-2 (dual_chunk_swap) or >= 2P-1 (dual_chunk_swap_dcp); one request", over="cp_size_small"),
    obligation(dual_chunk_swap.dual_chunk_swap_request_excess_is_tight, scope=_DCS + "; one request; dual_chunk_swap and dual_chunk_swap_dcp", over="cp_size_small"),
    obligation(dual_chunk_swap.dual_chunk_swap_dcp_copies_exactly_the_short_prefills, scope=_DCS + "; one request", over="cp_size_small"),
    obligation(strategies.interleave_busiest_rank_holds_ceil_share, scope="P = 1..{cp_max}; every batch of N >= 0 tokens", over="cp_size"),
    obligation(zigzag.zigzag_ownership_partitions_blocks_for_symbolic_cp_size, scope="every P >= 1 (symbolic)", over="once"),
    obligation(zigzag.busiest_rank_holds_ceil_share_for_symbolic_cp_size, scope=_SYMBOLIC + "; one request", over="once"),
    obligation(zigzag.per_request_headroom_bound_holds_for_symbolic_cp_size, scope=_SYMBOLIC + "; one request", over="once"),
    obligation(zigzag.headroom_bound_holds_for_symbolic_cp_size, scope="every P >= 1 (symbolic); any number of requests (request lemma, base, step and bound in one chain)", over="once"),
    obligation(zigzag.headroom_bound_is_tight_for_symbolic_cp_size, scope="every P >= 2 (symbolic); every L with L mod 2P = P+1", over="once"),
    obligation(capacity.headroom_bound_holds_for_any_number_of_requests, scope=_ANY_BATCH + "; every R >= 1", over="cp_size"),
    obligation(capacity.headroom_bound_is_tight, scope="P = 1..{cp_max}; any number of requests, every length with L mod 2P = P+1", over="cp_size"),
    obligation(capacity.capture_capacity_is_aligned_ceil_share, scope="P = 1..{cp_max}; every bucket B >= 1; zigzag (A = 2P) and interleave (A = P)", over="cp_size"),
    obligation(capacity.headroom_capture_fits_first_bucket_at_or_above_n, scope="P = 1..{cp_max}, A = 2P; any batch of <= R requests (headroom form), every N <= n <= B, every R >= 1", over="cp_size"),
    obligation(selection.scan_selects_least_fitting_bucket, scope=_LISTS + " (induction over the list)", over="list_length"),
    obligation(selection.scan_selects_least_fitting_bucket_for_any_list_length, scope="sorted capture lists of every length (quantified induction), unbounded values and capacities; every n, F, required", over="once"),
    obligation(selection.scan_select_is_the_step_folded_over_the_whole_list, scope=_LISTS + " (the fold admission and replay call, both keyings: with the step theorems, induction over the list)", over="list_length"),
    obligation(selection.scan_selects_a_captured_bucket, scope=_LISTS, over="list_length"),
    obligation(selection.scan_respects_padding_limit, scope=_LISTS, over="list_length"),
    obligation(selection.scan_bucket_has_room_for_required_rows, scope=_LISTS, over="list_length"),
    obligation(selection.scan_selects_minimal_bucket, scope=_LISTS, over="list_length"),
    obligation(selection.scan_never_falls_back_when_a_bucket_fits, scope=_LISTS, over="list_length"),
    obligation(selection.least_fitting_bucket_is_unique, scope=_LISTS, over="list_length"),
    obligation(selection.scan_selects_first_bucket_at_or_above_n_when_it_has_room, scope=_LISTS, over="list_length"),
    obligation(selection.local_scan_meets_every_invariant, scope="local keying; sorted lists of 1..32 sizes, unbounded values; every key m >= 0; spec/invariants.py's claims under keying='local'", over="list_length"),
    obligation(selection.padding_window_holds_n_for_every_factor, scope="every F >= 1 and n >= 1 (symbolic)", over="once"),
    obligation(batch.class_loads_track_request_loads, scope=_CLASSES, over="cp_size_sampled"),
    obligation(end_to_end.ranks_sharing_their_capture_state_agree, scope=_E2E, over="cp_size_sampled"),
    obligation(end_to_end.admitted_batches_replay_the_admitted_bucket, scope=_E2E, over="cp_size_sampled"),
    obligation(end_to_end.admitted_bucket_is_captured, scope=_E2E, over="cp_size_sampled"),
    obligation(end_to_end.admitted_bucket_is_within_padding_limit, scope=_E2E.replace("F in {{2, 3/2}}", "F in {{1, 5/4, 3/2, 2, 4}}"), over="cp_size_sampled"),
    obligation(end_to_end.admitted_batches_fit_every_rank, scope=_E2E + "; any capacities, and the capture rule's for P <= 8", over="cp_size_sampled"),
    obligation(end_to_end.replay_runs_only_into_a_listed_bucket_with_room, scope=_E2E.replace("F in {{2, 3/2}} (F = 2 above P = 8)", "F = 2") + "; any decision of replay's selector call", over="cp_size_sampled"),
    obligation(end_to_end.admitted_bucket_is_the_least_that_fits, scope=_E2E, over="cp_size_sampled"),
    obligation(end_to_end.active_batches_that_fit_are_admitted, scope=_E2E, over="cp_size_sampled"),
    obligation(end_to_end_local.local_ranks_sharing_their_sizes_agree, scope=_LOCAL, over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_batches_replay_the_admitted_size, scope=_LOCAL, over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_size_is_captured, scope=_LOCAL, over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_size_is_at_or_above_the_key, scope=_LOCAL, over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_batches_fit_every_rank, scope=_LOCAL, over="cp_size_sampled"),
    obligation(end_to_end_local.local_replay_runs_only_into_a_listed_size_holding_every_rank, scope=_LOCAL + "; any decision of replay's selector call", over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_size_is_the_least_that_fits, scope=_LOCAL, over="cp_size_sampled"),
    obligation(end_to_end_local.local_batches_that_fit_are_admitted, scope=_LOCAL, over="cp_size_sampled"),
)

BY_NAME: dict[str, Obligation] = {o.name: o for o in OBLIGATIONS}


def obligation_named(name: str) -> Obligation:
    """The obligation ``name``; KeyError lists the valid names."""
    if name not in BY_NAME:
        raise KeyError(f"no theorem named {name!r}; valid names: {', '.join(sorted(BY_NAME))}")
    return BY_NAME[name]
