"""docs/measurements.md from benchmarks/results: the newest report of each benchmark, its headline figures, and
the command that reproduces it. Every figure on the page is read from a results JSON; none is typed by hand.

    .venv/bin/python benchmarks/report.py           # rewrite docs/measurements.md
    .venv/bin/python benchmarks/report.py --check   # exit 1 when the committed page differs from the results

The reports were written over several weeks by hand-assembled and script-written JSON, so each benchmark has
its own reader (``READERS``) that knows the shapes it has seen. A benchmark's newest report is the newest one
its reader understands; a newer report it cannot read is named under the table, never skipped silently.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "measurements.md"
COMMAND = ".venv/bin/python benchmarks/report.py"
DATED = re.compile(r"^(\d{4}-\d\d-\d\d)-(.+)\.json$")


class Unreadable(Exception):
    """A report whose shape a reader does not know."""


class Other(Exception):
    """A report of another benchmark, or of another variant of this one (another target, another load)."""


@dataclass(frozen=True)
class Report:
    path: Path
    date: str  # the file name's date
    name: str  # the file name after the date, without .json
    data: Any

    @property
    def order(self) -> tuple[str, int, str]:
        """Newest last: the date, then the run number a name ends with (``-2``, ``-3``; none is the first)."""
        match = re.search(r"-(\d)$", self.name)
        return (self.date, int(match.group(1)) if match else 1, self.name)


@dataclass(frozen=True)
class Row:
    benchmark: str
    report: Report
    machine: str
    figures: str
    command: str


def _reports() -> list[Report]:
    out = []
    for path in sorted(RESULTS.glob("*.json")):
        match = DATED.match(path.name)
        if match:  # an undated file (check_rate.json: a script's default output) has no date to show
            out.append(Report(path, match.group(1), match.group(2), json.loads(path.read_text())))
    return out


def _num(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}".rstrip("0").rstrip(".") if digits else f"{x:,.0f}"


def _span(values: Iterable[float], digits: int = 2, unit: str = "") -> str:
    vals = sorted(values)
    if not vals:
        raise Unreadable("no values")
    lo, hi = _num(vals[0], digits), _num(vals[-1], digits)
    return f"{lo}{unit}" if lo == hi else f"{lo}-{hi}{unit}"


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            raise Unreadable(f"no {'.'.join(keys)}")
        data = data[key]
    return data


# --- prove time -------------------------------------------------------------------------------------------


def _prove_time(busy: bool) -> Callable[[Report], Row]:
    def read(r: Report) -> Row:
        d = r.data
        runs = _get(d, "runs")
        if bool(d.get("busy", 0)) != busy:
            raise Other("other load")
        mine = [x for x in runs if x["side"] == "current"]
        med = _get(d, "medians", "current")
        figures = (f"`cpgraph prove` (default scope, teeth pass) at {d['head']}: median {_num(med['median_wall_s'], 1)} s "
                   f"wall, {_num(med['median_cpu_s'], 1)} s CPU over {len(mine)} runs")
        if d.get("rev"):
            base = _get(d, "medians", d["rev"])
            figures += (f"; baseline {d['rev']} interleaved: {_num(base['median_wall_s'], 1)} s wall, "
                        f"{_num(base['median_cpu_s'], 1)} s CPU")
        machine = (f"probe {_span((x['probe_s'] for x in runs), 2, ' s')}, "
                   f"load {_span((x['load'] for x in runs), 1)}" + (f", `--busy {d['busy']}`" if busy else ""))
        command = "python benchmarks/prove_time.py" + (f" --rev {d['rev']}" if d.get("rev") else "")
        command += f" --runs {len(mine)}" + (f" --busy {d['busy']}" if busy else "")
        return Row("prove time, " + ("at load about 1" if busy else "idle"), r, machine, figures, command)

    return read


# --- prove cold and warm (the proof cache) ------------------------------------------------------------------


def _prove_cache(r: Report) -> Row:
    d = r.data
    by = {x["name"]: x for x in _get(d, "runs")}
    cold, warm = by.get("cold"), by.get("warm")
    if cold is None or warm is None:
        raise Unreadable("no cold or warm run")

    def cell(x: dict[str, Any]) -> str:
        return f"{_num(x['wall_s'], 1)} s wall, {_num(x['cpu_s'], 1)} s CPU"

    parts = []
    if "no cache" in by:
        parts.append(f"`--no-cache` {cell(by['no cache'])}")
    parts.append(f"cold (empty cache) {cell(cold)}, {cold['solved']:,} solver calls solved ({cold['reused']:,} asked again "
                 "later in the run, reused)")
    if "warm, queries" in by:
        q = by["warm, queries"]
        parts.append(f"warm, every query built and looked up {cell(q)} ({q['reused']:,} reused, {q['solved']:,} solved)")
    parts.append(f"warm, the run record reused {cell(warm)}")
    cvc5 = by.get("cvc5 cold")
    parts.append(f"`--cross-check cvc5` cold {cell(cvc5)}" if cvc5 else "`--cross-check cvc5` cold: not measured")
    figures = f"`cpgraph prove` (default scope, teeth pass) at {d['head']}: " + "; ".join(parts)
    figures += (f". Targets: cold <= {_num(d['cpu_budget_s'], 0)} s CPU {'met' if cold['cpu_s'] <= d['cpu_budget_s'] else 'not met'}"
                f", warm < {_num(d['warm_budget_s'], 0)} s wall {'met' if warm['wall_s'] < d['warm_budget_s'] else 'not met'}")
    if cold["cpu_s"] > d["cpu_budget_s"] and "no cache" in by:
        extra = cold["cpu_s"] - by["no cache"]["cpu_s"]
        figures += (f"; in the way: the cache's own work in a cold run ({_num(extra, 1)} s CPU over `--no-cache`: each "
                    "query printed as SMT-LIB, renamed canonically, hashed, looked up and written, one file an entry) and, "
                    "in every run, "
                    "building the queries through z3's Python API")
        if "warm, queries" in by:
            figures += f" (the warm run that builds and looks every query up: {_num(by['warm, queries']['cpu_s'], 1)} s CPU)"
    runs = list(by.values())
    machine = (f"{d['cpus']} CPUs, probe {_span((x['probe_s'] for x in runs), 2, ' s')}, "
               f"load {_span((x['load'] for x in runs), 1)}")
    return Row("prove cold and warm (proof cache)", r, machine, figures,
               "python benchmarks/prove_cache.py" + (" --cvc5" if cvc5 else ""))


# --- mutation -----------------------------------------------------------------------------------------------

LABELLED = {"graph-paths": "the decode path's file"}  # --label samples of one file, each its own row
MUTATION_TARGETS = {"proofs": "theorem statements (`proofs/`)", "spec": "spec (`spec/`)", "impl": "impl (`impl/`)",
                    "reference": "reference (`reference/`)"}


def _mutation(target: str, scope_only: bool, label: str | None = None) -> Callable[[Report], Row]:
    """A mutation sample of ``target``; with ``label``, only the samples written under it (``--label``: one
    file's mutants, its own row), and without, only the unlabelled whole-target samples."""

    def read(r: Report) -> Row:
        d = r.data
        if "rescored" in r.name or "-at-" in r.name or not isinstance(d, dict) or d.get("target") != target:
            raise Other("not a fresh sample of this target")
        if next((x for x in LABELLED if r.name.startswith(f"mutation-{x}-")), None) != label:
            raise Other("another sample's label")
        if bool(d.get("operators_only")) != scope_only:
            raise Other("other operators")
        partial = " (stopped at its deadline)" if d.get("stopped_at_deadline") else ""
        figures = (f"{d['killed']} of {d['mutants']} mutants killed ({_num(100 * d['score'], 1)}%){partial}, "
                   f"revision {d['revision']}, kill stage {', '.join(d['killed_by_stage'])}")
        command = f"python benchmarks/mutation.py --target {target} --rev {d['revision']}"
        if d.get("sampled"):
            command += f" --limit {d['planned']} --sample-seed {d['sample_seed']}"
        if scope_only:
            command += " --operators " + " ".join(d["operators_only"])
        name = "mutation score, " + ("scope operators alone" if scope_only else MUTATION_TARGETS[target])
        if label is not None:
            name += f", {LABELLED[label]}"
            command += f" --files {' '.join(f['file'] for f in d.get('per_file', []))} --label {label}"
        return Row(name, r, f"not recorded; {d['jobs']} job(s), {_num(d['wall_seconds'], 0)} s wall", figures, command)

    return read


def _glue_sample(d: dict[str, Any]) -> str:
    """Where the sample was drawn from, and what the survivors not argued equivalent are (by written kind)."""
    kinds: dict[str, int] = {}
    for o in d.get("outcomes", []):
        argued = o.get("argued") if isinstance(o, dict) else None
        if o.get("status") == "survived" and not (isinstance(argued, dict) and argued.get("kind") == "equivalent"):
            kind = str(argued.get("kind")) if isinstance(argued, dict) else "not argued"
            kinds[kind] = kinds.get(kind, 0) + 1
    drawn = (f"; drawn over the {d['mutants_executed']} mutants on lines the check runs ({d['mutants_in_regions']} in the regions)"
             if "mutants_executed" in d else "")
    rest = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return drawn + (f"; survivors not equivalent: {rest}" if rest else "")


def _glue_mutation(stack: str) -> Callable[[Report], Row]:
    """A mutation sample of a ``stack`` release's decision glue, killed by `cpgraph check` (benchmarks/glue_mutation.py)."""
    return lambda r: _glue_row(stack, r)


def _glue_row(stack: str, r: Report) -> Row:
    d = r.data
    if not isinstance(d, dict) or not str(d.get("target", "")).startswith(f"glue-{stack}-"):
        raise Other("not a glue mutation sample of this stack")
    version = str(d["release"]).split()[-1]
    figures = (f"{d['killed']} of {d['mutants']} mutants of {d['release']}'s decision glue killed by `cpgraph check` "
               f"({_num(100 * d['score'], 1)}%; {_num(100 * d['score_without_equivalents'], 1)}% without the "
               f"{d['argued_equivalent']} argued equivalent; "
               + ", ".join(f"{n} by exit {k.split()[0]}" for k, n in d.get("killed_by_exit", {}).items())
               + f"), errored {d['errored']}, timed out {d['timed_out']}, cpgraph {d['revision']}"
               + _glue_sample(d))
    command = (f"python benchmarks/glue_mutation.py --stack {stack} --version {version} --limit {d['planned']} "
               f"--sample-seed {d['sample_seed']} --rev {d['revision']}")
    return Row(f"mutation score, a release's executed glue ({stack})", r, f"not recorded; {_num(d['wall_seconds'], 0)} s wall",
               figures, command)


# --- cpgraph check throughput -------------------------------------------------------------------------------


def _after_runs(block: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for k, v in block.items() if "after" in k]


def _check_rate(r: Report) -> Row:
    d = r.data
    if "rates" in d:  # the script's own --json output: one run
        whole, breakdown = [d], []
    elif "whole" in d and isinstance(d["whole"], dict) and any(k.startswith("whole-") for k in d["whole"]):
        whole = _after_runs(d["whole"]) + _after_runs(_get(d, "plain_policy", "whole"))
        breakdown = _after_runs(_get(d, "breakdown")) + _after_runs(_get(d, "plain_policy", "breakdown"))
    else:
        raise Unreadable("unknown check-rate shape")
    rates: dict[str, list[float]] = {}
    seconds: list[float] = []
    for run in whole:
        for policy, rate in _get(run, "rates").items():
            rates.setdefault(policy, []).append(rate["per_cpu_minute"] / 1e6)
            seconds.append(rate["seconds"])
    overhead: dict[str, list[float]] = {}
    for run in breakdown:
        for policy, parts in run.items():
            if isinstance(parts, dict) and "overhead_share" in parts:
                overhead.setdefault(policy, []).append(100 * parts["overhead_share"])
    cells = []
    for policy in sorted(rates):
        cell = f"`{policy}` {_span(rates[policy], 2, 'M')} batches per CPU-minute"
        if policy in overhead:
            cell += f", checker overhead {_span(overhead[policy], 1, '%')} (cold)"
        cells.append(cell)
    budget = _num(statistics.median(seconds), 0)
    machine = str(d.get("machine", "not recorded"))
    command = (f".venv/bin/python benchmarks/check_rate.py --budget-s {budget} --skip-mutants`, the overhead "
               "with `.venv/bin/python benchmarks/check_rate.py --breakdown")
    return Row("`cpgraph check` rate, correct policies", r, machine,
               f"{len(whole)} runs of {budget} s: " + "; ".join(cells), command)


def _random_catches(r: Report) -> Row:
    if "random-catches" not in str(r.data.get("what", "")) and "random-chunks" not in r.name:
        raise Other("not a random-catches report")
    after = _get(r.data, "after")
    found = [m for m, v in after.items() if v["found"].split("/")[0] == v["found"].split("/")[1]]
    seeds = {v["found"].split("/")[1] for v in after.values()}
    worst = max(after, key=lambda m: after[m]["median"])
    figures = (f"{len(found)} of {len(after)} planted bugs found by the random phase alone on every seed "
               f"({'/'.join(sorted(seeds))} seeds); median batches to the first finding "
               f"{_span((v['median'] for v in after.values()), 1)} (slowest: `{worst}`)")
    return Row("`cpgraph check` random phase, time to catch", r, "not recorded", figures,
               ".venv/bin/python benchmarks/check_rate.py --random-catches")


# --- decision latency ---------------------------------------------------------------------------------------


def _decision_latency(r: Report) -> Row:
    d = r.data
    if "rows" in d and "title" in d:  # the script's own --json output: one run
        runs = [d]
    elif isinstance(d.get("runs"), dict) and all(isinstance(v, dict) and "rows" in v for v in d["runs"].values()):
        after = [k for k in d["runs"] if k.startswith("after")]
        if not after:
            raise Unreadable("no after run")
        group = after[-1].split("-")[0]  # the last revision measured: its runs
        runs = [d["runs"][k] for k in after if k.split("-")[0] == group]
    else:
        raise Unreadable("unknown decision-latency shape")
    rows = [row for run in runs for row in run["rows"]]
    big = [row["ratios"] for row in rows if row["R"] >= 256]
    one = [row["ratios"] for row in rows if row["R"] == 1]
    figures = (f"whole decision at R >= 256: from a list {_span((x['list/sum'] for x in big), 1, 'x')} one `sum()`, "
               f"from an int64 array {_span((x['array/sum'] for x in big), 1, 'x')} and from a CPU tensor "
               f"{_span((x['tensor/sum'] for x in big), 1, 'x')} one `.sum()`; at R = 1 `impl.policy` "
               f"{_span((x['policy/plain_policy'] for x in one), 1, 'x')} a plain policy; {len(runs)} run(s)")
    title = str(runs[-1]["title"])
    machine = title.split(" on ", 1)[1].split(";")[0] if " on " in title else str(d.get("machine", "not recorded"))
    return Row("impl decision latency (CPU)", r, machine, figures,
               ".venv/bin/python benchmarks/decision_latency.py --repeat 21 --json OUT.json --md OUT.md")


# --- review scale -------------------------------------------------------------------------------------------


def _review_scale(r: Report) -> Row:
    meta, rows = _get(r.data, "meta"), _get(r.data, "rows")
    default = next((x for x in rows if x["case"].startswith("default review")), None)
    if default is None:
        raise Unreadable("no default review row")
    slowest = max(rows, key=lambda x: x["wall_s"])
    figures = (f"default `cpgraph review` (upstream against prefix, with the diff) {_num(default['wall_s'], 1)} s wall, "
               f"{_num(default['cpu_s'], 1)} s CPU; slowest of {len(rows)} cases: {slowest['case']}, "
               f"{_num(slowest['wall_s'], 1)} s wall, {_num(slowest['cpu_s'], 1)} s CPU; every case "
               f"{_span((x['wall_s'] for x in rows), 1, ' s')} wall")
    return Row("`cpgraph review` / `plan` at scale", r, f"{meta['machine']}, Python {meta['python']}", figures,
               ".venv/bin/python benchmarks/review_scale.py")


# --- graph latency (GPU) ------------------------------------------------------------------------------------


def _graph_latency(r: Report) -> Row:
    d = r.data
    if not isinstance(d, dict) or not {"device", "mode", "results"} <= set(d):
        raise Other("not a graph_latency report")
    figures = f"mode {d['mode']}, {len(d['results'])} cp sizes, every check passed: {d['ok']}"
    return Row("CUDA graph replay vs eager", r, str(d["device"]), figures, "scripts/gpu-check")


# --- the page -----------------------------------------------------------------------------------------------

# --- EP check rate (Megatron-Core) ----------------------------------------------------------------------------


def _ep_check_rate(r: Report) -> Row:
    d = r.data
    if "releases" not in d:
        raise Unreadable("unknown ep-steps-rate shape")
    cells = [f"{x['release']} {x['steps_per_minute']:,} EP steps per minute on {x['workers']} workers "
             f"({x['per_cpu_minute']:,} per CPU-minute of one)" for x in d["releases"]]
    best = min(x["steps_per_minute"] for x in d["releases"])
    figures = "; ".join(cells) + f". Target >= {d['target_per_minute']:,} per minute on 2 cores: {'met' if best >= d['target_per_minute'] else 'not met'}"
    return Row("`cpgraph check cpgraph.adapters.megatron:ep` rate", r, f"{d['machine']}, load {_num(d['load'], 1)}", figures,
               str(d["command"]))


def _vllm_adapter_rate(r: Report) -> Row:
    runs = _get(r.data, "runs")
    sides = {side: [x["per_cpu_minute"] for x in runs if x["side"] == side] for side in ("before", "after")}
    walls = [x["per_minute"] for x in runs if x["side"] == "after"]
    after = r.data.get("after_label", "the glue run from the release")  # the labels of the first report, unless named
    before = r.data.get("before_label", "the restated glue")
    figures = (f"`cpgraph.adapters.vllm:pcp` on {r.data['release']}, {after} ({r.data['after']}): "
               f"{_span(sides['after'], 0)} batches per CPU-minute, {_span(walls, 0)} a minute wall; {before} "
               f"({r.data['before']}, interleaved): {_span(sides['before'], 0)} per CPU-minute")
    return Row("`cpgraph check` rate, a vLLM release", r, str(r.data.get("machine", "not recorded")), figures, r.data["command"])


Reader = Callable[[Report], Row]
READERS: tuple[tuple[str, str, Reader], ...] = (
    ("prove time, idle", "prove-time", _prove_time(busy=False)),
    ("prove time, at load about 1", "prove-time", _prove_time(busy=True)),
    ("prove cold and warm", "prove-cache", _prove_cache),
    ("mutation score, theorem statements", "mutation", _mutation("proofs", scope_only=False)),
    ("mutation score, spec", "mutation", _mutation("spec", scope_only=False)),
    ("mutation score, scope operators", "mutation", _mutation("proofs", scope_only=True)),
    ("mutation score, reference", "mutation", _mutation("reference", scope_only=False)),
    ("mutation score, impl", "mutation", _mutation("impl", scope_only=False)),
    ("mutation score, decode-path theorem statements", "mutation", _mutation("proofs", scope_only=False, label="graph-paths")),
    ("mutation score, decode-path spec", "mutation", _mutation("spec", scope_only=False, label="graph-paths")),
    ("mutation score, executed glue (vLLM)", "glue-mutation", _glue_mutation("vllm")),
    ("mutation score, executed glue (sglang)", "glue-mutation", _glue_mutation("sglang")),
    ("check rate", "check-rate", _check_rate),
    ("check rate, a vLLM release", "vllm-adapter-rate", _vllm_adapter_rate),
    ("EP check rate", "ep-steps-rate", _ep_check_rate),
    ("check random phase", "random-chunks", _random_catches),
    ("decision latency", "decision-latency", _decision_latency),
    ("review scale", "review-scale", _review_scale),
    ("graph latency", "", _graph_latency),
)


def _timestamp(r: Report) -> str:
    """The time a report records inside it (mutation: ``date``, prove time: ``when``), else its file date."""
    for key in ("when", "date"):
        value = r.data.get(key) if isinstance(r.data, dict) else None
        if isinstance(value, str) and value.startswith(r.date):
            return value
    return r.date


def newest() -> tuple[list[Row], list[str], list[str]]:
    """Each benchmark's newest readable report as a row; the benchmarks with none; the newer reports skipped."""
    rows, missing, skipped = [], [], []
    reports = _reports()
    for label, part, read in READERS:
        candidates = sorted((r for r in reports if part in r.name), key=lambda r: (r.order[0], _timestamp(r), r.order[1:]))
        unread: list[Report] = []
        for report in reversed(candidates):
            try:
                rows.append(read(report))
                break
            except Other:
                continue
            except (Unreadable, KeyError, TypeError, ValueError, AttributeError):
                unread.append(report)
        else:
            missing.append(label)
            continue
        skipped += [r.path.name for r in unread if r.order[0] > rows[-1].report.date]
    return rows, missing, sorted(set(skipped))


def _link(r: Report) -> str:
    md = r.path.with_suffix(".md")
    target = md if md.exists() else r.path
    return f"[{r.path.stem}](../benchmarks/results/{target.name})"


def render() -> str:
    rows, missing, skipped = newest()
    lines = [
        "# Measurements",
        "",
        f"<!-- generated by `{COMMAND}` from benchmarks/results/*.json: do not edit by hand -->",
        "",
        "The newest report of each benchmark in [`benchmarks/results/`](../benchmarks/results), its headline figures "
        "and the command that reproduces it. Every figure below is read from the report's JSON; the linked report "
        "says how it was taken. The machine column is what the report recorded. Timings from a shared machine "
        "drift: compare a figure only with one taken beside it (the prove-time benchmark interleaves a baseline "
        "revision for that reason).",
        "",
        "| benchmark | report | date | machine / load | headline | reproduce |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(f"| {row.benchmark} | {_link(row.report)} | {row.report.date} | {row.machine} | {row.figures} "
                     f"| `{row.command}` |")
    lines.append("")
    if missing:
        lines.append("No report yet: " + "; ".join(missing) + " (the GPU benchmark runs with `scripts/gpu-check` "
                     "on a CUDA machine).")
        lines.append("")
    if skipped:
        lines.append("Newer reports this page cannot read (see them directly): "
                     + ", ".join(f"`{s}`" for s in skipped) + ".")
        lines.append("")
    lines.append(f"Regenerate with `{COMMAND}`; `tests/unit/test_docs_current.py` fails when this page and the "
                 "results differ.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/measurements.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE.relative_to(ROOT)} differs from benchmarks/results: run {COMMAND}")
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
