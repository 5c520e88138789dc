"""The graph-path subject runs through the one pipeline: its calls are supervised as the batch subject's are
(--call-timeout-s, an exit, a protocol break: exit 1, 1, 2), a driver that raises is judged, a user's own
decode dispatcher (examples/decode_dispatcher) is checked through the public protocol from the command line and
from pytest, and the summary names only the failing paths, each apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cpgraph.check import PathDriver, check_all, check_paths
from cpgraph.check.calls import PolicyStop
from cpgraph.check.subjects import Finding, Part

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "decode_dispatcher"
GOOD, WRONG = str(EXAMPLE / "dispatcher.py") + ":policy", str(EXAMPLE / "wrong_dispatcher.py") + ":policy"
SMALL = ["--path-cases", "40", "--cp-sizes", "1,2", "--call-timeout-s", "1"]
BASE = (
    "import sys, time\n"
    f"sys.path.insert(0, {str(EXAMPLE)!r})\n"
    "from dispatcher import DecodeDispatcher\n"
    "class Driver(DecodeDispatcher):\n"
    "    def answers_dp(self, steps, config):\n"
)
DRIVERS = {
    "hangs": BASE + "        time.sleep(3600)\n",
    "exits": BASE + "        sys.exit(3)\n",
    "short": BASE + "        return super().answers_dp(steps, config)[:-1] if len(steps) > 1 else super().answers_dp(steps, config)\n",
    "untyped": BASE + "        return [[('FULL', 1)] * s.cp_size for s in steps]\n",
    "raises": BASE + "        if any(s.cp_size == 2 for s in steps):\n            raise ZeroDivisionError('dispatcher bug')\n"
                     "        return super().answers_dp(steps, config)\n",
}


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run([sys.executable, "-m", "cpgraph", "check", *argv], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture()
def drivers(tmp_path: Path) -> dict[str, str]:
    out = {}
    for name, source in DRIVERS.items():
        (tmp_path / f"{name}.py").write_text(source + "policy = Driver()\n")
        out[name] = f"{tmp_path / name}.py:policy"
    return out


def test_a_users_decode_dispatcher_is_checked_from_the_command_line_as_an_adapter_is() -> None:
    good = _cli(GOOD, *SMALL, "--json", "-q")
    assert good.returncode == 0, good.stdout + good.stderr
    data = json.loads(good.stdout)
    assert data["ok"] and data["batches"] is False and len(data["graph_paths"]["paths"]) == 4
    wrong = _cli(WRONG, *SMALL, "--json", "-q")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    found = json.loads(wrong.stdout)["graph_paths"]["violations"]
    assert {(v["invariant"], v["dp_size"], v["subject"]) for v in found} == {("rank_consensus", 2, "graph_path")}
    assert all(len(v["steps"]) == 2 and all(len(s["lengths"]) <= 2 for s in v["steps"]) for v in found)  # minimised


def test_pytest_gets_the_same_through_cpgraph_testing() -> None:
    from cpgraph.testing import assert_policy_sound

    report = assert_policy_sound(GOOD, path_cases=40, cp_sizes=(1, 2))
    assert report.part("graph_paths").ok and not report.batches
    with pytest.raises(AssertionError, match="rank_consensus violated on the FULL_AND_PIECEWISE, decodes dual_chunk_swap"):
        assert_policy_sound(WRONG, path_cases=40, cp_sizes=(1, 2))


@pytest.mark.parametrize("name, code, said", [
    ("hangs", 1, "answers_dp(...) did not return within 1 s"),
    ("exits", 1, "answers_dp(...) raised SystemExit(3)"),
    ("short", 2, "protocol error"),
    ("untyped", 2, "the protocol requires one sequence per DP rank's step of one cpgraph.PathAnswer per rank"),
])
def test_a_driver_call_is_supervised_as_a_batch_policy_call_is(drivers: dict[str, str], name: str, code: int, said: str) -> None:
    done = _cli(drivers[name], *SMALL)
    assert done.returncode == code and said in done.stdout + done.stderr, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def test_a_driver_that_raises_breaks_admission_replay_on_a_minimal_step(drivers: dict[str, str]) -> None:
    done = _cli(drivers["raises"], *SMALL, "--json", "-q", "--dp-sizes", "1")
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)["graph_paths"]["violations"]
    assert {v["invariant"] for v in found} == {"admission_replay"}
    assert all("ZeroDivisionError: dispatcher bug" in v["why"] and v["steps"][0]["cp_size"] == 2 for v in found)


def test_the_api_raises_the_stop_of_a_hung_driver(drivers: dict[str, str]) -> None:
    with pytest.raises(PolicyStop, match="did not return within 0.5 s"):
        check_all(drivers["hangs"], path_cases=5, cp_sizes=(1, 2), call_timeout_s=0.5)


def test_the_summary_names_only_the_failing_paths_each_apart() -> None:
    sys.path.insert(0, str(EXAMPLE))
    try:
        from dispatcher import DecodeDispatcher
        from wrong_dispatcher import OwnStepDispatcher
    finally:
        sys.path.remove(str(EXAMPLE))

    class Copied(DecodeDispatcher):  # two dcp sizes that place decodes alike (vLLM 0.29.0's dcp 1 and 2)
        def __init__(self, dcp: int) -> None:
            self.dcp_size = dcp

        def placement(self, cp_size: int) -> str:
            return "dual_chunk_swap_replicated"

    assert isinstance(Copied(1), PathDriver)
    ok = check_paths([Copied(1), Copied(2)], cp_sizes=(1, 2), cases=20, dp_sizes=(1,))
    names = [p.name for p in ok.paths]
    assert len(set(names)) == len(names) == 4 and "(dcp 2)" in names[-1]
    assert ok.summary() == "graph paths of decode_dispatcher example: OK - 4 paths, 80 steps"
    wrong = check_paths([OwnStepDispatcher()], cp_sizes=(1, 2), cases=20, dp_sizes=(1, 2))
    assert wrong.summary().endswith("FAILED on 2 of 4 paths (80 steps) - FULL_AND_PIECEWISE, decodes dual_chunk_swap (dcp 1), "
                                    "DP 2; FULL_DECODE_ONLY, decodes dual_chunk_swap (dcp 1), DP 2")


HEADLINE = r"^(\w+) violated on (.+) \((safety|efficiency): (.+); costs (.+)\)$"


def test_a_batch_finding_and_a_path_finding_read_alike_with_the_tables_sentence_on_their_subject() -> None:
    import re

    from cpgraph.reference.invariants import INVARIANT_TABLE

    batch = check_all("cpgraph.proofs.mutants.ignore_capacity", max_cases=300, boundary=False, workers=1).violations[0]
    path = check_all(WRONG, path_cases=20, cp_sizes=(1, 2)).part("graph_paths").violations[0]
    for finding, column in ((batch, "batch_global"), (path, "graph_path")):
        head = re.match(HEADLINE, finding.text().splitlines()[0])
        assert head is not None, finding.text()
        row = INVARIANT_TABLE[head.group(1)]
        assert (head.group(2), head.group(4), head.group(5)) == (finding.where, row.stated(column), row.cost)
        assert {"invariant", "subject", "path", "cost", "detail"} <= set(finding.to_json())
        assert isinstance(finding, Finding)


def test_the_one_report_renders_a_graph_path_part_in_markdown_and_junit() -> None:
    report = check_all(WRONG, path_cases=20, cp_sizes=(1, 2))
    md, junit = report.render("md"), report.render("junit")
    assert "FAILED on 2 of 4 paths" in md and "<code>rank_consensus</code> on the FULL_DECODE_ONLY" in md
    assert junit.count("<testcase") == 4 and junit.count("<failure") == 2 and "DP 2" in junit
    assert not report.ok and report.findings == report.part("graph_paths").violations
    assert isinstance(report.part("graph_paths"), Part)
