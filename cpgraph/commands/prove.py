"""``cpgraph prove``: run every proof obligation of proofs/ and report each theorem's verdict.

Exit 0 only when every theorem is proved; 1 when one is refuted (a minimal counterexample is printed and
replayed through the reference) or unknown (the solver's reason is printed; unknown is a failure);
2 on bad usage (an unknown --only name lists the valid names).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

USAGE_ERROR = 2
DEFAULT_CP_MAX = 64


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an int >= 1, got {value}")
    return value


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "prove",
        help="prove every theorem of proofs/ with Z3 (every cp_size 1..64, all lengths, any number of requests)",
        description=(
            "Run every proof obligation: for each theorem, every query it needs at every cp_size (or capture "
            "list length). Prints a table (theorem, scope, verdict, queries, seconds = build + solve time summed "
            "over the theorem's queries, slowest single query). Exit 0: all proved; 1: a theorem refuted or "
            "unknown; 2: usage error."
        ),
    )
    parser.add_argument(
        "--cp-max", type=_positive, default=DEFAULT_CP_MAX, metavar="N",
        help=f"prove the per-cp_size theorems for cp_size 1..N (default {DEFAULT_CP_MAX})",
    )
    parser.add_argument(
        "--only", action="append", default=None, metavar="NAME",
        help="run only this theorem (repeatable); an unknown name lists the valid ones",
    )
    parser.add_argument("--jobs", type=_positive, default=None, metavar="N", help="worker processes (default: CPUs)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(run=run)


class _Progress:
    """A counter line on stderr: rewritten in place on a terminal, every 10% otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last_decile = -1

    def __call__(self, done: int, total: int, result: Any) -> None:
        label = f"[{done:>{len(str(total))}}/{total}] {result.name} {result.parameter}"
        if self.tty:
            sys.stderr.write("\r\033[K" + label)
            if done == total:
                sys.stderr.write("\n")
        else:
            decile = done * 10 // total
            if decile != self.last_decile:
                self.last_decile = decile
                sys.stderr.write(f"prove: {done}/{total} theorem instances checked\n")
        sys.stderr.flush()


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from cpgraph.proofs.check import Status
    from cpgraph.proofs.registry import BY_NAME, OBLIGATIONS
    from cpgraph.proofs.run import run_obligations

    names: list[str] = args.only or []
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        print(
            f"cpgraph prove: error: --only {unknown[0]!r} is not a theorem; valid names:\n  "
            + "\n  ".join(sorted(BY_NAME)),
            file=sys.stderr,
        )
        return USAGE_ERROR
    chosen = [BY_NAME[n] for n in dict.fromkeys(names)] if names else list(OBLIGATIONS)
    start = time.perf_counter()
    results = run_obligations(chosen, cp_max=args.cp_max, jobs=args.jobs, progress=_Progress())
    wall = time.perf_counter() - start
    proved = all(r.status is Status.PROVED for r in results)
    slowest = max(results, key=lambda r: r.slowest[1])
    if args.json:
        print(
            json.dumps(
                {
                    "cp_max": args.cp_max,
                    "proved": proved,
                    "wall_seconds": round(wall, 3),
                    "queries": sum(r.queries for r in results),
                    "slowest_query": {"theorem": slowest.name, "query": slowest.slowest[0], "seconds": round(slowest.slowest[1], 4)},
                    "theorems": [
                        {
                            "name": r.name,
                            "scope": r.scope,
                            "verdict": r.status.value,
                            "queries": r.queries,
                            "seconds": round(r.seconds, 3),
                            "slowest_query": {"query": r.slowest[0], "seconds": round(r.slowest[1], 4)},
                            "failures": [
                                {
                                    "query": f.label,
                                    "verdict": f.verdict.status.value,
                                    "reason": f.verdict.reason,
                                    "counterexample": dict(f.model),
                                    "shown": dict(f.shown),
                                    "replay": f.replay,
                                }
                                for f in r.failures
                            ],
                        }
                        for r in results
                    ],
                },
                indent=2,
            )
        )
        return 0 if proved else 1
    rows = [["theorem", "scope", "verdict", "queries", "seconds", "slowest query"]]
    for r in results:
        rows.append(
            [r.name, r.scope, r.status.value, str(r.queries), f"{r.seconds:.2f}", f"{r.slowest[0]} {r.slowest[1]:.3f}s"]
        )
    print(_table(rows))
    for r in results:
        if r.failures:
            print(f"\n{r.name}: {r.status.value}")
            for failure in r.failures:
                print(failure.render())
    verdict = "all proved" if proved else "NOT all proved"
    print(
        f"\n{len(results)} theorems, {sum(r.queries for r in results)} queries, cp_size 1..{args.cp_max}: {verdict} "
        f"in {wall:.1f} s (slowest query: {slowest.name} {slowest.slowest[0]}, {slowest.slowest[1]:.3f} s)"
    )
    return 0 if proved else 1
