"""The one plan per batch that admission and replay both use, decided from rank-invariant inputs.

The one plan per batch that admission and replay both use: rows from the busiest rank of the live layout,
then the scan. Every rank evaluates it on rank-invariant inputs, so the ranks agree by construction.

    decide(loads, rank, ...) = scan_select(capture, window, align_up(max_r l_r, A))

``rank`` is accepted and deliberately unused: the decision must not depend on the local rank's own load
(proofs/variants.py keeps the wrong version that does, and the rank-consensus theorem refutes it).
"""

from __future__ import annotations

from collections.abc import Sequence

import z3

from cpgraph.spec.capacity import required_local_tokens
from cpgraph.spec.selection import CaptureList, Selection, Window, scan_select
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads


def decide(
    loads: Loads, rank: IntLike, capture: CaptureList, window: Window, align_size: IntLike, name: str
) -> tuple[Selection, IntTerm, BoolTerm]:
    """(the decision, the live rows every rank pads to, their defining facts) for the batch with ``loads``."""
    del rank  # rank-invariant by design
    rows = required_local_tokens(loads, align_size, name)
    return scan_select(capture, window, rows.value), rows.value, z3.And(loads.holds, rows.holds)


def replay_lengths(extend_seq_lens: Sequence[IntLike], num_tokens: IntLike, bucket: IntLike) -> tuple[IntLike, ...]:
    """The lengths replay lays out: the live lengths, never the padded count (padding to the bucket does not
    fold the pad into the last request)."""
    del num_tokens, bucket
    return tuple(extend_seq_lens)
