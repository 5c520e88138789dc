"""The one report of a check, on every subject: the prefill batches' violations (one ``Violation``, finding.py's
one record, per broken invariant, its witness a ``BatchWitness``, <= 15 lines of text each) and each other
subject's part (the graph paths': subjects/path_violation.py; the EP steps': subjects/ep_steps.py), their
findings the same record, headed alike (verdict.py), rendered as text, JSON, Markdown or JUnit."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cpgraph.check.batch import Batch
from cpgraph.check.calls import CallStop, last_traceback
from cpgraph.check.finding import MAX_LINES, Violation
from cpgraph.check.judging import Spec
from cpgraph.check.protocol import RankAnswer
from cpgraph.check.verdict import prefill_where
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.reference.lists import compact


@dataclass(frozen=True)
class BatchWitness:
    """The prefill batches' witness of a finding (finding.py's ``Witness``): the minimised batch, every rank's
    answers, the spec's verdict, the phase that found it, the batch as first found, and the policy's traceback
    when a call it made raised."""

    batch: Batch
    answers: tuple[RankAnswer, ...]
    spec: Spec
    phase: str
    original: Batch  # the batch as first found, before minimising
    policy_traceback: str = ""  # the policy's own frames when a call it made raised (see calls.py)
    bounded = True  # the finding's text is cut at MAX_LINES (the traceback follows)

    def __post_init__(self) -> None:
        if not self.policy_traceback:  # taken where the answers were asked, so it travels with the record
            object.__setattr__(self, "policy_traceback", _traceback_of(self.answers))

    @property
    def column(self) -> str:
        """The invariant table's column this finding is stated in: the batch under its keying."""
        return "batch_local" if self.spec.keying == "local" else "batch_global"

    @property
    def where(self) -> str:
        return prefill_where(self.spec.keying)

    def lines(self) -> list[str]:
        """The batch, what each rank answered (grouped; bounded so the finding keeps to MAX_LINES), the spec."""
        b = self.batch
        lines = [
            f"  batch: cp_size={b.cp_size} align_size={b.align_size} num_tokens={b.num_tokens} "
            f"extend_seq_lens={compact(list(b.extend_seq_lens))} max_padding_factor={b.max_padding_factor}"
            + ("" if b.is_prefilling is None else f" is_prefilling={list(b.is_prefilling)}"),
            f"  capture_num_tokens={compact(list(b.capture_num_tokens))} bucket_local_tokens="
            + "{" + ", ".join(f"{k}: {v}" for k, v in b.bucket_local_tokens) + "}"
            + f" ({b.table}; absent: {[k for k in b.capture_num_tokens if k not in b.capacities] or 'none'})",
        ]
        groups: list[tuple[list[int], str]] = []
        for a in self.answers:
            said = a.describe()
            if groups and groups[-1][1] == said:
                groups[-1][0].append(a.rank)
            else:
                groups.append(([a.rank], said))
        room = MAX_LINES - len(lines) - 4  # the headline; the spec, why and the minimised line after
        shown = groups if len(groups) <= room else groups[: room - 1]
        for ranks, said in shown:
            who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks[0]}-{ranks[-1]}"
            lines.append(f"  {who}: {said}")
        if len(shown) < len(groups):
            lines.append(f"  ... and {len(groups) - len(shown)} more groups of ranks answering differently")
        lines.append("  " + self.spec.describe(b))
        return lines

    def footer(self, found_after: int) -> list[str]:
        o = self.original
        if o == self.batch:
            return []
        return [f"  (minimised from {len(o.extend_seq_lens)} requests, {o.num_tokens} tokens, cp_size={o.cp_size}; "
                f"found after {found_after} batches, {self.phase})"]

    def trailer(self) -> str:
        return self.policy_traceback

    def short(self) -> str:
        b = self.batch
        decodes = "" if b.is_prefilling is None else f" is_prefilling={list(b.is_prefilling)}"
        return (f"cp_size={b.cp_size} extend_seq_lens={compact(list(b.extend_seq_lens))}{decodes} "
                f"capture_num_tokens={compact(list(b.capture_num_tokens))}")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "counterexample": self.batch.to_json(),
            "answers": [a.to_json() for a in self.answers],
            "spec": {
                "active": self.spec.active, "loads": list(self.spec.loads), "required": self.spec.required,
                "fitting": list(self.spec.fitting), "keying": self.spec.keying, "key": self.spec.key,
            },
            "table": self.batch.table,
            "phase": self.phase,
        }
        if self.policy_traceback:
            data["policy_traceback"] = self.policy_traceback
        return data


