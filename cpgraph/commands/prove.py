"""``cpgraph prove``: run every proof obligation of proofs/ and report each theorem's verdict.

Exit 0 only when every theorem is proved; 1 when one is refuted (a minimal counterexample is printed and
replayed through the reference); 3 when none is refuted but some is unknown (the solver's reason is
printed); 2 on bad usage (an unknown --only name lists the valid names); 130 interrupted.

``--cross-check cvc5`` re-decides every proved query with cvc5 and ``--seeds N`` re-runs every query under
z3 seeds 1..N: a disagreement or an unstable query also exits 1; a query cvc5 cannot decide is listed as
"not cross-checked" with its reason and does not fail the run.

Each solver call is first looked up in the proof cache (proofs/engine/cache.py; ``$CPGRAPH_PROOF_CACHE``, else
``$CPGRAPH_CACHE/proofs``, default ``~/.cache/cpgraph/proofs``), keyed by the query's SMT-LIB text, the solver, its
version and options: a stored proof is reused, a stored model only once it replays on the query. ``--no-cache``
neither reads nor writes it, ``--rebuild-cache`` solves every query and overwrites its entry. The report says how
many solver calls were solved and how many reused (``proof_cache`` in ``--json``).

``--json`` leads with the run's verdict: ``ok`` (true exactly when the exit code is 0) and ``verdict`` (one of
``VERDICTS``, each with its exit code); ``proved`` is the obligations' alone, and ``teeth`` the teeth pass's
part (its ``ok``: no bite lost, and the lost ones).

Each theorem's scope is declared in proofs/engine/scope.py: the table's scope column gives its cp sizes and list
lengths, the lines under it the whole scope, and ``--json`` carries it as data (``scope_declared``, with the
``parameters`` run). The teeth pass fails (exit 1) a theorem whose declared parameters did not all run, or
whose hypotheses do not reach the scope's edges at one of them (proofs/engine/witness.py), naming the part.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import TYPE_CHECKING, Any, NamedTuple

from cpgraph.output import UsageError, add_output_flags, bounded_int

if TYPE_CHECKING:
    from cpgraph.proofs.run import ObligationResult, Opinions

USAGE_ERROR = 2
DEFAULT_CP_MAX = 64
MAX_CP_MAX = 64  # the scope the proofs are stated for (docs/semantics.md, issue 11); a larger P is one edit here
MAX_JOBS = 256
MAX_SEEDS = 1000


class _Run(NamedTuple):
    """What a run found, for the report."""

    results: list[ObligationResult]
    opinions: Opinions
    bites: tuple[Any, ...]
    lost: list[Any]
    wall: float
    proved: bool
    overall: str  # the run's verdict (see ``verdict``), what the exit code says
    cache: Any = None  # (the proof cache's Setting, the run's Tally of solver calls solved and reused)


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
        "--cp-max", type=bounded_int("--cp-max", 1, MAX_CP_MAX, "the largest cp_size the proofs cover"),
        default=DEFAULT_CP_MAX, metavar="N",
        help=f"prove the per-cp_size theorems for cp_size 1..N (default {DEFAULT_CP_MAX})",
    )
    parser.add_argument(
        "--only", action="append", default=None, metavar="NAME",
        help="run only this theorem (repeatable); an unknown name lists the valid ones",
    )
    parser.add_argument(
        "--no-teeth", dest="teeth", action="store_false",
        help="skip the teeth pass (after the proofs, every wrong variant of the checked theorems must still get its verdict)",
    )
    parser.add_argument("--jobs", type=bounded_int("--jobs", 1, MAX_JOBS), default=None, metavar="N",
                        help="worker processes (default: CPUs)")
    add_output_flags(parser)
    parser.add_argument(
        "--no-cache", action="store_true",
        help="neither read nor write the proof cache: solve every query (the cache: $CPGRAPH_PROOF_CACHE, else "
        "$CPGRAPH_CACHE/proofs, default ~/.cache/cpgraph/proofs)",
    )
    parser.add_argument(
        "--rebuild-cache", action="store_true",
        help="solve every query and overwrite its proof-cache entry (reuse none)",
    )
    parser.add_argument(
        "--cross-check", choices=("cvc5",), default=None, metavar="SOLVER",
        help="re-check every proved query with a second solver (cvc5); a disagreement exits 1, a query it cannot "
        "decide is reported as not cross-checked",
    )
    parser.add_argument(
        "--seeds", type=bounded_int("--seeds", 0, MAX_SEEDS), default=0, metavar="N",
        help="re-run every query under z3 random seeds 1..N and report unstable queries (they exit 1)",
    )
    parser.set_defaults(run=run)


class _Progress:
    """A counter line on stderr: rewritten in place on a terminal, every 10% otherwise."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.tty = sys.stderr.isatty()
        self.last_decile = -1
        self.quiet = quiet
        self.shield: _WorkerShield | None = None

    def __call__(self, done: int, total: int, result: Any) -> None:
        if self.shield is not None:  # a result came back, so the pool is up
            self.shield.release()
        if self.quiet:
            return
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


