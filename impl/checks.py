"""Argument checks for impl/: the reference's validators (same types and messages), and impl's own strategy ids.

Validation is not what the differential tests compare, so it is written once, in reference/validate.py;
``check_lengths`` is impl/lengths.py's boundary (C-speed accept of the common case, arrays and tensors too), which
falls back to the reference's validator, and so to its messages, for anything it does not accept at once. The strategy ids are impl's own:
they key impl's formula table (impl/decision.py) and index builders (impl/layout.py), which are independent of
the reference's table; tests/differential checks that every reference id is here. So are the graph keyings
(``KEYING_IDS``, ``check_keying``): impl's own ids, held equal to reference/keying.py's by the differential tests.
"""

from __future__ import annotations

from typing import Final

from cpgraph.impl.lengths import accept_is_prefilling as check_is_prefilling, accept_lengths, lengths_tuple
from cpgraph.reference.validate import (
    MAX_CP_SIZE,
    check_capacities,
    check_cp_size,
    check_capture_list,
    check_int,
    check_num_tokens,
    check_padding_factor,
    is_int,
)

# impl's strategy ids, in the order its tables list them (impl/formulas.py FORMULAS, impl/layout.py BUILDERS).
STRATEGY_IDS: Final = (
    "zigzag", "interleave", "contiguous", "dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp",
)
STRATEGIES: Final = STRATEGY_IDS
# impl's graph keyings: "global" (a bucket of n tokens, recorded capacity per bucket, padding window, CP-active
# gate) and "local" (a size s of rank-local rows keyed by the largest live rows over the ranks, capacity s).
KEYING_IDS: Final = ("global", "local")


def check_lengths(name: str, value: object) -> tuple[int, ...]:
    """Request lengths as a tuple of ints: a non-empty list/tuple of ints >= 0 (the reference's messages, word
    for word), or a 1-d integer numpy array or CPU torch tensor; accepted at C speed (impl/lengths.py)."""
    return lengths_tuple(accept_lengths(value, name))


def check_strategy(strategy: object) -> str:
    """``strategy`` if it is one of impl's ids; ValueError naming the allowed ids otherwise (never a default)."""
    if not isinstance(strategy, str) or strategy not in STRATEGY_IDS:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGY_IDS)}; got {strategy!r}")
    return strategy


def check_keying(keying: object) -> str:
    """``keying`` if it is one of impl's graph keyings; ValueError naming the allowed ids otherwise (never a default)."""
    if not isinstance(keying, str) or keying not in KEYING_IDS:
        raise ValueError(f"keying must be one of {', '.join(KEYING_IDS)}; got {keying!r}")
    return keying


__all__ = [
    "KEYING_IDS",
    "MAX_CP_SIZE",
    "check_cp_size",
    "STRATEGIES",
    "STRATEGY_IDS",
    "check_capacities",
    "check_capture_list",
    "check_int",
    "check_is_prefilling",
    "check_keying",
    "check_lengths",
    "check_num_tokens",
    "check_padding_factor",
    "check_strategy",
    "is_int",
]