def batch_violation(invariant: str, batch: Batch, answers: tuple[RankAnswer, ...], spec: Spec, why: str, phase: str,
                    found_after: int, original: Batch, policy_traceback: str = "") -> Violation:
    """The one record (finding.py) of a prefill-batch finding."""
    return Violation(invariant, why, BatchWitness(batch, answers, spec, phase, original, policy_traceback), found_after,
                     minimised=original != batch)


def _traceback_of(answers: tuple[RankAnswer, ...]) -> str:
    """The first relevant exception the policy raised on these answers, with its own frames: admit or
    local_rows raising, or replay_bucket raising after admit said True (a refusal is no error)."""
    for a in answers:
        for method, error, relevant in (
            ("admit", a.admit_error, True),
            ("replay_bucket", a.replay_error, a.admit is True),
            ("local_rows", a.rows_error, True),
        ):
            if relevant and error is not None:
                tb = last_traceback(method, a.rank, error)
                if tb:
                    return f"  {method} raised on rank {a.rank}; the policy's traceback:\n" + tb
    return ""


@dataclass(frozen=True)
class CheckReport:
    """Outcome of ``check_policy``: ``ok`` iff no checked invariant was broken within the budget."""

    policy: str
    violations: tuple[Violation, ...]
    cases: int
    seconds: float
    checked: tuple[str, ...]
    phases: tuple[tuple[str, int], ...]  # batches checked per input phase
    stopped: str  # why the search ended: 'budget', 'cases' (max_cases), 'all violated', 'grace after violation', 'exhausted', 'policy call'
    stop: CallStop | None = None  # a policy call that ended the check (hung, exited, interrupted)
    seed: int = 0  # the random phase's seed (rerun with it to see the same batches)
    knobs: tuple[tuple[str, object], ...] = ()  # the run's knobs (factors, alignments, n, replay asking)
    parts: tuple[tuple[str, Any], ...] = ()  # (key, part) of every other subject checked (subjects/: ``Part``)
    batches: bool = True  # False: the policy offers no prefill protocol, only other subjects
    root: str | None = None  # the release folder an adapter drove (for an emitted test), when it says
    family: str | None = None  # the adapter's name for the release's family of code, when it says
    version: str | None = None  # the version of the stack the policy drove, when it says

    @property
    def ok(self) -> bool:
        return not self.violations and self.stop is None and all(part.ok for _, part in self.parts)

    def part(self, key: str) -> Any:
        """The part of subject ``key`` ('graph_paths'), or None when it was not checked."""
        return dict(self.parts).get(key)

    @property
    def findings(self) -> tuple[Any, ...]:
        """Every violation of every subject, the batches' first."""
        return (*self.violations, *(v for _, part in self.parts for v in part.violations))

    @property
    def invariants(self) -> tuple[str, ...]:
        return tuple(v.invariant for v in self.violations)

    @property
    def rate_per_minute(self) -> float:
        return self.cases / self.seconds * 60.0 if self.seconds > 0 else 0.0

    def violation(self, invariant: str) -> Violation | None:
        return next((v for v in self.violations if v.invariant == invariant), None)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "ok": self.ok,
            "violations": [v.to_json() for v in self.violations],
            "cases": self.cases,
            "seconds": round(self.seconds, 3),
            "seed": self.seed,
            "checked": list(self.checked),
            "phases": dict(self.phases),
            "stopped": self.stopped,
            "knobs": dict(self.knobs),
        }
        if self.stop is not None:
            data["policy_call"] = self.stop.to_json()
        if not self.batches:
            data["batches"] = False
        for key, part in self.parts:
            data[key] = part.to_json()
        return data

    def json(self) -> str:
        return json.dumps(self.to_json())

    def text(self) -> str:
        if self.stop is not None:
            return f"cpgraph check {self.policy}: FAILED - {self.stop.text()}"
        verdict = "OK" if self.ok else "FAILED"
        head = [
            f"cpgraph check {self.policy}: {verdict} - {self.cases} batches in "
            f"{self.seconds:.1f} s ({self.rate_per_minute:,.0f}/min; stopped: {self.stopped}); "
            f"checked {', '.join(self.checked)}"
        ] if self.batches else [f"cpgraph check {self.policy}: {verdict}"]
        head += [part.summary() for _, part in self.parts]
        notes = [n.text() for _, part in self.parts for n in getattr(part, "notes", ())]  # information, not violations
        return "\n\n".join(["\n".join(head)] + [v.text() for v in self.findings] + notes)


    def markdown(self) -> str:
        """A pull-request comment: verdict, one row per checked invariant, the counterexamples."""
        from cpgraph.output import md_table

        verdict = "✅ every checked invariant held" if self.ok else "❌ FAILED"
        out = [f"### cpgraph check `{self.policy}` — {verdict}", ""]
        if self.stop is not None:
            out += ["```", self.stop.text(), "```"]
            return "\n".join(out) + "\n"
        if self.batches:
            rows = [["invariant", "verdict", "claim"]]
            broken = {v.invariant for v in self.violations}
            keying = str(dict(self.knobs).get("keying", "global"))
            rows += [[f"`{inv}`", "**violated**" if inv in broken else "held", INVARIANT_TABLE[inv].stated(keying)]
                     for inv in self.checked]
            out += [md_table(rows), ""]
        out += [f"- {part.summary()}" for _, part in self.parts]
        for v in self.findings:
            out += ["", f"<details><summary><code>{v.invariant}</code> on {v.where}</summary>", "", "```", v.text(), "```", "</details>"]
        if self.batches:
            out += ["", f"<sub>{self.cases} batches in {self.seconds:.1f} s; stopped: {self.stopped}</sub>"]
        return "\n".join(out) + "\n"

    def junit(self) -> str:
        """JUnit XML: one testcase per checked invariant (and one for the policy call that stopped the check)."""
        from cpgraph.output import junit

        return junit(f"cpgraph check {self.policy}", self.junit_cases(), seconds=self.seconds)

    def junit_cases(self) -> list[Any]:
        """The JUnit testcases (cpgraph.formats.JUnitCase) of the report."""
        from cpgraph.output import JUnitCase

        broken = {v.invariant: v for v in self.violations}
        cases = []
        for inv in self.checked if self.batches else ():
            v = broken.get(inv)
            if v is None:
                cases.append(JUnitCase(inv, f"cpgraph.check.{self.policy}"))
            else:
                cases.append(JUnitCase(inv, f"cpgraph.check.{self.policy}", "failure", 0.0, v.why, v.text()))
        for key, part in self.parts:
            cases += part.junit_cases(f"cpgraph.check.{key}.{self.policy}")
        if self.stop is not None:
            cases.append(JUnitCase("policy_calls", f"cpgraph.check.{self.policy}", "failure", 0.0, self.stop.line(), self.stop.text()))
        return cases

    def render(self, fmt: str) -> str:
        return {"text": self.text, "json": self.json, "md": self.markdown, "junit": self.junit}[fmt]()