class _WorkerShield:
    """Keeps the terminal's Ctrl-C away from the solver pool's workers (each would print a traceback):
    SIGINT is ignored while the pool starts, so the spawned workers inherit 'ignore' (a disposition
    survives exec; a blocked mask does not), and this process's handler comes back as soon as every
    worker is running (a 50 ms timer watches) or the first result arrives, whichever is first. Then
    Ctrl-C interrupts this process alone, which ends the pool."""

    def __init__(self, jobs: int | None) -> None:
        import multiprocessing

        from cpgraph.proofs.run import default_jobs

        self.expected = jobs if jobs is not None else default_jobs()
        self.children = multiprocessing.active_children
        self.saved: Any = None
        self.alarm: Any = None
        self.active = threading_main() and hasattr(signal, "setitimer")
        if self.active:
            self.saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
            self.alarm = signal.signal(signal.SIGALRM, self._tick)
            signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)

    def _tick(self, signum: int, frame: Any) -> None:
        if len(self.children()) >= self.expected:
            self.release()

    def release(self) -> None:
        if self.active:
            self.active = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.alarm)
            signal.signal(signal.SIGINT, self.saved)


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from cpgraph.proofs.engine import cache
    from cpgraph.proofs.engine.check import Status, cvc5_available
    from cpgraph.proofs.run import Opinions
    from cpgraph.output import solver_leaves_ctrl_c_to_python

    solver_leaves_ctrl_c_to_python()

    names: list[str] = args.only or []
    chosen = _chosen(names)
    if args.cross_check == "cvc5" and not cvc5_available():
        print("cpgraph prove: error: --cross-check cvc5 needs the cvc5 package (pip install cvc5)", file=sys.stderr)
        return USAGE_ERROR
    opinions = Opinions(cross_check=args.cross_check, seeds=args.seeds)
    setting = cache_setting(args)
    start = time.perf_counter()
    key, recorded = _recorded(args, setting)
    saved = cache.current()
    cache.configure(setting)  # this process and, through the pool's initializer, every worker
    before = cache.tally()
    try:
        if recorded is not None:
            results, bites = recorded.results, recorded.bites
            counts = cache.Tally(0, recorded.solver_calls)
        else:
            results, bites = _prove(args, chosen, opinions)
            counts = cache.tally() - before
        wall = time.perf_counter() - start
    finally:
        cache.configure(saved)  # a caller in the same process (a test) keeps its own setting
    lost = [b for b in bites if not b.ok]
    proved = all(r.status is Status.PROVED for r in results)
    refuted = any(r.status is Status.REFUTED for r in results)
    code = 0 if proved and trusted_all(results) and not lost else 1 if refuted or proved else 3
    overall = verdict(proved, refuted, trusted_all(results), lost)
    if key and recorded is None and code == 0:
        from cpgraph.commands import prove_runs

        prove_runs.store(setting, key, results, bites, counts.solved + counts.reused, _now())
    _report(args, _Run(results, opinions, bites, lost, wall, proved, overall, (setting, counts, recorded)))
    return code


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _recorded(args: argparse.Namespace, setting: Any) -> tuple[str, Any]:
    """The run record's key ("" when none applies) and the proved run recorded under it, if any
    (cpgraph/commands/prove_runs.py). Only for the ``cpgraph`` command itself (a fresh process: nothing in it can
    differ from the files the key reads), never for a caller in the same process (a test that patches a theorem)."""
    from cpgraph.exits import PROCESS

    if not PROCESS.standalone or not setting.writes:
        return "", None
    from cpgraph.commands import prove_runs
    from cpgraph.proofs.engine.check import solver_versions

    key = prove_runs.run_key(args, solver_versions(cvc5=args.cross_check == "cvc5"))
    return key, prove_runs.load(setting, key)


def cache_setting(args: argparse.Namespace) -> Any:
    """The proof cache's setting for this run (proofs/engine/cache.py): off with --no-cache, rebuild with
    --rebuild-cache (both: a usage error), else on; off, with a line on stderr, when its folder cannot be written."""
    from cpgraph.proofs.engine import cache

    if args.no_cache and args.rebuild_cache:
        raise UsageError("--no-cache and --rebuild-cache exclude each other: --no-cache neither reads nor writes the "
                         "proof cache, --rebuild-cache writes every entry anew; give one")
    if args.no_cache:
        return cache.Setting("off")
    root = cache.default_root()
    why = cache.usable(root)
    if why:
        if not args.quiet:
            print(f"cpgraph prove: proof cache off: {why} (set CPGRAPH_PROOF_CACHE or CPGRAPH_CACHE, or pass --no-cache)",
                  file=sys.stderr)
        return cache.Setting("off")
    return cache.Setting("rebuild" if args.rebuild_cache else "on", root)


