"""`cpgraph prove`: exit codes, --only, --cp-max, --json shape, the table, failures with counterexamples."""

import json

import pytest

from cpgraph.cli import main
from cpgraph.proofs import registry
from cpgraph.proofs.engine.obligation import Query, obligation
from cpgraph.proofs.theorems.strategies import zigzag_loads_sum_to_tokens
from cpgraph.proofs.teeth.variants.catalogue import wrong_partner_request_loads


def test_only_one_theorem_proves_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["prove", "--only", "zigzag_loads_sum_to_tokens", "--cp-max", "3", "--jobs", "1"])
    out = capsys.readouterr()
    assert code == 0
    lines = out.out.splitlines()
    assert lines[0].split()[:4] == ["theorem", "scope", "verdict", "queries"]
    assert any(line.startswith("zigzag_loads_sum_to_tokens") and " proved " in line for line in lines)
    queries = sum(len(registry.BY_NAME["zigzag_loads_sum_to_tokens"].build(p)) for p in (1, 2, 3))
    assert f"1 theorems, {queries} queries, cp_size 1..3: all proved" in out.out
    assert "theorem instances checked" in out.err  # progress goes to stderr


def test_json_has_every_field_a_machine_needs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([
        "prove", "--json", "--cp-max", "2", "--jobs", "1",
        "--only", "headroom_bound_is_tight", "--only", "scan_selects_minimal_bucket",
    ])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["proved"] is True and report["cp_max"] == 2
    assert report["ok"] is True and report["verdict"] == "proved" and report["teeth"]["ok"] is True
    assert [t["name"] for t in report["theorems"]] == ["headroom_bound_is_tight", "scan_selects_minimal_bucket"]
    tight = report["theorems"][0]
    per_p = sum(len(registry.BY_NAME["headroom_bound_is_tight"].build(p)) for p in (1, 2))
    assert tight["verdict"] == "proved" and tight["queries"] == per_p and tight["failures"] == []
    assert set(tight) == {
        "name", "scope", "scope_declared", "parameters", "verdict", "queries", "seconds", "slowest_query", "failures"}
    assert tight["parameters"] == [1, 2] and tight["scope_declared"]["cp_sizes"] == {"kind": "every", "sizes": [1, 2]}
    assert "P = 1..2" in tight["scope"]
    assert report["queries"] == per_p + 32  # one query per capture-list length 1..32
    assert set(report["slowest_query"]) == {"theorem", "query", "seconds"}


def test_an_unknown_only_name_exits_2_and_lists_the_valid_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--only", "no_such_theorem"]) == 2
    err = capsys.readouterr().err
    assert "'no_such_theorem' is not a theorem" in err and len(err.strip().splitlines()) == 1
    assert all(name in err for name in registry.BY_NAME)


