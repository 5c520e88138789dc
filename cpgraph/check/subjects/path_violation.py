"""The graph-path subject's records in the one report: a path (``PathRun``: mode, decode placement, dcp and DP
size, each named apart), the paths checked (``PathsRun``) and a finding's witness (``PathWitness``) in the one
violation record (cpgraph/check/finding.py ``Violation``; ``PathViolation`` is that record), whose headline reads
as a batch finding's (verdict.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cpgraph.check.finding import Violation
from cpgraph.formats import JUnitCase
from cpgraph.reference.graph_paths import Graph, GraphConfig, GraphStep, PathAnswer
from cpgraph.reference.lists import compact

Steps = tuple[GraphStep, ...]  # one per DP rank


@dataclass(frozen=True)
class PathRun:
    """One path checked: the configured ``mode``, where decodes go (``placement``), the decode context
    parallel size, the DP size, and the cases checked."""

    mode: str
    placement: str
    dcp_size: int
    dp_size: int
    cases: int

    @property
    def name(self) -> str:
        """A name that tells the path apart from every other (two dcp sizes may place decodes alike)."""
        return f"{self.mode}, decodes {self.placement} (dcp {self.dcp_size}), DP {self.dp_size}"

    def key(self) -> tuple[str, str, int, int]:
        return (self.mode, self.placement, self.dcp_size, self.dp_size)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "placement": self.placement, "dcp_size": self.dcp_size, "dp_size": self.dp_size,
                "cases": self.cases, "name": self.name}


@dataclass(frozen=True)
class PathWitness:
    """The graph-path subject's witness of a finding (cpgraph/check/finding.py ``Witness``): the path (mode,
    decode placement, dcp size), the steps (one per DP rank), the captured configuration, every rank's answer
    and the graph the step should have run."""

    mode: str
    placement: str
    steps: Steps
    config: GraphConfig
    dp_answers: tuple[tuple[PathAnswer, ...], ...]
    should: Graph | None
    dcp_size: int = 1
    column = "graph_path"

    @property
    def step(self) -> GraphStep:
        """DP rank 0's step (the only one at DP size 1)."""
        return self.steps[0]

    @property
    def answers(self) -> tuple[PathAnswer, ...]:
        return self.dp_answers[0] if self.dp_answers else ()

    @property
    def path(self) -> PathRun:
        return PathRun(self.mode, self.placement, self.dcp_size, len(self.steps), 0)

    @property
    def where(self) -> str:
        return f"the {self.path.name} path"

    def used(self) -> Graph | None:
        return next((a.dispatched for answers in self.dp_answers for a in answers if a.dispatched is not None), None)

    def lines(self) -> list[str]:
        c = self.config
        dp = len(self.steps) > 1
        lines = [
            *[f"  {'DP rank ' + str(d) + ' ' if dp else ''}step: cp_size={s.cp_size} "
              f"lengths={compact(list(s.lengths))} is_prefilling={_flags(s.prefilling)}" for d, s in enumerate(self.steps)],
            f"  captured: cudagraph_mode={c.cudagraph_mode} token sizes={compact(list(c.token_sizes))} decode request "
            f"sizes={compact(list(c.decode_request_sizes))} query_lens={list(c.query_lens)} max_num_seqs={c.max_num_seqs}",
        ]
        for d, answers in enumerate(self.dp_answers):
            said: list[tuple[list[int], str]] = []
            for a in answers:
                text = a.describe()
                if said and said[-1][1] == text:
                    said[-1][0].append(a.rank)
                else:
                    said.append(([a.rank], text))
            for ranks, text in said:
                who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks[0]}-{ranks[-1]}"
                lines.append(f"  {'DP rank ' + str(d) + ' ' if dp else ''}{who}: {text}")
        lines.append(f"  should run: {_shown(self.should)}; ran: {_shown(self.used())}")
        return lines

    def footer(self, found_after: int) -> list[str]:
        return [f"  (found after {found_after} steps)"]

    def trailer(self) -> str:
        return ""

    def short(self) -> str:
        dp = len(self.steps)
        steps = "; ".join(f"{'DP rank ' + str(d) + ': ' if dp > 1 else ''}cp_size={s.cp_size} lengths={compact(list(s.lengths))}"
                          + ("" if not any(s.prefilling) else f" is_prefilling={list(s.prefilling)}") for d, s in enumerate(self.steps))
        c = self.config
        return (f"{steps}; captured token sizes={compact(list(c.token_sizes))} decode request sizes="
                f"{compact(list(c.decode_request_sizes))}; should run {_shown(self.should)}")

    def to_json(self) -> dict[str, Any]:
        g = _graph_json
        return {
            "mode": self.mode, "placement": self.placement, "dcp_size": self.dcp_size, "dp_size": len(self.steps),
            "steps": [{"cp_size": s.cp_size, "lengths": list(s.lengths), "is_prefilling": list(s.prefilling)} for s in self.steps],
            "config": {"cudagraph_mode": self.config.cudagraph_mode, "token_sizes": list(self.config.token_sizes),
                       "decode_request_sizes": list(self.config.decode_request_sizes),
                       "query_lens": list(self.config.query_lens), "max_num_seqs": self.config.max_num_seqs},
            "should": g(self.should), "used": g(self.used()),
            "ranks": [{"dp_rank": d, "rank": a.rank, "dispatched": g(a.dispatched), "replayed": g(a.replayed), "rows": a.rows,
                       "requests": a.requests, "refusal": a.refusal} for d, answers in enumerate(self.dp_answers) for a in answers],
        }


