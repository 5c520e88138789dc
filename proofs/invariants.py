"""Theorems for the rank_consensus and admission_replay invariants of spec/decision.py.

Theorems about spec/decision.py against the SEMANTICS.md invariants that involve more than the scan:
rank_consensus (every rank decides the same) and admission_replay (replay uses the admitted bucket and its
live layout fits the admitted capacity). The scan's own invariants are in proofs/selection.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import z3

from cpgraph.proofs.induction import symbolic_loads
from cpgraph.proofs.obligation import Query
from cpgraph.proofs.replay import runner_replay
from cpgraph.spec.decision import decide, replay_lengths
from cpgraph.spec.invariants import admission_replay, capacity_fit, rank_consensus
from cpgraph.spec.selection import CaptureList, Selection, Window, capture_list_is_well_formed, padding_window, symbolic_capture_list
from cpgraph.spec.strategies import STRATEGIES, rank_loads
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads

Decide = Callable[[Loads, IntLike, CaptureList, Window, IntLike, str], tuple[Selection, IntTerm, BoolTerm]]
ReplayLengths = Callable[[Sequence[IntLike], IntLike, IntLike], tuple[IntLike, ...]]

_REQUESTS = 1  # requests in admission_equals_replay's batch: one already exposes a padded replay layout
_LIST_LENGTH = 2  # buckets in the capture list of these theorems (the scan itself is proved for 1..32)


def selection_is_rank_invariant(cp_size: int, *, decide: Decide = decide) -> tuple[Query, ...]:
    """rank_consensus: any two ranks of a P-rank batch with any loads, given the same capture list and
    capacities, decide the same admit verdict and bucket (the decision reads the busiest rank's load,
    never the local one)."""
    p = cp_size
    loads = symbolic_loads(p, "a")
    capture = symbolic_capture_list(_LIST_LENGTH, "cap")
    window = Window(z3.Int("n"), z3.Int("high"))
    first, second = z3.Int("rank1"), z3.Int("rank2")
    mine, my_rows, my_facts = decide(loads, first, capture, window, 2 * p, "rank1")
    theirs, their_rows, their_facts = decide(loads, second, capture, window, 2 * p, "rank2")
    hypotheses = (
        loads.holds, my_facts, their_facts, capture_list_is_well_formed(capture), window.low >= 1,
        window.high >= window.low, first >= 0, first < p, second >= 0, second < p,
    )
    shown = tuple((f"a{r}", x) for r, x in enumerate(loads.loads))
    # Two steps: both ranks derive the same rows, and the same rows give the same scan.
    return (
        Query("rows", my_rows == their_rows, hypotheses, shown=shown),
        Query("decision", rank_consensus((mine, theirs)), (*hypotheses, my_rows == their_rows), shown=shown),
    )


def admission_equals_replay(
    cp_size: int, *, decide: Decide = decide, replay_lengths: ReplayLengths = replay_lengths
) -> tuple[Query, ...]:
    """admission_replay: for a zigzag batch of CP-active requests of any lengths (F = 2, A = 2P, two
    captured buckets with any capacities), replay lays out the live lengths, so it decides exactly as
    admission did and its layout's rows fit the admitted bucket's capacity."""
    p = cp_size
    a = STRATEGIES["zigzag"].align_size(p)
    lengths = tuple(z3.Int(f"L{i}") for i in range(_REQUESTS))
    n = z3.Sum(list(lengths))
    capture = symbolic_capture_list(_LIST_LENGTH, "cap")
    window = padding_window(n, 2)
    live = rank_loads(lengths, p, "live")
    admission, admit_rows, admit_facts = decide(live, 0, capture, window, a, "admit")
    laid_out = replay_lengths(lengths, n, admission.bucket)
    same = len(laid_out) == len(lengths) and all(z3.eq(z3.IntVal(x) if isinstance(x, int) else x, y) for x, y in zip(laid_out, lengths))
    replayed = live if same else rank_loads(laid_out, p, "replayed")
    # Same layout, same plan: one decision serves admission and replay (upstream calls one selector). A
    # different layout gets its own variables, so a wrong replay cannot borrow admission's facts.
    replay, replay_rows, replay_facts = decide(replayed, 0, capture, window, a, "admit" if same else "replay")
    shortest = 2 * p if p > 1 else 1
    hypotheses = (
        live.holds, replayed.holds, admit_facts, replay_facts, capture_list_is_well_formed(capture),
        *[x >= shortest for x in lengths],
    )
    shown = (("admission rows", admit_rows), ("replay rows", replay_rows), ("admitted bucket", admission.bucket))
    # Two steps: replay lays out rows equal to admission's, and equal rows give the same decision, whose
    # bucket has room for them.
    return (
        Query(
            "rows",
            z3.Implies(admission.admitted, admit_rows == replay_rows),
            hypotheses,
            size=n,
            shown=shown,
            replay=runner_replay(
                theorem="admission_equals_replay",
                cp_size=p,
                length_names=tuple(f"L{i}" for i in range(_REQUESTS)),
                list_length=_LIST_LENGTH,
            ),
        ),
        Query(
            "decision",
            z3.And(admission_replay(admission, replay), capacity_fit(admission, capture, replay_rows)),
            (*hypotheses, z3.Implies(admission.admitted, admit_rows == replay_rows)),
            size=n,
            shown=shown,
        ),
    )
