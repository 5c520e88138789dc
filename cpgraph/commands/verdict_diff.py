"""A fix's verdict diff: two checks of one stack (a baseline and a candidate) compared path by path and invariant
by invariant: fixed, still failing, newly failing or ok, each with its minimal witness.

A side is what one ``cpgraph check`` found (``Side``): the (path, invariant) pairs it checked and a ``Finding``
for each one broken. A path is ``prefill`` (the prefill bucket) or a graph path, ``MODE, dcp D (decodes ...),
DP N``. ``diff`` pairs the two sides key by key; ``exit_code`` is 1 when anything newly fails (the candidate
breaks an invariant the baseline kept on that path, or a path the baseline did not run), else 0: a finding the
baseline already had is reported as still failing but does not fail the run, the rule every linter's baseline
follows (known findings are shown, only new ones gate).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cpgraph.output import FOUND, OK

STATUSES = ("newly failing", "still failing", "fixed", "not checked", "ok")  # the order rows are shown in
HELD, VIOLATED, UNCHECKED = "held", "violated", "not checked"


@dataclass(frozen=True)
class Finding:
    """One broken invariant on one path: ``witness`` is its minimal witness in one line, ``detail`` the check's
    full text of it, ``data`` its JSON."""

    path: str
    invariant: str
    witness: str
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.path, self.invariant)


@dataclass(frozen=True)
class Side:
    """One tree's check: its ``label`` (release and where it lies), every (path, invariant) pair it checked in the
    order checked, and the findings among them."""

    label: str
    checked: tuple[tuple[str, str], ...]
    findings: tuple[Finding, ...]

    def __post_init__(self) -> None:
        stray = [f.key for f in self.findings if f.key not in set(self.checked)]
        if stray:
            raise ValueError(f"Side {self.label!r}: findings on pairs it did not check: {stray}; checked: {list(self.checked)}")

    def verdict(self, key: tuple[str, str]) -> str:
        if any(f.key == key for f in self.findings):
            return VIOLATED
        return HELD if key in set(self.checked) else UNCHECKED

    def finding(self, key: tuple[str, str]) -> Finding | None:
        return next((f for f in self.findings if f.key == key), None)


@dataclass(frozen=True)
class DiffRow:
    """One (path, invariant): each side's verdict, the status, and the witness that shows it (the candidate's
    when it fails, the baseline's when it was fixed; None when neither broke it)."""

    path: str
    invariant: str
    baseline: str
    candidate: str
    status: str
    witness: Finding | None


def status_of(baseline: str, candidate: str) -> str:
    """fixed, still failing, newly failing, not checked (the candidate no longer runs the path) or ok."""
    for verdict in (baseline, candidate):
        if verdict not in (HELD, VIOLATED, UNCHECKED):
            raise ValueError(f"a verdict is one of {HELD}, {VIOLATED}, {UNCHECKED}; got {verdict!r}")
    if candidate == VIOLATED:
        return "still failing" if baseline == VIOLATED else "newly failing"
    if candidate == UNCHECKED:
        return "not checked"
    return "fixed" if baseline == VIOLATED else "ok"


def diff(baseline: Side, candidate: Side) -> tuple[DiffRow, ...]:
    """Every (path, invariant) either side checked, paths in the order checked (the baseline's first)."""
    keys = list(dict.fromkeys([*baseline.checked, *candidate.checked]))
    paths = list(dict.fromkeys(path for path, _ in keys))
    keys.sort(key=lambda k: paths.index(k[0]))
    rows = []
    for key in keys:
        b, c = baseline.verdict(key), candidate.verdict(key)
        status = status_of(b, c)
        witness = candidate.finding(key) if c == VIOLATED else baseline.finding(key)
        rows.append(DiffRow(key[0], key[1], b, c, status, witness))
    return tuple(rows)


def exit_code(rows: Sequence[DiffRow]) -> int:
    """1 when anything newly fails, else 0 (the module docstring says why still failing does not count)."""
    return FOUND if any(r.status == "newly failing" for r in rows) else OK


def counts(rows: Sequence[DiffRow]) -> dict[str, int]:
    return {s: sum(r.status == s for r in rows) for s in STATUSES}


def _shown(rows: Sequence[DiffRow]) -> list[DiffRow]:
    """The rows worth a line: every status but ok, and one ok row per path where every invariant is ok."""
    out: list[DiffRow] = []
    for path in dict.fromkeys(r.path for r in rows):
        mine = [r for r in rows if r.path == path]
        changed = [r for r in mine if r.status != "ok"]
        out += changed or [DiffRow(path, f"all {len(mine)} invariants", HELD, HELD, "ok", None)]
    return sorted(out, key=lambda r: STATUSES.index(r.status))


def _table(rows: Sequence[DiffRow]) -> list[list[str]]:
    table = [["status", "path", "invariant", "baseline", "candidate", "minimal witness"]]
    table += [[r.status, r.path, r.invariant, r.baseline, r.candidate, r.witness.witness if r.witness else "-"] for r in _shown(rows)]
    return table


def _summary(rows: Sequence[DiffRow]) -> str:
    return ", ".join(f"{n} {s}" for s, n in counts(rows).items() if n)


def render(title: str, baseline: Side, candidate: Side, rows: Sequence[DiffRow], fmt: str) -> str:
    """The verdict diff in ``fmt`` (text, md, json, junit): one row per (path, invariant) that changed or fails,
    one per path where every invariant is ok, then each witness in full."""
    from cpgraph.formats import JUnitCase, junit, md_table, text_table

    heading = f"{title}\n  baseline:  {baseline.label}\n  candidate: {candidate.label}\n  {_summary(rows)}"
    if fmt == "json":
        return json.dumps({
            "baseline": baseline.label, "candidate": candidate.label, "counts": counts(rows), "exit": exit_code(rows),
            "rows": [{"path": r.path, "invariant": r.invariant, "baseline": r.baseline, "candidate": r.candidate,
                      "status": r.status, "witness": None if r.witness is None else
                      {"side": "candidate" if r.candidate == VIOLATED else "baseline", "text": r.witness.witness, **r.witness.data}}
                     for r in rows],
        })
    if fmt == "junit":
        outcome = {"newly failing": "failure", "still failing": "skipped", "not checked": "skipped", "fixed": "passed", "ok": "passed"}
        cases = [JUnitCase(f"{r.path}: {r.invariant}", "cpgraph.check.baseline", outcome[r.status], 0.0,
                           r.status + (f": {r.witness.witness}" if r.witness else ""), r.witness.detail if r.witness else "")
                 for r in rows]
        return junit(title, cases, properties={"baseline": baseline.label, "candidate": candidate.label})
    details = [(r, r.witness) for r in sorted(rows, key=lambda r: STATUSES.index(r.status)) if r.witness is not None and r.witness.detail]
    if fmt == "md":
        out = [f"### {title}", "", f"- baseline: {baseline.label}", f"- candidate: {candidate.label}", f"- {_summary(rows)}", "",
               md_table(_table(rows))]
        for r, w in details:
            side = "candidate" if r.candidate == VIOLATED else "baseline"
            out += ["", f"<details><summary>{r.status}: <code>{r.invariant}</code> on {r.path} ({side}'s witness)</summary>", "",
                    "```", w.detail, "```", "</details>"]
        return "\n".join(out) + "\n"
    blocks = [f"== {r.status}: {r.invariant} on {r.path} ({'candidate' if r.candidate == VIOLATED else 'baseline'}'s witness)\n{w.detail}"
              for r, w in details]
    return "\n\n".join([heading + "\n\n" + text_table(_table(rows)), *blocks])
