"""Mutation sample over a release's own decision glue, killed by ``cpgraph check`` (issue 44, item 5).

    python benchmarks/glue_mutation.py [--stack vllm|sglang] [--version V] [--limit 30] [--sample-seed 441] [--rev REV]

benchmarks/mutation.py mutates cpgraph's own spec and proofs; this mutates the code cpgraph drives: vLLM's
lines that decide a step's graph, in an unpacked release (``cpgraph.adapters.releases.fetch``). The mutated
regions (``REGIONS``) are the model runner's dispatch glue in ``execute_model`` (from ``num_reqs = len(...)``
to the ``dispatch_cg_and_sync_dp`` call, and the replay key ``BatchDescriptor(...)``), the partition call in
``prepare_inputs``, PCPManager's layout (``replicated_requests``, ``_iter_rank_chunks``, ``_get_rank_segments``,
``_build_batch_layout``, ``get_num_tokens_for_dispatch``, ``_resolve_num_reqs_after_padding``,
``maybe_partition_pcp_batch``), CudaGraphManager's ``dispatch``, ``_is_compatible`` and ``_init_candidates``,
and the DP sync (``dispatch_cg_and_sync_dp``, ``sync_cudagraph_and_dp_padding``). A region the release does not
have is skipped. For sglang (``--stack sglang``, default 0.5.23, ``cpgraph.adapters.sglang:zigzag``) the regions are
the prefill graph decision the adapter drives: ``_prefill_cuda_graph_allows_context_parallel``,
``PrefillCudaGraphRunner.can_run_graph``, the CP-BCG input's ``allows_replay``, ``required_local_tokens``,
``select_replay_bucket`` and ``select_replay_bucket_for_batch`` (and the zigzag input's ``_max_local_tokens``), and
``is_cp_active`` / ``prepare_cp_forward`` and the zigzag strategy's gate ``ZigzagCPStrategy.can_apply``.

The sample is drawn over the executed glue: the mutants on lines of the regions that the unmutated kill command
runs (recorded by benchmarks/lines_run.py, a line tracer around ``cpgraph check``, forks included). A line the
check never runs is a branch of a configuration it does not drive (LoRA, no CP strategy configured, a batch of
embeddings); its mutants cannot be killed by running the code, so they are not sampled, and the result lists
those lines (``not_executed_lines``) so the gap stays visible.

Operators: benchmarks/mutation.py's (comparison flips, arithmetic swaps, integer constants +1 and -1, and/or,
``not`` removal), and three of this file's: ``max`` <-> ``min``, dropping one simple statement (an assignment
or a call becomes ``pass``), swapping a call's first two positional arguments. Docstrings, f-strings, raise
statements and assert messages are not mutated.

Kill command: ``cpgraph check cpgraph.adapters.vllm:pcp --adapter-root MUTANT`` (prefill bucket and every graph
path, ``--max-cases``/``--path-cases`` below; ``cpgraph.adapters.sglang:zigzag`` for sglang), on a copy of the release whose mutated file alone is real (the
rest are links). Killed: exit 1 (a finding) or 2 (the adapter refuses the tree, naming the change at its
file:line). A mutant that ends cpgraph otherwise (exit 4, a crash) is "errored" and one past the timeout
"timed out": both listed apart and not counted as killed. Survivors are matched against the written arguments
in benchmarks/glue_mutation_equivalents.json (same format as mutation_equivalents.json); the score without
argued equivalents leaves those out.

Results: ``benchmarks/results/<date>-glue-mutation-<stack>-<version>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation import Mutant, _Offsets, _skipped_nodes, mutants_of  # noqa: E402  (benchmarks/ is not a package)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
EQUIVALENTS = ROOT / "benchmarks" / "glue_mutation_equivalents.json"
GPU = "vllm/v1/worker/gpu/"
Regions = dict[str, tuple[tuple[str, str | None, str | None], ...]]
# file -> (qualified function, first statement marker or None: the whole function, last statement marker)
REGIONS: Regions = {
    GPU + "model_runner.py": (
        ("GPUModelRunner.execute_model", "num_reqs = len(scheduler_output.num_scheduled_tokens)", "dispatch_cg_and_sync_dp("),
        ("GPUModelRunner.execute_model", "BatchDescriptor(", "BatchDescriptor("),
        ("GPUModelRunner.prepare_inputs", "partition", "partition"),
    ),
    GPU + "pcp_manager.py": tuple((f, None, None) for f in (
        "PCPManager.replicated_requests", "PCPManager._iter_rank_chunks", "PCPManager._get_rank_segments",
        "PCPManager._build_batch_layout", "PCPManager.get_num_tokens_for_dispatch",
        "PCPManager._resolve_num_reqs_after_padding", "maybe_partition_pcp_batch")),
    GPU + "cudagraph_utils.py": tuple((f, None, None) for f in (
        "_is_compatible", "CudaGraphManager.dispatch", "CudaGraphManager._init_candidates")),
    GPU + "dp_utils.py": tuple((f, None, None) for f in ("dispatch_cg_and_sync_dp", "sync_cudagraph_and_dp_padding")),
}
SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Assert)  # a region's end statements
SRT = "sglang/srt/"
SGLANG_REGIONS: Regions = {
    SRT + "model_executor/model_runner.py": (("_prefill_cuda_graph_allows_context_parallel", None, None),),
    SRT + "model_executor/runner/prefill_cuda_graph_runner.py": (("PrefillCudaGraphRunner.can_run_graph", None, None),),
    SRT + "layers/cp/bcg/bcg.py": tuple((f, None, None) for f in (
        "PrefillCPBCGInput.allows_replay", "PrefillCPBCGInput._max_local_tokens", "PrefillCPBCGInput.required_local_tokens",
        "PrefillCPBCGInput.select_replay_bucket", "PrefillCPBCGInput.select_replay_bucket_for_batch")),
    SRT + "layers/cp/bcg/zigzag_bcg.py": (("ZigzagCPBCGInput._max_local_tokens", None, None),),
    SRT + "layers/cp/utils.py": (("is_cp_active", None, None), ("prepare_cp_forward", None, None)),
    SRT + "layers/cp/zigzag.py": (("ZigzagCPStrategy.can_apply", None, None),),
}
STACKS: dict[str, tuple[str, str, Regions]] = {  # stack -> (adapter policy, default release, regions)
    "vllm": ("cpgraph.adapters.vllm:pcp", "0.29.0", REGIONS),
    "sglang": ("cpgraph.adapters.sglang:zigzag", "0.5.23", SGLANG_REGIONS),
}
EXTRA_OPERATORS = ("max-min", "drop-statement", "swap-arguments")
KILL_FLAGS = ("--max-cases", "3000", "--path-cases", "120", "-q", "--format", "json")  # a default run checks ~20k prefill batches


def _function(tree: ast.AST, qualified: str) -> ast.FunctionDef | None:
    owner, _, name = qualified.rpartition(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == owner:
            return next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == name), None)
        if not owner and isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def region_lines(source: str, regions: Sequence[tuple[str, str | None, str | None]]) -> set[int]:
    """The lines of ``source`` the regions cover: a whole function (its body, not its docstring), or the
    statements of it from the first containing ``first`` to the first containing ``last`` after it."""
    tree = ast.parse(source)
    lines: set[int] = set()
    for qualified, first, last in regions:
        function = _function(tree, qualified)
        if function is None:
            continue
        if first is None:
            body = function.body[1:] if isinstance(function.body[0], ast.Expr) else function.body
            for stmt in body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
            continue
        statements = sorted((s for s in ast.walk(function) if isinstance(s, SIMPLE)), key=lambda s: s.lineno)
        start = next((s for s in statements if first in ast.unparse(s)), None)
        if start is None:
            continue
        end = next((s for s in statements if s.lineno >= start.lineno and last in ast.unparse(s)), start) if last else start
        lines.update(range(start.lineno, (end.end_lineno or end.lineno) + 1))
    return lines


def extra_mutants(path: str, source: str) -> Iterator[Mutant]:
    """max <-> min, a simple statement dropped, a call's first two positional arguments swapped."""
    tree = ast.parse(source)
    offsets = _Offsets(source)
    skipped = _skipped_nodes(tree)
    lines = source.splitlines()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
            a, b = offsets.span(node.func)
            other = "min" if node.func.id == "max" else "max"
            yield Mutant(path, node.lineno, "max-min", f"{node.func.id} -> {other}", a, b, other, lines[node.lineno - 1].strip())
        if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(x, ast.Starred) for x in node.args[:2]):
            (a0, b0), (a1, b1) = offsets.span(node.args[0]), offsets.span(node.args[1])
            first, second = source[a0:b0], source[a1:b1]
            if first != second:
                yield Mutant(path, node.lineno, "swap-arguments", "swap the first two arguments", a0, b1,
                             second + source[b0:a1] + first, lines[node.lineno - 1].strip())
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)) and not (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            a, b = offsets.span(node)
            yield Mutant(path, node.lineno, "drop-statement", "statement -> pass", a, b, "pass", lines[node.lineno - 1].strip())


def glue_mutants(release: Path, stack: str = "vllm") -> list[Mutant]:
    """Every mutant of the stack's regions, in file and source order (deterministic)."""
    out: list[Mutant] = []
    for rel, regions in STACKS[stack][2].items():
        if not (release / rel).is_file():
            continue
        source = (release / rel).read_text(encoding="utf-8")
        covered = region_lines(source, regions)
        found = [*mutants_of(rel, source), *extra_mutants(rel, source)]
        kept = [m for m in found if m.line in covered and _parses(m.apply(source))]
        out += sorted(kept, key=lambda m: (m.start, m.operator, m.description))
    return out


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _tree(release: Path, mutant: Mutant | None) -> Path:
    """A copy of ``release`` (links to its files) with ``mutant`` applied to a real copy of its file."""
    tree = Path(tempfile.mkdtemp(prefix="glue-mut-"))
    shutil.copytree(release, tree / "r", copy_function=os.symlink)
    if mutant is not None:
        target = tree / "r" / mutant.path
        source = (release / mutant.path).read_text(encoding="utf-8")
        target.unlink()
        target.write_text(mutant.apply(source), encoding="utf-8")
    return tree / "r"


def lines_run(cpgraph_path: str, release: Path, timeout: float, stack: str = "vllm") -> frozenset[str]:
    """The lines of the release (``path:line``) that the unmutated kill command runs (benchmarks/lines_run.py):
    the executed glue, which the sample is drawn from."""
    tree = _tree(release, None)
    out = tree.parent / "lines.txt"
    env = {**os.environ, "PYTHONPATH": cpgraph_path, "PYTHONDONTWRITEBYTECODE": "1"}
    tracer = str(Path(__file__).resolve().parent / "lines_run.py")
    argv = [sys.executable, tracer, str(tree), str(out), "check", STACKS[stack][0], "--adapter-root", str(tree), *KILL_FLAGS]
    try:
        done = subprocess.run(argv, cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise SystemExit(f"glue_mutation: the traced unmutated check exited {done.returncode}: {done.stderr[-500:]}")
        return frozenset(out.read_text(encoding="utf-8").split())
    finally:
        shutil.rmtree(tree.parent, ignore_errors=True)


def kill(cpgraph_path: str, release: Path, mutant: Mutant | None, timeout: float, stack: str = "vllm") -> tuple[str, int, float, str]:
    """(status, exit code, seconds, evidence) of ``cpgraph check`` on the release with ``mutant`` applied."""
    tree = _tree(release, mutant)
    env = {**os.environ, "PYTHONPATH": cpgraph_path, "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "cpgraph", "check", STACKS[stack][0], "--adapter-root", str(tree), *KILL_FLAGS]
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", -1, time.perf_counter() - start, f"ran past {timeout:.0f} s"
    finally:
        shutil.rmtree(tree.parent, ignore_errors=True)
    seconds = time.perf_counter() - start
    status = {0: "survived", 1: "killed", 2: "killed"}.get(done.returncode, "errored")
    where = f"{mutant.path}:{mutant.line}" if mutant is not None else None
    return status, done.returncode, seconds, _evidence(done.returncode, done.stdout, done.stderr, where)


def _evidence(code: int, stdout: str, stderr: str, where: str | None = None) -> str:
    """What killed it: the invariants violated (exit 1; with "the mutated line cited" when a finding's
    ``decided_at`` names ``where``, the mutant's file:line), the refusal (exit 2), else the last line ('' when
    it passed)."""
    if code == 0:
        return ""
    if code == 1:
        try:
            data = json.loads(stdout)
            prefill = [v["invariant"] for v in data.get("violations", [])]
            paths = [f"{v['invariant']} ({v['mode']}, dcp {v['dcp_size']}, DP {v['dp_size']})"
                     for v in (data.get("graph_paths") or {}).get("violations", [])]
            cites = [v.get("decided_at") or [] for v in [*data.get("violations", []), *(data.get("graph_paths") or {}).get("violations", [])]]
            cited = "; the mutated line cited (decided at)" if where is not None and any(where in c for c in cites) else ""
            return "violated: " + ", ".join(dict.fromkeys([*prefill, *paths])) + cited
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    lines = [ln for ln in (stderr + stdout).splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:300]


def _arguments() -> list[dict[str, object]]:
    return json.loads(EQUIVALENTS.read_text()) if EQUIVALENTS.exists() else []


def _argued(entry: dict[str, object], arguments: Sequence[dict[str, object]], version: str | None = None) -> dict[str, object] | None:
    """The written argument for a survivor: same file, line text and mutation (or "*"), the same line when
    the argument names one (a line text such as ``return False`` recurs in a file), and one of its
    ``releases`` when it names them (an argument that rests on what one release does, e.g. 0.29.0 running
    PIECEWISE graphs only under PCP, does not carry over to a release that runs FULL ones)."""
    path, _, line = str(entry["where"]).rpartition(":")
    return next((a for a in arguments if a["file"] == path and a["line_text"] == entry["line_text"]
                 and a["mutation"] in (entry["mutation"], "*") and str(a.get("line", line)) == line
                 and (version is None or "releases" not in a or version in a["releases"])), None)  # type: ignore[operator]


def _cpgraph_at(rev: str | None) -> tuple[str, str, Path | None]:
    """Where cpgraph is imported from (the working tree, or ``rev`` unpacked by git archive), its revision,
    and the folder to remove afterwards."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev or "HEAD"], capture_output=True, text=True).stdout.strip()
    if rev is None:
        return str(ROOT), f"{head} + working tree (copied {time.strftime('%H:%M', time.gmtime())} UTC)", None
    folder = Path(tempfile.mkdtemp(prefix="glue-mut-cpgraph-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="tar")
    return str(folder), head, folder


def run(stack: str, version: str, limit: int, seed: int, rev: str | None, timeout_factor: float) -> dict[str, object]:
    from cpgraph.adapters.releases import fetch

    release = Path(fetch(stack, version))
    everything = glue_mutants(release, stack)
    path, revision, cleanup = _cpgraph_at(rev)
    try:
        status, code, base, evidence = kill(path, release, None, 1800, stack)
        if status != "survived":
            raise SystemExit(f"glue_mutation: the unmutated release does not pass (exit {code}: {evidence}); fix that first")
        timeout = max(60.0, timeout_factor * base)
        ran = lines_run(path, release, 20 * timeout, stack)
        executed = [m for m in everything if f"{m.path}:{m.line}" in ran]
        idle = [m for m in everything if f"{m.path}:{m.line}" not in ran]
        picked = [executed[i] for i in sorted(random.Random(seed).sample(range(len(executed)), min(limit, len(executed))))]
        print(f"glue_mutation: {stack} {version}: {len(picked)} of {len(everything)} mutants; unmutated check {base:.1f} s", file=sys.stderr)
        outcomes = []
        start = time.perf_counter()
        for i, mutant in enumerate(picked, 1):
            status, code, seconds, evidence = kill(path, release, mutant, timeout, stack)
            outcomes.append({"where": f"{mutant.path}:{mutant.line}", "operator": mutant.operator, "mutation": mutant.description,
                             "replacement": mutant.replacement, "line_text": mutant.text, "status": status, "exit": code,
                             "seconds": round(seconds, 2), "evidence": evidence})
            print(f"  [{i}/{len(picked)}] {status} (exit {code}): {mutant.key}: {evidence[:120]}", file=sys.stderr)
        wall = time.perf_counter() - start
    finally:
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
    return summarise(stack, version, revision, everything, picked, outcomes, seed, base, wall, idle)


def summarise(stack: str, version: str, revision: str, everything: Sequence[Mutant], picked: Sequence[Mutant],
              outcomes: Sequence[dict[str, object]], seed: int, base: float, wall: float,
              idle: Sequence[Mutant] = ()) -> dict[str, object]:
    arguments = _arguments()
    killed = sum(o["status"] == "killed" for o in outcomes)
    survivors = [o for o in outcomes if o["status"] == "survived"]
    for s in survivors:
        argued = _argued(s, arguments, version)
        if argued is not None:
            s["argued"] = {"kind": str(argued.get("kind", "equivalent")), "argument": str(argued["argument"])}
    equivalent = sum(1 for s in survivors if _kind(s) == "equivalent")
    decided = killed + len(survivors)
    return {
        "target": f"glue-{stack}-{version}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "revision": revision,
        "release": f"{stack} {version}",
        "kill_command": f"cpgraph check {STACKS[stack][0]} --adapter-root MUTANT " + " ".join(KILL_FLAGS),
        "regions": {path: [r[0] + ("" if r[1] is None else f" [{r[1]} .. {r[2]}]") for r in regions]
                    for path, regions in STACKS[stack][2].items()},
        "mutants_in_regions": len(everything),
        "mutants_executed": len(everything) - len(idle),
        "not_executed_lines": sorted({f"{m.path}:{m.line}" for m in idle}, key=lambda w: (w.rpartition(":")[0], int(w.rpartition(":")[2]))),
        "sample_seed": seed,
        "planned": len(picked),
        "unmutated_kill_seconds": round(base, 2),
        "wall_seconds": round(wall, 1),
        "mutants": len(outcomes),
        "killed": killed,
        "killed_by_exit": {"1 (a finding)": sum(o["status"] == "killed" and o["exit"] == 1 for o in outcomes),
                           "2 (the tree refused, the error at its file:line)": sum(o["status"] == "killed" and o["exit"] == 2 for o in outcomes)},
        "survived": len(survivors),
        "errored": sum(o["status"] == "errored" for o in outcomes),
        "timed_out": sum(o["status"] == "timeout" for o in outcomes),
        "argued_equivalent": equivalent,
        "score": round(killed / decided, 4) if decided else None,
        "score_without_equivalents": round(killed / (decided - equivalent), 4) if decided - equivalent else None,
        "per_file": {path: {"mutants": sum(str(o["where"]).startswith(path + ":") for o in outcomes),
                            "killed": sum(str(o["where"]).startswith(path + ":") and o["status"] == "killed" for o in outcomes)}
                     for path in STACKS[stack][2]},
        "outcomes": list(outcomes),
    }


def _kind(outcome: dict[str, object]) -> str | None:
    """The kind of the written argument a survivor matched (``equivalent`` leaves it out of the score without
    equivalents), or None."""
    argued = outcome.get("argued")
    return str(argued.get("kind")) if isinstance(argued, dict) else None


def render_markdown(result: dict[str, object]) -> str:
    lines = [
        f"# Glue mutation sample, {result['release']}, {result['date']}",
        "",
        f"Produced by `python benchmarks/glue_mutation.py` (see its docstring) at cpgraph {result['revision']}. Each mutant is "
        "one edit of the release's own decision glue; killed = `cpgraph check` exits 1 (a finding) or 2 (the adapter "
        f"refuses the tree). Kill command: `{result['kill_command']}`.",
        "",
        f"- {result['killed']} of {result['mutants']} killed (score {_pct(result['score'])}; without the "
        f"{result['argued_equivalent']} argued equivalent: {_pct(result['score_without_equivalents'])}); errored "
        f"{result['errored']}, timed out {result['timed_out']}",
        "- killed by exit code: " + ", ".join(f"{n} by exit {k}" for k, n in result["killed_by_exit"].items()),  # type: ignore[attr-defined]
        f"- sample seed {result['sample_seed']}: {result['planned']} of the {result.get('mutants_executed', result['mutants_in_regions'])} "
        f"mutants on lines the unmutated check runs ({result['mutants_in_regions']} in the regions)",
        *([f"- not sampled, the lines the unmutated check never runs (branches of configurations it does not drive): "
           + ", ".join(f"`{w}`" for w in result["not_executed_lines"])]  # type: ignore[attr-defined]
          if result.get("not_executed_lines") else []),
        "",
        "| status | where | operator | mutation | line | evidence |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for o in result["outcomes"]:  # type: ignore[attr-defined]
        argued = o.get("argued")
        status = o["status"] + (f" ({argued['kind']}: {argued['argument']})" if argued else "")
        lines.append(f"| {status} | `{o['where']}` | {o['operator']} | {o['mutation']} | `{o['line_text']}` | "
                     f"{str(o['evidence']).replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def _pct(x: object) -> str:
    return "n/a" if x is None else f"{100 * float(x):.1f}%"  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--stack", choices=tuple(STACKS), default="vllm", help="the stack whose glue is mutated (default vllm)")
    parser.add_argument("--version", default=None, help="the release to mutate (default: vllm 0.29.0, sglang 0.5.23)")
    parser.add_argument("--limit", type=int, default=30, help="mutants in the seeded sample (default 30)")
    parser.add_argument("--sample-seed", type=int, default=441, help="the sample's seed (default 441)")
    parser.add_argument("--rev", default=None, help="run cpgraph at this commit (git archive) instead of the working tree")
    parser.add_argument("--timeout-factor", type=float, default=10.0, help="a mutant's timeout: this times the unmutated check, at least 60 s")
    parser.add_argument("--list", action="store_true", help="list the mutants of the regions and exit")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    version = args.version or STACKS[args.stack][1]
    if args.list:
        from cpgraph.adapters.releases import fetch

        for m in glue_mutants(Path(fetch(args.stack, version)), args.stack):
            print(m.key)
        return 0
    result = run(args.stack, version, args.limit, args.sample_seed, args.rev, args.timeout_factor)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"{str(result['date'])[:10]}-glue-mutation-{args.stack}-{version}"  # with_suffix would eat the version's '.0'
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(render_markdown(result))
    print(f"wrote {args.out / stem}.json and .md: {result['killed']} of {result['mutants']} killed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