VERDICTS = {"proved": 0, "refuted": 1, "second opinions disagree": 1, "teeth lost": 1, "unknown": 3}  # -> exit code


def verdict(proved: bool, refuted: bool, trusted: bool, lost: list[Any]) -> str:
    """The whole run's verdict, one of ``VERDICTS`` (whose exit code the run returns): ``proved`` only when every
    theorem is proved, no second opinion disagrees and the teeth pass lost no bite."""
    if refuted:
        return "refuted"
    if not proved:
        return "unknown"
    return "second opinions disagree" if not trusted else "teeth lost" if lost else "proved"


def _chosen(names: list[str]) -> list[Any]:
    """The obligations --only names, each once in the order given (every obligation without --only); an
    unknown name is a usage error listing the valid ones."""
    from cpgraph.proofs.registry import BY_NAME, OBLIGATIONS

    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise UsageError(f"--only {unknown[0]!r} is not a theorem; valid names: {', '.join(sorted(BY_NAME))}")
    return [BY_NAME[n] for n in dict.fromkeys(names)] if names else list(OBLIGATIONS)


def _prove(
    args: argparse.Namespace, chosen: list[Any], opinions: Opinions
) -> tuple[list[ObligationResult], tuple[Any, ...]]:
    """Every query of the chosen obligations and, unless --no-teeth, the teeth pass in the same pool of workers
    (its bites are empty when a theorem was not proved: the pass reads a proved run), with progress on stderr
    and Ctrl-C kept from the workers."""
    from cpgraph.proofs.run import run_obligations
    from cpgraph.proofs.teeth.run import prove_with_teeth

    progress = _Progress(quiet=args.quiet)
    if not args.quiet:
        teeth = " and the teeth pass (every wrong variant of these theorems must keep its verdict)" if args.teeth else ""
        print(f"cpgraph prove: {len(chosen)} theorems, cp_size 1..{args.cp_max}{teeth} ...", file=sys.stderr, flush=True)
    if args.jobs != 1:
        progress.shield = _WorkerShield(args.jobs)
    try:
        if args.teeth:
            return prove_with_teeth(chosen, cp_max=args.cp_max, jobs=args.jobs, progress=progress, opinions=opinions)
        return run_obligations(chosen, cp_max=args.cp_max, jobs=args.jobs, progress=progress, opinions=opinions), ()
    finally:
        if progress.shield is not None:
            progress.shield.release()


def _report(args: argparse.Namespace, run: _Run) -> None:
    """The report on stdout in the --format asked for; ``run.overall``: the run's ``verdict``."""
    from cpgraph.commands.prove_report import _json, _junit, _markdown

    results, opinions, bites, lost, wall, proved, overall, _ = run
    if args.format == "junit":
        sys.stdout.write(_junit(results, args.cp_max, wall))
        return
    if args.format == "md":
        sys.stdout.write(_markdown(results, args.cp_max, wall, overall))
        return
    trusted = all(r.trusted for r in results)  # proved, and no disagreement or unstable query
    slowest = max(results, key=lambda r: r.slowest[1])
    if args.format == "json":
        document = _json(args, results, opinions, bites, lost, wall, proved, trusted, slowest, overall)
        print(json.dumps({**document, "proof_cache": _cache_json(run.cache)}, indent=2))
        return
    _print_text(args, run, slowest)


