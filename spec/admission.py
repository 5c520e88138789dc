"""Admission: may this batch replay a captured graph, and which bucket? (upstream's can_run_graph)

Each rank decides from what it holds: its own view of the knobs and of the capture state (a RankSetup,
which names the graph keying), the batch's lengths and ``num_tokens`` (which may exceed the lengths' sum:
DP/CP padding). The decision reads only rank-invariant quantities, the busiest rank's load and never the
local rank's own:

    global: admit = cp_active(batch, n) and scan(capture, [n, F*n], align_up(max_r l_r, A))
    local:  admit = scan(sizes holding themselves, [m, inf), m)   with m = max_r l_r

Replay (spec/replay.py) is a separate function with its own variables; proofs/theorems/end_to_end.py and
proofs/theorems/end_to_end_local.py show the two agree, and that the invariants of reference/invariants.py hold of
every admitted batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import z3

from cpgraph.spec.logic import And
from cpgraph.spec.batch import LiveBatch
from cpgraph.spec.keying import keying
from cpgraph.spec.selection import CaptureList, Selection, scan_select
from cpgraph.spec.strategies import strategy
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, check_index, int_term


@dataclass(frozen=True)
class RankSetup:
    """What one rank holds when it decides: strategy, P, A, F, its own capture list and capacities
    (recorded per rank at capture; ranks agree only if these agree), and the graph keying (spec/keying.py;
    default ``global``). Under ``local`` the capacities and F are not read: a size holds its own rows."""

    strategy: str
    cp_size: int
    align_size: IntLike
    max_padding_factor: Fraction
    capture: CaptureList
    keying: str = "global"


@dataclass(frozen=True)
class Decision:
    """One rank's selector call under its keying: the decision, the rows the chosen bucket must hold, the facts
    defining its terms, and the key it compared (global: n; local: the busiest rank's rows m)."""

    selection: Selection
    required: IntTerm
    holds: BoolTerm
    key: IntTerm

    def gated(self, active: BoolTerm) -> Selection:
        """The decision as the rank acts on it: admitted only where ``active`` (the keying's gate) holds."""
        return Selection(And(active, self.selection.admitted), self.selection.bucket)

    def admission(self, active: BoolTerm) -> Admission:
        """The rank's admission: the decision gated by ``active``, with its rows, facts and key."""
        return Admission(self.gated(active), self.required, self.holds, self.key)


@dataclass(frozen=True)
class Admission:
    """One rank's admission: its decision, the rows it requires, the facts defining its terms and the key its
    selector call compared (ranks that agree on the key and the list agree on the decision)."""

    selection: Selection
    required: IntTerm
    holds: BoolTerm
    key: IntTerm


def cp_active(batch: LiveBatch, num_tokens: IntLike, strategy_id: str = "zigzag") -> BoolTerm:
    """The batch takes the CP graph path, by the strategy's gate (spec/strategies.py's ``cp_active``):
    "blocks" (zigzag and every row but interleave): P > 1, n >= 2P and every length >= 2P (no short request);
    "tokens" (interleave): P > 1 and the batch's tokens >= P. An unknown strategy is a ValueError."""
    p = batch.cp_size
    if strategy(strategy_id).cp_active == "tokens":
        return And(z3.BoolVal(p > 1), batch.tokens >= p)
    return And(z3.BoolVal(p > 1), int_term(num_tokens) >= 2 * p, batch.short_requests == 0)


def gate(batch: LiveBatch, num_tokens: IntLike, setup: RankSetup) -> BoolTerm:
    """The keying's gate: cp_active (under the setup's strategy) under a gated keying (global), always open
    under the other (local)."""
    return cp_active(batch, num_tokens, setup.strategy) if keying(setup.keying).gated else z3.BoolVal(True)


def rank_decision(loads: Loads, rank: IntLike, setup: RankSetup, num_tokens: IntLike, name: str) -> Decision:
    """The scan under the rank's keying: the key, its window, the capacity table and the rows to hold come
    from the keying table (global: [n, F*n] and align_up of the busiest load; local: [m, inf) and m, the
    busiest load). ``rank`` is the deciding rank: the decision deliberately does not read it or its own
    load (proofs/variants keeps the versions that do, and rank consensus refutes them). A literal rank
    outside 0..P-1 is a ValueError, and so are loads of another number of ranks than P."""
    if len(loads.loads) != setup.cp_size:
        raise ValueError(f"loads must hold one load per rank of cp_size {setup.cp_size}; got {len(loads.loads)} loads")
    check_index("rank", rank, setup.cp_size, f"a rank of cp_size {setup.cp_size}")
    keyed = keying(setup.keying).inputs(num_tokens, loads, setup.align_size, setup.max_padding_factor, setup.capture, name)
    return Decision(scan_select(keyed.capture, keyed.window, keyed.required), keyed.required, keyed.holds, keyed.key)


def admit(batch: LiveBatch, num_tokens: IntLike, setup: RankSetup, rank: IntLike, name: str) -> Admission:
    """Rank ``rank``'s admission of every batch in ``batch`` with ``num_tokens`` tokens (variables under
    ``name``); a literal ``rank`` outside 0..P-1 is a ValueError (``rank_decision``'s)."""
    loads = batch.layout_loads(setup.strategy, f"{name}.live")
    chosen = rank_decision(loads, rank, setup, num_tokens, name)
    return chosen.admission(gate(batch, num_tokens, setup))  # the rows' facts hold the loads'
