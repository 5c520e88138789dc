"""``cpgraph simulate --workload FILE|NAME [DESIGN ...] [--plot FILE] [--format text|md|json]``.

Runs every batch of the workload through each design (default: the bundled upstream, prefix and
headroom designs) and prints them side by side. Built-in workloads: chat, docs, mixed (see
cpgraph/design/workloads.py for their parameters); a file is JSON lines of extend_seq_lens.
Exit codes: 0 no design would crash on the workload; 1 some design would (overflows are shown);
2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cpgraph.design.schema import BUNDLED, DesignError, load_design
from cpgraph.design.workloads import WorkloadError, load_workload


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run designs side by side on a workload of batches",
        description=(__doc__ or "").split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("designs", nargs="*", metavar="DESIGN", help="design paths or bundled names")
    parser.add_argument("--workload", default="mixed", help="built-in name (chat, docs, mixed) or JSON-lines file")
    parser.add_argument("--plot", metavar="FILE", help="write a PNG comparing the designs")
    parser.add_argument("--format", choices=("text", "md", "json"), default="text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cpgraph.design.simulate import simulate, table

    try:
        designs = [load_design(d) for d in (args.designs or list(BUNDLED))]
        name, batches = load_workload(args.workload)
    except (DesignError, WorkloadError) as exc:
        print(f"cpgraph simulate: {exc}", file=sys.stderr)
        return 2
    print(f"cpgraph simulate: {len(batches)} batches of {name} through {len(designs)} designs ...", file=sys.stderr)
    results = [simulate(d, batches, name) for d in designs]
    rows = table(results)
    if args.format == "json":
        keys = ("batches", "graph", "eager", "overflows", "mean_pad", "p99_pad", "mean_rank_pad", "p99_rank_pad",
                "static_rows", "static_bytes", "first_overflow")
        data = [dict({"design": r.design.name, "workload": name}, **{k: getattr(r, k) for k in keys}) for r in results]
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif args.format == "md":
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * len(rows[0])]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        sys.stdout.write(f"Workload `{name}` ({len(batches)} batches)\n\n" + "\n".join(lines) + "\n")
    else:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        print(f"Workload {name}: {len(batches)} batches")
        for row in rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    for r in results:
        if r.overflows:
            print(
                f"{r.design.name}: {r.overflows} batches would crash (replay overflows the captured buffer), "
                f"first: extend_seq_lens={list(r.first_overflow or ())}",
                file=sys.stdout if args.format == "text" else sys.stderr,
            )
    if args.plot:
        from cpgraph.design.plots import plot_simulation

        path = Path(args.plot)
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"wrote {plot_simulation(results, path)}", file=sys.stderr)
    return 1 if any(r.overflows for r in results) else 0