PathViolation = Violation  # a graph-path finding is the one record (finding.py), its witness a PathWitness


def path_violation(invariant: str, why: str, mode: str, placement: str, steps: Steps, config: GraphConfig,
                   dp_answers: tuple[tuple[PathAnswer, ...], ...], should: Graph | None, decided_at: tuple[str, ...],
                   found_after: int, dcp_size: int = 1) -> Violation:
    """The one record of a graph-path finding."""
    return Violation(invariant, why, PathWitness(mode, placement, steps, config, dp_answers, should, dcp_size), found_after,
                     decided_at)


@dataclass(frozen=True)
class PathsRun:
    """The graph-path subject's part of a report: the driver's version, every path checked, the violations."""

    release: str
    paths: tuple[PathRun, ...]
    violations: tuple[Violation, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    def failing(self) -> tuple[PathRun, ...]:
        """The paths with a violation, in the order checked."""
        broken = {v.path.key() for v in self.violations}
        return tuple(p for p in self.paths if p.key() in broken)

    def summary(self) -> str:
        """One line: OK with the count of paths and steps, or FAILED naming only the failing paths (each apart)."""
        steps = sum(p.cases for p in self.paths)
        if self.ok:
            return f"graph paths of {self.release}: OK - {len(self.paths)} paths, {steps} steps"
        failing = self.failing()
        return (f"graph paths of {self.release}: FAILED on {len(failing)} of {len(self.paths)} paths ({steps} steps) - "
                + "; ".join(p.name for p in failing))

    def junit_cases(self, suite: str) -> list[Any]:
        """One testcase per path: its findings, or passed."""
        out = []
        for path in self.paths:
            found = [v for v in self.violations if v.path.key() == path.key()]
            out.append(JUnitCase(path.name, suite) if not found else JUnitCase(
                path.name, suite, "failure", 0.0, "; ".join(v.why for v in found), "\n\n".join(v.text() for v in found)))
        return out

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "release": self.release, "paths": [p.to_json() for p in self.paths],
                "violations": [v.to_json() for v in self.violations]}


def _flags(flags: tuple[bool, ...]) -> str:
    """A request's prefill flags: a run of one value written once (``[False] * 8``)."""
    if len(set(flags)) == 1:
        return f"[{flags[0]}] * {len(flags)}" if len(flags) > 1 else f"[{flags[0]}]"
    return str(list(flags))


def _shown(graph: Graph | None) -> str:
    return graph.describe() if graph is not None else "eager"


def _graph_json(graph: Graph | None) -> dict[str, Any] | None:
    if graph is None:
        return None
    return {"mode": graph.mode, "tokens": graph.tokens, "requests": graph.requests, "query_len": graph.query_len}
