"""``cpgraph review [DESIGN] [--against OLD] [--format text|md|json|junit] [--plot DIR]``.

With no DESIGN: review the bundled upstream design against the bundled pre-fix design (prefix).
Exit codes: 0 every invariant of DESIGN proved; 1 some invariant refuted (a counterexample is shown);
3 some part unknown (an invariant of either design, a diff class or a lemma; each is named on stderr with
the reason, and an unknown wins over a refutation); 2 usage error (bad design file, unknown name, unwritable
--plot, a design past the review's encoding limits: dual_chunk_swap above cp_size 16); 130 interrupted.

A decode-path design (``path = "decode"``, e.g. the bundled ``vllm_decode_dealt``) gets every invariant proved
or refuted for a uniform decode step of any number of decodes, the least witness judged by the reference;
``--against`` and ``--plot`` are for prefill designs (a usage error with a decode design: the semantic diff
and the plots are over prefill batches).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cpgraph.commands import command_parser, read_or_usage
from cpgraph.output import solver_leaves_ctrl_c_to_python, Output, UsageError, add_output_flags, writable_dir


def add_parser(subparsers: Any) -> None:
    parser = command_parser(subparsers, "review", "prove a design's invariants, cost it, and diff it against another design", __doc__)
    parser.add_argument("design", nargs="?", help="design TOML path or bundled name (default: upstream)")
    parser.add_argument("--against", metavar="OLD", help="old design to diff against (default with no DESIGN: prefix)")
    add_output_flags(parser)
    parser.add_argument("--plot", metavar="DIR", help="write PNGs (eager-fallback and crash regions, padding vs n) into DIR")
    parser.set_defaults(run=run)


def load(ref: str) -> Any:
    """A design by path or bundled name; any unreadable or invalid file is a usage error naming it."""
    from cpgraph.design.schema import DesignError, load_any_design

    return read_or_usage("design", ref, load_any_design, DesignError, "TOML")


def run(args: argparse.Namespace) -> int:
    from cpgraph.design.render import RENDERERS
    from cpgraph.design.report import review

    out = Output.of(args, "review")
    solver_leaves_ctrl_c_to_python()
    if args.plot:
        writable_dir("--plot", args.plot)
    name = args.design or "upstream"
    against = args.against if args.against or args.design else "prefix"
    design = load(name)
    old = load(against) if against else None
    from cpgraph.design.decode import DecodeDesign
    from cpgraph.design.ep import EpDesign

    if isinstance(design, EpDesign) or isinstance(old, EpDesign):
        return _run_ep(args, out, design, old)
    if isinstance(design, DecodeDesign) or isinstance(old, DecodeDesign):
        return _run_decode(args, out, design, old)
    out.note(f"{design.name}" + (f" against {old.name}" if old else "") + " ...")
    from cpgraph.design.schema import DesignError

    try:
        result = review(design, against=old, progress=not out.quiet)
    except DesignError as exc:  # a design past the review's encoding limits (named in the message)
        raise UsageError(str(exc)) from None
    out.result(RENDERERS[out.format](result))
    for part in result.unknowns:  # said even with --quiet: an unknown is why the exit code is 3
        print(f"cpgraph review: unknown: {part}", file=sys.stderr, flush=True)
    if args.plot:
        from cpgraph.design.plots import plot_review

        written = plot_review(result, Path(args.plot))
        out.note("wrote " + ", ".join(str(p) for p in written))
    return result.exit_code


def _run_ep(args: argparse.Namespace, out: Output, design: Any, old: Any) -> int:
    """An EP design's review (cpgraph/design/ep_review.py): no diff, no plots."""
    from cpgraph.design.ep import EpDesign
    from cpgraph.design.ep_review import review_ep

    if old is not None and args.against:
        which = design if isinstance(design, EpDesign) else old
        raise UsageError(f"--against: {which.name} is an EP design (path = \"ep\"); the semantic diff compares prefill designs' "
                         "batches, so review an EP design on its own")
    if not isinstance(design, EpDesign):
        raise UsageError(f"{design.name} is not an EP design; review it on its own")
    if args.plot:
        raise UsageError(f"--plot: {design.name} is an EP design; the plots are of prefill batches")
    out.note(f"{design.name} (EP design) ...")
    result = review_ep(design)
    if out.format == "json":
        import json

        out.result(json.dumps({"design": design.name, "path": "ep", "exit": result.exit_code, "invariants": [
            {"invariant": v.invariant, "status": v.status, "seconds": round(v.seconds, 3), "note": v.note,
             "steps": [[s.tokens, s.prefill, s.decode] for s in v.steps],
             "graphs": [None if a.graph is None else [a.graph.tokens, a.graph.prefill, a.graph.decode] for a in v.answers]}
            for v in result.invariants]}))
    else:
        out.result(result.text())
    return result.exit_code


def _run_decode(args: argparse.Namespace, out: Output, design: Any, old: Any) -> int:
    """A decode-path design's review (no diff, no plots: both are over prefill batches)."""
    from cpgraph.design.decode import DecodeDesign
    from cpgraph.design.decode_review import DECODE_RENDERERS, review_decode

    if old is not None:
        which = design if isinstance(design, DecodeDesign) else old
        raise UsageError(
            f"--against: {which.name} is a decode-path design (path = \"decode\"); the semantic diff compares prefill "
            "designs' batches, so review a decode design on its own"
        )
    if args.plot:
        raise UsageError(f"--plot: {design.name} is a decode-path design; the plots are of prefill batches (padding, eager regions)")
    out.note(f"{design.name} (decode path) ...")
    result = review_decode(design, progress=not out.quiet)
    out.result(DECODE_RENDERERS[out.format](result))
    for part in result.unknowns:
        print(f"cpgraph review: unknown: {part}", file=sys.stderr, flush=True)
    return result.exit_code
