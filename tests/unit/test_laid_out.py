"""A layout a rank shows (reference/laid_out.py): the strategies' spans, the record's validation, the judge of
its rows and read-back under capacity_fit, and the protocol's optional ``local_layout`` on both ask paths."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, strategies as st

from cpgraph.check import as_policy, ask, judge, make_batch
from cpgraph.check.calls import PolicyStop, bound
from cpgraph.check.judging import ask_judge
from cpgraph.reference import policy as reference_policy
from cpgraph.reference.laid_out import LaidOut, layout_mismatch, merged, strategy_spans
from cpgraph.reference.strategies import STRATEGY_TABLE, expand_spans, strategy_row

SEED = make_batch((1534, 161, 353), (2048, 2304, 2560), cp_size=4)


def laid(lengths: tuple[int, ...], cp_size: int, strategy: str = "zigzag", *, shift: int = 0,
         restored: bool = True) -> LaidOut:
    """The strategy's layout as a rank would show it, its rows starting at row ``shift``."""
    rows, back = [], []
    for q, spans in enumerate(strategy_row(strategy).rank_spans(lengths, cp_size)):
        at, runs = shift, []
        for i, first, stop in spans:
            runs.append((i, first, stop, at))
            back.append((i, first, stop, q, at))
            at += stop - first
        rows.append(tuple(runs))
    return LaidOut(tuple(rows), tuple(back) if restored else None)


# -- the strategies' spans -------------------------------------------------------------------------------------
@given(st.sampled_from(sorted(STRATEGY_TABLE)), st.integers(1, 6), st.lists(st.integers(0, 80), min_size=1, max_size=5))
def test_every_strategys_spans_hold_each_prefill_token_exactly_once(strategy: str, p: int, lengths: list[int]) -> None:
    row = strategy_row(strategy)
    spans = row.rank_spans(tuple(lengths), p)
    tokens = [slot for rank in expand_spans(spans) for slot in rank]
    if strategy == "dual_chunk_swap_dcp":  # copies a prefill too short for 2P chunks to every rank
        assert set(tokens) == {(i, k) for i, n in enumerate(lengths) for k in range(n)}
        return
    assert sorted(tokens) == [(i, k) for i, n in enumerate(lengths) for k in range(n)]
    assert tuple(len(r) for r in expand_spans(spans)) == row.batch_loads(tuple(lengths), p)


def test_merged_joins_touching_spans_and_keeps_an_overlap_apart() -> None:
    assert merged([(1, 5, 9), (0, 0, 3), (1, 0, 5)]) == ((0, 0, 3), (1, 0, 9))
    assert merged([(0, 0, 4), (0, 2, 6)]) == ((0, 0, 4), (0, 2, 6))  # token 2 and 3 held twice: shown, not hidden


def test_strategy_spans_place_decodes_as_the_strategy_row_says() -> None:
    spans = strategy_spans((8, 1), 2, "dual_chunk_swap_replicated", (True, False))
    assert all((1, 0, 1) in rank for rank in spans)  # a decode replicated on every rank
    with pytest.raises(ValueError, match="prefills only"):
        strategy_spans((8, 1), 2, "zigzag", (True, False))


