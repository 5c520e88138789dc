"""``cpgraph plan --workload FILE|NAME --cp-size P [--max-buckets K] [--max-requests R] [--out FILE]``.

Chooses a capture list of at most K buckets and a headroom for R requests that minimise padded rows
plus eager fallbacks over the workload (see cpgraph/design/plan.py), proves the chosen design with the
review, and compares it with the bundled upstream design on the same workload. Writes the design as
TOML to --out (default: printed). Exit codes: 0 the planned design is proved; 1 it is not; 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cpgraph.design.schema import dumps_design, load_design
from cpgraph.design.workloads import WorkloadError, load_workload


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="choose capture buckets and headroom for a workload, and prove the result",
        description=(__doc__ or "").split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--workload", required=True, help="built-in name (chat, docs, mixed) or JSON-lines file")
    parser.add_argument("--cp-size", type=int, required=True, metavar="P")
    parser.add_argument("--max-buckets", type=int, default=23, metavar="K")
    parser.add_argument("--max-requests", type=int, default=None, metavar="R",
                        help="headroom for batches of up to R requests (default: the workload's largest batch)")
    parser.add_argument("--eager-cost", type=int, default=512, metavar="ROWS", help="rows one eager fallback is worth")
    parser.add_argument("--out", metavar="FILE", help="write the planned design TOML here")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cpgraph.design.plan import plan_design
    from cpgraph.design.render import render_text
    from cpgraph.design.report import review
    from cpgraph.design.simulate import simulate, table

    for flag, value, low in (("--cp-size", args.cp_size, 2), ("--max-buckets", args.max_buckets, 1),
                             ("--max-requests", args.max_requests or 1, 1), ("--eager-cost", args.eager_cost, 0)):
        if value < low:
            print(f"cpgraph plan: {flag} must be an integer >= {low}, got {value}", file=sys.stderr)
            return 2
    try:
        name, batches = load_workload(args.workload)
        print(f"cpgraph plan: planning for {len(batches)} batches of {name} ...", file=sys.stderr)
        planned = plan_design(
            batches, cp_size=args.cp_size, max_buckets=args.max_buckets,
            max_requests=args.max_requests, eager_cost=args.eager_cost, name=f"planned-{name}",
        )
    except (WorkloadError, ValueError) as exc:
        print(f"cpgraph plan: {exc}", file=sys.stderr)
        return 2
    design = planned.design
    text = dumps_design(design)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    print(f"Planned design ({planned.active} CP-active of {planned.batches} batches, objective {planned.cost:.0f}):\n")
    print(text)
    result = review(design, progress=True)
    sys.stdout.write(render_text(result))
    compare = [design] + ([load_design("upstream")] if design.cp_size == 4 else [])
    rows = table([simulate(d, batches, name) for d in compare])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print(f"\nOn workload {name}:")
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    return 0 if result.exit_code == 0 else 1
