"""``cpgraph check cpgraph.adapters.megatron:ep``: EP steps over a Megatron-Core release (installed, ``--adapter-root
DIR`` or ``--release VERSION|LOW..HIGH``), checked by cpgraph/check/subjects/ep_steps.py; one report, or one row per release.

Exit 0 when every invariant holds on every release, 1 when one is violated, 2 when a release cannot be fetched
or driven (its glue named at the release's file:line) or a flag is wrong.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

from cpgraph.output import FOUND, OK, USAGE, Output, UsageError

DEFAULT_STEPS = 20000


def add_ep_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("expert parallel", "an adapter checked on EP steps (cpgraph.adapters.megatron:ep): "
                                      "one batch per EP rank, agreed over a simulated all-reduce")
    group.add_argument("--ep-sizes", metavar="E1,E2", default="2,4,8", help="EP sizes, 2..64 (default 2,4,8)")
    group.add_argument("--ep-models", metavar="M1,M2", default="dense,hybrid",
                       help="model kinds: dense (loose matching), hybrid (Mamba: strict matching); default both")
    group.add_argument("--ep-spec-tokens", type=int, default=3, help="most speculative (MTP) tokens per decode, 0..16 (default 3)")
    group.add_argument("--no-idle-ranks", action="store_true", help="every EP rank has a batch (no dummy steps)")


def is_ep_target(target: str) -> bool:
    """Is ``target`` a stack adapter's policy checked on EP steps (its package sets ``EP_STEPS``)?"""
    module_name = target.partition(":")[0]
    if not module_name.startswith("cpgraph.adapters."):
        return False
    try:
        return bool(getattr(importlib.import_module(module_name), "EP_STEPS", False))
    except ImportError:
        return False


def _space(args: argparse.Namespace) -> Any:
    from cpgraph.check.subjects.ep_steps import EpSpace

    try:
        sizes = tuple(int(p) for p in str(getattr(args, "ep_sizes", "2,4,8")).split(",") if p.strip())
        models = tuple(m.strip() for m in str(getattr(args, "ep_models", "dense,hybrid")).split(",") if m.strip())
        return EpSpace(sizes, models, int(getattr(args, "ep_spec_tokens", 3)), not getattr(args, "no_idle_ranks", False))
    except ValueError as exc:
        raise UsageError(f"--ep-sizes/--ep-models/--ep-spec-tokens: {exc}") from None


def _check_root(args: argparse.Namespace, root: str, out: Output) -> Any:
    from cpgraph.adapters import AdapterError
    from cpgraph.adapters.megatron import policy_from
    from cpgraph.check.subjects.ep_admission import check_release

    def progress(line: str) -> None:
        if not out.quiet:
            print(f"cpgraph check {args.target}: {line}", file=sys.stderr, flush=True)

    try:
        driver = policy_from(root, args.target.partition(":")[2] or "ep")
        return check_release(driver, target=args.target, cases=args.max_cases or DEFAULT_STEPS, seed=args.seed,
                        space=_space(args), progress=progress), driver
    except (AdapterError, ValueError) as exc:
        raise UsageError(f"cannot check {args.target} on {root}: {exc}") from None


def run_ep(args: argparse.Namespace, out: Output) -> int:
    """The EP check (module docstring)."""
    from cpgraph.adapters.megatron import installed_root

    _space(args)
    if args.release is not None:
        return _run_releases(args, out)
    try:
        root = args.adapter_root or installed_root()
    except Exception as exc:  # the adapter's AdapterError: nothing installed
        raise UsageError(str(exc)) from None
    report, driver = _check_root(args, root, out)
    out.result(_rendered(report, out.format))
    if args.emit_test and report.violations:
        from cpgraph.check.emit_ep import write_ep_test

        out.note(f"wrote regression test {write_ep_test(args.emit_test, args.target, report.violations, driver.version, root)}")
    return OK if report.ok else FOUND


def _rendered(report: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report.to_json())
    if fmt == "md":
        return str(report.markdown())
    if fmt == "junit":
        from cpgraph.formats import JUnitCase, junit

        cases = [JUnitCase(v.invariant + (f" ({v.kind})" if v.kind else ""), f"cpgraph.check.{report.target}", "failure", 0.0,
                           v.why, v.text()) for v in report.violations]
        return junit(f"cpgraph check {report.target}", cases or [JUnitCase("every invariant", f"cpgraph.check.{report.target}",
                                                                           "passed", 0.0, "", "")])
    return str(report.text())


def _run_releases(args: argparse.Namespace, out: Output) -> int:
    from cpgraph.adapters.megatron import PACKAGE
    from cpgraph.adapters.releases import ReleaseUnavailable, fetch, in_range

    try:
        versions = in_range(args.release, package=PACKAGE)
    except (ValueError, ReleaseUnavailable) as exc:
        raise UsageError(str(exc)) from None
    rows: list[dict[str, Any]] = []
    for i, version in enumerate(versions, 1):
        if not out.quiet:
            print(f"cpgraph check: {PACKAGE} {version} ({i}/{len(versions)}): fetching and checking ...", file=sys.stderr, flush=True)
        try:
            root = str(fetch(PACKAGE, version))
            report, driver = _check_root(args, root, out)
        except (ReleaseUnavailable, UsageError) as exc:
            rows.append({"release": version, "verdict": "not driven", "exit": USAGE, "steps": None, "first": str(exc), "report": None})
            continue
        first = report.violations[0] if report.violations else None
        verdict = "OK" if report.ok else "FAILED " + ", ".join(dict.fromkeys(v.invariant + (f" ({v.kind})" if v.kind else "") for v in report.violations))
        shown = "" if first is None else (f"{first.invariant}{f' ({first.kind})' if first.kind else ''}: ep_size={first.config.ep_size} model={first.config.model} "
                                          f"steps=[{', '.join('idle' if s is None else str(s) for s in first.steps)}]")
        rows.append({"release": version, "verdict": verdict, "exit": OK if report.ok else FOUND, "steps": report.steps,
                     "first": shown, "report": report})
        if args.emit_test and report.violations:
            from cpgraph.check.emit_ep import write_ep_test

            stem, suffix = os.path.splitext(args.emit_test)
            path = args.emit_test if len(versions) == 1 else f"{stem}_{version.replace('.', '_')}{suffix or '.py'}"
            out.note(f"wrote regression test {write_ep_test(path, args.target, report.violations, driver.version, root)}")
    out.result(_render_rows(args, PACKAGE, rows, out.format))
    codes = {r["exit"] for r in rows}
    return USAGE if USAGE in codes else FOUND if FOUND in codes else OK


def _render_rows(args: argparse.Namespace, package: str, rows: list[dict[str, Any]], fmt: str) -> str:
    from cpgraph.formats import md_table, text_table

    title = f"cpgraph check {args.target} over {package} {args.release}: {len(rows)} release{'s' if len(rows) != 1 else ''}"
    if fmt == "json":
        return json.dumps({"target": args.target, "package": package, "releases": [
            {k: (v.to_json() if k == "report" and v is not None else v) for k, v in r.items()} for r in rows]})
    table = [["release", "verdict", "EP steps", "first violation (minimal step) or reason"]]
    table += [[r["release"], r["verdict"], "-" if r["steps"] is None else str(r["steps"]), r["first"]] for r in rows]
    if fmt == "md":
        return f"### {title}\n\n{md_table(table)}\n"
    details = [f"\n== {package} {r['release']}\n{r['report'].text()}" for r in rows if r["report"] is not None and not r["report"].ok]
    return "\n".join([title, "", text_table(table), *details])
