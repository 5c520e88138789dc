"""How long `cpgraph prove` takes, wall and CPU, against a baseline revision, interleaved.

This machine's speed drifts: the same deterministic run has taken 74 s of CPU and, twenty minutes later,
113 s. So a figure alone says little; this benchmark runs the current tree and a baseline revision
(``--rev``, extracted with ``git archive``) alternately, ``--runs`` times each, and times a fixed pure-Python
loop before every run (the probe: its CPU seconds say how fast the machine was just then). It prints every
run and the medians' ratios, and writes JSON and Markdown under benchmarks/results.

    python benchmarks/prove_time.py --rev fd57730 --runs 3
    python benchmarks/prove_time.py --runs 5          # the current tree alone
    python benchmarks/prove_time.py --runs 3 --busy 1 # with one CPU kept busy: "at load about 1"

``--busy N`` keeps N other processes spinning (a pure-Python loop each, started before the probe and
stopped after the run) through every run, so a figure "at load about 1" is one anyone can reproduce on an
otherwise idle machine; the load column then reads about N at the start (its 1-minute average lags: the
spinners start ``BUSY_WARMUP_S`` seconds before each run).

Each run is ``python -m cpgraph prove -q`` with its default scope (cp_size 1..64, the teeth pass) and
workers (the CPUs). The exit code of every run is recorded: a run that does not exit 0 is reported, and
the benchmark exits 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE_LOOP = 10_000_000
BUSY_WARMUP_S = 30.0


@dataclass(frozen=True)
class Run:
    side: str  # "current" or the baseline revision
    index: int
    wall_s: float
    cpu_s: float  # user + system of the prove process and its workers
    probe_s: float  # CPU seconds of the fixed loop just before (higher: a slower machine)
    load: float  # 1-minute load average at the start
    exit_code: int
    busy: int = 0  # other processes kept spinning through the run (--busy)


def probe() -> float:
    """CPU seconds of a fixed pure-Python loop, in a fresh process (so no cache or JIT state carries over)."""
    code = f"import time\nt=time.process_time()\ns=0\nfor i in range({PROBE_LOOP}): s+=i\nprint(time.process_time()-t)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def spinners(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` processes that keep one CPU each busy until killed (a pure-Python loop)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


def prove_once(tree: Path, side: str, index: int, busy: int = 0) -> Run:
    """One ``cpgraph prove -q`` from ``tree`` (its own copy of the package first on the path), with ``busy``
    other processes spinning through it (started ``BUSY_WARMUP_S`` before, so the load average has risen)."""
    spinning = spinners(busy)
    try:
        if busy:
            time.sleep(BUSY_WARMUP_S)
        return _timed(tree, side, index, busy)
    finally:
        stop(spinning)


def _timed(tree: Path, side: str, index: int, busy: int) -> Run:
    p = probe()
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-m", "cpgraph", "prove", "-q"], cwd=tree, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        print(f"  {side} run {index}: exit {done.returncode}: {done.stderr.strip()[-400:]}", file=sys.stderr)
    return Run(side, index, round(wall, 2), round(cpu, 2), round(p, 3), round(load, 2), done.returncode, busy)


def extract(rev: str, into: Path) -> Path:
    """``rev``'s tree (git archive) under ``into``; a ValueError naming the revision when git cannot."""
    tree = into / rev
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True)
    if archive.returncode != 0:
        raise ValueError(f"--rev must name a commit of this repository, got {rev!r}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def summary(runs: list[Run], sides: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for side in sides:
        mine = [r for r in runs if r.side == side]
        out[side] = {
            "median_wall_s": round(statistics.median(r.wall_s for r in mine), 2),
            "median_cpu_s": round(statistics.median(r.cpu_s for r in mine), 2),
            "median_probe_s": round(statistics.median(r.probe_s for r in mine), 3),
        }
    return out


def markdown(runs: list[Run], totals: dict[str, dict[str, float]], head: str, rev: str | None, when: str) -> str:
    busy = max(r.busy for r in runs)
    spin = (f" With {busy} other process{'es' if busy > 1 else ''} spinning through every run (a pure-Python loop "
            f"each, started {BUSY_WARMUP_S:.0f} s before it): the CPU column counts the prove run alone.") if busy else ""
    lines = [f"# `cpgraph prove` wall and CPU, {when}", "",
             f"`python benchmarks/prove_time.py{' --rev ' + rev if rev else ''} --runs {max(r.index for r in runs)}"
             f"{f' --busy {busy}' if busy else ''}` at {head}, on {os.cpu_count()} CPUs.{spin} Probe: CPU seconds of a "
             f"fixed {PROBE_LOOP:,}-step Python loop just before the run (higher is a slower machine).", "",
             "| run | side | wall s | CPU s | probe s | load | exit |", "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r.index} | {r.side} | {r.wall_s} | {r.cpu_s} | {r.probe_s} | {r.load} | {r.exit_code} |" for r in runs]
    lines += ["", "| side | median wall s | median CPU s | median probe s |", "| --- | --- | --- | --- |"]
    lines += [f"| {side} | {t['median_wall_s']} | {t['median_cpu_s']} | {t['median_probe_s']} |" for side, t in totals.items()]
    if rev is not None:
        cur, base = totals["current"], totals[rev]
        lines += ["", f"current / {rev}: wall {cur['median_wall_s'] / base['median_wall_s']:.2f}x, "
                      f"CPU {cur['median_cpu_s'] / base['median_cpu_s']:.2f}x (medians of interleaved runs)"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a baseline revision, run alternately with the current tree")
    parser.add_argument("--runs", type=int, default=3, help="runs of each side (default 3)")
    parser.add_argument("--busy", type=int, default=0,
                        help="other processes kept spinning through every run (default 0; 1: 'at load about 1')")
    parser.add_argument("--label", default="", help="appended to the report's file name (default: none)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be an int >= 1, got {args.runs}")
    if args.busy < 0:
        parser.error(f"--busy must be an int >= 0, got {args.busy}")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as scratch:
        try:
            base = extract(args.rev, Path(scratch)) if args.rev else None
        except ValueError as error:
            parser.error(str(error))
        trees = [("current", ROOT)] + ([(args.rev, base)] if base is not None else [])
        for index in range(1, args.runs + 1):
            for side, tree in trees:
                run = prove_once(tree, side, index, args.busy)
                runs.append(run)
                print(f"run {index} {side:>10}: wall {run.wall_s:6.1f} s  CPU {run.cpu_s:6.1f} s  probe {run.probe_s:.3f} s  "
                      f"load {run.load:.2f}  exit {run.exit_code}", flush=True)
    totals = summary(runs, [side for side, _ in trees])
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = markdown(runs, totals, head, args.rev, when)
    print("\n" + text)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{when[:10]}-prove-time{'-' + args.label if args.label else ''}"
    stem.with_suffix(".md").write_text(text)
    stem.with_suffix(".json").write_text(json.dumps({"head": head, "rev": args.rev, "when": when, "busy": args.busy, "runs": [asdict(r) for r in runs],
                                                     "medians": totals}, indent=2) + "\n")
    return 0 if all(r.exit_code == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
