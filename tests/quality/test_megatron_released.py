"""Megatron-Core's released dynamic inference engine, driven as shipped through cpgraph.adapters.megatron over
simulated EP ranks (each release fetched once per machine by cpgraph.adapters.releases.fetch; skipped with pip's
reason when the package index cannot be reached).

- Every release 0.16.0-0.19.2 builds its own graph list and answers a step on every EP rank.
- Megatron-LM PR #3033's trace: 0.16.0 and 0.16.1 replay graphs of 32 and 64 tokens on the same step (a NCCL
  hang); 0.17.0 on replays one graph on every rank.
- ``cpgraph check`` finds it alone: on the PR's path (hybrid model, strict matching, no MTP, every rank busy)
  0.16.0/0.16.1 fail rank_consensus with the minimal witness (EP 2: a decode of 1 token beside a prefill of 1
  token) at batch_dimensions_utils.py:191 and :211, and 0.17.0 keeps rank_consensus on that path.
- Planted edits in 0.17.0's matching code are caught; the emitted test fails alone against 0.16.0.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
import subprocess
import sys
from pathlib import Path

import pytest

from cpgraph.adapters.megatron import MegatronGlueError, MegatronPolicy, policy_from
from cpgraph.adapters.releases import ReleaseUnavailable, fetch
from cpgraph.check.subjects.ep_steps import EpSpace, check_ep
from cpgraph.reference.ep_graphs import EpConfig, GraphDims

RELEASES = ("0.16.0", "0.16.1", "0.17.0", "0.17.1", "0.18.0", "0.18.2", "0.19.0", "0.19.2")
PR_PATH = EpSpace(ep_sizes=(2, 4, 8), models=("hybrid",), spec_tokens=0, idle=False)
TARGET = "cpgraph.adapters.megatron:ep"
G = GraphDims


def root_of(version: str) -> Path:
    try:
        return fetch("megatron-core", version)
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))


def policy(version: str) -> MegatronPolicy:
    return policy_from(str(root_of(version)))


@pytest.mark.parametrize("version", RELEASES)
def test_every_release_builds_its_graphs_and_answers_on_every_ep_rank(version: str) -> None:
    p = policy(version)
    assert p.version == version
    config = EpConfig(ep_size=4, model="hybrid", num_cuda_graphs=4, max_requests=16, max_tokens=64)
    graphs = p.graphs(config)
    assert graphs and all(g.requests <= 16 for g in graphs)
    answers = p.answers(config, (G(3, 0, 3), None, G(1, 0, 1), G(2, 0, 2)))
    assert [a.rank for a in answers] == [0, 1, 2, 3] and not any(a.hung for a in answers)
    assert len({a.graph for a in answers}) == 1 and answers[0].graph is not None


PR_STEPS = (G(20, 1, 16), G(22, 1, 16), G(20, 1, 16), G(20, 1, 16), G(20, 1, 16), G(20, 1, 16), G(21, 1, 17), G(21, 1, 17))
PR_CONFIG = EpConfig(ep_size=8, model="hybrid", num_cuda_graphs=2, max_requests=64, max_tokens=64, mixed_prefill_count=16)


@pytest.mark.parametrize("version", ("0.16.0", "0.16.1"))
def test_pr_3033_trace_splits_the_ep_ranks_before_the_fix(version: str) -> None:
    answers = policy(version).answers(PR_CONFIG, PR_STEPS)
    assert [a.graph for a in answers] == [G(32, 16, 16)] * 6 + [G(64, 16, 48)] * 2


def test_pr_3033_trace_agrees_after_the_fix() -> None:
    answers = policy("0.17.0").answers(PR_CONFIG, PR_STEPS)
    assert {a.graph for a in answers} == {G(64, 16, 48)}


@pytest.mark.parametrize("version", ("0.16.0", "0.16.1"))
def test_check_fails_rank_consensus_before_the_fix_with_a_minimal_witness(version: str) -> None:
    report = check_ep(policy(version), target=TARGET, cases=1500, seed=0, space=PR_PATH)
    found = {v.kind: v for v in report.violations if v.invariant == "rank_consensus"}
    witness = found["token_mismatch"]
    assert witness.config.ep_size == 2 and witness.steps == (G(1, 0, 1), G(1, 1, 0))
    assert {a.graph for a in witness.answers} == {G(8, 0, 8), G(16, 16, 0)}
    assert witness.decided_at[:2] == ("megatron/core/inference/batch_dimensions_utils.py:191",
                                      "megatron/core/inference/batch_dimensions_utils.py:211")


def test_check_keeps_rank_consensus_on_that_path_after_the_fix() -> None:
    report = check_ep(policy("0.17.0"), target=TARGET, cases=1500, seed=0, space=PR_PATH)
    assert report.steps == 1500
    assert not [v for v in report.violations if v.invariant == "rank_consensus"]


PLANTS = {  # a planted edit in 0.17.0's matching code -> the invariant the check must name
    "sync_dropped": ("int(sync_tensor[2].item()) if strict else local_batch_dims.prefill_req_count",
                     "local_batch_dims.prefill_req_count", "rank_consensus"),
    "token_check_one_short": ("self.token_count >= real_batch_dim.token_count\n                and self.prefill_req_count >= real_batch_dim.prefill_req_count\n                and self.decode_req_count",
                              "self.token_count >= real_batch_dim.token_count - 1\n                and self.prefill_req_count >= real_batch_dim.prefill_req_count\n                and self.decode_req_count",
                              "padding_limit"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_edit_in_the_matching_code_is_caught(plant: str, tmp_path: Path) -> None:
    old, new, invariant = PLANTS[plant]
    root = tmp_path / "planted"
    shutil.copytree(root_of("0.17.0"), root)
    path = root / "megatron/core/inference/batch_dimensions_utils.py"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    report = check_ep(policy_from(str(root)), target=TARGET, cases=1500, seed=0, space=PR_PATH)
    assert invariant in {v.invariant for v in report.violations}


def test_a_release_whose_decision_moved_is_refused_at_its_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "moved"
    shutil.copytree(root_of("0.17.0"), root)
    path = root / "megatron/core/inference/contexts/dynamic_context.py"
    path.write_text(path.read_text().replace("self._using_cuda_graph_this_step = best_graph is not None", "self._graph_now = best_graph"))
    with pytest.raises(MegatronGlueError, match=r"dynamic_context.py:\d+: DynamicInferenceContext.initialize_attention_state"):
        policy_from(str(root))


def test_the_emitted_test_fails_alone(tmp_path: Path) -> None:
    p = policy("0.16.0")
    report = check_ep(p, target=TARGET, cases=600, seed=0, space=PR_PATH)
    assert report.violations
    from cpgraph.check.emit_ep import write_ep_test

    test = write_ep_test(str(tmp_path / "test_emitted.py"), TARGET, report.violations, p.version, p.root)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", test],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 1, done.stdout[-2000:]
    assert "rank_consensus broken" in done.stdout


def test_the_0_19_admission_snaps_a_chunk_short_of_the_largest_graph_boundary() -> None:
    """0.19's _find_cg_chunk_size returns the first boundary in the list's order, which is by prefill tokens
    (T - D * k), not by T: with MTP (k = 3) a graph of 32 tokens comes before one of 64."""
    p = policy("0.19.2")
    config = EpConfig(ep_size=2, model="hybrid", dispatcher="nvls", spec_tokens=2, num_cuda_graphs=-1, max_requests=32,
                      max_tokens=128, mixed_prefill_count=2, all_prefills=True)
    assert p.chunk(config, G(15, 0, 5), 66) == (True, 17)
    from cpgraph.reference.ep_graphs import largest_chunk

    assert largest_chunk(G(15, 0, 5), p.graphs(config), 66, "strict") == 49
    assert p.chunk(replace(config, spec_tokens=0), G(5, 0, 5), 66)[1] == largest_chunk(G(5, 0, 5), p.graphs(replace(config, spec_tokens=0)), 66, "strict")
    from cpgraph.check.subjects.ep_admission import check_release

    report = check_release(p, target=TARGET, cases=800, seed=0)
    chunked = [v for v in report.violations if v.kind == "chunk"]
    assert [v.invariant for v in chunked] == ["no_needless_fallback"] and chunked[0].config.spec_tokens >= 1
    assert chunked[0].decided_at[0].startswith("megatron/core/inference/engines/dynamic_engine.py:")


def test_the_newest_release_on_the_package_index_gets_a_real_verdict() -> None:
    from cpgraph.adapters.releases import newest

    try:
        version = newest("megatron-core")
    except ReleaseUnavailable as exc:
        pytest.skip(f"the package index cannot be asked for the newest megatron-core: {exc}")
    from cpgraph.check.subjects.ep_admission import check_release

    report = check_release(policy(version), target=TARGET, cases=300, seed=0)
    assert report.steps == 300 and report.version == version


def test_a_rank_that_skips_the_collective_is_reported_as_a_hang(tmp_path: Path) -> None:
    """A planted edit in 0.19.2's match_graph_config: a rank with a prefill skips the EP all-reduce the others
    enter; the simulated collective reports the hang as rank_consensus of kind 'hang'."""
    root = tmp_path / "skips"
    shutil.copytree(root_of("0.19.2"), root)
    path = root / "megatron/core/inference/batch_dimensions_utils.py"
    text = path.read_text()
    old = "        if match_ep_token_counts:\n"
    assert text.count(old) == 1
    path.write_text(text.replace(old, "        if match_ep_token_counts and real_batch_dim.prefill_req_count == 0:\n"))
    p = policy_from(str(root))
    answers = p.answers(EpConfig(ep_size=2, num_cuda_graphs=4, max_requests=16, max_tokens=64), (G(3, 0, 3), G(5, 1, 0)))
    assert [a.hung for a in answers] == [True, True]
    report = check_ep(p, target=TARGET, cases=400, seed=0)
    hang = next(v for v in report.violations if v.kind == "hang")
    assert hang.invariant == "rank_consensus" and hang.config.ep_size == 2


def test_the_one_pipeline_checks_the_ep_subject() -> None:
    """cpgraph.check_all on the adapter's policy: the EP steps are a part of the one report (key ep_steps)."""
    from cpgraph import check_all

    report = check_all(policy("0.16.0"), max_cases=600)
    part = report.part("ep_steps")
    assert not report.ok and part is not None and not report.batches
    assert "rank_consensus" in {v.invariant for v in part.violations}
    assert part.summary().startswith("EP steps of megatron-core 0.16.0: FAILED - rank_consensus")
