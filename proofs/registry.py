"""Every proof obligation: the list `cpgraph prove` runs and proofs/README.md describes. Each theorem's scope is
declared in proofs/engine/scope.py (``obligation`` takes it from there); ``over`` decides the parameters it runs at."""

from __future__ import annotations

from cpgraph.proofs.theorems import (
    arith, batch, capacity, dual_chunk_swap, end_to_end, end_to_end_local, ep_graphs, graph_paths, selection, strategies,
    whole_list, zigzag,
)
from cpgraph.proofs.engine.obligation import Obligation, obligation

OBLIGATIONS: tuple[Obligation, ...] = (
    obligation(arith.divmod_quotient_and_remainder_are_unique, over="once"),
    obligation(arith.folded_literals_equal_their_terms, over="cp_size_sampled"),
    obligation(arith.align_up_is_least_multiple_at_or_above, over="once"),
    obligation(strategies.zigzag_loads_sum_to_tokens, over="cp_size"),
    obligation(strategies.contiguous_loads_sum_to_tokens, over="cp_size"),
    obligation(strategies.interleave_loads_sum_to_tokens, over="cp_size"),
    obligation(strategies.table_batch_loads_sum_to_tokens, over="cp_size_sampled"),
    obligation(strategies.zigzag_busiest_rank_holds_ceil_share, over="cp_size"),
    obligation(strategies.contiguous_busiest_rank_holds_ceil_share, over="cp_size"),
    obligation(dual_chunk_swap.dual_chunk_swap_loads_sum_to_tokens, over="cp_size_small"),
    obligation(dual_chunk_swap.dual_chunk_swap_long_requests_split_by_remainder, over="cp_size_small"),
    obligation(dual_chunk_swap.dual_chunk_swap_request_excess_is_tight, over="cp_size_small"),
    obligation(dual_chunk_swap.dual_chunk_swap_dcp_copies_exactly_the_short_prefills, over="cp_size_small"),
    obligation(strategies.interleave_busiest_rank_holds_ceil_share, over="cp_size"),
    obligation(zigzag.zigzag_ownership_partitions_blocks_for_symbolic_cp_size, over="once"),
    obligation(zigzag.busiest_rank_holds_ceil_share_for_symbolic_cp_size, over="once"),
    obligation(zigzag.per_request_headroom_bound_holds_for_symbolic_cp_size, over="once"),
    obligation(zigzag.headroom_bound_holds_for_symbolic_cp_size, over="once"),
    obligation(zigzag.headroom_bound_is_tight_for_symbolic_cp_size, over="once"),
    obligation(capacity.headroom_bound_holds_for_any_number_of_requests, over="cp_size"),
    obligation(capacity.headroom_bound_is_tight, over="cp_size"),
    obligation(capacity.capture_capacity_is_aligned_ceil_share, over="cp_size"),
    obligation(capacity.headroom_capture_fits_first_bucket_at_or_above_n, over="cp_size"),
    obligation(selection.scan_selects_least_fitting_bucket, over="list_length"),
    obligation(selection.scan_selects_least_fitting_bucket_for_any_list_length, over="once"),
    obligation(selection.scan_select_is_the_step_folded_over_the_whole_list, over="list_length"),
    obligation(selection.scan_selects_a_captured_bucket, over="list_length"),
    obligation(selection.scan_respects_padding_limit, over="list_length"),
    obligation(selection.scan_bucket_has_room_for_required_rows, over="list_length"),
    obligation(selection.scan_selects_minimal_bucket, over="list_length"),
    obligation(selection.scan_never_falls_back_when_a_bucket_fits, over="list_length"),
    obligation(selection.least_fitting_bucket_is_unique, over="list_length"),
    obligation(selection.scan_selects_first_bucket_at_or_above_n_when_it_has_room, over="list_length"),
    obligation(selection.local_scan_meets_every_invariant, over="list_length"),
    obligation(selection.padding_window_holds_n_for_every_factor, over="once"),
    obligation(batch.class_loads_track_request_loads, over="cp_size_sampled"),
    obligation(end_to_end.ranks_sharing_their_capture_state_agree, over="cp_size_sampled"),
    obligation(end_to_end.admitted_batches_replay_the_admitted_bucket, over="cp_size_sampled"),
    obligation(end_to_end.admitted_bucket_is_captured, over="cp_size_sampled"),
    obligation(end_to_end.admitted_bucket_is_within_padding_limit, over="cp_size_sampled"),
    obligation(end_to_end.admitted_batches_fit_every_rank, over="cp_size_sampled"),
    obligation(end_to_end.replay_runs_only_into_a_listed_bucket_with_room, over="cp_size_sampled"),
    obligation(end_to_end.admitted_bucket_is_the_least_that_fits, over="cp_size_sampled"),
    obligation(end_to_end.active_batches_that_fit_are_admitted, over="cp_size_sampled"),
    obligation(end_to_end_local.local_ranks_sharing_their_sizes_agree, over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_batches_replay_the_admitted_size, over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_size_is_captured, over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_size_is_at_or_above_the_key, over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_batches_fit_every_rank, over="cp_size_sampled"),
    obligation(end_to_end_local.local_replay_runs_only_into_a_listed_size_holding_every_rank, over="cp_size_sampled"),
    obligation(end_to_end_local.local_admitted_size_is_the_least_that_fits, over="cp_size_sampled"),
    obligation(end_to_end_local.local_batches_that_fit_are_admitted, over="cp_size_sampled"),
    obligation(whole_list.admission_and_replay_read_the_whole_list, over="cp_size_sampled"),
    obligation(graph_paths.dispatched_graph_holds_every_rank, over="cp_size_small"),
    obligation(graph_paths.local_dispatch_takes_a_decode_graph_whenever_one_fits, over="cp_size_small"),
    obligation(graph_paths.release_dispatch_takes_a_decode_graph_whenever_one_fits_if_decodes_are_copied, over="cp_size_small"),
    obligation(graph_paths.release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt, over="cp_size_small"),
    obligation(graph_paths.local_dispatch_takes_the_least_fitting_decode_graph, over="cp_size_small"),
    obligation(graph_paths.graph_dispatch_is_the_same_on_every_rank, over="cp_size_small"),
    obligation(ep_graphs.synced_dimensions_give_consensus, over="once"),
    obligation(ep_graphs.decode_steps_synced_by_tokens_agree, over="once"),
    obligation(ep_graphs.syncing_tokens_alone_breaks_consensus_under_strict_matching, over="once"),
)

BY_NAME: dict[str, Obligation] = {o.name: o for o in OBLIGATIONS}


def obligation_named(name: str) -> Obligation:
    """The obligation ``name``; KeyError lists the valid names."""
    if name not in BY_NAME:
        raise KeyError(f"no theorem named {name!r}; valid names: {', '.join(sorted(BY_NAME))}")
    return BY_NAME[name]
