"""The graph-path subject's records in the one report: a path (``PathRun``: mode, decode placement, dcp and DP
size, each named apart), the paths checked (``PathsRun``) and a minimised ``PathViolation``, whose headline
reads as a batch violation's (verdict.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cpgraph.check.verdict import headline
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
class PathViolation:
    """The minimised first violation of one invariant on one path: the steps (one per DP rank), the captured
    configuration, every rank's answer, the graph the step should have run and where the driver decides."""

    invariant: str
    cost: str  # 'correctness' or 'speed' (the table's ``costs``)
    why: str
    mode: str
    placement: str
    steps: Steps
    config: GraphConfig
    dp_answers: tuple[tuple[PathAnswer, ...], ...]
    should: Graph | None
    decided_at: tuple[str, ...]
    found_after: int
    dcp_size: int = 1
    subject: str = "graph_path"

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

    @property
    def detail(self) -> str:
        return self.why

    def used(self) -> Graph | None:
        return next((a.dispatched for answers in self.dp_answers for a in answers if a.dispatched is not None), None)

    def text(self) -> str:
        c = self.config
        dp = len(self.steps) > 1
        lines = [
            headline(self.invariant, self.where, self.subject),
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
        lines.append(f"  why: {self.why}")
        lines += [f"  decided at: {where}" for where in self.decided_at]
        lines.append(f"  (found after {self.found_after} steps)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        g = _graph_json
        return {
            "invariant": self.invariant, "subject": self.subject, "path": self.path.name, "cost": self.cost, "why": self.why,
            "detail": self.why, "mode": self.mode, "placement": self.placement, "dcp_size": self.dcp_size, "dp_size": len(self.steps),
            "steps": [{"cp_size": s.cp_size, "lengths": list(s.lengths), "is_prefilling": list(s.prefilling)} for s in self.steps],
            "config": {"cudagraph_mode": self.config.cudagraph_mode, "token_sizes": list(self.config.token_sizes),
                       "decode_request_sizes": list(self.config.decode_request_sizes),
                       "query_lens": list(self.config.query_lens), "max_num_seqs": self.config.max_num_seqs},
            "should": g(self.should), "used": g(self.used()), "decided_at": list(self.decided_at), "found_after": self.found_after,
            "ranks": [{"dp_rank": d, "rank": a.rank, "dispatched": g(a.dispatched), "replayed": g(a.replayed), "rows": a.rows,
                       "requests": a.requests, "refusal": a.refusal} for d, answers in enumerate(self.dp_answers) for a in answers],
        }


@dataclass(frozen=True)
class PathsRun:
    """The graph-path subject's part of a report: the driver's version, every path checked, the violations."""

    release: str
    paths: tuple[PathRun, ...]
    violations: tuple[PathViolation, ...]

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
