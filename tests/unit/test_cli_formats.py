"""--format text|json|md|junit on every subcommand (--json an alias), --quiet, colour only on a terminal."""

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cpgraph.check.judging import INVARIANTS
from cpgraph.cli import main
from cpgraph.output import JUnitCase, highlight, junit, use_colour

BUGGY = ["cpgraph.proofs.mutants.ignore_capacity", "--capacities", "captured", "--max-cases", "2000", "--cp-sizes", "2,4"]
SOUND = ["cpgraph.reference.policy", "--max-cases", "300", "--cp-sizes", "2,4"]


def _cases(xml_text: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml_text)
    assert root.tag == "testsuites" and root.find("testsuite") is not None
    return {c.get("name", ""): c for c in root.iter("testcase")}


def test_check_junit_has_one_testcase_per_invariant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", *BUGGY, "--format", "junit", "-q"]) == 1
    out, err = capsys.readouterr()
    cases = _cases(out)
    assert list(cases) == list(INVARIANTS)
    failure = cases["capacity_fit"].find("failure")
    assert failure is not None and "capacity_fit violated" in (failure.text or "")
    assert err == ""  # --quiet


def test_check_json_alias_md_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", *SOUND, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert main(["check", *SOUND, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("### cpgraph check `cpgraph.reference.policy`") and "| `capacity_fit` | held |" in md
    assert main(["check", *SOUND]) == 0
    text = capsys.readouterr().out
    assert text.startswith("cpgraph check cpgraph.reference.policy: OK") and "\033[" not in text  # piped: no colour


@pytest.mark.usefixtures("prefix_review_served")  # the prefix design's review, computed once for the session
def test_review_junit_names_each_invariant_and_fails_the_refuted_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", "prefix", "--format", "junit", "-q"]) == 1
    cases = _cases(capsys.readouterr().out)
    assert list(cases) == list(INVARIANTS)
    assert cases["capacity_fit"].find("failure") is not None and cases["rank_consensus"].find("failure") is None


def test_simulate_junit_and_md(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.jsonl"
    workload.write_text("[1534, 161, 353]\n[4096]\n")
    assert main(["simulate", "--workload", str(workload), "upstream", "prefix", "--format", "junit"]) == 1
    cases = _cases(capsys.readouterr().out)
    assert cases["prefix: no batch overflows"].find("failure") is not None
    assert cases["upstream: no batch overflows"].find("failure") is None
    assert main(["simulate", "--workload", str(workload), "upstream", "--format", "md"]) == 0
    assert "| design |" in capsys.readouterr().out


def test_junit_escapes_what_xml_cannot_hold() -> None:
    text = junit("suite <&>", [JUnitCase("a\x00b", "c", "failure", 0.1, "msg \033[31mred\033[0m", "x < y & z")])
    case = next(ET.fromstring(text).iter("testcase"))
    failure = case.find("failure")
    assert case.get("name") == "a?b" and failure is not None and failure.get("message") == "msg red"
    assert failure.text == "x < y & z"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_on_a_terminal_only_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert use_colour(_Terminal()) and "\033[31;1mREFUTED\033[0m" in highlight("x REFUTED y", _Terminal())
    assert not use_colour(io.StringIO()) and highlight("REFUTED", io.StringIO()) == "REFUTED"
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(_Terminal()) and highlight("REFUTED", _Terminal()) == "REFUTED"


def test_a_stopped_check_is_a_failed_testcase_and_a_json_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "exits.py"
    policy.write_text("import sys\nfrom cpgraph.reference.policy import replay_bucket\ndef admit(**b):\n    sys.exit(3)\n")
    assert main(["check", str(policy), "--format", "junit", "--cp-sizes", "2"]) == 1
    cases = _cases(capsys.readouterr().out)
    failure = cases["policy_calls"].find("failure")
    assert failure is not None and "raised SystemExit(3)" in (failure.get("message") or "")
    assert main(["check", str(policy), "--json", "--cp-sizes", "2"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["policy_call"]["kind"] == "system_exit" and data["policy_call"]["method"] == "admit"


def test_plan_json_carries_the_design_and_its_review(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.jsonl"
    workload.write_text("\n".join(json.dumps([300 + 7 * i, 40]) for i in range(30)) + "\n")
    assert main(["plan", "--workload", str(workload), "--cp-size", "4", "--max-buckets", "3", "--format", "json", "-q"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert "capture_num_tokens" in data["planned"]["toml"] and data["review"]["exit_code"] == 0
    assert {x["invariant"] for x in data["review"]["invariants"]} == set(INVARIANTS) and err == ""
