"""Deliberately wrong policies, each modelled on a real bug class, and the invariant it must be caught on.

``cpgraph check proofs.mutants.<name>`` must report ``CAUGHT_AS`` of that module (tests/quality asserts
it); ``cpgraph.proofs.mutants.correct`` holds differently-written correct policies that must pass. A checker
that cannot fail these proves nothing.
"""

from __future__ import annotations

from typing import Final

# module -> the invariant id cpgraph check must report for it
MUTANTS: Final = {
    "ignore_capacity": "capacity_fit",  # pre-fix: smallest bucket >= n, capacity never read
    "local_load": "rank_consensus",  # sized by this rank's load, not the busiest rank's
    "wrong_partner": "minimal_bucket",  # rank r owns blocks r and P+r
    "align_down": "capacity_fit",  # busiest load rounded down to A
    "unaligned": "capacity_fit",  # busiest load never aligned up to A
    "mean_load": "capacity_fit",  # n // P instead of the busiest rank
    "one_request": "capacity_fit",  # the batch laid out as one request of n tokens
    "absent_fits": "captured_bucket",  # a missing capacity taken as a fit
    "largest_fitting": "minimal_bucket",  # the largest fitting bucket
    "stop_below_n": "no_needless_fallback",  # the scan breaks at a bucket below n
    "no_lower_bound": "padding_limit",  # a bucket below n is replayed
    "fn_exclusive": "no_needless_fallback",  # window [n, F*n) instead of [n, F*n]
    "fn_plus_one": "padding_limit",  # window [n, F*n + 1]
    "first_bucket_only": "no_needless_fallback",  # only the first bucket >= n is tried
    "split_selectors": "admission_replay",  # admission ignores capacity, replay does not
    "padded_layout": "capacity_fit",  # replay layout built on the padded count
    "strict_lower": "minimal_bucket",  # window (n, F*n]: a bucket of exactly n is skipped
    "stale_cache": "capacity_fit",  # decision memoised by lengths only, not the capture table
    "lengths_lower_bound": "padding_limit",  # window's lower end from sum(lengths), not the padded n
    "lengths_cap": "no_needless_fallback",  # window's upper end F*sum(lengths), not F*n
    # keyed by rank-local rows (each declares keying = "local" and its DualChunkSwap strategy)
    "dispatch_by_total": "admission_replay",  # vLLM 0.26-0.28: dispatched by the total, replayed by the rows
    "own_rank_key": "rank_consensus",  # keyed by this rank's rows, not the largest over all ranks
    "replicated_decodes": "capacity_fit",  # keyed with decodes dealt, laid out with decodes copied
}

CORRECT: Final = ("scan", "fitting_set", "bisected", "cached", "blockwise", "with_rows", "local_keyed")
