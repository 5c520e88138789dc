"""`cpgraph check` throughput: batches per minute (every rank asked, judged against the reference) for
correct pure-Python policies, and time-to-catch for every mutant in proofs/mutants.

    .venv/bin/python benchmarks/check_rate.py [--budget-s 30] [--json PATH] [--skip-mutants]

Each policy runs through the CLI path's engine with the default options (cp_sizes 1,2,4,8, all three
capacity kinds, boundary models on), in this process, one after another. The wall rate depends on
what else the machine runs; the per-CPU-minute rate does not (on an idle 2-core machine the wall rate
is about twice it, since the search runs in two processes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cpgraph import check_policy  # noqa: E402
from cpgraph.proofs.mutants import MUTANTS  # noqa: E402

CORRECT = ("cpgraph.reference.policy", "cpgraph.impl.policy", "cpgraph.proofs.mutants.correct:scan", "cpgraph.proofs.mutants.correct:with_rows")


def _cpu_seconds() -> float:
    """CPU time of this process and its reaped children (the forked search worker, the Z3 solver)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=30.0, help="budget per correct policy (default 30, the CLI default)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--skip-mutants", action="store_true")
    args = parser.parse_args()
    results: dict[str, object] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg_before": os.getloadavg()[0],
    }
    rates = {}
    for target in CORRECT:
        cpu_before = _cpu_seconds()
        report = check_policy(target, budget_s=args.budget_s)
        cpu = _cpu_seconds() - cpu_before
        per_cpu_minute = report.cases / cpu * 60 if cpu > 0 else 0.0
        rates[target] = {
            "ok": report.ok,
            "cases": report.cases,
            "seconds": round(report.seconds, 2),
            "per_minute": round(report.rate_per_minute),
            "cpu_seconds": round(cpu, 2),
            "per_cpu_minute": round(per_cpu_minute),
        }
        print(
            f"{target:36s} ok={report.ok} {report.cases:>8,} batches in {report.seconds:5.1f} s = "
            f"{report.rate_per_minute:>9,.0f} batches/min wall, {per_cpu_minute:>9,.0f} per CPU-minute "
            f"({cpu:.1f} CPU s over all processes)"
        )
    results["rates"] = rates
    if not args.skip_mutants:
        catches = {}
        for name, invariant in MUTANTS.items():
            start = time.perf_counter()
            report = check_policy(f"cpgraph.proofs.mutants.{name}", budget_s=10.0)
            v = report.violation(invariant)
            wall = time.perf_counter() - start
            first = v.found_after if v else None
            size = f"R={len(v.batch.extend_seq_lens)} n={v.batch.num_tokens} P={v.batch.cp_size}" if v else "-"
            catches[name] = {"invariant": invariant, "caught": v is not None, "wall_s": round(wall, 2), "after_batches": first, "counterexample": size}
            print(f"{name:20s} {invariant:22s} caught={v is not None} wall={wall:4.2f} s after {first} batches; minimised {size}")
        results["mutants"] = catches
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
