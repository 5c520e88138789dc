"""``cpgraph check MODULE:ATTR``: check a bucket-selection policy against every invariant.

Exit 0 when every checked invariant holds within the budget (or over the --max-cases batches); 1 on a
violation, or a policy call that hung (--call-timeout-s), exited or raised KeyboardInterrupt; 2 on a usage
or import error, or a policy that breaks the protocol (signature, answer types); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from cpgraph.commands import command_parser
from cpgraph.output import (
    FOUND, OK, PROCESS, USAGE, Output, UsageError, add_output_flags, bounded_int, bounded_seconds, writable_file,
)

if TYPE_CHECKING:
    from cpgraph.check import CheckOptions, CheckReport
    from cpgraph.check.release import Release

MAX_CP_SIZE = 64  # one batch asks every rank
MAX_REQUESTS = 1024
MAX_TOKENS = 1 << 20  # the random phase's capture lists reach 4x this
MAX_BUDGET_S = 7 * 24 * 3600.0
MAX_CASES = 10**12
MAX_CALL_TIMEOUT_S = 3600.0


def add_parser(subparsers: Any) -> None:
    parser = command_parser(
        subparsers, "check", "check a bucket-selection policy (admit/replay_bucket[/local_rows]) against the invariants", __doc__
    )
    parser.add_argument("target", metavar="MODULE:ATTR", help="policy to import, e.g. reference.policy or mypkg.sel:policy (MODULE may be a .py path)")
    parser.add_argument("--adapter-root", metavar="DIR", default=None,
                        help="check the release unpacked under DIR (a folder holding a wheel's package, e.g. its .py files) "
                             "with an adapter policy (cpgraph.adapters.sglang:zigzag, cpgraph.adapters.vllm:pcp) instead of "
                             "the installed one")
    parser.add_argument("--release", metavar="VERSION|LOW..HIGH", default=None,
                        help="check these releases of the adapter's stack (e.g. 0.34.0 or 0.26.0..0.34.0, both ends included): "
                             "each wheel is downloaded without dependencies into $CPGRAPH_CACHE (default ~/.cache/cpgraph; "
                             "only its .py files kept) and checked; one row per release. Exit 2 when a release cannot be "
                             "fetched or driven, else 1 when one violates an invariant")
    parser.add_argument("--baseline", metavar="BASE", default=None,
                        help="verify a fix: check BASE (a release version, fetched like --release, or a folder holding an "
                             "unpacked tree) and the candidate (--adapter-root TREE, else the installed stack) alike and print "
                             "the verdict diff path by path: fixed, still failing, newly failing. Exit 1 when anything newly fails")
    parser.add_argument("--cp-sizes", default="1,2,4,8", help=f"comma-separated cp_size values in 1..{MAX_CP_SIZE} (default 1,2,4,8)")
    parser.add_argument("--strategy", default=None,
                        help="layout strategy: zigzag, interleave, contiguous, dual_chunk_swap, dual_chunk_swap_replicated or "
                             "dual_chunk_swap_dcp (default: the policy's strategy attribute, else zigzag)")
    parser.add_argument("--keying", choices=("global", "local"), default=None,
                        help="what the policy's graphs are keyed by: global (a bucket of n tokens with recorded per-rank "
                             "capacities, sglang) or local (a size of rank-local rows, vLLM 0.29+); default: the policy's "
                             "keying attribute, else global")
    parser.add_argument("--no-decodes", action="store_true",
                        help="no batches with decode requests (is_prefilling), even where the strategy places them and "
                             "the policy takes them")
    parser.add_argument("--max-requests", type=bounded_int("--max-requests", 1, MAX_REQUESTS), default=3,
                        help=f"most requests in a batch, 1..{MAX_REQUESTS} (default 3)")
    parser.add_argument("--max-tokens", type=bounded_int("--max-tokens", 2, MAX_TOKENS), default=4096,
                        help=f"most tokens in a batch, 2..{MAX_TOKENS} (default 4096)")
    parser.add_argument(
        "--capacities",
        default="captured,headroom:2,arbitrary",
        help="capacity tables, comma-separated: captured, headroom:R, arbitrary (default all three)",
    )
    parser.add_argument("--budget-s", type=bounded_seconds("--budget-s", MAX_BUDGET_S), default=None,
                        help="search budget in seconds (default 30; none with --max-cases unless given)")
    parser.add_argument("--max-cases", type=bounded_int("--max-cases", 1, MAX_CASES), default=None,
                        help="check this many batches instead of searching for a time: no clock unless --budget-s is "
                             "given too, so the same seed checks the same batches on any machine (CI, tests)")
    parser.add_argument("--call-timeout-s", type=bounded_seconds("--call-timeout-s", MAX_CALL_TIMEOUT_S), default=10.0,
                        help="longest one policy call may take; a slower call stops the check as a finding (default 10)")
    parser.add_argument("--seed", type=bounded_int("--seed", 0, 2**63 - 1), default=0, help="seed of the random phase (default 0)")
    parser.add_argument("--safety-only", action="store_true", help="skip the efficiency invariants")
    parser.add_argument("--ask-replay", choices=("admitted", "always"), default="admitted",
                        help="ask replay_bucket only on a rank that admitted (default, upstream's can_run_graph-then-load_batch "
                             "contract) or always (a policy promising a total replay function)")
    parser.add_argument("--padding-factors", metavar="F1,F2", default=None,
                        help="fix max_padding_factor to these values (ints or exact rationals: 2, 1.5, 5/4); default: "
                             "F = 2 with one random batch in five at F in 1..4, or the policy's max_padding_factor attribute")
    parser.add_argument("--align-sizes", metavar="A1,A2", default=None,
                        help="fix align_size: ints or multiples of cp_size (2P, P, 16); default: the strategy's "
                             "(2P zigzag, P interleave and contiguous, 1 dual_chunk_swap), or the policy's align_size attribute")
    parser.add_argument("--num-tokens", choices=("live", "padded", "both"), default="both",
                        help="num_tokens = sum(extend_seq_lens) (live), a padded n above it (padded), or both (default)")
    parser.add_argument("--context-len", type=bounded_int("--context-len", 1, 2**31 - 1), default=None,
                        help="context length captured tables were recorded with (a bucket above it is captured as "
                             "context-length requests); default: none")
    paths = parser.add_argument_group(
        "graph paths", "an adapter that drives every graph path of its stack (cpgraph.adapters.vllm:pcp) is checked on each "
        "CUDA-graph mode and decode placement too, beside the prefill bucket")
    paths.add_argument("--cudagraph-modes", metavar="M1,M2", default=None,
                       help="the modes to check: PIECEWISE, FULL_AND_PIECEWISE, FULL_DECODE_ONLY (default: every mode the release runs)")
    paths.add_argument("--dcp-sizes", metavar="D1,D2", default="1,2",
                       help="decode context parallel sizes, each placing decodes its own way (1: dealt round-robin from "
                            "vLLM 0.32, else copied; > 1: copied, short prefills too); default 1,2")
    paths.add_argument("--spec-tokens", type=bounded_int("--spec-tokens", 0, 16), default=0,
                       help="speculative tokens per decode: uniform decodes of 1 + K tokens, ragged ones of 1..1 + K (default 0)")
    paths.add_argument("--dp-sizes", metavar="N1,N2", default="1,2",
                       help="data-parallel sizes, 1..8: at N every case runs N steps, one per DP rank, agreed by the release's "
                            "own DP sync over a simulated all-reduce of the DP ranks' proposals (default 1,2)")
    paths.add_argument("--path-cases", type=bounded_int("--path-cases", 1, 10**6), default=200,
                       help="cases per mode, placement and DP size (default 200)")
    paths.add_argument("--no-graph-paths", action="store_true", help="check the prefill bucket only")
    from cpgraph.commands.check_ep import add_ep_flags

    add_ep_flags(parser)  # an EP-step adapter (cpgraph.adapters.megatron:ep): cpgraph/commands/check_ep.py
    add_output_flags(parser)
    parser.add_argument("--emit-test", metavar="PATH", help="write a pytest regression test of the counterexamples")
    parser.add_argument("--plot", metavar="FILE.png", help="write a PNG of a counterexample's layout")
    parser.set_defaults(run=run)


def _cp_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--cp-sizes must be comma-separated ints >= 1 (e.g. 1,2,4,8), got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--cp-sizes must be comma-separated ints >= 1 (e.g. 1,2,4,8), got {text!r}")
    if max(sizes) > MAX_CP_SIZE:
        raise ValueError(f"--cp-sizes must be ints in 1..{MAX_CP_SIZE} (one batch asks every rank), got {max(sizes)}")
    return sizes


def _plot_path(path: str) -> str:
    """matplotlib appends .png to a name without a suffix; say (and check) the file actually written."""
    return path if os.path.splitext(path)[1] else path + ".png"


def run(args: argparse.Namespace) -> int:
    """Parse the flags into one options record and hand it to the one entry point, ``check_one`` (pipeline.py),
    once, once per release (``--release``), or once per tree (``--baseline``); render the one report."""
    out = Output.of(args, "check")
    options = _options(args)
    _check_headroom_tables(args.capacities)
    plot = _plot_path(args.plot) if args.plot else None
    if args.emit_test:
        writable_file("--emit-test", args.emit_test)
    if plot:
        writable_file("--plot", plot)
    if args.release is not None and args.adapter_root is not None:
        raise UsageError("--release and --adapter-root both name the release to check: give one")
    if PROCESS.standalone:  # the command line: a supervisor process ends a call nothing in-process can stop
        from cpgraph.check.calls import supervise

        supervise(args.target, args.call_timeout_s)  # (forked before the policy is imported: its threads stay)
    if getattr(args, "baseline", None) is not None:
        from cpgraph.commands.check_baseline import run_baseline

        return run_baseline(args, options, out, lambda root, opts: check_target(args.target, opts, out, root))
    if args.release is not None:
        from cpgraph.commands.check_releases import run_releases

        return run_releases(
            args, options, out, lambda root: check_target(args.target, options, out, root),
            lambda report, release, path: _write_artifacts(args, report, options, plot, out, release, path),
        )
    report = check_target(args.target, options, out, args.adapter_root)
    out.result(report.render(out.format))
    if report.stop is not None:
        return FOUND
    # the release an emitted test runs against: the one under --adapter-root; for a graph-path test (which needs
    # a release), the installed one the adapter drove otherwise
    paths = report.part("graph_paths")
    root = args.adapter_root or (report.root if paths is not None and paths.violations else None)
    release = None
    if root is not None:
        from cpgraph.check.release import release_at

        release = release_at(args.target, root)
    _write_artifacts(args, report, options, plot, out, release if args.adapter_root else None, paths_release=release)
    return OK if report.ok else FOUND


def check_target(target: str, options: CheckOptions, out: Output, root: str | None = None) -> CheckReport:
    """The one check of ``target`` (with ``root``: the adapter's policy over the release unpacked there): every
    subject it offers, progress on stderr unless quiet; a usage error when it cannot be loaded or driven."""
    from cpgraph.check.pipeline import check_one

    def progress(line: str) -> None:
        if not out.quiet:
            print(line, file=sys.stderr, flush=True)

    return check_one(target, options, root=root, progress=progress, hard_exit=True)


def _sizes(flag: str, text: str, high: int, example: str, allowed: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        sizes = ()
    if not sizes or not all(1 <= s <= high for s in sizes):
        raise UsageError(f"{flag} must be comma-separated ints {allowed} (e.g. {example}), got {text!r}")
    return sizes


def _path_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The graph-path flags read (a bad value is a usage error naming it): cudagraph modes, dcp sizes, DP sizes."""
    from cpgraph.reference.graph_paths import CUDAGRAPH_MODES

    known = [m for m in CUDAGRAPH_MODES if m != "NONE"]
    modes = None if args.cudagraph_modes is None else tuple(m.strip() for m in args.cudagraph_modes.split(",") if m.strip())
    if modes is not None and (not modes or any(m not in known for m in modes)):
        raise UsageError(f"--cudagraph-modes must be comma-separated modes from {', '.join(known)}, got {args.cudagraph_modes!r}")
    return {
        "graph_paths": False if args.no_graph_paths else None, "cudagraph_modes": modes,
        "dcp_sizes": _sizes("--dcp-sizes", args.dcp_sizes, MAX_CP_SIZE, "1,2", ">= 1"),
        "dp_sizes": _sizes("--dp-sizes", args.dp_sizes, 8, "1,2", "in 1..8"),
        "spec_tokens": args.spec_tokens, "path_cases": args.path_cases,
    }


def _options(args: argparse.Namespace) -> CheckOptions:
    """The check's one options record from the flags; a bad value is a usage error."""
    from cpgraph.check import make_options
    from cpgraph.commands.check_ep import ep_flags

    paths = _path_flags(args)
    ep = ep_flags(args)
    try:
        return make_options(
            cp_sizes=_cp_sizes(args.cp_sizes),
            strategy=args.strategy,
            max_requests=args.max_requests,
            max_tokens=args.max_tokens,
            capacities=args.capacities,
            budget_s=args.budget_s,
            safety_only=args.safety_only,
            seed=args.seed,
            ask_replay=args.ask_replay,
            padding_factors=args.padding_factors,
            align_sizes=args.align_sizes,
            num_tokens=args.num_tokens,
            context_len=args.context_len,
            keying=args.keying,
            decodes=not args.no_decodes,
            max_cases=args.max_cases,
            call_timeout_s=args.call_timeout_s,
            **paths,
            **ep,
        )
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def _check_headroom_tables(capacities: str) -> None:
    for table in capacities.split(","):
        kind, _, rows = table.partition(":")
        if kind == "headroom" and rows.isdigit() and int(rows) > MAX_REQUESTS:
            raise UsageError(f"--capacities {table!r}: headroom:R needs R in 1..{MAX_REQUESTS} (requests a table is sized for)")


def _write_artifacts(
    args: argparse.Namespace, report: CheckReport, options: CheckOptions, plot: str | None, out: Output,
    release: Release | None = None, path: str | None = None, paths_release: Release | None = None,
) -> None:
    """The --emit-test regression test (to ``path``, default the flag's; carrying ``release`` when an
    adapter drove one) and the --plot layout of the violations found, or a note that every invariant held."""
    strategy = str(dict(report.knobs).get("strategy", options.strategy))  # a policy may declare its own
    if args.emit_test and report.violations:
        from cpgraph.check.emit import write_regression_test

        keying = str(dict(report.knobs).get("keying", options.keying))
        written = write_regression_test(path or args.emit_test, args.target, report.violations, strategy=strategy,
                                        keying=keying, release=release)
        out.note(f"wrote regression test {written}" + (f" (against {release.label})" if release is not None else ""))
    paths = report.part("graph_paths")
    paths_release = paths_release or release
    if args.emit_test and paths is not None and paths.violations and paths_release is not None:
        from cpgraph.check.emit_paths import write_paths_test

        target = path or args.emit_test
        if report.violations:
            stem, suffix = os.path.splitext(target)
            target = f"{stem}_paths{suffix or '.py'}"
        write_paths_test(target, args.target, paths.violations, paths_release)
        out.note(f"wrote graph-path regression test {target} (against {paths_release.label})")
    if report.part("ep_steps") is not None:
        from cpgraph.commands.check_ep import write_ep_artifact

        write_ep_artifact(args, report, out, path)
    if plot and report.violations:
        from cpgraph.check.plot import plot_violation

        chosen = report.violation("capacity_fit") or report.violations[0]
        plot_violation(chosen, plot, strategy=strategy)
        out.note(f"wrote {chosen.invariant} layout plot {plot}")
    if report.ok and (args.emit_test or plot):
        out.note("every invariant held; no regression test or plot written")


__all__ = ["USAGE", "add_parser", "check_target", "run"]
