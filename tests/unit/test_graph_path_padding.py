"""A FULL graph replays inputs laid out for exactly the requests it was captured with: a rank whose layout is
padded to another request count breaks admission_replay (reference.graph_paths.judge), whatever it dispatched."""

from __future__ import annotations

from cpgraph.reference.graph_paths import Graph, GraphStep, PathAnswer, judge

FULL = Graph("FULL", 4, 4, 1)
STEP = GraphStep((1, 1, 1, 1), (False,) * 4, 1, "dual_chunk_swap_replicated")


def _ids(*answers: PathAnswer) -> set[str]:
    return {f.invariant for f in judge(STEP, [FULL], answers)}


def test_a_layout_padded_to_the_graph_s_requests_keeps_every_invariant() -> None:
    assert _ids(PathAnswer(0, FULL, FULL, 4, 4, padded_requests=4)) == set()
    assert _ids(PathAnswer(0, FULL, FULL, 4, 4)) == set()  # not known: not judged


def test_a_layout_padded_to_other_requests_breaks_admission_replay() -> None:
    for padded in (0, 3, 5):
        found = judge(STEP, [FULL], [PathAnswer(0, FULL, FULL, 4, 4, padded_requests=padded)])
        assert [f.invariant for f in found] == ["admission_replay"]
        assert f"padded to {padded} requests" in found[0].why


def test_a_piecewise_graph_counts_no_requests_so_its_padding_is_not_judged() -> None:
    piecewise = Graph("PIECEWISE", 4)
    assert {f.invariant for f in judge(STEP, [piecewise], [PathAnswer(0, piecewise, piecewise, 4, 4, padded_requests=9)])} == set()
