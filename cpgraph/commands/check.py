"""``cpgraph check MODULE:ATTR``: check a bucket-selection policy against every invariant.

Exit 0 when every checked invariant holds within the budget, 1 on a violation, 2 on a usage or
import error (the reason on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

USAGE_ERROR = 2


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check a bucket-selection policy (admit/replay_bucket[/local_rows]) against the invariants",
        description=(
            "Ask every rank of MODULE:ATTR about boundary, exhaustive small and random batches; report each "
            "broken invariant with a minimised counterexample. Exit 0: all hold; 1: a violation; 2: usage error."
        ),
    )
    parser.add_argument("target", metavar="MODULE:ATTR", help="policy to import, e.g. reference.policy or mypkg.sel:policy (MODULE may be a .py path)")
    parser.add_argument("--cp-sizes", default="1,2,4,8", help="comma-separated cp_size values (default 1,2,4,8)")
    parser.add_argument("--strategy", default="zigzag", help="layout strategy: zigzag, interleave or contiguous (default zigzag)")
    parser.add_argument("--max-requests", type=int, default=3, help="most requests in a batch (default 3)")
    parser.add_argument("--max-tokens", type=int, default=4096, help="most tokens in a batch (default 4096)")
    parser.add_argument(
        "--capacities",
        default="captured,headroom:2,arbitrary",
        help="capacity tables, comma-separated: captured, headroom:R, arbitrary (default all three)",
    )
    parser.add_argument("--budget-s", type=float, default=30.0, help="search budget in seconds (default 30)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random phase (default 0)")
    parser.add_argument("--safety-only", action="store_true", help="skip the efficiency invariants")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--emit-test", metavar="PATH", help="write a pytest regression test of the counterexamples")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of a counterexample's layout")
    parser.set_defaults(run=run)


def _usage(message: str) -> int:
    print(f"cpgraph check: error: {message}", file=sys.stderr)
    return USAGE_ERROR


def _cp_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--cp-sizes must be comma-separated ints >= 1 (e.g. 1,2,4,8), got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--cp-sizes must be comma-separated ints >= 1 (e.g. 1,2,4,8), got {text!r}")
    return sizes


def _absolute_target(target: str) -> str:
    """A .py path in MODULE becomes absolute so the emitted test finds it from anywhere."""
    module, sep, attr = target.partition(":")
    if module.endswith(".py") or os.sep in module:
        return os.path.abspath(module) + sep + attr
    return target


def run(args: argparse.Namespace) -> int:
    from cpgraph.check import CheckReport, load_policy, make_options
    from cpgraph.check.run import run_check

    try:
        options = make_options(
            cp_sizes=_cp_sizes(args.cp_sizes),
            strategy=args.strategy,
            max_requests=args.max_requests,
            max_tokens=args.max_tokens,
            capacities=args.capacities,
            budget_s=args.budget_s,
            safety_only=args.safety_only,
            seed=args.seed,
        )
    except (TypeError, ValueError) as exc:
        return _usage(str(exc))
    target = _absolute_target(args.target)
    try:
        with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
            policy = load_policy(target)
    except (ImportError, TypeError, ValueError) as exc:
        return _usage(f"cannot load policy {args.target!r}: {exc}")

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.json:  # a policy that prints must not break the one-object contract of stdout
        with contextlib.redirect_stdout(sys.stderr):
            report: CheckReport = run_check(policy, options, progress)
    else:
        report = run_check(policy, options, progress)
    if args.json:
        print(report.json())
    else:
        print(report.text())
    if args.emit_test and report.violations:
        from cpgraph.check.emit import write_regression_test

        write_regression_test(args.emit_test, target, report.violations, strategy=options.strategy)
        print(f"cpgraph check: wrote regression test {args.emit_test}", file=sys.stderr)
    if args.plot and report.violations:
        from cpgraph.check.plot import plot_violation

        chosen = report.violation("capacity_fit") or report.violations[0]
        plot_violation(chosen, args.plot, strategy=options.strategy)
        print(f"cpgraph check: wrote {chosen.invariant} layout plot {args.plot}", file=sys.stderr)
    if report.ok and (args.emit_test or args.plot):
        print("cpgraph check: every invariant held; no regression test or plot written", file=sys.stderr)
    return 0 if report.ok else 1
