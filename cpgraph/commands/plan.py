"""``cpgraph plan --workload FILE|NAME --cp-size P [--keying global|local] [--strategy S] [--max-buckets K] [--max-requests R] [--out FILE]``.

Chooses a capture list of at most K buckets and a headroom for R requests that minimise padded rows
plus eager fallbacks over the workload (see cpgraph/design/plan.py), proves the chosen design with the
review, and compares it with the bundled upstream design on the same workload. With --keying local
(vLLM's keying) it chooses at most K sizes of rank-local rows for the strategy's largest rank-local rows
(--strategy, default dual_chunk_swap) and compares with the bundled vllm_pcp design. Writes the design as
TOML to --out (default: printed). Exit codes: 0 the planned design is proved; 1 an invariant of it is
refuted; 3 not proved (unknown); 2 usage error; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cpgraph.commands import command_parser
from cpgraph.commands.simulate import workload
from cpgraph.reference.keying import KEYINGS
from cpgraph.reference.validate import STRATEGIES
from cpgraph.output import (
    Output, UsageError, add_output_flags, bounded_int, md_table, solver_leaves_ctrl_c_to_python, text_table, writable_file,
)

MAX_CP_SIZE = 64
MAX_BUCKETS = 256
MAX_REQUESTS = 1024
MAX_EAGER_COST = 1 << 30


def add_parser(subparsers: Any) -> None:
    parser = command_parser(subparsers, "plan", "choose capture buckets and headroom for a workload, and prove the result", __doc__)
    parser.add_argument("--workload", required=True, help="built-in name (chat, docs, mixed) or JSON-lines file")
    parser.add_argument("--cp-size", type=bounded_int("--cp-size", 2, MAX_CP_SIZE), required=True, metavar="P",
                        help=f"context-parallel ranks, 2..{MAX_CP_SIZE}")
    parser.add_argument("--max-buckets", type=bounded_int("--max-buckets", 1, MAX_BUCKETS), default=23, metavar="K",
                        help=f"most buckets in the capture list, 1..{MAX_BUCKETS} (default 23)")
    parser.add_argument("--max-requests", type=bounded_int("--max-requests", 1, MAX_REQUESTS), default=None, metavar="R",
                        help="headroom for batches of up to R requests (default: the workload's largest batch)")
    parser.add_argument("--eager-cost", type=bounded_int("--eager-cost", 0, MAX_EAGER_COST), default=512, metavar="ROWS",
                        help="rows one eager fallback is worth (default 512)")
    parser.add_argument("--keying", choices=KEYINGS, default="global",
                        help="global: buckets of n tokens with headroom (sglang); local: sizes of rank-local rows (vLLM)")
    parser.add_argument("--strategy", choices=STRATEGIES, default=None,
                        help="layout (default: zigzag under global keying, dual_chunk_swap under local)")
    parser.add_argument("--out", metavar="FILE", help="write the planned design TOML here")
    add_output_flags(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cpgraph.design.plan import plan_design
    from cpgraph.design.render import RENDERERS
    from cpgraph.design.report import review
    from cpgraph.design.schema import DesignError, dumps_design, load_design
    from cpgraph.design.simulate import simulate, table

    out = Output.of(args, "plan")
    solver_leaves_ctrl_c_to_python()
    if args.out:
        writable_file("--out", args.out)
    name, batches = workload(args.workload)
    from cpgraph.design.schema import MAX_CP_SIZE as DESIGN_MAX_CP, MAX_TOKENS

    largest = max((sum(b) for b in batches), default=0)
    if largest > MAX_TOKENS:  # the planned buckets must cover it, and a design's buckets are bounded
        raise UsageError(
            f"workload {args.workload!r}: a batch of {largest} tokens; plan covers batches of at most {MAX_TOKENS} "
            "tokens (the largest bucket a design may capture)"
        )
    if args.cp_size > DESIGN_MAX_CP:
        raise UsageError(f"--cp-size {args.cp_size}: a design allows cp_size <= {DESIGN_MAX_CP}")
    out.note(f"planning for {len(batches)} batches of {name} ...")
    try:
        planned = plan_design(
            batches, cp_size=args.cp_size, max_buckets=args.max_buckets,
            max_requests=args.max_requests, eager_cost=args.eager_cost, name=f"planned-{name}",
            keying=args.keying, strategy=args.strategy,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    design = planned.design
    text = dumps_design(design)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        out.note(f"wrote {args.out}")
    out.note(f"reviewing {design.name} ...")
    try:
        result = review(design, progress=not out.quiet)
    except DesignError as exc:  # a design past the review's encoding limits
        raise UsageError(str(exc)) from None
    bundled = "upstream" if design.keyed.recorded_capacity else "vllm_pcp"
    compare = [design] + ([load_design(bundled)] if design.cp_size == 4 else [])
    rows = table([simulate(d, batches, name) for d in compare])
    kind = "CP-active" if design.keyed.gated else "keyed"
    head = f"Planned design ({planned.active} {kind} of {planned.batches} batches, objective {planned.cost:.0f}):"
    if out.format == "json":
        data = {
            "planned": {"active": planned.active, "batches": planned.batches, "objective": planned.cost, "toml": text},
            "review": json.loads(RENDERERS["json"](result)),
            "workload": {"name": name, "table": [dict(zip(rows[0], row)) for row in rows[1:]]},
        }
        out.result(json.dumps(data, indent=2))
    elif out.format == "junit":
        out.result(RENDERERS["junit"](result))
    elif out.format == "md":
        out.result(f"{head}\n\n```toml\n{text}```\n\n" + RENDERERS["md"](result) + f"\n**On workload `{name}`**\n\n" + md_table(rows))
    else:
        out.result(f"{head}\n\n{text}\n" + RENDERERS["text"](result) + f"\nOn workload {name}:\n" + text_table(rows))
    return result.exit_code
