"""Trusted verdicts on released stacks: a release whose code the adapter's glue does not fit ends the check
with exit 2 naming the adapter, the release, the changed name and the releases read against (never as a
violation); the pinned releases keep their verdicts; ranges and the newest releases on the package index
get one row each; a test emitted from a release fails, run alone, for the violation itself.

Releases come from the package index (fetched once per machine, .py files only); a test is skipped with pip's
reason when the index cannot be reached."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cpgraph.adapters.releases import ReleaseUnavailable, newest
from test_sglang_released import NEEDED  # the files the sglang selector runs (this folder is on sys.path)

CLI = [sys.executable, "-m", "cpgraph", "check"]
VLLM = "cpgraph.adapters.vllm:pcp"
SGLANG = "cpgraph.adapters.sglang:zigzag"
GPU = "vllm/v1/worker/gpu"


def _cli(*args: str, env: dict[str, str] | None = None, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=900, env=env, cwd=cwd)


def _planted(source: Path, into: Path, edit: Callable[[Path], None]) -> Path:
    shutil.copytree(source, into)
    edit(into)
    return into


def _replace_everywhere(old: str, new: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        for path in root.rglob("*.py"):
            text = path.read_text()
            if old in text:
                path.write_text(re.sub(rf"\b{re.escape(old)}\b", new, text))
    return edit


def _replace_in(rel: str, old: str, new: str, count: int = 1) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / rel
        text = path.read_text()
        assert old in text, f"{old!r} not in {rel}"
        path.write_text(text.replace(old, new, count))
    return edit


VLLM_PLANTS = {
    # a changed constructor: CudaGraphManager takes a new required parameter
    "max_capture_tokens": _replace_in(f"{GPU}/cudagraph_utils.py", "        decode_query_len: int,\n", "        decode_query_len: int,\n        max_capture_tokens: int,\n"),
    # a renamed method, throughout the release
    "_build_batch_layout": _replace_everywhere("_build_batch_layout", "_lay_out_batch"),
    # an attribute the adapter sets, renamed throughout the release
    "_graphs_captured": _replace_everywhere("_graphs_captured", "_captured_all"),
    # a configuration field the adapter fills, renamed throughout the release
    "cudagraph_capture_sizes": _replace_everywhere("cudagraph_capture_sizes", "graph_capture_sizes"),
}


@pytest.mark.parametrize("name", sorted(VLLM_PLANTS))
def test_a_vllm_release_whose_glue_changed_is_a_usage_error_naming_it(vllm_release: Callable[[str], Path], tmp_path: Path, name: str) -> None:
    root = _planted(vllm_release("0.33.0"), tmp_path / "planted", VLLM_PLANTS[name])
    done = _cli(VLLM, "--adapter-root", str(root), "--max-cases", "200")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "violated" not in done.stdout + done.stderr
    for said in ("cpgraph.adapters.vllm cannot drive vLLM 0.33.0", name, "read against vLLM 0.26.0-", "not a finding about the release"):
        assert said in done.stderr, (said, done.stderr)


def test_a_glue_failure_during_the_run_is_a_usage_error_naming_the_releases_frame(vllm_release: Callable[[str], Path], tmp_path: Path) -> None:
    # dispatch reads a table under a name __init__ never sets: the preflight cannot see it, the run does
    def edit(root: Path) -> None:
        path = root / GPU / "cudagraph_utils.py"
        text = path.read_text()
        head, _, tail = text.partition("    def dispatch(")
        path.write_text(head + "    def dispatch(" + tail.replace("self._candidates", "self._candidate_map", 2))
    root = _planted(vllm_release("0.33.0"), tmp_path / "planted", edit)
    done = _cli(VLLM, "--adapter-root", str(root), "--max-cases", "200")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "adapter glue: cpgraph.adapters.vllm cannot drive vLLM 0.33.0" in done.stderr
    assert "'_candidate_map'" in done.stderr and f"in dispatch at {GPU}/cudagraph_utils.py:" in done.stderr
    assert "violated" not in done.stdout


SGLANG_RUNNER = "sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py"
SGLANG_PLANTS = {
    # a changed signature: can_run_graph takes a new required parameter its caller does not pass (refused where
    # the release's model runner calls it: the adapter drives that call, it does not call can_run_graph itself)
    "capture_mode": (_replace_in(SGLANG_RUNNER, "def can_run_graph(self, forward_batch", "def can_run_graph(self, capture_mode, forward_batch"),
                     ("can_run_graph() missing 1 required positional argument", "sglang/srt/model_executor/model_runner.py:")),
    # a signature the adapter calls: the CP layout's prepare_cp_forward takes a new required parameter
    "prepare_cp_forward": (_replace_in("sglang/srt/layers/cp/utils.py", "def prepare_cp_forward(forward_batch", "def prepare_cp_forward(layout, forward_batch"),
                           ("prepare_cp_forward", "sglang/srt/layers/cp/utils.py:")),
    # an attribute the adapter sets on the CP-BCG input (its capture state), renamed throughout the release
    "bucket_local_tokens": (_replace_everywhere("bucket_local_tokens", "local_tokens_by_bucket"), ("local_tokens_by_bucket",)),
}
# Renamed throughout the release: the adapter runs the code rather than matching its shape, so the verdict stays.
SGLANG_REFACTORS = {
    "load_batch": _replace_everywhere("load_batch", "load_cp_batch"),
    "select_replay_bucket": _replace_everywhere("select_replay_bucket", "pick_replay_bucket"),
}


@pytest.mark.parametrize("name", sorted(SGLANG_PLANTS))
def test_an_sglang_release_whose_glue_changed_is_a_usage_error_naming_it(
    sglang_release: Callable[[str, tuple[str, ...]], Path], tmp_path: Path, name: str
) -> None:
    edit, named = SGLANG_PLANTS[name]
    root = _planted(sglang_release("0.5.23", NEEDED), tmp_path / "planted", edit)
    done = _cli(SGLANG, "--adapter-root", str(root), "--max-cases", "200", "--padding-factors", "2", "--cp-sizes", "2,4")
    assert done.returncode == 2, done.stdout + done.stderr
    for said in ("cpgraph.adapters.sglang cannot drive sglang 0.5.23", *named, "read against sglang 0.5.17-"):
        assert said in done.stderr, (said, done.stderr)


@pytest.mark.parametrize("name", sorted(SGLANG_REFACTORS))
def test_an_sglang_release_renamed_throughout_keeps_its_verdict(
    sglang_release: Callable[[str, tuple[str, ...]], Path], tmp_path: Path, name: str
) -> None:
    root = _planted(sglang_release("0.5.23", NEEDED), tmp_path / "renamed", SGLANG_REFACTORS[name])
    done = _cli(SGLANG, "--adapter-root", str(root), "--max-cases", "200", "--padding-factors", "2", "--cp-sizes", "2,4")
    assert done.returncode == 0 and "OK - 200 batches" in done.stdout, done.stdout + done.stderr


def test_vllm_0_34_gives_a_real_verdict_with_the_releases_own_code(vllm_release: Callable[[str], Path]) -> None:
    root = vllm_release("0.34.0")
    done = _cli(VLLM, "--adapter-root", str(root), "--max-cases", "1500", "--path-cases", "60", "--dp-sizes", "1", "--json", "--quiet")
    assert done.returncode == 1, done.stdout + done.stderr  # a verdict of the release's own code, not a glue failure
    found = json.loads(done.stdout)
    assert found["violations"] == [] and found["graph_paths"]["ok"] is False  # the prefill bucket holds; a decode path does not
    for v in found["graph_paths"]["violations"]:
        assert (v["invariant"], v["cost"], v["placement"]) == ("no_needless_fallback", "speed", "dual_chunk_swap")
        assert v["mode"] in ("FULL_AND_PIECEWISE", "FULL_DECODE_ONLY") and v["should"]["mode"] == "FULL"
        # the statements that ran on the minimised case (cited.py): the request count handed to dispatch with its
        # role, _is_compatible's request check (a decode path's explanation, run there); the release checked from
        # its cached copy, so nothing is marked changed (was: 10 role lines, run or not)
        lines = v["decided_at"]
        assert all(where.startswith("vllm/") for where in lines) and not any("as released" in w for w in lines)
        assert any("num_reqs = len(scheduler_output.num_scheduled_tokens)` (the request count" in w for w in lines), lines
        assert any("cudagraph_utils.py" in w and "desc.num_reqs >= num_reqs" in w for w in lines), lines


def test_a_range_prints_one_row_per_release_and_the_pre_fix_ones_fail(vllm_release: Callable[[str], Path]) -> None:
    for version in ("0.26.0", "0.28.0", "0.29.0", "0.34.0"):
        vllm_release(version)  # the pinned ones through the shared cache (skips when the index is unreachable)
    done = _cli(VLLM, "--release", "0.26.0..0.34.0", "--max-cases", "200", "--quiet", "--no-graph-paths")
    if "unavailable" in done.stdout:
        pytest.skip(f"a release in the range cannot be fetched here: {done.stdout[-400:]}")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^(\d+\.\d+\.\d+)\s+\S+\s+(OK|FAILED .+?)\s{2,}\d+\s", done.stdout, re.M)}
    assert done.returncode == 1, done.stdout + done.stderr
    assert [v for v in rows] == sorted(rows, key=lambda v: tuple(map(int, v.split(".")))) and {"0.26.0", "0.34.0"} <= set(rows)
    for version, verdict in rows.items():
        pre_fix = tuple(map(int, version.split("."))) < (0, 29, 0)
        assert ("admission_replay" in verdict) == pre_fix and (verdict == "OK") == (not pre_fix), (version, verdict)


def test_the_test_emitted_from_0_28_fails_alone_on_admission_replay(vllm_release: Callable[[str], Path], tmp_path: Path) -> None:
    root = vllm_release("0.28.0")
    emitted = tmp_path / "elsewhere" / "test_vllm_regression.py"
    done = _cli(VLLM, "--adapter-root", str(root), "--max-cases", "300", "--emit-test", str(emitted), "--no-graph-paths")
    assert done.returncode == 1 and emitted.is_file(), done.stderr
    source = emitted.read_text()
    assert "RELEASE = '0.28.0'" in source and f"'{root}" not in source  # the release named, no absolute path
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(emitted)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "test_pcp_keeps_admission_replay FAILED" in ran.stdout or "FAILED" in ran.stdout and "admission_replay broken" in ran.stdout
    assert "admission_replay broken: rank 0 admitted for size" in ran.stdout
    installed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(emitted)],
                               capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**env, "CPGRAPH_RELEASE": "installed"})
    assert installed.returncode == 1 and "vLLM is not installed" in installed.stdout  # asked for the installed stack


@pytest.mark.parametrize("package, target", [("vllm", VLLM), ("sglang", SGLANG)])
def test_the_newest_release_on_the_package_index_gets_a_real_verdict(package: str, target: str) -> None:
    try:
        version = newest(package)
    except ReleaseUnavailable as exc:
        pytest.skip(f"the package index cannot be asked for the newest {package}: {exc}")
    extra = ["--padding-factors", "2", "--cp-sizes", "2,4,8"] if package == "sglang" else ["--path-cases", "40"]
    done = _cli(target, "--release", version, "--max-cases", "300", "--quiet", *extra)
    if "unavailable" in done.stdout:
        pytest.skip(f"{package} {version} cannot be fetched here: {done.stdout[-400:]}")
    assert done.returncode in (0, 1), (
        f"{package} {version} is out and the adapter's glue does not fit it (exit {done.returncode}): "
        f"{done.stdout[-600:]}{done.stderr[-600:]}"
    )
