"""Re-run the survivors of a mutation report under this checkout's kill command (benchmarks/mutation.py).

    python benchmarks/mutation_rescore.py benchmarks/results/<date>-mutation-<label>-<target>.json [--jobs J]

A mutant the old kill command killed stays killed under a kill command that runs everything the old one did
and more (here: ``_prove`` gained the agreement stage and the declared-scope checks that ``cpgraph prove``
runs), so re-running the survivors alone gives the score the whole sample would get. Each survivor is found
again in the report's own sample (its files at its revision, the same seeded draw) by file, line, operator and edit,
applied to a private copy of that revision, and run through the prove stage. Writes ``<report>-rescored.json``
and ``.md`` beside the report: every survivor with its old and new outcome, and the score before and after.

    python benchmarks/mutation_rescore.py REPORT.json --at REV

re-runs the survivors as mutants of REV's files instead (the code the fixes landed in): each is found among
REV's mutants by file, operator, edit and the mutated line's text; one whose line is gone from REV (the
code was rewritten or removed) is reported ``gone``, counted neither killed nor survived. Writes
``<report>-at-<REV>.json`` / ``.md``. A rescore is not a fresh sample: the survivors were seen before the
fixes were written.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import random
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mutation  # noqa: E402  (the harness, beside this file)


def _everything(rev: str, target_name: str) -> list[mutation.Mutant]:
    """Every mutant of the target's files at ``rev``, in the harness's order."""
    target = mutation.TARGETS[target_name]
    root = mutation.make_copy(rev)
    try:
        return [m for f in target.files(root) for m in mutation.mutants_of(f, (root / f).read_text())]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _sampled(report: dict[str, object], everything: list[mutation.Mutant] | None = None) -> list[mutation.Mutant]:
    """The report's sample again: its target's files at its revision, every mutant of them, the same seeded
    draw (benchmarks/mutation.py ``run_target``)."""
    if everything is None:
        everything = _everything(str(report["revision"]), str(report["target"]))
    limit, seed = int(str(report["mutants"])), report["sample_seed"]
    if seed is None:
        return everything
    return [everything[i] for i in sorted(random.Random(int(str(seed))).sample(range(len(everything)), limit))]


def _alike(mutants: list[mutation.Mutant], like: mutation.Mutant) -> list[mutation.Mutant]:
    """The mutants of ``like``'s file with its operator, edit and line text, in source order: one line can hold
    two of them (two 1s on a line, each turned 0), told apart only by their order."""
    return sorted((m for m in mutants if m.path == like.path and m.operator == like.operator
                   and m.description == like.description and m.text == like.text), key=lambda m: m.start)


def _find(sample: list[mutation.Mutant], survivor: dict[str, object]) -> mutation.Mutant:
    path, line = str(survivor["where"]).rsplit(":", 1)
    found = [m for m in sample
             if m.path == path and m.line == int(line) and m.operator == survivor["operator"]
             and m.description == survivor["mutation"]]
    if len(found) != 1:
        raise ValueError(f"survivor {survivor['where']} {survivor['mutation']}: {len(found)} matching mutants in the sample")
    return found[0]


def _at(rev: str, original: mutation.Mutant, before: list[mutation.Mutant]) -> mutation.Mutant | None:
    """The survivor ``original`` (one of ``before``, the mutants at the sample's revision) among ``rev``'s
    mutants of its file: the same operator, edit and line text, and the same place among those alike (None:
    gone)."""
    root = mutation.make_copy(rev)
    try:
        source = (root / original.path).read_text() if (root / original.path).exists() else ""
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ordinal = [m.start for m in _alike(before, original)].index(original.start)
    found = _alike(mutation.mutants_of(original.path, source), original) if source else []
    return found[ordinal] if ordinal < len(found) else None


def _run(rev: str, mutant: mutation.Mutant, timeout: float) -> tuple[str, float, str]:
    root = mutation.make_copy(rev)
    try:
        target = root / mutant.path
        target.write_text(mutant.apply(target.read_text()))
        return mutation.run_kill(root, mutation._PROVE.argv, timeout)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant (default 900)")
    parser.add_argument("--at", default=None, metavar="REV", help="re-run the survivors as mutants of REV's files")
    args = parser.parse_args(argv)
    report = json.loads(args.report.read_text())
    rev = str(report["revision"]) if args.at is None else mutation._head(args.at)
    survivors = list(report["survivors"])
    before = _everything(str(report["revision"]), str(report["target"]))
    sample = _sampled(report, before)
    originals = [_find(sample, s) for s in survivors]
    mutants: list[mutation.Mutant | None] = list(originals) if args.at is None else [_at(rev, m, before) for m in originals]

    def run(m: mutation.Mutant | None) -> tuple[str, float, str]:
        return ("gone", 0.0, f"no such mutant in {rev}: the line was rewritten or removed") if m is None else _run(rev, m, args.timeout)

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        outcomes = list(pool.map(run, mutants))
    rows = [{**s, "rescored": status, "rescored_seconds": round(seconds, 1), "rescored_evidence": evidence}
            for s, (status, seconds, evidence) in zip(survivors, outcomes)]
    gone = sum(r["rescored"] == "gone" for r in rows)
    killed_before = int(report["killed"])
    sampled = killed_before + int(report["survived"])
    total = sampled - gone  # a mutant whose line is gone from REV is no mutant of it
    killed_after = killed_before + sum(r["rescored"] == "killed" for r in rows)
    result = {"report": args.report.name, "revision": rev, "target": report["target"], "mutants": total, "gone": gone,
              "killed_before": killed_before, "killed_after": killed_after,
              "score_before": killed_before / sampled if sampled else None,
              "score_after": killed_after / total if total else None, "survivors": rows}
    out = args.report.with_name(args.report.stem + ("-rescored" if args.at is None else f"-at-{rev}"))
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    where = "under the current kill command" if args.at is None else f"as mutants of {rev} (a rescore, not a fresh sample)"
    lines = [f"# {report['target']}: the survivors of {args.report.name} re-run {where}", "",
             f"Revision {rev}; {sampled} mutants sampled at {report['revision']}, {gone} gone at {rev}; killed "
             f"{killed_before} -> {killed_after} (raw {100 * killed_before / sampled:.1f}% -> "
             f"{100 * killed_after / total:.1f}% of {total}).", "",
             "| mutant | edit | now | seconds | evidence |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| `{r['where']}` | {r['operator']}: `{r['mutation']}` | {r['rescored']} | {r['rescored_seconds']} | "
              f"{str(r['rescored_evidence']).replace('|', '/')[:160]} |" for r in rows]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
