"""`cpgraph check` contracts: exit codes 0/1/2, the JSON object's shape, usage and import errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cpgraph.cli import main

# Counts, not times: what each test asserts holds on a fast machine and a busy one alike.
FAST = ["--max-cases", "300", "--cp-sizes", "2,4"]  # for sound policies
BUGGY = ["--max-cases", "2000", "--cp-sizes", "2,4"]  # the mutants below break within their first few hundred


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_sound_policy_exits_0_with_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "cpgraph.reference.policy", "--json", *FAST)
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"ok", "violations", "cases", "seconds", "seed", "checked", "phases", "stopped"}
    assert data["ok"] is True and data["violations"] == [] and data["cases"] == 300 and data["seconds"] > 0


def test_buggy_policy_exits_1_and_names_the_invariant_and_counterexample(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "cpgraph.proofs.mutants.ignore_capacity", "--json", "--capacities", "captured", *BUGGY)
    assert code == 1
    data = json.loads(out)
    assert data["ok"] is False
    v = next(v for v in data["violations"] if v["invariant"] == "capacity_fit")
    assert set(v) >= {"invariant", "counterexample", "detail", "answers"}
    assert set(v["counterexample"]) == {
        "cp_size", "align_size", "num_tokens", "extend_seq_lens", "capture_num_tokens", "bucket_local_tokens", "max_padding_factor",
    }
    assert sum(v["counterexample"]["extend_seq_lens"]) == v["counterexample"]["num_tokens"]
    assert "holds" in v["detail"]


def test_text_report_stays_within_15_lines_per_violation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "cpgraph.proofs.mutants.local_load", *BUGGY)
    assert code == 1
    blocks = out.strip().split("\n\n")[1:]
    assert blocks and all(len(b.splitlines()) <= 15 for b in blocks)
    assert "rank_consensus violated" in out and "spec: loads" in out


def test_module_without_attr_and_a_file_path_are_accepted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    policy = tmp_path / "my_policy.py"
    policy.write_text("from reference.policy import admit, replay_bucket\n")
    assert _run(capsys, f"{policy}", *FAST)[0] == 0
    assert _run(capsys, f"{policy}:", *FAST)[0] == 2


@pytest.mark.parametrize(
    "argv, reason",
    [
        (["no_such_module_xyz:policy"], "cannot import policy module 'no_such_module_xyz'"),
        (["cpgraph.reference.policy:nope"], "has no attribute 'nope'"),
        (["reference:align_up"], "must have callable admit"),
        (["cpgraph.reference.policy", "--cp-sizes", "2,x"], "--cp-sizes must be comma-separated ints"),
        (["cpgraph.reference.policy", "--cp-sizes", "0"], "--cp-sizes must be comma-separated ints >= 1"),
        (["cpgraph.reference.policy", "--capacities", "bogus"], "capacities entry must be captured, headroom:R"),
        (["cpgraph.reference.policy", "--capacities", "headroom:0"], "headroom:R (R an int >= 1)"),
        (["cpgraph.reference.policy", "--strategy", "spiral"], "strategy must be one of zigzag"),
        (["cpgraph.reference.policy", "--budget-s", "0"], "argument --budget-s: must be a number of seconds in (0, 604800], got 0"),
        (["cpgraph.reference.policy", "--max-requests", "0"], "argument --max-requests: must be an int in 1..1024, got 0"),
        (["cpgraph.reference.policy", "--padding-factors", "1/2"], "padding_factors[] must be an int >= 1 or an exact rational"),
    ],
)
def test_usage_and_import_errors_exit_2_with_the_reason(capsys: pytest.CaptureFixture[str], argv: list[str], reason: str) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert reason in err and out == ""


def test_emit_test_and_plot_write_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    test_file, png = tmp_path / "test_regression.py", tmp_path / "layout.png"
    code, _, err = _run(capsys, "cpgraph.proofs.mutants.padded_layout", *BUGGY, "--emit-test", str(test_file), "--plot", str(png))
    assert code == 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    source = test_file.read_text()
    assert "POLICY = 'cpgraph.proofs.mutants.padded_layout'" in source and "def test_" in source
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)], capture_output=True, text=True)
    assert result.returncode == 1, result.stdout
    assert "capacity_fit broken" in result.stdout


def test_python_dash_m_cpgraph_check_runs_end_to_end() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cpgraph", "check", "cpgraph.proofs.mutants.largest_fitting", "--json", "--max-cases", "500"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["violations"][0]["invariant"] == "minimal_bucket"


def test_json_stays_one_object_when_the_policy_prints(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    policy = tmp_path / "chatty_policy.py"
    policy.write_text(
        "print('importing')\n"
        "from reference.policy import admit as _admit, replay_bucket\n"
        "def admit(**batch):\n    print('debug', batch['cp_rank'])\n    return _admit(**batch)\n"
    )
    code, out, err = _run(capsys, str(policy), "--json", *FAST)
    assert code == 0 and json.loads(out)["ok"] is True
    assert "importing" in err


def test_importing_cpgraph_and_check_policy_stays_light() -> None:
    code = (
        "import sys, cpgraph\n"
        "assert 'cpgraph.check' not in sys.modules\n"
        "cpgraph.check_policy\n"
        "heavy = [m for m in ('torch', 'matplotlib', 'z3', 'hypothesis') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
