"""The evidence behind docs/adapters/megatron-findings-review.md: each published Megatron-Core finding replayed
through the release's own code on a step where every EP rank has real work (no idle rank, so no dummy-step
stand-in), and the configurations each needs pinned (each release fetched once per machine; skipped with pip's
reason when the package index cannot be reached).

- (a) 0.16.x/0.17.x, a dense model with the mixed-prefill count 0 and non-decode graphs on: only decode graphs
  are captured, the guard keys on the flag, so a decode rank replays a graph beside an eager prefill rank. Under
  strict matching (hybrid) 0.17's synced prefill count sends both ranks eager; 0.18 sends every rank eager.
- (b) 0.17.x, a dense model with 2 MTP tokens (k = 3) and the CLI's default graph settings: decode graphs
  are multiples of 3 tokens, mixed ones multiples of 8, so the ranks replay 30 and 16 tokens. At k = 2 and
  k = 4 the two grids coincide; 0.18 sends every rank eager.
- (c) 0.17.x, strict matching: the synced prefill and decode counts fit no graph though each rank fits one of
  64 tokens (all eager), or force a larger graph beside an idle rank's dummy decodes.
- 0.19.x: _find_cg_chunk_size returns the first boundary in the list's order (prefill tokens T - D * k), not the
  largest; at k = 3 under strict matching it admits a shorter chunk, at k = 2 and k = 4 and under loose
  matching it admits the largest.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cpgraph.adapters.megatron import MegatronPolicy, policy_from
from cpgraph.adapters.releases import ReleaseUnavailable, fetch
from cpgraph.reference.ep_graphs import EpConfig, GraphDims, RankStep, judge, largest_chunk

G = GraphDims


def policy(version: str) -> MegatronPolicy:
    try:
        return policy_from(str(fetch("megatron-core", version)))
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))


def kinds(p: MegatronPolicy, config: EpConfig, steps: tuple[RankStep, ...]) -> tuple[list[GraphDims | None], set[str]]:
    answers = p.answers(config, steps)
    found = judge(steps, p.graphs(config), answers, matching=config.matching, equal_shapes=config.equal_shapes)
    return [a.graph for a in answers], {f.kind or f.invariant for f in found if not f.info}


MIXED_ZERO = EpConfig(ep_size=2, model="dense", num_cuda_graphs=1, max_requests=4, max_tokens=4, mixed_prefill_count=0)
BUSY = (G(2, 0, 2), G(1, 1, 0))  # a decode rank beside a prefill rank


@pytest.mark.parametrize("version", ("0.16.0", "0.16.1", "0.17.0", "0.17.1"))
def test_a_mixed_count_zero_leaves_a_decode_rank_on_a_graph_beside_an_eager_prefill_rank(version: str) -> None:
    assert kinds(policy(version), MIXED_ZERO, BUSY) == ([G(4, 0, 4), None], {"graph_and_eager"})


def test_a_needs_loose_matching_in_0_17_the_synced_prefill_count_sends_hybrid_ranks_eager() -> None:
    assert kinds(policy("0.17.0"), replace(MIXED_ZERO, model="hybrid"), BUSY) == ([None, None], set())


@pytest.mark.parametrize("version", ("0.18.0", "0.18.2"))
def test_a_is_gone_in_0_18_any_prefill_sends_every_rank_eager(version: str) -> None:
    assert kinds(policy(version), MIXED_ZERO, BUSY) == ([None, None], set())


MTP = EpConfig(ep_size=2, model="dense", spec_tokens=2, num_cuda_graphs=16, max_requests=64, max_tokens=2048,
               mixed_prefill_count=16)  # the CLI's defaults: 16 graphs, mixed-prefill count 16


@pytest.mark.parametrize("version", ("0.17.0", "0.17.1"))
def test_b_mtp_decode_graphs_and_mixed_graphs_differ_in_tokens_with_every_rank_busy(version: str) -> None:
    assert kinds(policy(version), MTP, (G(3, 0, 1), G(1, 1, 0))) == ([G(30, 0, 10), G(16, 16, 0)], {"token_mismatch"})


@pytest.mark.parametrize("spec", (1, 3))
def test_b_needs_k_not_dividing_the_graph_step_at_k_2_and_4_the_grids_coincide(spec: int) -> None:
    p, config = policy("0.17.0"), replace(MTP, spec_tokens=spec)
    k = spec + 1
    for decodes in range(1, 65):
        for prefill_tokens in (1, 17, 40):
            ran, found = kinds(p, config, (G(decodes * k, 0, decodes), G(prefill_tokens, 1, 0)))
            assert "token_mismatch" not in found and "graph_and_eager" not in found, (decodes, prefill_tokens, ran)


@pytest.mark.parametrize("version", ("0.18.0", "0.18.2"))
def test_b_is_gone_in_0_18(version: str) -> None:
    assert kinds(policy(version), MTP, (G(3, 0, 1), G(1, 1, 0))) == ([None, None], set())


HYBRID = EpConfig(ep_size=2, model="hybrid", num_cuda_graphs=16, max_requests=64, max_tokens=2048, mixed_prefill_count=16)


@pytest.mark.parametrize("version", ("0.17.0", "0.17.1"))
def test_c_synced_counts_fit_no_graph_though_every_rank_fits_one_of_64_tokens(version: str) -> None:
    assert kinds(policy(version), HYBRID, (G(60, 16, 0), G(60, 0, 60))) == ([None, None], {"no_needless_fallback"})


@pytest.mark.parametrize("version", ("0.17.0", "0.17.1"))
def test_c_an_idle_ranks_dummy_decodes_raise_the_graph_from_16_to_24_tokens(version: str) -> None:
    assert kinds(policy(version), HYBRID, (G(8, 1, 0), None)) == ([G(24, 16, 8)] * 2, {"minimal_bucket"})


ADMISSION = EpConfig(ep_size=2, model="hybrid", dispatcher="nvls", spec_tokens=2, num_cuda_graphs=8, sizing="linear",
                     max_requests=64, max_tokens=256, mixed_prefill_count=1, all_prefills=True, cuda_graph_max_tokens=128)


def short_chunks(p: MegatronPolicy, config: EpConfig) -> int:
    """How many admissions beside 0..12 decodes, at every budget, snap short of the largest graph boundary."""
    k, graphs, short = config.tokens_per_decode, p.graphs(config), 0
    for decodes in range(13):
        active = G(decodes * k, 0, decodes)
        for budget in range(1, config.max_tokens - active.tokens):
            gating, chunk = p.chunk(config, active, budget)
            best = largest_chunk(active, graphs, budget, config.matching)
            assert gating
            short += best is not None and (chunk is None or chunk < best)
    return short


@pytest.mark.parametrize("version", ("0.19.0", "0.19.2"))
def test_0_19_chunk_snaps_short_at_k_3_under_strict_matching(version: str) -> None:
    p = policy(version)
    assert p.chunk(ADMISSION, G(3, 0, 1), 61) == (True, 29)
    assert largest_chunk(G(3, 0, 1), p.graphs(ADMISSION), 61, "strict") == 61
    assert short_chunks(p, ADMISSION) > 0


@pytest.mark.parametrize("change", ({"spec_tokens": 1}, {"spec_tokens": 3}, {"model": "dense"}))
def test_0_19_chunk_is_the_largest_at_k_2_and_4_and_under_loose_matching(change: dict[str, object]) -> None:
    assert short_chunks(policy("0.19.0"), replace(ADMISSION, **change)) == 0  # type: ignore[arg-type]
