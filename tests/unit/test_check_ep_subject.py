"""The EP subject runs through the one pipeline (``cpgraph check`` -> ``check_one``): its driver's calls are
supervised as a prefill policy's and a graph-path driver's are, with the same exit codes (a call past
--call-timeout-s: 1, sys.exit: 1, an answer of the wrong shape: 2; a driver that raises is judged,
admission_replay), and its findings are the one violation record. A stand-in EP driver (no Megatron-Core) keeps it cheap; tests/quality/test_megatron_released.py checks
the released code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cpgraph.check import Violation, check_all
from cpgraph.check.calls import PolicyStop

EP_BASE = (
    "import sys, time\n"
    "from cpgraph.reference.ep_graphs import EpAnswer, GraphDims, match\n"
    "class Driver:\n"
    "    version = 'stand-in 1'\n"
    "    dispatchers, sizings = ('alltoall',), ('exponential',)\n"
    "    all_prefills = auto_graphs = False\n"
    "    max_spec_tokens = 0\n"
    "    def ep_step_driver(self):\n"
    "        return self\n"
    "    def decided_at(self, invariant, kind=''):\n"
    "        return ('stand_in.py:1',)\n"
    "    def graphs(self, config):\n"
    "        return (GraphDims(config.max_tokens, 0, min(config.max_requests, config.max_tokens)),)\n"
    "    def answers(self, config, steps):\n"
    "        return tuple(EpAnswer(r, None) for r in range(len(steps)))  # every rank eager: they agree\n"
)
EP_DRIVERS = {
    "sound": EP_BASE,
    "hangs": EP_BASE + "    def answers(self, config, steps):\n        time.sleep(3600)\n",
    "exits": EP_BASE + "    def answers(self, config, steps):\n        sys.exit(3)\n",
    "short": EP_BASE + "    def answers(self, config, steps):\n        return (EpAnswer(0, None),)\n",
    "untyped": EP_BASE + "    def graphs(self, config):\n        return [(4, 0, 4)]\n",
    "raises": EP_BASE + "    def answers(self, config, steps):\n        raise ZeroDivisionError('driver bug')\n",
}
PREFILL_BASE = "import sys, time\nfrom cpgraph.reference.policy import admit, local_rows\n"
PREFILL_POLICIES = {
    "hangs": PREFILL_BASE + "def replay_bucket(**batch):\n    time.sleep(3600)\n",
    "exits": PREFILL_BASE + "def replay_bucket(**batch):\n    sys.exit(3)\n",
    "untyped": PREFILL_BASE + "def replay_bucket(**batch):\n    return 'a bucket'\n",
}
SMALL = ["--call-timeout-s", "1", "--max-cases", "40", "--ep-sizes", "2", "--cp-sizes", "1,2"]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run([sys.executable, "-m", "cpgraph", "check", *argv], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture()
def targets(tmp_path: Path) -> dict[str, str]:
    out = {}
    for subject, sources in (("ep", EP_DRIVERS), ("prefill", PREFILL_POLICIES)):
        for name, source in sources.items():
            (tmp_path / f"{subject}_{name}.py").write_text(source + ("policy = Driver()\n" if subject == "ep" else ""))
            out[f"{subject} {name}"] = f"{tmp_path / subject}_{name}.py" + (":policy" if subject == "ep" else "")
    return out


@pytest.mark.parametrize("name, code, said", [
    ("hangs", 1, "did not return within 1 s"),
    ("exits", 1, "raised SystemExit(3)"),
    ("untyped", 2, "protocol error"),
])
def test_an_ep_driver_call_is_supervised_as_a_prefill_policy_call_is(targets: dict[str, str], name: str, code: int, said: str) -> None:
    for subject in ("prefill", "ep"):
        done = _cli(targets[f"{subject} {name}"], *SMALL)
        assert (done.returncode, said in done.stdout + done.stderr) == (code, True), (subject, done.returncode, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr


def test_an_ep_answer_of_the_wrong_length_is_a_protocol_error_naming_the_call(targets: dict[str, str]) -> None:
    done = _cli(targets["ep short"], *SMALL)
    assert done.returncode == 2 and "answers(...)" in done.stderr and "2 EpAnswer records" in done.stderr, done.stderr


def test_the_ep_flags_are_fields_of_the_one_options_record_and_its_findings_the_one_record(targets: dict[str, str]) -> None:
    done = _cli(targets["ep sound"], *SMALL, "--ep-models", "hybrid", "--ep-spec-tokens", "0", "--no-idle-ranks", "--json", "-q")
    data = json.loads(done.stdout)
    part = data["ep_steps"]
    assert data["batches"] is False and part["steps"] == 40 and part["release"] == "stand-in 1"
    assert all(v["subject"] == "ep_step" and v["config"]["model"] == "hybrid" and None not in v["steps"] for v in part["violations"])
    report = check_all(targets["ep sound"], max_cases=40, ep_sizes=(2,), ep_models="dense")
    assert all(isinstance(v, Violation) and v.config.ep_size == 2 for v in report.findings)
    bad = _cli(targets["ep sound"], "--ep-models", "moe")
    assert bad.returncode == 2 and "ep_models" in bad.stderr and "moe" in bad.stderr


def test_an_ep_driver_that_raises_breaks_admission_replay_on_a_minimal_step(targets: dict[str, str]) -> None:
    done = _cli(targets["ep raises"], *SMALL, "--json", "-q")
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)["ep_steps"]["violations"]
    assert [v["invariant"] for v in found] == ["admission_replay"] and "ZeroDivisionError: driver bug" in found[0]["why"]
    assert sum(s is not None for s in found[0]["steps"]) == 1  # minimised: one busy rank


def test_the_api_raises_the_stop_of_a_hung_ep_driver(targets: dict[str, str]) -> None:
    with pytest.raises(PolicyStop, match="did not return within 0.5 s"):
        check_all(targets["ep hangs"], max_cases=5, ep_sizes=(2,), call_timeout_s=0.5)


MEGATRON = Path(os.environ.get("CPGRAPH_CACHE", str(Path.home() / ".cache" / "cpgraph"))) / "megatron-core"


def test_megatron_releases_and_a_baseline_go_through_the_one_entry_point() -> None:
    """--release and --baseline with the EP adapter: the same check_one as any target, one row per release and
    a verdict diff (the released verdicts themselves: tests/quality/test_megatron_released.py)."""
    if not (MEGATRON / "0.16.0").is_dir() or not (MEGATRON / "0.17.0").is_dir():
        pytest.skip(f"megatron-core 0.16.0 and 0.17.0 are not unpacked under {MEGATRON}")
    rows = _cli("cpgraph.adapters.megatron:ep", "--release", "0.16.0", "--max-cases", "300", "--format", "json", "-q")
    assert rows.returncode == 1, rows.stderr
    row = json.loads(rows.stdout)["releases"][0]
    assert row["verdict"].startswith("FAILED EP steps: rank_consensus") and row["report"]["ep_steps"]["steps"] == 300
    diff = _cli("cpgraph.adapters.megatron:ep", "--baseline", str(MEGATRON / "0.16.0"), "--adapter-root", str(MEGATRON / "0.17.0"),
                "--max-cases", "300", "-q")
    assert diff.returncode == 1 and "still failing  EP steps  rank_consensus" in diff.stdout, diff.stdout + diff.stderr
