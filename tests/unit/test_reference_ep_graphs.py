"""reference/ep_graphs.py: Megatron-Core's 3-D graph keys, strict and loose matching, the EP sync designs and the
judge over EP ranks, on hand-computed cases."""

from __future__ import annotations

import pytest

from cpgraph.reference.ep_graphs import (
    EpAnswer, EpConfig, GraphDims, applicable, common_tokens, holds, judge, judge_chunk, largest_chunk, match, rank_step,
    sync_all, sync_tokens, synced_match,
)

G = GraphDims
# Megatron-LM PR #3033's trace: mixed graphs of 16 prefill slots at 32 and 64 tokens
PR_GRAPHS = (G(32, 16, 16), G(64, 16, 48), G(32, 0, 32), G(64, 0, 64))


def test_a_decode_only_step_matches_only_decode_only_graphs() -> None:
    assert applicable(G(8, 0, 8), G(3, 0, 3), "loose")
    assert not applicable(G(8, 4, 4), G(3, 0, 3), "loose")
    assert not applicable(G(8, 0, 2), G(3, 0, 3), "strict")


def test_strict_matching_needs_each_dimension_and_loose_lets_a_prefill_slot_hold_a_decode() -> None:
    step = G(10, 1, 5)
    graph = G(16, 4, 3)
    assert not applicable(graph, step, "strict")
    assert applicable(graph, step, "loose")
    assert match(step, (G(16, 4, 3), G(32, 1, 31)), "loose") == G(16, 4, 3)
    assert match(step, (G(16, 4, 3), G(32, 1, 31)), "strict") == G(32, 1, 31)
    assert match(G(40, 1, 0), (G(32, 1, 31),), "strict") is None


def test_syncing_tokens_alone_splits_the_pr_3033_ranks_and_syncing_all_three_agrees() -> None:
    steps = [G(20, 1, 16), G(22, 1, 16), G(21, 1, 17)]
    split = synced_match(steps, PR_GRAPHS, "strict", "tokens")
    assert [g.tokens if g else None for g in split] == [32, 32, 64]
    agreed = synced_match(steps, PR_GRAPHS, "strict", "all")
    assert len(set(agreed)) == 1 and agreed[0] == G(64, 16, 48)
    assert sync_tokens(steps)[0] == G(22, 1, 16) and sync_all(steps)[0] == G(22, 1, 17)


def test_a_graph_holds_a_decode_in_a_prefill_slot_but_never_fewer_tokens() -> None:
    assert holds(G(16, 4, 12), G(5, 0, 5), "strict")
    assert not holds(G(16, 4, 0), G(5, 0, 5), "strict")
    assert holds(G(16, 4, 0), G(4, 0, 4), "loose")
    assert not holds(G(4, 4, 4), G(5, 1, 0), "loose")
    assert holds(G(4, 0, 4), None, "strict")


def test_common_tokens_is_the_least_count_every_busy_rank_matches() -> None:
    graphs = (G(8, 0, 8), G(16, 0, 16), G(16, 16, 0))
    assert common_tokens([G(1, 0, 1), G(1, 1, 0)], graphs, "strict") == 16
    assert common_tokens([G(1, 0, 1), None], graphs, "strict") == 8
    assert common_tokens([None, None], graphs, "strict") is None


def test_judge_names_the_kind_of_each_consensus_break() -> None:
    graphs = (G(8, 0, 8), G(16, 0, 16), G(16, 16, 0))
    steps = [G(1, 0, 1), G(1, 1, 0)]
    mismatch = judge(steps, graphs, [EpAnswer(0, G(8, 0, 8)), EpAnswer(1, G(16, 16, 0))], matching="strict", equal_shapes=True)
    assert [(f.invariant, f.kind) for f in mismatch] == [("rank_consensus", "token_mismatch")]
    eager = judge(steps, graphs, [EpAnswer(0, G(8, 0, 8)), EpAnswer(1, None)], matching="strict", equal_shapes=True)
    assert ("rank_consensus", "graph_and_eager") in [(f.invariant, f.kind) for f in eager]
    hung = judge(steps, graphs, [EpAnswer(0, None, hung=True), EpAnswer(1, None)], matching="strict", equal_shapes=True)
    assert [f.kind for f in hung] == ["hang"]
    agreed = judge(steps, graphs, [EpAnswer(0, G(16, 0, 16)), EpAnswer(1, G(16, 16, 0))], matching="strict", equal_shapes=True)
    assert [(f.invariant, f.info) for f in agreed] == [("rank_consensus", True)]
    assert judge(steps, graphs, [EpAnswer(0, G(8, 0, 8)), EpAnswer(1, G(16, 16, 0))], matching="strict", equal_shapes=False) == []


def test_judge_finds_the_safety_and_speed_invariants() -> None:
    graphs = (G(8, 0, 8), G(8, 4, 4), G(16, 4, 12))
    steps = [G(5, 1, 4), G(3, 0, 3)]
    small = judge(steps, graphs, [EpAnswer(0, G(4, 4, 0)), EpAnswer(1, G(4, 0, 4))], matching="strict", equal_shapes=True)
    assert {f.invariant for f in small if not f.info} == {"captured_bucket", "padding_limit"}
    big = judge(steps, graphs, [EpAnswer(0, G(16, 4, 12)), EpAnswer(1, G(16, 4, 12))], matching="strict", equal_shapes=True)
    assert [f.invariant for f in big] == ["minimal_bucket"]
    eager = judge(steps, graphs, [EpAnswer(0, None), EpAnswer(1, None)], matching="strict", equal_shapes=True)
    assert [f.invariant for f in eager] == ["no_needless_fallback"]
    tight = judge(steps, graphs, [EpAnswer(0, G(8, 4, 4)), EpAnswer(1, G(8, 4, 4))], matching="strict", equal_shapes=True)
    assert tight == []


def test_bad_input_names_the_argument_and_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="GraphDims.tokens must be an int >= 0"):
        G(-1, 0, 0)
    with pytest.raises(ValueError, match="matching must be one of strict, loose"):
        applicable(G(1, 0, 1), G(1, 0, 1), "exact")
    with pytest.raises(ValueError, match="EpConfig.dispatcher must be one of"):
        EpConfig(ep_size=2, dispatcher="deepep")
    with pytest.raises(ValueError, match="sync must be one of tokens, all"):
        synced_match([G(1, 0, 1)], (), "strict", "half")
    assert rank_step([3, 4], 2, EpConfig(ep_size=2, spec_tokens=1)) == G(11, 2, 2)


def test_the_largest_chunk_is_the_largest_graph_boundary_within_the_budget() -> None:
    graphs = (G(32, 16, 5), G(64, 16, 16), G(16, 1, 5), G(128, 1, 30))
    active = G(15, 0, 5)
    assert largest_chunk(active, graphs, 66, "strict") == 49
    assert largest_chunk(active, graphs, 48, "strict") == 17
    assert largest_chunk(G(15, 0, 17), graphs, 66, "strict") is None  # no graph holds 17 decodes and a prefill below 128
    assert [f.invariant for f in judge_chunk(active, graphs, 66, 17, "strict")] == ["no_needless_fallback"]
    assert judge_chunk(active, graphs, 66, 49, "strict") == []
    assert [f.invariant for f in judge_chunk(active, graphs, 66, 20, "strict")] == ["admission_replay", "no_needless_fallback"]
    assert [f.invariant for f in judge_chunk(active, graphs, 10, 17, "strict")] == ["padding_limit"]
