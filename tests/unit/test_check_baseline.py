"""`cpgraph check --baseline`: the verdict diff (fixed, still failing, newly failing, ok) on synthetic findings, its
exit codes and formats, bad flags (exit 2 naming flag and value, before any work), and real releases: 0.31.0
against 0.34.0 (the dealt-decode miss newly fails) and 0.34.0 against the patched tree under
examples/vllm_dealt_decode_fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from cpgraph.cli import main
from cpgraph.commands.verdict_diff import Finding, Side, diff, exit_code, render, status_of

FIX = Path(__file__).resolve().parents[2] / "examples" / "vllm_dealt_decode_fix"
PATCHED = ("dp_utils.py", "model_runner.py", "pcp_manager.py")  # the files fix.patch edits
SMALL = ["--max-cases", "40", "--path-cases", "30", "--cp-sizes", "2", "--dcp-sizes", "1", "-q"]  # with --dp-sizes


def _side(label: str, broken: dict[tuple[str, str], str], paths: tuple[str, ...] = ("prefill", "P, DP 1")) -> Side:
    checked = tuple((p, i) for p in paths for i in ("capacity_fit", "no_needless_fallback"))
    return Side(label, checked, tuple(Finding(p, i, w, f"{i} on {p}: {w}") for (p, i), w in broken.items()))


def test_status_names_each_pair_of_verdicts() -> None:
    assert status_of("violated", "held") == "fixed"
    assert status_of("violated", "violated") == "still failing"
    assert status_of("held", "violated") == "newly failing"
    assert status_of("not checked", "violated") == "newly failing"
    assert status_of("held", "held") == "ok"
    assert status_of("not checked", "held") == "ok"
    assert status_of("violated", "not checked") == "not checked"
    with pytest.raises(ValueError, match="'broken'"):
        status_of("broken", "held")


def test_diff_pairs_findings_by_path_and_invariant_and_shows_the_right_witness() -> None:
    base = _side("base", {("P, DP 1", "no_needless_fallback"): "base witness", ("prefill", "capacity_fit"): "old"})
    cand = _side("cand", {("P, DP 1", "capacity_fit"): "new witness", ("prefill", "capacity_fit"): "still"})
    rows = {(r.path, r.invariant): r for r in diff(base, cand)}
    assert rows[("P, DP 1", "no_needless_fallback")].status == "fixed"
    assert rows[("P, DP 1", "no_needless_fallback")].witness is not None
    assert rows[("P, DP 1", "no_needless_fallback")].witness.witness == "base witness"  # type: ignore[union-attr]
    assert rows[("P, DP 1", "capacity_fit")].status == "newly failing"
    assert rows[("P, DP 1", "capacity_fit")].witness.witness == "new witness"  # type: ignore[union-attr]
    assert rows[("prefill", "capacity_fit")].status == "still failing"
    assert rows[("prefill", "capacity_fit")].witness.witness == "still"  # type: ignore[union-attr]
    assert rows[("prefill", "no_needless_fallback")].status == "ok"
    assert rows[("prefill", "no_needless_fallback")].witness is None
    assert [r.path for r in diff(base, cand)][:2] == ["prefill", "prefill"]


def test_exit_is_one_only_when_something_newly_fails() -> None:
    base = _side("base", {("prefill", "capacity_fit"): "w"})
    assert exit_code(diff(base, _side("cand", {("prefill", "capacity_fit"): "w"}))) == 0  # still failing: shown, not gating
    assert exit_code(diff(base, _side("cand", {}))) == 0  # fixed
    assert exit_code(diff(base, _side("cand", {("P, DP 1", "capacity_fit"): "w"}))) == 1  # newly failing
    new_path = _side("cand", {("Q, DP 2", "capacity_fit"): "w"}, paths=("prefill", "P, DP 1", "Q, DP 2"))
    assert exit_code(diff(base, new_path)) == 1  # a path the baseline did not run that fails is newly failing


def test_a_finding_on_a_pair_not_checked_is_refused() -> None:
    with pytest.raises(ValueError, match="did not check"):
        Side("x", (("prefill", "capacity_fit"),), (Finding("P, DP 1", "capacity_fit", "w"),))


def test_every_format_carries_the_statuses() -> None:
    base = _side("base", {("P, DP 1", "no_needless_fallback"): "bw", ("prefill", "capacity_fit"): "pw"})
    cand = _side("cand", {("P, DP 1", "capacity_fit"): "cw", ("prefill", "capacity_fit"): "pw"})
    rows = diff(base, cand)
    data = json.loads(render("t", base, cand, rows, "json"))
    assert data["counts"] == {"newly failing": 1, "still failing": 1, "fixed": 1, "not checked": 0, "ok": 1}
    assert data["exit"] == 1
    fixed = next(r for r in data["rows"] if r["status"] == "fixed")
    assert fixed["witness"]["side"] == "baseline" and fixed["witness"]["text"] == "bw"
    xml = render("t", base, cand, rows, "junit")
    assert xml.count("<failure") == 1 and xml.count("<skipped") == 1 and 'tests="4"' in xml
    text = render("t", base, cand, rows, "text")
    assert "newly failing" in text and "== fixed: no_needless_fallback on P, DP 1 (baseline's witness)" in text
    assert text.index("newly failing  P, DP 1") < text.index("still failing  prefill")  # newly failing rows first
    md = render("t", base, cand, rows, "md")
    assert md.startswith("### t") and "| newly failing | P, DP 1 | capacity_fit |" in md


@pytest.mark.parametrize(("extra", "named"), [
    (["--baseline", "zero.three"], "--baseline 'zero.three': neither a folder nor a release version"),
    (["--baseline", "0.34.0", "--release", "0.34.0"], "--baseline 0.34.0 and --release 0.34.0"),
    (["--baseline", "0.34.0", "--emit-test", "t.py"], "--baseline 0.34.0 and --emit-test t.py"),
])
def test_bad_baseline_flags_are_usage_errors(extra: list[str], named: str, capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check", "cpgraph.adapters.vllm:pcp", *extra]) == 2
    assert named in capsys.readouterr().err


def test_a_baseline_folder_without_the_stack_and_a_non_adapter_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "cpgraph.adapters.vllm:pcp", "--baseline", str(tmp_path)]) == 2
    assert "holds no vllm/ package" in capsys.readouterr().err
    assert main(["check", "cpgraph.adapters.vllm:pcp", "--baseline", "0.34.0", "--adapter-root", str(tmp_path)]) == 2
    assert f"--adapter-root '{tmp_path}': the folder holds no vllm/ package" in capsys.readouterr().err
    assert main(["check", "cpgraph.adapters.vllm:pcp", "--baseline", "0.34.0"]) == 2  # vLLM is not installed here
    assert "vllm is not installed here" in capsys.readouterr().err
    assert main(["check", "cpgraph.reference.policy", "--baseline", "0.34.0"]) == 2
    assert "--baseline" in capsys.readouterr().err


def _patched(release: Path, tmp_path: Path, version: str, patch: str = "") -> Path:
    """A copy of ``release`` (links to its files) with the fix (or ``patch``) applied to the files it edits."""
    if shutil.which("patch") is None:
        pytest.skip("needs the patch command (GNU patch) to apply examples/vllm_dealt_decode_fix")
    tree = tmp_path / f"vllm-{version}-{patch or 'fixed'}"
    shutil.copytree(release, tree, copy_function=os.symlink)
    for name in PATCHED:
        target = tree / "vllm" / "v1" / "worker" / "gpu" / name
        target.unlink()
        shutil.copyfile(release / "vllm" / "v1" / "worker" / "gpu" / name, target)
    fix = FIX / (patch or ("fix.patch" if version == "0.34.0" else f"fix-{version}.patch"))
    subprocess.run(["patch", "-p1", "-s", "-i", str(fix)], cwd=tree, check=True)
    return tree


def test_the_dealt_decode_miss_newly_fails_from_0_31_to_0_34(vllm_release: Callable[[str], Path], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "cpgraph.adapters.vllm:pcp", "--baseline", str(vllm_release("0.31.0")),
                 "--adapter-root", str(vllm_release("0.34.0")), "--cudagraph-modes", "FULL_DECODE_ONLY", *SMALL, "--dp-sizes", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    rows = {(r["path"], r["invariant"]): r for r in data["rows"]}
    row = rows[("FULL_DECODE_ONLY, dcp 1 (decodes dealt), DP 1", "no_needless_fallback")]
    assert row["status"] == "newly failing" and row["witness"]["side"] == "candidate"
    assert row["witness"]["steps"][0]["lengths"] == [1, 1]
    assert code == 1


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0", "0.34.0"])
def test_the_fix_applies_to_every_affected_release(version: str, vllm_release: Callable[[str], Path], tmp_path: Path) -> None:
    tree = _patched(vllm_release(version), tmp_path, version)
    text = (tree / "vllm" / "v1" / "worker" / "gpu" / "model_runner.py").read_text(encoding="utf-8")
    assert "dispatch_num_reqs=dispatch_num_reqs" in text
    assert "def get_num_reqs_for_dispatch(" in (tree / "vllm" / "v1" / "worker" / "gpu" / "pcp_manager.py").read_text(encoding="utf-8")


def test_the_fix_mends_the_dealt_decode_full_graph_miss(vllm_release: Callable[[str], Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    tree = _patched(vllm_release("0.34.0"), tmp_path, "0.34.0")
    code = main(["check", "cpgraph.adapters.vllm:pcp", "--baseline", str(vllm_release("0.34.0")), "--adapter-root", str(tree),
                 "--cudagraph-modes", "FULL_DECODE_ONLY", *SMALL, "--dp-sizes", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    rows = {(r["path"], r["invariant"]): r["status"] for r in data["rows"]}
    assert rows[("FULL_DECODE_ONLY, dcp 1 (decodes dealt), DP 1", "no_needless_fallback")] == "fixed"
    assert "newly failing" not in rows.values() and code == 0


def test_a_fix_that_mends_dp_1_and_breaks_dp_2_shows_it(vllm_release: Callable[[str], Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """half-fix.patch dispatches with the rank-local count but leaves the DP sync's re-dispatch on the global one."""
    tree = _patched(vllm_release("0.34.0"), tmp_path, "0.34.0", "half-fix.patch")
    code = main(["check", "cpgraph.adapters.vllm:pcp", "--baseline", str(vllm_release("0.34.0")), "--adapter-root", str(tree),
                 "--cudagraph-modes", "FULL_DECODE_ONLY", *SMALL, "--dp-sizes", "1,2", "--json"])
    rows = {(r["path"], r["invariant"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows[("FULL_DECODE_ONLY, dcp 1 (decodes dealt), DP 1", "no_needless_fallback")]["status"] == "fixed"
    newly = rows[("FULL_DECODE_ONLY, dcp 1 (decodes dealt), DP 2", "rank_consensus")]
    assert newly["status"] == "newly failing" and len(newly["witness"]["steps"]) == 2
    assert code == 1
