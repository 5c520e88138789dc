"""``cpgraph simulate --workload FILE|NAME [DESIGN ...] [--plot FILE] [--format text|md|json|junit]``.

Runs every batch of the workload through each design (default: the bundled upstream, prefix and
headroom designs) and prints them side by side. Built-in workloads: chat, docs, mixed (see
cpgraph/design/workloads.py for their parameters); a file is JSON lines of extend_seq_lens.
Exit codes: 0 no design would crash on the workload; 1 some design would (overflows are shown);
2 usage error; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cpgraph.commands.review import load
from cpgraph.commands import command_parser, read_or_usage
from cpgraph.output import (
    WIDTH, JUnitCase, Output, UsageError, add_output_flags, junit, md_table, text_table, wrap, writable_file,
)


def add_parser(subparsers: Any) -> None:
    parser = command_parser(subparsers, "simulate", "run designs side by side on a workload of batches", __doc__)
    parser.add_argument("designs", nargs="*", metavar="DESIGN", help="design paths or bundled names")
    parser.add_argument("--workload", default="mixed", help="built-in name (chat, docs, mixed) or JSON-lines file")
    parser.add_argument("--plot", metavar="FILE.png", help="write a PNG comparing the designs")
    add_output_flags(parser)
    parser.set_defaults(run=run)


def workload(ref: str) -> tuple[str, Any]:
    """A workload by name or file; an unreadable or invalid file is a usage error naming it."""
    from cpgraph.design.workloads import WorkloadError, load_workload

    return read_or_usage("workload", ref, load_workload, WorkloadError, "JSON-lines")


def _why(violated: tuple[str, ...]) -> str:
    """What the first crash does, in words: an overflow, or (vLLM 0.26-0.28) another graph replayed."""
    if "capacity_fit" in violated or not violated:
        return "replay overflows the captured buffer"
    if "admission_replay" in violated and "rank_consensus" not in violated:
        return "replay runs another graph than the one admitted"
    return "replay breaks " + ", ".join(violated)


def run(args: argparse.Namespace) -> int:
    from cpgraph.design.schema import BUNDLED
    from cpgraph.design.simulate import simulate, table
    from cpgraph.reference.lists import compact

    out = Output.of(args, "simulate")
    plot = None
    if args.plot:
        plot = args.plot if Path(args.plot).suffix else args.plot + ".png"
        writable_file("--plot", plot)
    designs = [load(d) for d in (args.designs or list(BUNDLED))]
    name, batches = workload(args.workload)
    out.note(f"{len(batches)} batches of {name} through {len(designs)} designs ...")
    results = [simulate(d, batches, name) for d in designs]
    rows = table(results)
    firsts = [f"extend_seq_lens={compact(list(r.first_overflow or ()))}" for r in results]  # JSON keeps the list
    crashes = [
        (f"{r.design.name}: {r.overflows} batches would crash ({_why(r.first_violated)}), first: {first}", first)
        for r, first in zip(results, firsts) if r.overflows
    ]
    if out.format == "json":
        keys = ("batches", "graph", "eager", "overflows", "mean_pad", "p99_pad", "mean_rank_pad", "p99_rank_pad",
                "static_rows", "static_bytes", "first_overflow", "first_violated")
        data = [dict({"design": r.design.name, "workload": name}, **{k: getattr(r, k) for k in keys}) for r in results]
        out.result(json.dumps(data, indent=2))
    elif out.format == "junit":
        cases = [
            JUnitCase(f"{r.design.name}: no batch overflows", f"cpgraph.simulate.{name}",
                 "failure" if r.overflows else "passed", 0.0,
                 f"{r.overflows} of {r.batches} batches would crash" if r.overflows else "",
                 f"first: {first}" if r.overflows else "")
            for r, first in zip(results, firsts)
        ]
        out.result(junit(f"cpgraph simulate {name}", cases))
    elif out.format == "md":
        out.result(f"Workload `{name}` ({len(batches)} batches)\n\n" + md_table(rows) + "".join(f"\n\n{c}" for c, _ in crashes))
    else:
        lines = [line for c, first in crashes for line in wrap(c, WIDTH, keep=(first,))]
        out.result(f"Workload {name}: {len(batches)} batches\n" + text_table(rows) + "".join(f"\n{x}" for x in lines))
    if plot:
        from cpgraph.design.plots import plot_simulation

        out.note(f"wrote {plot_simulation(results, Path(plot))}")
    return 1 if any(r.overflows for r in results) else 0
