"""`cpgraph check cpgraph.adapters.megatron:ep` throughput: EP steps per minute on a Megatron-Core release (every
EP rank's step run through the release's own sync and matching over the simulated all-reduce, judged by the
reference), on the machine's cores.

    .venv/bin/python benchmarks/ep_check_rate.py [--releases 0.16.0,0.17.0,0.19.2] [--steps 20000] [--workers 2] [--json PATH]

Each release is checked by ``--workers`` processes at once (seeds 0, 1, ...; the releases fetched first, outside
the timing), each running ``--steps`` EP steps with the default configuration space (EP 2, 4, 8; dense and hybrid;
MTP up to 3; idle ranks) and, on 0.19, a quarter as many chunked-prefill admissions (not counted as steps).
The rate is the EP steps of all workers over the wall time of the slowest (EP steps per minute on the machine's
cores), and per CPU-minute of one worker. The target: >= 20,000 EP steps per minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET = "cpgraph.adapters.megatron:ep"
MACHINE = f"{os.cpu_count()}-core {platform.machine()} CPU dev machine"


def _one(job: tuple[str, str, int, int]) -> dict[str, Any]:
    version, root, steps, seed = job
    from cpgraph.adapters.megatron import policy_from
    from cpgraph.check.subjects.ep_admission import check_release

    cpu, wall = time.process_time(), time.perf_counter()
    report = check_release(policy_from(root), target=TARGET, cases=steps, seed=seed)
    return {"version": version, "seed": seed, "steps": report.steps, "chunks": report.chunks, "ok": report.ok,
            "cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}


def run(releases: list[str], steps: int, workers: int) -> dict[str, Any]:
    from cpgraph.adapters.releases import fetch

    roots = {v: str(fetch("megatron-core", v)) for v in releases}
    out: list[dict[str, Any]] = []
    for version in releases:
        jobs = [(version, roots[version], steps, seed) for seed in range(workers)]
        start = time.perf_counter()
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            runs = pool.map(_one, jobs)
        wall = time.perf_counter() - start
        total = sum(r["steps"] for r in runs)
        out.append({"release": version, "workers": workers, "steps": total, "wall_s": round(wall, 3),
                    "steps_per_minute": round(60 * total / wall), "per_cpu_minute": round(60 * runs[0]["steps"] / runs[0]["cpu_s"]),
                    "runs": runs})
    return {"benchmark": "ep-steps-rate", "machine": MACHINE, "load": os.getloadavg()[0], "target_per_minute": 20000,
            "command": f".venv/bin/python benchmarks/ep_check_rate.py --releases {','.join(releases)} --steps {steps} --workers {workers}",
            "releases": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", default="0.16.0,0.17.0,0.19.2")
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", default=None, help="write here (default benchmarks/results/<date>-ep-steps-rate.json and .md)")
    args = parser.parse_args(argv)
    data = run([v.strip() for v in args.releases.split(",") if v.strip()], args.steps, args.workers)
    path = Path(args.json) if args.json else Path(__file__).parent / "results" / f"{date.today().isoformat()}-ep-steps-rate.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    lines = [f"# EP check rate ({data['machine']}, load {data['load']:.1f})", "", f"`{data['command']}`", "",
             "| release | EP steps | wall s | EP steps per minute (all workers) | per CPU-minute (one worker) |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['release']} | {r['steps']} | {r['wall_s']} | {r['steps_per_minute']:,} | {r['per_cpu_minute']:,} |" for r in data["releases"]]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
