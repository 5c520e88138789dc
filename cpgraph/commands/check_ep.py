"""``cpgraph check cpgraph.adapters.megatron:ep``'s own flags: the EP subject's part of the one options record
(``--ep-sizes``, ``--ep-models``, ``--ep-spec-tokens``, ``--no-idle-ranks``) and its --emit-test. The check
itself is the one path of every target (commands/check.py -> ``pipeline.check_one``; ``--release`` and
``--baseline`` through the same entry point): the EP steps are a subject of the one pipeline
(cpgraph/check/subjects/ep.py), their driver's calls under ``--call-timeout-s`` like every other subject's.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from cpgraph.output import Output, UsageError

if TYPE_CHECKING:
    from cpgraph.check.report import CheckReport


def add_ep_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("expert parallel", "an adapter checked on EP steps (cpgraph.adapters.megatron:ep): "
                                      "one batch per EP rank, agreed over a simulated all-reduce")
    group.add_argument("--ep-sizes", metavar="E1,E2", default="2,4,8", help="EP sizes, 2..64 (default 2,4,8)")
    group.add_argument("--ep-models", metavar="M1,M2", default="dense,hybrid",
                       help="model kinds: dense (loose matching), hybrid (Mamba: strict matching); default both")
    group.add_argument("--ep-spec-tokens", type=int, default=3, help="most speculative (MTP) tokens per decode, 0..16 (default 3)")
    group.add_argument("--no-idle-ranks", action="store_true", help="every EP rank has a batch (no dummy steps)")


def ep_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The EP flags as the options record's fields (a value that is no int list is a usage error naming it;
    make_options validates the ranges)."""
    try:
        sizes = tuple(int(p) for p in str(args.ep_sizes).split(",") if p.strip())
    except ValueError:
        raise UsageError(f"--ep-sizes must be comma-separated EP sizes in 2..64 (e.g. 2,4,8), got {args.ep_sizes!r}") from None
    return {"ep_sizes": sizes, "ep_models": str(args.ep_models), "ep_spec_tokens": args.ep_spec_tokens,
            "ep_idle": not args.no_idle_ranks}


def write_ep_artifact(args: argparse.Namespace, report: CheckReport, out: Output, path: str | None = None) -> None:
    """The --emit-test of the EP part's violations (to ``path``, default the flag's), run against the release the
    adapter drove (``report.root``)."""
    part = report.part("ep_steps")
    if not args.emit_test or part is None or not part.violations or report.root is None:
        return
    from cpgraph.check.emit_ep import write_ep_test

    written = write_ep_test(path or args.emit_test, args.target, part.violations, part.version, report.root)
    out.note(f"wrote regression test {written}")
