"""reference/graph_paths.py: the graph paths a step can take (modes, decode graphs keyed by query length and
request count, placement, the request side of fitting), the fastest fitting graph, and the seven invariants
judged over a step's per-rank descriptors; every bad input is a ValueError naming the argument."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph.reference.graph_paths import (
    CUDAGRAPH_MODES, Graph, GraphConfig, GraphStep, PathAnswer, agreed, captured, expected, fits, judge,
)
from cpgraph.reference.invariants import INVARIANT_TABLE

CONFIG = GraphConfig("FULL_AND_PIECEWISE", (1, 2, 4, 8), (1, 2, 4), (1,), 256)


def test_each_mode_captures_its_routines_graphs() -> None:
    full_and_piecewise = captured(CONFIG)
    assert {g for g in full_and_piecewise if g.mode == "FULL"} == {Graph("FULL", n, n, 1) for n in (1, 2, 4)}
    assert {g for g in full_and_piecewise if g.mode == "PIECEWISE"} == {Graph("PIECEWISE", t) for t in (1, 2, 4, 8)}
    assert all(g.mode == "FULL" and g.query_len == 1 for g in captured(GraphConfig("FULL_DECODE_ONLY", (1, 8), (2,), (1,))))
    assert {g.mode for g in captured(GraphConfig("PIECEWISE", (1, 8), (2,)))} == {"PIECEWISE"}
    assert captured(GraphConfig("FULL", (4, 300), (2,), (1,), 256)) == (Graph("FULL", 4, 4), Graph("FULL", 300, 256))
    assert captured(GraphConfig("NONE", (4,), (2,))) == ()
    spec = captured(GraphConfig("FULL_DECODE_ONLY", (), (1, 3), (3,)))  # speculative decoding: q = 1 + 2 drafts
    assert spec == (Graph("FULL", 3, 1, 3), Graph("FULL", 9, 3, 3))
    assert set(CUDAGRAPH_MODES) == {"NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"}


def test_ranks_hold_their_placements_rows_and_requests() -> None:
    decodes = (1,) * 5
    assert GraphStep(decodes, (False,) * 5, 2, "dual_chunk_swap").ranks() == ((3, 3), (2, 2))  # dealt round-robin
    assert GraphStep(decodes, (False,) * 5, 2, "dual_chunk_swap_replicated").ranks() == ((5, 5), (5, 5))  # copied
    assert GraphStep((300,), (True,), 4, "dual_chunk_swap").ranks() == ((72, 1), (76, 1), (76, 1), (76, 1))  # docs/semantics.md
    assert GraphStep((3, 3), (False, False), 1).ranks() == ((6, 2),)
    assert GraphStep((2, 2, 2), (False,) * 3, 2).uniform_query_len == 2
    assert GraphStep((2, 1), (False, False), 2).uniform_query_len is None
    assert GraphStep((2, 2), (True, False), 2).uniform_query_len is None


def test_a_graph_fits_rows_requests_and_query_length() -> None:
    full = Graph("FULL", 4, 4, 1)
    assert fits(full, 4, 4, 1) and not fits(full, 5, 4, 1) and not fits(full, 4, 5, 1) and not fits(full, 4, 4, 2)
    assert not fits(full, 4, 4, None)  # a uniform decode graph serves uniform decode steps only
    assert fits(Graph("PIECEWISE", 8), 8, 100, None)


def test_the_fastest_fitting_graph_is_expected_full_before_piecewise_before_eager() -> None:
    graphs = captured(CONFIG)
    sharded = GraphStep((1, 1, 1, 1), (False,) * 4, 2, "dual_chunk_swap")  # 2 decodes on each rank
    assert expected(sharded, graphs) == Graph("FULL", 2, 2, 1)
    mixed = GraphStep((5, 1), (True, False), 2, "dual_chunk_swap")
    assert expected(mixed, graphs) == Graph("PIECEWISE", 4)
    assert expected(GraphStep((40,), (True,), 2), graphs) is None
    assert agreed([sharded, mixed], graphs) == Graph("PIECEWISE", 4)  # a DP rank with a prefill keeps all off FULL


def _answers(step: GraphStep, dispatched: Graph | None, replayed: Graph | None = None, refusal: str | None = None) -> list[PathAnswer]:
    return [PathAnswer(r, dispatched, dispatched if replayed is None and refusal is None else replayed, rows, requests, refusal)
            for r, (rows, requests) in enumerate(step.ranks())]


STEP = GraphStep((1, 1, 1, 1), (False,) * 4, 2, "dual_chunk_swap")


@pytest.mark.parametrize("answers, broken", [
    (_answers(STEP, Graph("FULL", 2, 2, 1)), set()),
    (_answers(STEP, Graph("PIECEWISE", 2)), {"no_needless_fallback"}),
    (_answers(STEP, None), {"no_needless_fallback"}),
    (_answers(STEP, Graph("FULL", 4, 4, 1)), {"minimal_bucket"}),
    (_answers(STEP, Graph("FULL", 1, 1, 1)), {"capacity_fit", "padding_limit"}),
    (_answers(STEP, Graph("FULL", 3, 3, 1)), {"captured_bucket", "minimal_bucket"}),
    (_answers(STEP, Graph("FULL", 2, 2, 1), Graph("PIECEWISE", 2)), {"admission_replay"}),
    (_answers(STEP, Graph("FULL", 2, 2, 1), refusal="AssertionError: 2 < 3"), {"admission_replay"}),
    ([PathAnswer(0, Graph("FULL", 2, 2, 1), Graph("FULL", 2, 2, 1), 2, 2), PathAnswer(1, Graph("FULL", 4, 4, 1), Graph("FULL", 4, 4, 1), 2, 2)],
     {"rank_consensus", "minimal_bucket"}),
])
def test_judge_names_each_broken_invariant(answers: list[PathAnswer], broken: set[str]) -> None:
    found = judge(STEP, captured(CONFIG), answers)
    assert {f.invariant for f in found} == broken
    for f in found:
        assert f.cost == ("correctness" if INVARIANT_TABLE[f.invariant].kind == "safety" else "speed")


@given(st.lists(st.integers(1, 4), min_size=1, max_size=12), st.integers(1, 4), st.sampled_from(["dual_chunk_swap", "dual_chunk_swap_replicated"]))
def test_the_expected_graph_keeps_every_invariant(lengths: list[int], cp_size: int, placement: str) -> None:
    step = GraphStep(tuple(lengths), (False,) * len(lengths), cp_size, placement)
    best = expected(step, captured(CONFIG))
    assert judge(step, captured(CONFIG), _answers(step, best)) == []


@pytest.mark.parametrize("build, named", [
    (lambda: GraphConfig("FULL_AND_FAST", (1,)), "cudagraph_mode"),
    (lambda: GraphConfig("PIECEWISE", [1, 2]), "token_sizes"),  # type: ignore[arg-type]
    (lambda: GraphConfig("PIECEWISE", (1,), (0,)), "decode_request_sizes"),
    (lambda: GraphConfig("PIECEWISE", (1,), (1,), (True,)), "query_lens"),
    (lambda: GraphConfig("PIECEWISE", (1,), max_num_seqs=0), "max_num_seqs"),
    (lambda: GraphStep((1,), (False,), 2, "zigzag"), "placement"),
    (lambda: GraphStep((1, 1), (False,), 2), "lengths and prefilling"),
    (lambda: GraphStep((), (), 2), "lengths and prefilling"),
    (lambda: GraphStep((0,), (False,), 2), "lengths"),
    (lambda: GraphStep((1,), (False,), 0), "cp_size"),
])
def test_bad_inputs_name_the_argument_and_what_is_allowed(build: object, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        build()  # type: ignore[operator]


def test_every_invariant_has_a_path_sentence() -> None:
    assert all(row.graph_path for row in INVARIANT_TABLE.values())
