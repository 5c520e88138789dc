"""The renderings of ``cpgraph prove``'s results: JSON, JUnit XML, Markdown and the second-opinion cells."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from cpgraph.output import JUnitCase, junit, md_table

if TYPE_CHECKING:
    from cpgraph.proofs.run import ObligationResult, Opinions


def _json(
    args: argparse.Namespace, results: list[ObligationResult], opinions: Opinions, bites: tuple[Any, ...],
    lost: list[Any], wall: float, proved: bool, trusted: bool, slowest: ObligationResult, overall: str,
) -> dict[str, Any]:
    """The --format json document. ``ok`` and ``verdict`` are the whole run's (``ok`` is true exactly when the exit
    code is 0: every theorem proved, no second opinion disagreeing, no bite of the teeth pass lost); ``proved`` is
    the obligations' alone, and ``teeth`` the teeth pass's part (its ``ok``: no bite lost)."""
    return {
                        "ok": overall == "proved",
                        "verdict": overall,
                        "cp_max": args.cp_max,
                        "proved": proved,
                        "wall_seconds": round(wall, 3),
                        "queries": sum(r.queries for r in results),
                        "slowest_query": {"theorem": slowest.name, "query": slowest.slowest[0], "seconds": round(slowest.slowest[1], 4)},
                        **({"second_opinions": _opinions_json(opinions, results, trusted)} if opinions.active else {}),
                        "teeth": {
                            "checked": args.teeth,
                            "ok": not lost,
                            "variants": len(bites),
                            "kept": len(bites) - len(lost),
                            "scope_checks": sum(b.variant.startswith("scope") for b in bites),
                            "scope_witness_cpu_seconds": round(sum(r.witness_seconds for r in results), 3),
                            "lost": [
                                {"theorem": b.theorem, "variant": b.variant, "description": b.description,
                                 "expected": b.expected.value, "got": b.got.value}
                                for b in lost
                            ],
                        },
                        "theorems": [
                            {
                                "name": r.name,
                                "scope": r.scope,
                                "scope_declared": _declared(r.name, args.cp_max),
                                "parameters": list(r.parameters),
                                "verdict": r.status.value,
                                "queries": r.queries,
                                "seconds": round(r.seconds, 3),
                                "slowest_query": {"query": r.slowest[0], "seconds": round(r.slowest[1], 4)},
                                "failures": [
                                    {
                                        "query": f.label,
                                        "verdict": f.verdict.status.value,
                                        "reason": f.verdict.reason,
                                        "counterexample": dict(f.model),
                                        "shown": dict(f.shown),
                                        "replay": f.replay,
                                    }
                                    for f in r.failures
                                ],
                                **({"second_opinions": _theorem_opinions_json(r)} if opinions.active else {}),
                            }
                            for r in results
                        ],
                    }


def _declared(name: str, cp_max: int) -> dict[str, Any] | None:
    """The theorem's declared scope as data (proofs/engine/scope.py), None when the table has no entry."""
    from cpgraph.proofs.engine.scope import SCOPE

    return SCOPE[name].data(cp_max) if name in SCOPE else None


def _junit(results: list[ObligationResult], cp_max: int, wall: float) -> str:
    """One testcase per theorem: refuted -> failure, unknown -> error (no verdict)."""
    cases = []
    for r in results:
        outcome = {"proved": "passed", "refuted": "failure"}.get(r.status.value, "error")
        if outcome == "passed" and not r.trusted:
            outcome = "failure"
        detail = "\n".join(f.render() for f in r.failures)
        message = f"{r.status.value}: {r.failures[0].label}" if r.failures else ("" if outcome == "passed" else "second opinions disagree")
        cases.append(JUnitCase(r.name, "cpgraph.prove", outcome, r.seconds, message, detail))
    return junit(f"cpgraph prove (cp_size 1..{cp_max})", cases, seconds=wall)


_MD_HEAD = {"proved": "✅ all proved", "refuted": "❌ NOT all proved", "unknown": "❌ NOT all proved"}


