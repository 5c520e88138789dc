"""Argument checks for impl/: the reference's own validators, so both raise the same types and messages.

Validation is not what the differential tests compare, so it is written once, in reference/validate.py
(which accepts the common case in one C-speed pass before any per-item loop).
"""

from __future__ import annotations

from cpgraph.reference.validate import (
    STRATEGIES,
    check_capacities,
    check_capture_list,
    check_int,
    check_lengths,
    check_num_tokens,
    check_strategy,
    is_int,
)

__all__ = [
    "STRATEGIES",
    "check_capacities",
    "check_capture_list",
    "check_int",
    "check_lengths",
    "check_num_tokens",
    "check_strategy",
    "is_int",
]
