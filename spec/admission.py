"""Admission: may this batch replay a captured graph, and which bucket? (upstream's can_run_graph)

Each rank decides from what it holds: its own view of the knobs and of the capture state (a RankSetup),
the batch's lengths and ``num_tokens`` (which may exceed the lengths' sum: DP/CP padding). The decision
reads only rank-invariant quantities, the busiest rank's load and never the local rank's own:

    admit = cp_active(batch, n) and scan(capture, [n, F*n], align_up(max_r l_r, A))

Replay (spec/replay.py) is a separate function with its own variables; proofs/end_to_end.py shows the
two agree, and that the invariants of reference/invariants.py hold of every admitted batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import z3

from cpgraph.spec.batch import ClassBatch, class_loads
from cpgraph.spec.capacity import required_local_tokens
from cpgraph.spec.selection import CaptureList, Selection, padding_window, scan_select
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, int_term


@dataclass(frozen=True)
class RankSetup:
    """What one rank holds when it decides: strategy, P, A, F and its own capture list and capacities
    (recorded per rank at capture; ranks agree only if these agree)."""

    strategy: str
    cp_size: int
    align_size: IntLike
    max_padding_factor: Fraction
    capture: CaptureList


@dataclass(frozen=True)
class Admission:
    """One rank's admission: its decision, the rows it requires and the facts defining its terms."""

    selection: Selection
    required: IntTerm
    holds: BoolTerm


def cp_active(batch: ClassBatch, num_tokens: IntLike) -> BoolTerm:
    """The batch takes the CP graph path: P > 1, n >= 2P and every length >= 2P (no short request)."""
    p = batch.cp_size
    return z3.And(z3.BoolVal(p > 1), int_term(num_tokens) >= 2 * p, batch.short_requests == 0)


def rank_decision(loads: Loads, rank: IntLike, setup: RankSetup, num_tokens: IntLike, name: str) -> tuple[Selection, IntTerm, BoolTerm]:
    """The scan on the rows every rank pads to (align_up of the busiest load). ``rank`` is the deciding
    rank: the decision deliberately does not read it or its own load (proofs/variants keeps the version
    that does, and rank consensus refutes it)."""
    del rank
    rows = required_local_tokens(loads, setup.align_size, f"{name}.rows")
    window = padding_window(num_tokens, setup.max_padding_factor, f"{name}.window")
    return scan_select(setup.capture, window, rows.value), rows.value, z3.And(rows.holds, window.holds)


def admit(batch: ClassBatch, num_tokens: IntLike, setup: RankSetup, rank: IntLike, name: str) -> Admission:
    """Rank ``rank``'s admission of every batch in ``batch`` with ``num_tokens`` tokens (variables under
    ``name``)."""
    loads = class_loads(batch, setup.strategy, f"{name}.live")
    chosen, rows, facts = rank_decision(loads, rank, setup, num_tokens, name)
    active = cp_active(batch, num_tokens)
    return Admission(Selection(z3.And(active, chosen.admitted), chosen.bucket), rows, facts)  # the rows' facts hold the loads'
