"""vLLM's graph paths under prefill context parallel, driven through each release's own code
(cpgraph/adapters/vllm/paths.py): the modes each release runs, read from its code; the decode placements;
and the finding on 0.32.0-0.34.0, which stays red: with decodes dealt round-robin (dcp 1) a uniform decode step
never reaches a FULL decode graph that holds every rank's share, because dispatch checks a graph against the
GLOBAL request count (it runs PIECEWISE under FULL_AND_PIECEWISE, eagerly under FULL_DECODE_ONLY: a speed cost).

Releases come from the package index (fetched once per machine); skipped with pip's reason when it is unreachable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cpgraph.adapters.vllm import VllmPolicy, policy_from
from cpgraph.check.paths import check_paths
from cpgraph.reference.graph_paths import Graph, GraphConfig, GraphStep, expected

RELEASES = ("0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")  # every pinned release
SHARDED = ("0.32.0", "0.33.0", "0.34.0")  # decodes dealt round-robin at dcp 1
FULL_MODES = ("FULL_AND_PIECEWISE", "FULL_DECODE_ONLY")
CP = (1, 2, 4)
_BUILT: dict[tuple[str, int], VllmPolicy] = {}


@pytest.fixture(scope="module")
def release(vllm_release: Callable[[str], Path]) -> Callable[..., VllmPolicy]:
    def make(version: str, dcp_size: int = 1) -> VllmPolicy:
        if (version, dcp_size) not in _BUILT:
            _BUILT[(version, dcp_size)] = policy_from(str(vllm_release(version)), dcp_size=dcp_size)
        return _BUILT[(version, dcp_size)]
    return make


@pytest.mark.parametrize("version", RELEASES)
def test_the_modes_a_release_runs_are_read_from_its_code(release: Callable[..., VllmPolicy], version: str) -> None:
    paths = release(version).graph_paths()
    assert paths.modes == (("PIECEWISE",) if version < "0.30.0" else ("PIECEWISE", *FULL_MODES))
    assert paths.placement(2) == ("dual_chunk_swap" if version in SHARDED else "dual_chunk_swap_replicated")
    assert release(version, 2).graph_paths().placement(2) == ("dual_chunk_swap_dcp" if version >= "0.30.0" else "dual_chunk_swap_replicated")


@pytest.mark.parametrize("version", RELEASES)
def test_every_path_but_sharded_full_decodes_keeps_every_invariant(release: Callable[..., VllmPolicy], version: str) -> None:
    dcp1, dcp2 = release(version).graph_paths(), release(version, 2).graph_paths()
    report = check_paths([dcp1, dcp2], cp_sizes=CP, cases=80, seed=7)
    broken = {(v.invariant, v.mode, v.dcp_size) for v in report.violations}
    want = {("no_needless_fallback", mode, 1) for mode in FULL_MODES} if version in SHARDED else set()
    if version < "0.29.0":  # the shipped bug on every path: dispatched by n, replayed under the largest rank's rows
        assert {(i, m) for i, m, _ in broken} >= {("admission_replay", "PIECEWISE")}, report.text()
        return
    assert broken == want, report.text()


@pytest.mark.parametrize("version", SHARDED)
@pytest.mark.parametrize("mode, ran", [("FULL_AND_PIECEWISE", Graph("PIECEWISE", 1)), ("FULL_DECODE_ONLY", None)])
def test_two_sharded_decodes_pass_over_the_decode_graph_that_holds_each_ranks_one(
    release: Callable[..., VllmPolicy], version: str, mode: str, ran: Graph | None
) -> None:
    paths = release(version).graph_paths()
    config = GraphConfig(mode, (1,), (1,), (1,), 256)
    step = GraphStep((1, 1), (False, False), 2, paths.placement(2))
    graphs = paths.captured(config)
    answers = paths.answers(step, config)
    assert Graph("FULL", 1, 1, 1) in graphs  # the release captured the one-request decode graph
    assert [(a.rows, a.requests) for a in answers] == [(1, 1), (1, 1)]  # and each rank holds one decode
    assert expected(step, graphs, [(a.rows, a.requests) for a in answers]) == Graph("FULL", 1, 1, 1)
    assert all(a.dispatched == ran and a.replayed == ran for a in answers)  # but dispatch ran another graph
    copied = release(version, 2).graph_paths()
    assert all(a.dispatched == Graph("FULL", 2, 2, 1) for a in copied.answers(replace_placement(step, copied.placement(2)), GraphConfig(mode, (2,), (2,), (1,), 256)))


def replace_placement(step: GraphStep, placement: str) -> GraphStep:
    return GraphStep(step.lengths, step.prefilling, step.cp_size, placement)


def test_the_cli_reports_the_finding_with_the_releases_lines_and_an_emitted_test_fails_on_it(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    root = vllm_release("0.34.0")
    emitted = tmp_path / "elsewhere" / "test_vllm_paths.py"
    done = subprocess.run([sys.executable, "-m", "cpgraph", "check", "cpgraph.adapters.vllm:pcp", "--adapter-root", str(root),
                           "--max-cases", "300", "--path-cases", "40", "--cp-sizes", "1,2,4", "--dp-sizes", "1,2", "--json",
                           "--quiet", "--emit-test", str(emitted)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)["graph_paths"]["violations"]
    assert {(v["invariant"], v["mode"], v["dcp_size"], v["dp_size"]) for v in found} == {
        *(("no_needless_fallback", m, 1, dp) for m in FULL_MODES for dp in (1, 2)),
        ("rank_consensus", "FULL_AND_PIECEWISE", 1, 2),  # the DP ranks agree PIECEWISE, then one re-dispatches FULL
    }
    lines = found[0]["decided_at"]
    assert any("model_runner.py" in w and "num_reqs = len(scheduler_output.num_scheduled_tokens)" in w for w in lines)
    assert any("cudagraph_utils.py" in w and "desc.num_reqs >= num_reqs" in w for w in lines)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(emitted)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert ran.returncode == 1 and "5 failed" in ran.stdout and "no_needless_fallback broken on FULL_DECODE_ONLY" in ran.stdout, ran.stdout[-3000:]
    assert "rank_consensus broken on FULL_AND_PIECEWISE" in ran.stdout


def test_dp_ranks_agree_the_slowest_mode_then_re_dispatch_apart(release: Callable[..., VllmPolicy]) -> None:
    # DP rank 0 holds one decode, DP rank 1 two, each dealt over 2 PCP ranks: DP rank 1 proposes PIECEWISE (its
    # one-request decode graph is checked against 2 requests), the release's DP sync agrees the slowest mode,
    # and each DP rank then re-dispatches with its own request count: DP rank 0 runs FULL, DP rank 1 PIECEWISE
    paths = release("0.34.0").graph_paths()
    config = GraphConfig("FULL_AND_PIECEWISE", (1,), (1,), (1,), 256)
    steps = (GraphStep((1,), (False,), 2, paths.placement(2)), GraphStep((1, 1), (False, False), 2, paths.placement(2)))
    answers = paths.answers_dp(steps, config)
    assert [a.dispatched for a in answers[0]] == [Graph("FULL", 1, 1, 1)] * 2
    assert [a.dispatched for a in answers[1]] == [Graph("PIECEWISE", 1)] * 2
    assert any("dp_utils.py" in line and "synced_desc" in line for line in release("0.34.0").decided_at("rank_consensus"))
    copied = release("0.34.0", 2).graph_paths()  # copied decodes: the DP ranks agree
    placed = tuple(replace_placement(s, copied.placement(2)) for s in steps)
    assert {a.dispatched for group in copied.answers_dp(placed, GraphConfig("FULL_AND_PIECEWISE", (2,), (2,), (1,), 256)) for a in group} == {Graph("FULL", 2, 2, 1)}


@pytest.mark.parametrize("flags, said", [
    (["--dp-sizes", "1,9"], "--dp-sizes must be comma-separated ints in 1..8"),
    (["--cudagraph-modes", "FULL_ONLY"], "--cudagraph-modes must be comma-separated modes from PIECEWISE"),
    (["--dcp-sizes", "0"], "--dcp-sizes must be comma-separated ints >= 1"),
])
def test_bad_graph_path_flags_are_usage_errors(vllm_release: Callable[[str], Path], flags: list[str], said: str) -> None:
    done = subprocess.run([sys.executable, "-m", "cpgraph", "check", "cpgraph.adapters.vllm:pcp", "--adapter-root",
                           str(vllm_release("0.34.0")), "--max-cases", "10", *flags], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and said in done.stderr, done.stderr


def test_a_mode_the_release_does_not_run_under_pcp_is_a_usage_error(vllm_release: Callable[[str], Path]) -> None:
    done = subprocess.run([sys.executable, "-m", "cpgraph", "check", "cpgraph.adapters.vllm:pcp", "--adapter-root",
                           str(vllm_release("0.29.0")), "--max-cases", "10", "--cudagraph-modes", "FULL_DECODE_ONLY"],
                          capture_output=True, text=True, timeout=300)
    said = ("this release runs PIECEWISE under PCP", "the policy's graph paths run PIECEWISE")  # the wording moved to check/
    assert done.returncode == 2 and any(w in done.stderr for w in said), done.stderr


def test_a_full_graph_replayed_with_its_requests_padded_otherwise_breaks_admission_replay(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """A plant in the partition's request padding (0.31.0's ``_resolve_num_reqs_after_padding`` hands a FULL graph
    the rank's own request count instead of the count the graph was captured with): the descriptor replayed is
    the one dispatched, but its inputs are laid out for other requests. The check reads the padded count the
    release's partition made and reports it under admission_replay; the release as shipped keeps it."""
    from cpgraph.adapters.vllm.plants import copy_release

    root = Path(copy_release(str(vllm_release("0.31.0")), str(tmp_path / "planted")))
    path = root / "vllm/v1/worker/gpu/pcp_manager.py"
    text = path.read_text()
    old = "        return padded_num_reqs\n"
    assert text.count(old) == 1
    path.write_text(text.replace(old, "        return num_local_reqs\n"))
    for tree, broken in ((vllm_release("0.31.0"), False), (root, True)):
        paths = policy_from(str(tree)).graph_paths()
        report = check_paths([paths], cp_sizes=(2,), modes=("FULL_DECODE_ONLY",), cases=40, seed=7)
        assert ("admission_replay" in {v.invariant for v in report.violations}) is broken, report.text()
    finding = next(v for v in report.violations if v.invariant == "admission_replay")
    assert "padded to" in finding.why, finding.why
