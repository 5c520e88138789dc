"""``cpgraph review [DESIGN] [--against OLD] [--format text|md|json] [--plot DIR]``.

With no DESIGN: review the bundled upstream design against the bundled pre-fix design (prefix).
Exit codes: 0 every invariant of DESIGN proved; 1 some invariant refuted (a counterexample is shown);
3 none refuted but some only bounded or unknown; 2 usage error (bad design file, unknown name).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cpgraph.design.schema import DesignError, load_design


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "review",
        help="prove a design's invariants, cost it, and diff it against another design",
        description=(__doc__ or "").split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("design", nargs="?", help="design TOML path or bundled name (default: upstream)")
    parser.add_argument("--against", metavar="OLD", help="old design to diff against (default with no DESIGN: prefix)")
    parser.add_argument("--format", choices=("text", "md", "json"), default="text")
    parser.add_argument("--plot", metavar="DIR", help="write PNGs (eager-fallback region, padding vs n) to DIR")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cpgraph.design.render import RENDERERS
    from cpgraph.design.report import review

    name = args.design or "upstream"
    against = args.against if args.against or args.design else "prefix"
    try:
        design = load_design(name)
        old = load_design(against) if against else None
    except DesignError as exc:
        print(f"cpgraph review: {exc}", file=sys.stderr)
        return 2
    print(f"cpgraph review: {design.name}" + (f" against {old.name}" if old else "") + " ...", file=sys.stderr)
    result = review(design, against=old, progress=True)
    sys.stdout.write(RENDERERS[args.format](result))
    if args.plot:
        from cpgraph.design.efficiency import efficiency
        from cpgraph.design.plots import plot_fallback_region, plot_padding

        out = Path(args.plot)
        out.mkdir(parents=True, exist_ok=True)
        pairs = [(design.name, result.efficiency)] + ([(old.name, efficiency(old))] if old else [])
        written = [plot_fallback_region(pairs, out / "eager_fallback.png"), plot_padding(pairs, out / "padding.png")]
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return result.exit_code