@pytest.mark.parametrize(
    "argv, says",
    [
        (["prove", "--cp-max", "0"], "argument --cp-max: must be an int in 1..64"),
        (["prove", "--cp-max", "x"], "argument --cp-max: must be an int in 1..64"),
        (["prove", "--cp-max", str(10**18)], f"got {10**18}"[:12]),
        (["prove", "--jobs", "-1"], "argument --jobs: must be an int in 1..256, got -1"),
        (["prove", "--seeds", str(10**18)], "argument --seeds: must be an int in 0..1000"),
        (["prove", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
        (["prove", "--bogus"], "cpgraph prove: error: unrecognized arguments: --bogus"),
    ],
)
def test_bad_numbers_and_flags_exit_2_with_one_line(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_junit_has_one_testcase_per_theorem(capsys: pytest.CaptureFixture[str]) -> None:
    import xml.etree.ElementTree as ET

    names = ["zigzag_loads_sum_to_tokens", "headroom_bound_is_tight"]
    code = main(["prove", "--format", "junit", "--cp-max", "2", "--jobs", "1", "-q", *[f"--only={n}" for n in names]])
    out = capsys.readouterr()
    assert code == 0 and out.err == ""  # --quiet: no progress
    root = ET.fromstring(out.out)
    cases = list(root.iter("testcase"))
    assert [c.get("name") for c in cases] == names
    assert root.find("testsuite") is not None and root.find("testsuite").get("failures") == "0"  # type: ignore[union-attr]
    assert all(c.find("failure") is None and c.find("error") is None for c in cases)


def test_md_is_a_pasteable_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--format", "md", "--cp-max", "2", "--jobs", "1", "--only", "zigzag_loads_sum_to_tokens"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### cpgraph prove") and "| `zigzag_loads_sum_to_tokens` |" in out and "**proved**" in out


def test_a_refuted_theorem_exits_1_with_a_minimal_replayed_counterexample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def zigzag_loads_with_a_wrong_partner_sum_to_tokens(cp_size: int) -> tuple[Query, ...]:
        """A theorem built on a wrong ownership formula (rank r owns blocks r and 2P-2-r)."""
        return zigzag_loads_sum_to_tokens(cp_size, request_loads=wrong_partner_request_loads)

    broken = obligation(zigzag_loads_with_a_wrong_partner_sum_to_tokens, scope="P = 1..{cp_max}", over="cp_size")
    monkeypatch.setitem(registry.BY_NAME, broken.name, broken)
    code = main(["prove", "--only", broken.name, "--cp-max", "2", "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert " refuted " in out and "NOT all proved" in out
    assert "minimal counterexample: L=" in out and "replayed through the reference" in out
    assert "def test_regression_" in out


def _plant_a_lost_bite(monkeypatch: pytest.MonkeyPatch) -> None:
    """A weakened theorem statement still proves; what gives it away is that a wrong formula it used to refute
    now proves too. Simulate that: zigzag_loads_sum_to_tokens' only variant must be refuted but all its queries hold."""
    import dataclasses

    import z3

    from cpgraph.proofs.engine.check import Status
    from cpgraph.proofs.teeth import run as teeth
    from cpgraph.proofs.teeth.variants.catalogue import VARIANTS

    real = next(v for v in VARIANTS if v.theorem == "zigzag_loads_sum_to_tokens")
    weak = dataclasses.replace(real, name="weakened", build=lambda p: (Query("claim", z3.BoolVal(True), ()),))
    assert weak.expected is Status.REFUTED
    monkeypatch.setattr(teeth, "VARIANTS", (weak,))


def test_a_theorem_whose_wrong_variant_now_proves_has_lost_its_teeth_and_prove_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A weakened theorem statement still proves; what gives it away is that a wrong formula it used to refute
    # now proves too. Simulate that: a variant that must be refuted but whose queries all hold.
    _plant_a_lost_bite(monkeypatch)
    code = main(["prove", "--only", "zigzag_loads_sum_to_tokens", "--cp-max", "2", "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "LOST zigzag_loads_sum_to_tokens: variant weakened" in out and "lost their teeth" in out
    assert main(["prove", "--only", "zigzag_loads_sum_to_tokens", "--cp-max", "2", "--jobs", "1", "--no-teeth"]) == 0


def test_json_verdict_says_what_the_exit_code_says_when_the_teeth_pass_loses_a_bite(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The obligations all prove ("proved": true, the obligations' own part), but a wrong variant now proves too:
    # the run exits 1, and the document's top-level verdict says so, with the teeth pass's part in it.
    from cpgraph.commands.prove import VERDICTS

    _plant_a_lost_bite(monkeypatch)
    code = main(["prove", "--json", "-q", "--only", "zigzag_loads_sum_to_tokens", "--cp-max", "2", "--jobs", "1"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 == VERDICTS[report["verdict"]]
    assert report["ok"] is False and report["verdict"] == "teeth lost"
    assert report["proved"] is True  # the obligations alone
    assert report["teeth"]["ok"] is False and report["teeth"]["kept"] == report["teeth"]["variants"] - 1
    assert [(b["theorem"], b["variant"]) for b in report["teeth"]["lost"]] == [("zigzag_loads_sum_to_tokens", "weakened")]
    assert main(["prove", "--format", "md", "-q", "--only", "zigzag_loads_sum_to_tokens", "--cp-max", "2", "--jobs", "1"]) == 1
    assert "❌ proved, but teeth lost" in capsys.readouterr().out


def test_json_verdict_of_a_refuted_theorem_exits_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def zigzag_loads_with_a_wrong_partner_sum_to_tokens(cp_size: int) -> tuple[Query, ...]:
        """A theorem built on a wrong ownership formula (rank r owns blocks r and 2P-2-r)."""
        return zigzag_loads_sum_to_tokens(cp_size, request_loads=wrong_partner_request_loads)

    broken = obligation(zigzag_loads_with_a_wrong_partner_sum_to_tokens, scope="P = 1..{cp_max}", over="cp_size")
    monkeypatch.setitem(registry.BY_NAME, broken.name, broken)
    code = main(["prove", "--json", "-q", "--only", broken.name, "--cp-max", "2", "--jobs", "1"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["ok"] is False and report["verdict"] == "refuted" and report["proved"] is False
