"""`cpgraph prove`'s theorems, pinned: every theorem's name (in the registry's order), verdict, query count and
number of parameters at cp_size 1..64 equal tests/data/prove_record.json, recorded from `cpgraph prove --json` at
ed241d6 (before proofs/ was split into engine/, theorems/, teeth/ and conformance/); the six decode-path theorems
(proofs/theorems/graph_paths.py) appended when they were added, and the three EP theorems (proofs/theorems/ep_graphs.py) after them. A change that adds, drops,
renames or reorders a theorem, or changes what it asks the solver, fails here and updates the record on purpose.

The names and query counts are read by building every query (proofs/catalogue.py ``query_counts``, which the
theorem catalogue of proofs/README.md is generated from; no solver call: 10 s on the 2-core dev machine, 18 s at
load 4.6); the verdicts by running `cpgraph prove --json --no-teeth --jobs 1` over the whole scope in a
fresh process (49 s, 80 s at load 4.6; marked slow). The teeth pass is not run here (its own tests plant losses);
the record's run had 10,513 teeth checks, 8,766 of them scope checks, none lost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

RECORD = Path(__file__).resolve().parents[1] / "data" / "prove_record.json"
CP_MAX = 64


def _record() -> list[dict[str, Any]]:
    theorems: list[dict[str, Any]] = json.loads(RECORD.read_text())["theorems"]
    return theorems


def _counts(theorems: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    return [(t["name"], t["queries"], t["parameters"] if isinstance(t["parameters"], int) else len(t["parameters"]))
            for t in theorems]


def test_every_theorem_builds_the_recorded_number_of_queries() -> None:
    from cpgraph.proofs.catalogue import query_counts  # as a prove worker builds them: one task per parameter
    from cpgraph.proofs.registry import OBLIGATIONS

    queries = query_counts(CP_MAX)
    built = [(o.name, queries[o.name], len(o.parameters(CP_MAX))) for o in OBLIGATIONS]
    assert built == _counts(_record())


@pytest.mark.slow
def test_prove_json_gives_the_recorded_names_verdicts_and_counts() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "cpgraph", "prove", "--json", "--no-teeth", "-q", "--jobs", "1", "--cp-max", str(CP_MAX)],
        capture_output=True, text=True, timeout=900,
    )
    report = json.loads(run.stdout)
    assert run.returncode == 0 and report["ok"] is True, run.stderr[-2000:]
    got = [(t["name"], t["verdict"]) for t in report["theorems"]]
    assert got == [(t["name"], t["verdict"]) for t in _record()]
    assert _counts(report["theorems"]) == _counts(_record())
    assert report["queries"] == json.loads(RECORD.read_text())["queries"]