def _markdown(results: list[ObligationResult], cp_max: int, wall: float, overall: str) -> str:
    rows = [["theorem", "scope", "verdict", "queries", "seconds"]]
    rows += [[f"`{r.name}`", r.scope, f"**{r.status.value}**", str(r.queries), f"{r.seconds:.2f}"] for r in results]
    head = f"### cpgraph prove (cp_size 1..{cp_max}) — {_MD_HEAD.get(overall, f'❌ proved, but {overall}')}"
    out = [head, "", md_table(rows)]
    for r in results:
        if r.failures:
            out += ["", f"<details><summary><code>{r.name}</code>: {r.status.value}</summary>", "", "```"]
            out += [f.render() for f in r.failures] + ["```", "</details>"]
    out += ["", f"<sub>{len(results)} theorems, {sum(r.queries for r in results)} queries, {wall:.1f} s</sub>"]
    return "\n".join(out) + "\n"


def _cross_cell(opinions: Opinions, r: ObligationResult) -> str:
    from cpgraph.proofs.run import NoteKind

    if opinions.cross_check is None:
        return "off"
    disagree, skipped = len(r.noted(NoteKind.DISAGREEMENT)), len(r.noted(NoteKind.NOT_CROSS_CHECKED))
    cell = f"{r.cross_checked} agree"
    if disagree:
        cell += f", {disagree} DISAGREE"
    if skipped:
        cell += f", {skipped} not cross-checked"
    return cell


def _seed_cell(opinions: Opinions, r: ObligationResult) -> str:
    from cpgraph.proofs.run import NoteKind

    if not opinions.seeds:
        return "off"
    unstable = len(r.noted(NoteKind.UNSTABLE))
    return f"{unstable} UNSTABLE of {r.queries}" if unstable else f"stable x{opinions.seeds}"


_NOTE_TITLES = {
    "disagreement": "cross-check disagreements (z3 proved, the second solver refutes)",
    "not_cross_checked": "not cross-checked (the second solver gave up; z3's proof stands alone)",
    "unstable": "unstable queries (another z3 seed gives another verdict)",
}


def _opinions_text(opinions: Opinions, results: list[ObligationResult]) -> str:
    from cpgraph.proofs.run import NoteKind

    checked = sum(r.cross_checked for r in results)
    seconds = sum(r.opinion_seconds for r in results)
    lines = [
        f"\nsecond opinions: cross-check {opinions.cross_check or 'off'} ({checked} queries agree), "
        f"seeds 1..{opinions.seeds} ({sum(r.seed_runs for r in results)} extra z3 runs), {seconds:.1f} s solver time"
    ]
    for kind in NoteKind:
        notes = [(r.name, n) for r in results for n in r.noted(kind)]
        if notes:
            lines.append(f"{_NOTE_TITLES[kind.value]}: {len(notes)}")
            lines.extend(f"  {name} {note.label}: {note.detail}" for name, note in notes)
    return "\n".join(lines)


def _theorem_opinions_json(r: ObligationResult) -> dict[str, Any]:
    from cpgraph.proofs.run import NoteKind

    return {
        "cross_checked": r.cross_checked,
        "seed_runs": r.seed_runs,
        **{kind.value: [{"query": n.label, "detail": n.detail} for n in r.noted(kind)] for kind in NoteKind},
    }


def _opinions_json(opinions: Opinions, results: list[ObligationResult], trusted: bool) -> dict[str, Any]:
    from cpgraph.proofs.run import NoteKind

    return {
        "cross_check": opinions.cross_check,
        "seeds": opinions.seeds,
        "cvc5_rlimit": opinions.cvc5_rlimit if opinions.cross_check else None,
        "trusted": trusted,
        "cross_checked": sum(r.cross_checked for r in results),
        "seed_runs": sum(r.seed_runs for r in results),
        "seconds": round(sum(r.opinion_seconds for r in results), 3),
        **{kind.value: sum(len(r.noted(kind)) for r in results) for kind in NoteKind},
    }
