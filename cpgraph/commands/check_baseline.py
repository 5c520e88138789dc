"""``cpgraph check ADAPTER --baseline BASE [--adapter-root TREE]``: verify a fix. The candidate (the tree under
--adapter-root, else the installed stack) and the baseline (BASE: a release version, fetched like --release,
or a folder holding an unpacked tree) are checked with the same options and seed on the same paths: the
prefill bucket and every graph path (each CUDA-graph mode, each dcp size, each DP size). The findings are
paired by (path, invariant) into a verdict diff (cpgraph/commands/verdict_diff.py): fixed, still failing,
newly failing, ok, each with its minimal witness.

Exit 1 when anything newly fails, else 0 (a finding the baseline has too is shown as still failing and does
not fail the run); 2 on a usage error, checked before any work (a BASE that is neither a version nor a folder
holding the stack, --baseline with --release, --emit-test or --plot, a target that is no adapter policy), or
when either tree cannot be fetched or driven (the side is named).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from cpgraph.commands.verdict_diff import Finding, Side, diff, exit_code, render
from cpgraph.output import Output, UsageError
from cpgraph.reference.graph_paths import EFFICIENCY, SAFETY
from cpgraph.reference.lists import compact

if TYPE_CHECKING:
    from cpgraph.check import CheckOptions, CheckReport
    from cpgraph.check.paths import PathViolation
    from cpgraph.check.finding import Violation

PREFILL = "prefill"
EP_STEPS = "EP steps"
IMPORT_NAMES = {"megatron-core": "megatron"}  # a package whose code is not under its own name
VERSION = re.compile(r"\d+(\.\d+)*(\.post\d+)?")
DECODES = {"dual_chunk_swap": "decodes dealt", "dual_chunk_swap_replicated": "decodes copied",
           "dual_chunk_swap_dcp": "decodes copied"}
Check = Callable[["str | None", "CheckOptions"], "CheckReport"]  # the one check of the target over a tree (None: installed)


def baseline_root(args: argparse.Namespace) -> tuple[str, str]:
    """BASE resolved to a folder holding the stack, and how it was named ('release' or 'tree'); a usage error
    naming --baseline, the value and what is allowed otherwise. Fetches a release version."""
    from cpgraph.adapters import AdapterError
    from cpgraph.adapters.releases import ReleaseUnavailable, fetch
    from cpgraph.check.release import adapter_package

    base = args.baseline
    for flag, given in (("--release", args.release), ("--emit-test", args.emit_test), ("--plot", args.plot)):
        if given is not None:
            raise UsageError(f"--baseline {base} and {flag} {given}: a verdict diff writes no {flag.lstrip('-')}; "
                             f"check one tree at a time for {flag}" if flag != "--release" else
                             f"--baseline {base} and --release {given}: --baseline compares one candidate (--adapter-root "
                             "TREE, or the installed stack) with BASE; --release checks releases on their own: give one")
    try:
        package = adapter_package(args.target)
    except (ValueError, ImportError, AdapterError):
        raise UsageError(f"--baseline {base} needs an adapter policy (MODULE:ATTR of a cpgraph.adapters stack, e.g. "
                         f"cpgraph.adapters.vllm:pcp); {args.target!r} drives no released stack") from None
    if os.path.isdir(base):
        if not os.path.isdir(os.path.join(base, import_name(package))):
            raise UsageError(f"--baseline {base!r}: the folder holds no {import_name(package)}/ package; BASE is a {package} release "
                             f"version (e.g. 0.34.0) or a folder holding an unpacked {package} tree")
        _candidate(args.adapter_root, package)
        return os.path.abspath(base), "tree"
    if not VERSION.fullmatch(base):
        raise UsageError(f"--baseline {base!r}: neither a folder nor a release version; BASE is a {package} release "
                         f"version (e.g. 0.34.0) or a folder holding an unpacked {package} tree")
    _candidate(args.adapter_root, package)
    try:
        return str(fetch(package, base)), "release"
    except ReleaseUnavailable as exc:
        raise UsageError(f"--baseline {base}: {exc}") from None


def import_name(package: str) -> str:
    """The folder a release of ``package`` unpacks its code into (megatron-core's is megatron/)."""
    return IMPORT_NAMES.get(package, package)


def _candidate(root: str | None, package: str) -> None:
    """The candidate is there before any check runs: --adapter-root holds the package, or it is installed."""
    import importlib.util

    if root is None:
        if importlib.util.find_spec(import_name(package)) is None:
            raise UsageError(f"--baseline: no candidate: {package} is not installed here; give the tree to compare with "
                             f"--adapter-root TREE")
    elif not os.path.isdir(os.path.join(root, import_name(package))):
        raise UsageError(f"--adapter-root {root!r}: the folder holds no {import_name(package)}/ package (the candidate --baseline "
                         "compares with BASE)")


def run_baseline(args: argparse.Namespace, options: CheckOptions, out: Output, check: Check) -> int:
    """Check the baseline and the candidate; print the verdict diff; the exit code (module docstring)."""
    root, kind = baseline_root(args)
    sides = []
    for name, where in (("baseline", root), ("candidate", args.adapter_root)):
        out.note(f"{name}: checking {'the installed stack' if where is None else where} ...")
        try:
            sides.append(_side(options, check, where, kind if name == "baseline" else "tree" if where else "installed"))
        except UsageError as exc:
            raise UsageError(f"--baseline: the {name} ({where or 'installed'}) cannot be checked: {exc}") from None
    rows = diff(sides[0], sides[1])
    out.result(render(f"cpgraph check {args.target}: candidate against baseline", sides[0], sides[1], rows, out.format))
    return exit_code(rows)


def _side(options: CheckOptions, check: Check, root: str | None, kind: str) -> Side:
    """One tree checked (the one check: the prefill bucket, then every graph path, each named by its mode, dcp
    size, decode placement and DP size; a path's draws do not depend on the other paths)."""
    report = check(root, options)
    checked = [(PREFILL, i) for i in report.checked]
    findings = [_prefill_finding(v) for v in report.violations]
    paths = report.part("graph_paths")
    if report.stop is not None:
        checked.append((PREFILL, "policy call"))
        findings.append(Finding(PREFILL, "policy call", report.stop.line(), report.stop.line()))
    elif paths is not None:
        names = {p.key(): path_name(p.mode, p.placement, p.dcp_size, p.dp_size) for p in paths.paths}
        checked += [(name, i) for name in names.values() for i in (*SAFETY, *EFFICIENCY)]
        findings += [_path_finding(v, names[v.path.key()]) for v in paths.violations]
    ep = report.part("ep_steps")
    if report.stop is None and ep is not None:
        checked += [(EP_STEPS, i) for i in (*SAFETY, *EFFICIENCY)]
        findings += [_ep_finding([v for v in ep.violations if v.invariant == inv]) for inv in dict.fromkeys(v.invariant for v in ep.violations)]
    return Side(_label(report.version, root, kind), tuple(dict.fromkeys(checked)), tuple(findings))


def _label(version: str | None, root: str | None, kind: str) -> str:
    version = version or "installed"
    where = {"release": "the release, fetched", "tree": "a tree", "installed": "installed"}[kind]
    return f"{version} ({where}{'' if root is None else ' at ' + root})"


def path_name(mode: str, placement: str, dcp: int, dp: int) -> str:
    """A graph path's name: its mode, dcp size and how decodes are placed, DP size."""
    return f"{mode}, dcp {dcp} ({DECODES.get(placement, placement)}), DP {dp}"


def _prefill_finding(v: Violation) -> Finding:
    b = v.batch
    decodes = "" if b.is_prefilling is None else f" is_prefilling={list(b.is_prefilling)}"
    witness = (f"cp_size={b.cp_size} extend_seq_lens={compact(list(b.extend_seq_lens))}{decodes} "
               f"capture_num_tokens={compact(list(b.capture_num_tokens))}")
    return Finding(PREFILL, v.invariant, witness, v.text(), v.to_json())


def _ep_finding(found: list[Violation]) -> Finding:
    """An invariant broken on EP steps (its kinds together: the diff pairs findings by path and invariant)."""
    kinds = [v.kind for v in found if v.kind]
    witness = (f"[{', '.join(kinds)}] " if kinds else "") + found[0].short()
    return Finding(EP_STEPS, found[0].invariant, witness, "\n\n".join(v.text() for v in found), found[0].to_json())


def _path_finding(v: PathViolation, path: str) -> Finding:
    dp = len(v.steps)
    steps = "; ".join(f"{'DP rank ' + str(d) + ': ' if dp > 1 else ''}cp_size={s.cp_size} lengths={compact(list(s.lengths))}"
                      + ("" if not any(s.prefilling) else f" is_prefilling={list(s.prefilling)}") for d, s in enumerate(v.steps))
    c = v.config
    witness = (f"{steps}; captured token sizes={compact(list(c.token_sizes))} decode request sizes="
               f"{compact(list(c.decode_request_sizes))}; should run {v.should.describe() if v.should else 'eager'}, "
               f"ran {_ran(v)}")
    return Finding(path, v.invariant, witness, v.text(), v.to_json())


def _ran(v: PathViolation) -> str:
    """What the ranks dispatched: one graph, or each distinct one with the ranks that ran it."""
    said: dict[str, list[str]] = {}
    multi = len(v.dp_answers) > 1
    for d, answers in enumerate(v.dp_answers):
        graphs = [a.dispatched.describe() if a.dispatched is not None else "eager" for a in answers]
        if multi and len(set(graphs)) == 1:
            said.setdefault(graphs[0], []).append(f"DP rank {d}")
            continue
        for a, graph in zip(answers, graphs):
            said.setdefault(graph, []).append(f"DP rank {d} rank {a.rank}" if multi else f"rank {a.rank}")
    if len(said) == 1:
        return next(iter(said))
    return "; ".join(f"{graph} on {', '.join(who)}" for graph, who in said.items())