# -- the record ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("rows", "restored", "error", "message"), [
    ([((0, 0, 3, 0),)], None, TypeError, "rows must be a tuple"),
    ((((0, 0, 3),),), None, TypeError, r"rows\[0\] holds \(0, 0, 3\); each run must be a tuple of 4 ints"),
    ((((0, 0, 3, True),),), None, TypeError, "4 ints"),
    ((((0, 3, 3, 0),),), None, ValueError, r"rows\[0\] holds \(0, 3, 3, 0\); a run's tokens \[first, stop\) must be non-empty"),
    ((((0, -1, 3, 0),),), None, ValueError, "start at 0 or later"),
    ((((0, 0, 3, 0),),), [(0, 0, 3, 0, 0)], TypeError, "restored must be a tuple of runs or None"),
    ((((0, 0, 3, 0),),), ((0, 0, 3, 0),), TypeError, "restored holds .* 5 ints"),
])
def test_a_malformed_layout_record_is_refused_naming_the_field(rows: Any, restored: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        LaidOut(rows, restored)


# -- the judge -------------------------------------------------------------------------------------------------
def _why(layout: LaidOut, lengths: tuple[int, ...] = (10, 7), p: int = 2, capacity: int | None = 16) -> str | None:
    return layout_mismatch(layout, lengths=lengths, cp_size=p, strategy="zigzag", capacity=capacity)


def test_the_strategys_own_layout_is_the_live_one() -> None:
    assert _why(laid((10, 7), 2)) is None
    assert _why(laid((10, 7), 2, restored=False)) is None
    assert layout_mismatch(laid((1534, 161, 353), 4), lengths=(1534, 161, 353), cp_size=4, strategy="zigzag", capacity=576) is None


def test_rows_shifted_by_one_leave_row_0_empty() -> None:
    assert _why(laid((10, 7), 2, shift=1)) == "rank 0's layout puts request 0 [0, 3) at row 1: row 0 is left empty"


def test_a_row_written_twice_and_rows_past_the_capacity_are_named() -> None:
    good = laid((10, 7), 2)
    twice = LaidOut((good.rows[0][:1] + ((0, 7, 10, 2),) + good.rows[0][2:], good.rows[1]), None)
    assert _why(twice) == "rank 0's layout puts request 0 [7, 10) at row 2: row 2 is written twice"
    assert _why(good, capacity=8) == "rank 1's layout fills rows [0, 9); the graph holds 8 rows per rank"


def test_another_ranks_tokens_are_named_with_what_the_strategy_puts_there() -> None:
    good = laid((10, 7), 2)
    swapped = LaidOut((good.rows[1], good.rows[0]), None)
    why = _why(swapped)
    assert why == ("rank 0's rows hold request 0 [3, 8), request 1 [2, 6) where the zigzag layout of the live lengths "
                   "puts request 0 [0, 3), request 0 [8, 10), request 1 [0, 2) and 1 more")


def test_a_token_read_back_from_a_row_that_does_not_hold_it_or_twice_or_never_is_named() -> None:
    good = laid((10, 7), 2)
    assert good.restored is not None
    wrong_row = LaidOut(good.rows, ((0, 0, 3, 0, 1),) + good.restored[1:])
    assert _why(wrong_row) == "the layout reads request 0 [0, 3) back from rank 0 rows [1, 4), which do not hold those tokens"
    never = LaidOut(good.rows, good.restored[1:])
    assert _why(never) == "the layout reads token 0 of request 0 back from no row"
    twice = LaidOut(good.rows, good.restored + (good.restored[0],))
    assert _why(twice) == "the layout reads token 0 of request 0 back twice"
    outside = LaidOut(good.rows, good.restored + ((5, 0, 1, 0, 0),))
    assert _why(outside) == "the layout reads request 5 [0, 1) back; the batch has no such tokens"
    assert _why(LaidOut(good.rows[:1], None)) == "the layout shows 1 ranks' rows, not 2"


# -- the protocol: local_layout judged under capacity_fit, on both ask paths --------------------------------------
def _policy(**layout: Any) -> Any:
    return SimpleNamespace(admit=reference_policy.admit, replay_bucket=reference_policy.replay_bucket, **layout)


def _layout(shift: int) -> Any:
    return lambda **kw: laid(tuple(kw["extend_seq_lens"]), kw["cp_size"], shift=shift)


def test_a_layout_shown_is_judged_under_capacity_fit_by_ask_and_by_the_bound_asker() -> None:
    for shift, found in ((0, set()), (1, {"capacity_fit"})):
        policy = as_policy(_policy(local_layout=_layout(shift)))
        assert {f.invariant for f in judge(SEED, ask(policy, SEED))} == found
        _, findings = ask_judge(bound(policy), SEED)
        assert {f.invariant for f in findings} == found
    _, findings = ask_judge(bound(as_policy(_policy(local_layout=_layout(1)))), SEED)
    assert findings[0].why == "rank 0: rank 0's layout puts request 0 [0, 192) at row 1: row 0 is left empty"


def test_a_local_layout_that_raises_breaks_capacity_fit_and_a_wrong_type_stops_the_check() -> None:
    def broken(**_: Any) -> Any:
        raise RuntimeError("no gather index")

    answers = ask(as_policy(_policy(local_layout=broken)), SEED)
    assert answers[0].layout == "RuntimeError: no gather index"
    assert [f.why for f in judge(SEED, answers)][:1] == ["rank 0: local_layout raised RuntimeError: no gather index"]
    with pytest.raises(PolicyStop, match=r"local_layout\(cp_rank=0, \.\.\.\) returned \[1, 2\] \(list\); the protocol requires a cpgraph.LaidOut record"):
        ask_judge(bound(as_policy(_policy(local_layout=lambda **_: [1, 2]))), SEED)
    with pytest.raises(TypeError, match="local_layout must be callable when present, got 3"):
        as_policy(_policy(local_layout=3))


# -- a graph path's step: the layout a rank shows for its replay ---------------------------------------------------
def test_a_graph_path_rank_showing_a_layout_other_than_the_placements_breaks_capacity_fit() -> None:
    from cpgraph.reference.graph_paths import Graph, GraphStep, PathAnswer, judge as judge_path

    piecewise = Graph("PIECEWISE", 8)
    step = GraphStep((10, 1), (True, False), 2, "dual_chunk_swap_replicated")
    spans = strategy_row("dual_chunk_swap_replicated").mixed_spans
    assert spans is not None
    ranks = spans((10, 1), (True, False), 2)

    def shown(shift: int) -> LaidOut:
        rows = tuple(tuple((i, a, b, shift + sum(y - x for _, x, y in rank[:k])) for k, (i, a, b) in enumerate(rank)) for rank in ranks)
        return LaidOut(rows, None)

    loads = [sum(b - a for _, a, b in rank) for rank in ranks]
    good = [PathAnswer(r, piecewise, piecewise, loads[r], 2, layout=shown(0)) for r in range(2)]
    assert judge_path(step, [piecewise], good) == []
    bad = [PathAnswer(r, piecewise, piecewise, loads[r], 2, layout=shown(1)) for r in range(2)]
    found = judge_path(step, [piecewise], bad)
    assert [f.invariant for f in found] == ["capacity_fit"]
    assert found[0].why == "rank 0 replays PIECEWISE 8 tokens: rank 0's layout puts request 0 [0, 3) at row 1: row 0 is left empty"


def test_a_stack_that_laid_the_batch_out_in_its_own_order_is_judged_in_that_order() -> None:
    """vLLM sorts a batch (decodes first, shorter first) before it deals decodes round-robin: the dealing follows
    the stack's order, and the layout says which (``order``); requests keep their names in the batch as given."""
    lengths, flags = (1, 3), (False, False)
    dealt = LaidOut((((1, 0, 3, 0),), ((0, 0, 1, 0),)), None)  # request 1 on rank 0: dealt first in the order (1, 0)
    judged = dict(lengths=lengths, cp_size=2, strategy="dual_chunk_swap", is_prefilling=flags, capacity=3)
    assert layout_mismatch(dealt, **judged) == ("rank 0's rows hold request 1 [0, 3) where the dual_chunk_swap layout of "
                                                 "the live lengths puts request 0 [0, 1)")
    assert layout_mismatch(LaidOut(dealt.rows, None, (1, 0)), **judged) is None
    assert layout_mismatch(LaidOut(dealt.rows, None, (0, 1)), **judged) is not None
    with pytest.raises(ValueError, match=r"order must be None or a permutation of 0..R-1 as a tuple of ints, got \(0, 0\)"):
        LaidOut(dealt.rows, None, (0, 0))


def test_a_layout_the_vllm_adapter_cannot_read_is_a_glue_error_never_a_finding() -> None:
    """cpgraph's own reading of the release's indices failing is a usage error (exit 2) naming the file, not an
    answer the judge would hold against the release."""
    import numpy as np

    from cpgraph.adapters.glue import GlueError
    from cpgraph.adapters.vllm.partition import observed_layout

    good = observed_layout(np.array([0, 1, 2, 0]), np.array([0, 1, 2]), np.array([0, 3]), [2, 1], [0])
    assert good == LaidOut((((0, 0, 2, 0),), ((0, 2, 3, 0),)), ((0, 0, 2, 0, 0), (0, 2, 3, 1, 0)), (0,))
    with pytest.raises(GlueError, match=r"vllm/v1/worker/gpu/pcp_manager.py: the layout's gather and restore indices could not be read"):
        observed_layout(np.array([0, 1]), np.array([0, 1]), np.array([], dtype=np.int64), [1, 1], [])
