"""The typed oracle: layouts, capacity, selection and the admit/replay runner. No torch, no z3."""

from cpgraph.reference.capacity import (
    align_up,
    capture_local_tokens,
    default_align_size,
    headroom_bound,
    headroom_local_tokens,
    required_local_tokens,
)
from cpgraph.reference.layout import Layout, build_layout, rank_loads, zigzag_block_lens, zigzag_request_loads
from cpgraph.reference.runner import CaptureRule, FallbackReason, Plan, ReferenceRunner, ReplayError
from cpgraph.reference.selection import fitting_buckets, is_cp_active, select_replay_bucket
from cpgraph.reference.strategies import STRATEGY_TABLE, StrategyRow, capture_lengths, strategy_row
from cpgraph.reference.validate import STRATEGIES

__all__ = [
    "STRATEGIES",
    "STRATEGY_TABLE",
    "StrategyRow",
    "capture_lengths",
    "strategy_row",
    "CaptureRule",
    "FallbackReason",
    "Layout",
    "Plan",
    "ReferenceRunner",
    "ReplayError",
    "align_up",
    "build_layout",
    "capture_local_tokens",
    "default_align_size",
    "fitting_buckets",
    "headroom_bound",
    "headroom_local_tokens",
    "is_cp_active",
    "rank_loads",
    "required_local_tokens",
    "select_replay_bucket",
    "zigzag_block_lens",
    "zigzag_request_loads",
]
