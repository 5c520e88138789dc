"""benchmarks/glue_mutation.py: the regions it mutates, its own operators, and how survivors meet their written
arguments (no release is checked here: that is the benchmark's run)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))  # glue_mutation imports mutation.py beside it
    spec = importlib.util.spec_from_file_location("glue_mutation", ROOT / "benchmarks" / "glue_mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


glue = _load()

SOURCE = '''class Runner:
    def execute_model(self, out):
        """Run a step."""
        prepare = 1
        num_reqs = len(out.tokens)
        if num_reqs:
            num_toks = max(out.total, 1)
        desc = dispatch(num_reqs, num_toks)
        after = 2
        return desc


def helper(a, b):
    return min(a, b) + 1
'''


def test_a_region_covers_its_statements_from_first_to_last_marker_and_a_whole_function_its_body() -> None:
    between = glue.region_lines(SOURCE, (("Runner.execute_model", "num_reqs = len(", "dispatch("),))
    assert between == {5, 6, 7, 8}  # not the docstring, `prepare` before it or `after` past it
    whole = glue.region_lines(SOURCE, (("helper", None, None),))
    assert whole == {14}
    assert glue.region_lines(SOURCE, (("Runner.missing", None, None),)) == set()


def test_the_extra_operators_swap_max_and_min_drop_a_statement_and_swap_two_arguments() -> None:
    found = {(m.line, m.operator, m.description): m for m in glue.extra_mutants("x.py", SOURCE)}
    assert "min(out.total, 1)" in found[(7, "max-min", "max -> min")].apply(SOURCE)
    assert "dispatch(num_toks, num_reqs)" in found[(8, "swap-arguments", "swap the first two arguments")].apply(SOURCE)
    assert "        pass\n        if num_reqs" in found[(5, "drop-statement", "statement -> pass")].apply(SOURCE)
    assert not any(m.line == 3 for m in found.values())  # the docstring is never mutated


def test_survivors_meet_their_arguments_and_only_equivalents_leave_the_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arguments = [{"file": "v/a.py", "line_text": "x = 1", "mutation": "*", "argument": "dead", "kind": "equivalent"},
                 {"file": "v/a.py", "line_text": "y = 2", "mutation": "1 -> 2", "argument": "moves data", "kind": "outside"},
                 {"file": "v/a.py", "line": 9, "line_text": "return False", "mutation": "return True", "argument": "only line 9",
                  "kind": "equivalent"}]
    path = tmp_path / "equivalents.json"
    path.write_text(json.dumps(arguments))
    monkeypatch.setattr(glue, "EQUIVALENTS", path)
    outcomes: list[dict[str, object]] = [
        {"where": "v/a.py:3", "line_text": "x = 1", "mutation": "statement -> pass", "status": "survived", "exit": 0},
        {"where": "v/a.py:4", "line_text": "y = 2", "mutation": "1 -> 2", "status": "survived", "exit": 0},
        {"where": "v/a.py:5", "line_text": "z = 3", "mutation": "3 -> 4", "status": "killed", "exit": 1},
        {"where": "v/a.py:6", "line_text": "w = 4", "mutation": "4 -> 5", "status": "errored", "exit": 4},
        {"where": "v/a.py:7", "line_text": "return False", "mutation": "return True", "status": "survived", "exit": 0},
        {"where": "v/a.py:8", "line_text": "v = 5", "mutation": "5 -> 6", "status": "killed", "exit": 2},
    ]
    result = glue.summarise("vllm", "0.29.0", "abc1234", [], [], outcomes, 1, 1.0, 1.0)
    assert (result["killed"], result["survived"], result["errored"], result["argued_equivalent"]) == (2, 3, 1, 1)
    assert list(result["killed_by_exit"].values()) == [1, 1]
    assert result["score"] == 0.4 and result["score_without_equivalents"] == 0.5
    assert "argued" not in outcomes[4]  # the argument names line 9, not this `return False` on line 7
    assert outcomes[1]["argued"] == {"kind": "outside", "argument": "moves data"}


def test_a_kill_by_a_finding_says_when_the_finding_cites_the_mutated_line() -> None:
    gm = glue
    found = json.dumps({"violations": [{"invariant": "capacity_fit", "decided_at": ["pkg/a.py:3", "pkg/b.py:9"]}],
                        "graph_paths": {"violations": [{"invariant": "rank_consensus", "mode": "FULL", "dcp_size": 1,
                                                         "dp_size": 2, "decided_at": []}]}})
    assert gm._evidence(1, found, "", "pkg/b.py:9") == (
        "violated: capacity_fit, rank_consensus (FULL, dcp 1, DP 2); the mutated line cited (decided at)")
    assert gm._evidence(1, found, "", "pkg/b.py:10") == "violated: capacity_fit, rank_consensus (FULL, dcp 1, DP 2)"
    assert gm._evidence(0, found, "", "pkg/b.py:9") == ""
