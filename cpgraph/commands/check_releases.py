"""``cpgraph check ADAPTER --release VERSION`` (or ``LOW..HIGH``): each release of the adapter's stack
fetched from the package index (cpgraph.adapters.releases), checked, and one row per release: the table a
user wants when asking which releases are affected.

A release that cannot be fetched, or whose code the adapter's glue does not fit, gets a row saying so (its
reason), never a verdict. Exit 2 when any row is such a row (the table is incomplete), else 1 when a release
violates an invariant, else 0. ``--emit-test PATH`` writes one regression test per violating release (its
version inserted before the suffix when the range names several), each carrying its release.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cpgraph.output import FOUND, OK, USAGE, Output, UsageError
from cpgraph.reference.lists import compact

if TYPE_CHECKING:
    from cpgraph.check import CheckOptions, CheckReport
    from cpgraph.check.paths import PathsRun
    from cpgraph.check.release import Release


@dataclass(frozen=True)
class Row:
    """One release's outcome: the report (None when it was not checked, ``reason`` then says why: its
    ``verdict`` names what kept it from one)."""

    version: str
    family: str
    report: CheckReport | None
    reason: str = ""
    unchecked: str = "not driven"  # the verdict of a row with no report

    @property
    def paths(self) -> PathsRun | None:
        """The graph paths' part of the report, when the adapter drives them."""
        return None if self.report is None else self.report.part("graph_paths")

    @property
    def ok(self) -> bool:
        return self.report is not None and self.report.ok

    @property
    def code(self) -> int:
        return USAGE if self.report is None else OK if self.ok else FOUND

    @property
    def verdict(self) -> str:
        if self.report is None:
            return self.unchecked
        if self.ok:
            return "OK"
        prefill_ok = not self.report.violations and self.report.stop is None
        broken = [] if prefill_ok else [f"prefill: {', '.join(dict.fromkeys(v.invariant for v in self.report.violations)) or 'policy call'}"]
        if self.paths is not None and not self.paths.ok:
            broken.append("paths: " + ", ".join(dict.fromkeys(f"{v.invariant} ({v.mode})" for v in self.paths.violations)))
        ep = self.report.part("ep_steps")
        if ep is not None and not ep.ok:
            broken.append("EP steps: " + ", ".join(dict.fromkeys(v.invariant + (f" ({v.kind})" if v.kind else "") for v in ep.violations)))
        return "FAILED " + "; ".join(broken)

    @property
    def cases(self) -> str:
        """What was checked: the prefill batches, or (a target with no prefill protocol) the EP steps."""
        if self.report is None:
            return "-"
        ep = self.report.part("ep_steps")
        return f"{ep.steps} EP steps" if not self.report.batches and ep is not None else str(self.report.cases)

    def first(self) -> str:
        """The first violation's invariant and minimal batch, or the reason this row is no verdict."""
        if self.report is not None and self.report.violations:
            v, b = self.report.violations[0], self.report.violations[0].batch
            decodes = "" if b.is_prefilling is None else f" is_prefilling={list(b.is_prefilling)}"
            return (f"{v.invariant}: cp_size={b.cp_size} extend_seq_lens={compact(list(b.extend_seq_lens))}{decodes} "
                    f"capture_num_tokens={compact(list(b.capture_num_tokens))}")
        if self.report is not None and self.report.stop is not None:
            return self.report.stop.line()
        if self.paths is not None and self.paths.violations:
            p = self.paths.violations[0]
            return (f"{p.invariant} on {p.mode}: cp_size={p.step.cp_size} lengths={compact(list(p.step.lengths))} "
                    f"({'decodes' if not any(p.step.prefilling) else 'mixed'}), should run "
                    f"{p.should.describe() if p.should else 'eager'}")
        ep = None if self.report is None else self.report.part("ep_steps")
        if ep is not None and ep.violations:
            e = ep.violations[0]
            return f"{e.invariant}{f' ({e.kind})' if e.kind else ''}: {e.short()}"
        return self.reason


def run_releases(
    args: argparse.Namespace, options: CheckOptions, out: Output, check: Callable[[str], CheckReport],
    write: Callable[[CheckReport, Release, str], None],
) -> int:
    """Check every release ``args.release`` names with ``check`` (the one check of the target over a release
    folder: commands/check.py's ``check_target``); print the table; the exit code (module docstring)."""
    from cpgraph.adapters import AdapterError
    from cpgraph.adapters.releases import ReleaseUnavailable, fetch, in_range
    from cpgraph.check.release import Release, adapter_package

    try:
        package = adapter_package(args.target)
        versions = in_range(args.release, package=package)
    except (ValueError, AdapterError) as exc:
        raise UsageError(str(exc)) from None
    rows: list[Row] = []
    for i, version in enumerate(versions, 1):
        if not out.quiet:
            print(f"cpgraph check: {package} {version} ({i}/{len(versions)}): fetching and checking ...", file=sys.stderr, flush=True)
        try:
            root = str(fetch(package, version))
        except ReleaseUnavailable as exc:
            rows.append(Row(version, "-", None, str(exc), "unavailable"))
            continue
        try:
            report = check(root)
        except UsageError as exc:
            rows.append(Row(version, "-", None, str(exc)))
            continue
        rows.append(Row(version, report.family or "-", report))
        if args.emit_test and report.findings:
            path = args.emit_test if len(versions) == 1 else _versioned(args.emit_test, version)
            write(report, Release(package, version, root), path)
    out.result(_render(args, package, rows, out.format))
    codes = {row.code for row in rows}
    return USAGE if USAGE in codes else FOUND if FOUND in codes else OK


def _versioned(path: str, version: str) -> str:
    stem, suffix = os.path.splitext(path)
    return f"{stem}_{version.replace('.', '_')}{suffix or '.py'}"


def _render(args: argparse.Namespace, package: str, rows: list[Row], fmt: str) -> str:
    from cpgraph.formats import JUnitCase, junit, md_table, text_table

    title = f"cpgraph check {args.target} over {package} {args.release}: {len(rows)} release{'s' if len(rows) != 1 else ''}"
    table = [["release", "family", "verdict", "batches", "first violation (minimal batch) or reason"]]
    table += [[r.version, r.family, r.verdict, r.cases, r.first()] for r in rows]
    if fmt == "json":
        data: dict[str, Any] = {
            "target": args.target, "package": package, "releases": [
                {"release": r.version, "family": r.family, "verdict": r.verdict, "exit": r.code,
                 "report": r.report.to_json() if r.report is not None else None, "reason": r.reason or None,
                 "graph_paths": r.paths.to_json() if r.paths is not None else None}
                for r in rows
            ],
        }
        return json.dumps(data)
    if fmt == "md":
        return f"### {title}\n\n{md_table(table)}\n"
    if fmt == "junit":
        cases = [
            JUnitCase(f"{package}=={r.version}", f"cpgraph.check.{args.target}",
                      "passed" if r.code == OK else "failure" if r.code == FOUND else "error", 0.0, r.first(),
                      r.report.text() if r.report is not None else r.reason)
            for r in rows
        ]
        return junit(title, cases)
    details = [f"\n== {package} {r.version}\n{r.report.text()}" for r in rows if r.report is not None and not r.report.ok]
    details += [f"\n== {package} {r.version}: {r.verdict}\n{r.reason}" for r in rows if r.report is None]
    return "\n".join([title, "", text_table(table), *details])