def _print_text(args: argparse.Namespace, run: _Run, slowest: ObligationResult) -> None:
    """The table, each failure, the second opinions, the teeth pass and the one-line verdict."""
    from cpgraph.commands.prove_report import _opinions_text
    from cpgraph.output import highlight

    results, opinions, bites, lost, wall, proved, _, used = run
    print(highlight(_table(_rows(results, opinions, args.cp_max)), sys.stdout))
    print(_scope_text(results, args.cp_max))
    for r in results:
        if r.failures:
            print(f"\n{r.name}: {r.status.value}")
            for failure in r.failures:
                print(failure.render())
    if opinions.active:
        print(_opinions_text(opinions, results))
    if bites:
        from cpgraph.proofs.teeth.variants.catalogue import VARIANTS

        named = {(v.theorem, v.name) for v in VARIANTS}
        variants = sum((b.theorem, b.variant) in named for b in bites)
        scoped = sum(b.variant.startswith("scope") for b in bites)
        needed = sum(b.variant.startswith("needed:") for b in bites)
        print(f"\nteeth: {len(bites) - len(lost)} of {len(bites)} checks kept their verdicts ({variants} wrong "
              f"variants, {scoped} declared-scope checks, {needed} needed bounds,\n  {len(bites) - variants - scoped - needed} "
              f"coverage and domain-guard checks; the scope's witnesses took {sum(r.witness_seconds for r in results):.1f} s of CPU in the proof workers)")
        for b in lost:
            if b.variant.startswith("scope"):
                print(f"  SCOPE LOST {b.theorem}: {b.variant}: {b.description} (its declared scope, proofs/engine/scope.py, "
                      "is not what was proved)")
                continue
            if b.variant.startswith("needed:"):
                from cpgraph.proofs.teeth.needed import RECHECK_MAX

                print(f"  IMPLIED {b.theorem}: {b.variant[len('needed: '):]} follows from the query's other hypotheses at parameter "
                      f"{b.parameter} (and at the theorem's other parameters up to {RECHECK_MAX}): delete it, or it hides a weakened copy")
                continue
            print(f"  LOST {b.theorem}: variant {b.variant} ({b.description}) at {b.parameter}: "
                  f"expected {b.expected.value}, got {b.got.value}: the theorem no longer tells this wrong spec apart")
    if used is not None:
        print("\n" + _cache_text(used))
    verdict = "all proved" if proved and not lost else "NOT all proved" if not proved else "proved, but some theorems lost their teeth"
    print(highlight(
        f"\n{len(results)} theorems, {sum(r.queries for r in results)} queries, cp_size 1..{args.cp_max}: {verdict} "
        f"in {wall:.1f} s (slowest query: {slowest.name} {slowest.slowest[0]}, {slowest.slowest[1]:.3f} s)",
        sys.stdout,
    ))


def _cache_json(used: Any) -> dict[str, Any] | None:
    """``proof_cache`` in --json: the mode, the folder, the solver calls solved and reused, and ``run``: the
    recorded run reused whole (its key and when it was recorded), or null."""
    if used is None:
        return None
    setting, counts, recorded = used
    return {"mode": setting.mode, "path": str(setting.root) if setting.root is not None else None,
            "solver_calls": counts.solved + counts.reused, "solved": counts.solved, "reused": counts.reused,
            "run": {"key": recorded.key, "recorded": recorded.when} if recorded is not None else None}


def _cache_text(used: Any) -> str:
    """One line: how many solver calls (the theorems' queries and the teeth pass's) were solved, how many reused."""
    setting, counts, recorded = used
    total = counts.solved + counts.reused
    head = f"{total:,} solver calls (the theorems' queries, their scope witnesses and the teeth pass)"
    if setting.mode == "off" or setting.root is None:
        return f"{head}: {counts.solved:,} solved (the proof cache is off)"
    if setting.mode == "rebuild":
        return f"{head}: {counts.solved:,} solved, their entries rewritten in the proof cache at {setting.root}"
    if recorded is not None:
        return (f"{head}: all reused with the whole run recorded {recorded.when} in the proof cache at {setting.root} "
                f"(no file of the package, solver or Python version or flag changed since; the table's seconds are "
                f"that run's)")
    return f"{head}: {counts.reused:,} reused from the proof cache at {setting.root}, {counts.solved:,} solved"


def _scope_text(results: list[ObligationResult], cp_max: int, width: int = 110) -> str:
    """Each theorem's declared scope (proofs/engine/scope.py), wrapped to ``width`` columns under its name."""
    import textwrap

    from cpgraph.proofs.engine.scope import SCOPE

    lines = ["\nscope (declared in proofs/engine/scope.py; the teeth pass checks it was run and reached):"]
    for r in results:
        text = SCOPE[r.name].text(cp_max) if r.name in SCOPE else r.scope
        lines.append(textwrap.fill(text, width, initial_indent=f"  {r.name}: ", subsequent_indent="      "))
    return "\n".join(lines)


def _rows(results: list[ObligationResult], opinions: Opinions, cp_max: int = 64) -> list[list[str]]:
    """The table's header and one row per theorem (with the cross-check and seeds columns when asked); the scope
    column is the cp sizes and list lengths (the whole scope is printed under the table)."""
    from cpgraph.commands.prove_report import _cross_cell, _seed_cell
    from cpgraph.proofs.engine.scope import SCOPE

    rows = [["theorem", "scope", "verdict", "queries", "seconds", "slowest query"]]
    if opinions.active:
        rows[0] += ["cross-check", "seeds"]
    for r in results:
        rows.append(
            [r.name, SCOPE[r.name].short(cp_max) if r.name in SCOPE else r.scope, r.status.value, str(r.queries),
             f"{r.seconds:.2f}", f"{r.slowest[0]} {r.slowest[1]:.3f}s"]
        )
        if opinions.active:
            rows[-1] += [_cross_cell(opinions, r), _seed_cell(opinions, r)]
    return rows


def trusted_all(results: list[ObligationResult]) -> bool:
    """Proved, and no second-opinion disagreement or unstable query."""
    return all(r.trusted for r in results)
