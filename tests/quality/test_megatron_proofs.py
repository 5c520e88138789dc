"""The EP theorems' counterexamples replay through Megatron-Core's own code: the wrong variant "the token count
synced alone" (proofs/teeth/variants/ep_graphs.py), refuted by Z3 under strict matching at EP 2, is a step on
which 0.16.0's own sync and matching (over the counterexample's captured list) put the two EP ranks on graphs of
different token counts or one eager, while 0.17.0's synced form keeps them together; the PR #3033 witness theorem
pins the same step cpgraph check minimised on 0.16.0."""

from __future__ import annotations

import pytest

from cpgraph.adapters.megatron import policy_from
from cpgraph.adapters.releases import ReleaseUnavailable, fetch
from cpgraph.proofs.engine.check import Status, check
from cpgraph.proofs.teeth.variants.ep_graphs import variants
from cpgraph.proofs.theorems.ep_graphs import WITNESS_GRAPHS, WITNESS_STEPS
from cpgraph.reference.ep_graphs import EpConfig, GraphDims, judge


def _release(version: str) -> str:
    try:
        return str(fetch("megatron-core", version))
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))


def _counterexample() -> tuple[tuple[GraphDims, ...], tuple[GraphDims, ...]]:
    build = next(b for name, *_, b in variants() if name == "tokens_only_sync")
    query = build(0)[0]
    assert query.part == "rank_consensus (strict, EP 2)"
    verdict = check(query.claim, hypotheses=query.hypotheses)
    assert verdict.status is Status.REFUTED
    values = {name: int(value) for name, value in verdict.model.items()}
    steps = tuple(GraphDims(values[f"rank{r}.T"], values[f"rank{r}.P"], values[f"rank{r}.D"]) for r in range(2))
    graphs = tuple(GraphDims(values[f"graph{i}.T"], values[f"graph{i}.P"], values[f"graph{i}.D"]) for i in range(3))
    return steps, graphs


def test_the_token_only_sync_counterexample_replays_through_the_release() -> None:
    steps, graphs = _counterexample()
    config = EpConfig(ep_size=2, model="hybrid")
    before = policy_from(_release("0.16.0")).answers(config, steps, graphs)
    found = judge(steps, graphs, before, matching="strict", equal_shapes=True)
    assert any(f.invariant == "rank_consensus" and not f.info for f in found), (steps, graphs, before)
    after = policy_from(_release("0.17.0")).answers(config, steps, graphs)
    assert not any(f.invariant == "rank_consensus" and not f.info
                   for f in judge(steps, graphs, after, matching="strict", equal_shapes=True)), (steps, graphs, after)


def test_the_witness_theorem_pins_the_step_check_minimised_on_0_16_0() -> None:
    steps = tuple(GraphDims(*s) for s in WITNESS_STEPS)
    graphs = tuple(GraphDims(*g) for g in WITNESS_GRAPHS)
    answers = policy_from(_release("0.16.0")).answers(EpConfig(ep_size=2, model="hybrid"), steps, graphs)
    assert [a.graph for a in answers] == [GraphDims(8, 0, 8), GraphDims(16, 16, 0)]
