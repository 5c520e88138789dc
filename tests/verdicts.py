"""The verdicts, witnesses and exit codes of ``cpgraph check`` (``cpgraph.check_all``, the command line) on the
policies and releases the tests use, as plain JSON (no timings): recorded once into tests/data/check_verdicts.json
before the checker became one pipeline, and compared by test_check_verdicts_kept.py with what it says now.

Run ``python tests/verdicts.py`` to print them (``--write`` records them again; only when a change to a
verdict is intended, and say so in the commit; ``--add KEY`` records only the entries of one new kind, e.g.
``--add ep_steps``, keeping every other entry as recorded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

RECORD = Path(__file__).resolve().parent / "data" / "check_verdicts.json"
CACHE = Path(os.environ.get("CPGRAPH_CACHE", str(Path.home() / ".cache" / "cpgraph")))
CLI = [sys.executable, "-m", "cpgraph"]

# (name, argv): the command line on mutants, correct policies and released code; the prefill checks run
# without the solver's boundary models (--max-cases, with them arriving on their own clock, would vary)
PREFILL = (
    ("mutant ignore_capacity", "cpgraph.proofs.mutants.ignore_capacity", 1500, None),
    ("mutant local_load", "cpgraph.proofs.mutants.local_load", 1500, None),
    ("mutant split_selectors", "cpgraph.proofs.mutants.split_selectors", 1500, None),
    ("mutant dispatch_by_total", "cpgraph.proofs.mutants.dispatch_by_total", 1500, None),
    ("correct scan", "cpgraph.proofs.mutants.correct:scan", 800, None),
    ("sglang 0.5.17", "cpgraph.adapters.sglang:zigzag", 400, ("sglang", "0.5.17")),
    ("sglang 0.5.23", "cpgraph.adapters.sglang:zigzag", 400, ("sglang", "0.5.23")),
)
PATHS = (("vllm 0.28.0", "0.28.0"), ("vllm 0.34.0", "0.34.0"))
EP = (("megatron-core 0.16.0", "0.16.0"),)  # recorded after the EP subject joined the one pipeline


def _batch(violation: dict[str, Any]) -> dict[str, Any]:
    return {"invariant": violation["invariant"], "counterexample": violation["counterexample"]}


def prefill(target: str, max_cases: int, release: tuple[str, str] | None) -> dict[str, Any]:
    """The prefill check's verdict and minimised witnesses (one search process, no boundary models)."""
    from cpgraph.check import check_all

    policy: object = target
    if release is not None:
        from cpgraph.adapters import policy_at

        policy = policy_at(target, str(CACHE / release[0] / release[1]))
    report = check_all(policy, max_cases=max_cases, boundary=False, workers=1, graph_paths=False)
    data = report.to_json()
    return {"ok": data["ok"], "violations": [_batch(v) for v in data["violations"]]}


def paths(version: str) -> dict[str, Any]:
    """The graph-path check of vLLM ``version`` (dcp 1 and 2, cp 1, 2, 4, DP 1 and 2, 30 cases, seed 7)."""
    from cpgraph.adapters.vllm import policy_from
    from cpgraph.check import check_all

    policy = policy_from(str(CACHE / "vllm" / version))
    report = check_all(policy, cp_sizes=(1, 2, 4), path_cases=30, seed=7, dp_sizes=(1, 2), dcp_sizes=(1, 2), max_cases=20,
                       boundary=False, workers=1)
    data = report.to_json()["graph_paths"]
    keep = ("invariant", "mode", "placement", "dcp_size", "dp_size", "steps", "config", "should", "used")
    return {"ok": data["ok"], "violations": [{k: v[k] for k in keep} for v in data["violations"]]}


def ep(version: str) -> dict[str, Any]:
    """The EP check of Megatron-Core ``version`` (1500 EP steps, seed 0, every EP size and model kind)."""
    from cpgraph.adapters.megatron import policy_from
    from cpgraph.check import check_all

    report = check_all(policy_from(str(CACHE / "megatron-core" / version)), max_cases=1500, seed=0)
    data = report.to_json()["ep_steps"]
    keep = ("invariant", "kind", "config", "steps", "ranks", "graphs")
    return {"ok": data["ok"], "steps": data["steps"], "violations": [{k: v[k] for k in keep} for v in data["violations"]]}


def exits() -> dict[str, int]:
    """The command line's exit codes."""
    root = CACHE / "vllm" / "0.34.0"
    runs = {
        "correct scan": ["cpgraph.proofs.mutants.correct:scan", "--max-cases", "200"],
        "mutant ignore_capacity": ["cpgraph.proofs.mutants.ignore_capacity", "--max-cases", "1500"],
        "vllm 0.34.0 graph paths": ["cpgraph.adapters.vllm:pcp", "--adapter-root", str(root), "--max-cases", "100",
                                    "--path-cases", "20", "--cp-sizes", "1,2", "--dp-sizes", "1"],
        "vllm 0.34.0 no graph paths": ["cpgraph.adapters.vllm:pcp", "--adapter-root", str(root), "--max-cases", "100",
                                       "--no-graph-paths", "--cp-sizes", "1,2"],
        "sglang 0.5.23": ["cpgraph.adapters.sglang:zigzag", "--adapter-root", str(CACHE / "sglang" / "0.5.23"),
                          "--max-cases", "100"],
        "bad flag": ["cpgraph.proofs.mutants.correct:scan", "--cp-sizes", "0"],
    }
    return {name: subprocess.run([*CLI, "check", *argv, "-q", "--format", "json"], capture_output=True, text=True,
                                 check=False).returncode for name, argv in runs.items()}


def observe() -> dict[str, Any]:
    return {
        "prefill": {name: prefill(target, n, release) for name, target, n, release in PREFILL},
        "graph_paths": {name: paths(version) for name, version in PATHS},
        "ep_steps": {name: ep(version) for name, version in EP},
        "exits": exits(),
    }


if __name__ == "__main__":
    if "--add" in sys.argv:
        key = sys.argv[sys.argv.index("--add") + 1]
        kept = json.loads(RECORD.read_text(encoding="utf-8"))
        kept[key] = {"ep_steps": lambda: {name: ep(version) for name, version in EP}}[key]()
        RECORD.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(json.dumps(kept[key], indent=1, sort_keys=True))
        sys.exit(0)
    seen = observe()
    if "--write" in sys.argv:
        RECORD.write_text(json.dumps(seen, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(seen, indent=1, sort_keys=True))
