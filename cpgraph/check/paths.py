"""``cpgraph check`` on every graph path a stack runs, not only the prefill bucket: each CUDA-graph mode and
decode placement a stack's adapter drives (``graph_paths()`` on the policy object), over steps in the
proportions a server sees, judged by ``reference.graph_paths.judge`` (the same seven invariant ids).

A path driver (the vLLM adapter's ``VllmPaths``) has ``version``, ``modes`` (the CUDA-graph modes the release
runs), ``placement(cp_size)`` (a DualChunkSwap strategy row), ``captured(config)`` (the graphs the release
captures) and ``answers_dp(steps, config)`` (what each rank of each DP rank dispatches and replays, DP rank d
running ``steps[d]``, agreed through the release's own DP sync), and may say where the release decides
(``decided_at()``: file:line citations). At DP size D every case runs D steps, one per DP rank.

Steps, per case (seeded, the same on every machine): six in ten a uniform decode step (every request a decode
of q = 1 + ``spec_tokens`` tokens, 1 to 64 requests, most of them few), two in ten a mixed step (one to three
prefills of 1 to 600 tokens beside up to eight decodes), two in ten speculative decoding's ragged step
(decodes of 1 to q tokens, not uniform). Capture lists: vLLM's defaults, or one case in three a random short
list of token sizes and decode request counts. The first violation of each invariant in each mode is
minimised (fewest requests, then fewest tokens, then the smallest cp_size, then the fewest captured sizes)
and replayed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from cpgraph.reference.graph_paths import Graph, GraphConfig, GraphStep, PathAnswer, PathFinding, fastest, held_by, judge_dp
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.reference.lists import compact

DEFAULT_TOKEN_SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))
MAX_DECODES = 64


class PathDriver(Protocol):
    version: str
    modes: tuple[str, ...]
    dcp_size: int

    def placement(self, cp_size: int) -> str: ...

    def captured(self, config: GraphConfig) -> tuple[Graph, ...]: ...

    def answers_dp(self, steps: Sequence[GraphStep], config: GraphConfig) -> tuple[tuple[PathAnswer, ...], ...]: ...


Steps = tuple[GraphStep, ...]  # one per DP rank


@dataclass(frozen=True)
class PathViolation:
    """The minimised first violation of one invariant on one path: the steps (one per DP rank), the captured
    configuration, every rank's answer, the graph the step should have run and where the release decides."""

    invariant: str
    cost: str
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

    @property
    def step(self) -> GraphStep:
        """DP rank 0's step (the only one at DP size 1)."""
        return self.steps[0]

    @property
    def answers(self) -> tuple[PathAnswer, ...]:
        return self.dp_answers[0]

    def used(self) -> Graph | None:
        return next((a.dispatched for answers in self.dp_answers for a in answers if a.dispatched is not None), None)

    def text(self) -> str:
        c = self.config
        lines = [
            f"{self.invariant} violated on the {self.mode} path, decodes {self.placement} (dcp {self.dcp_size}) "
            f"({'safety' if self.cost == 'correctness' else 'efficiency'}: {INVARIANT_TABLE[self.invariant].graph_path}; costs {self.cost})",
            *[f"  {'DP rank ' + str(d) + ' ' if len(self.steps) > 1 else ''}step: cp_size={s.cp_size} "
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
                lines.append(f"  {'DP rank ' + str(d) + ' ' if len(self.steps) > 1 else ''}{who}: {text}")
        lines.append(f"  should run: {_shown(self.should)}; ran: {_shown(self.used())}")
        lines.append(f"  why: {self.why}")
        lines += [f"  decided at: {where}" for where in self.decided_at]
        lines.append(f"  (found after {self.found_after} steps)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        g = _graph_json
        return {
            "invariant": self.invariant, "cost": self.cost, "why": self.why, "mode": self.mode, "placement": self.placement, "dcp_size": self.dcp_size,
            "dp_size": len(self.steps),
            "steps": [{"cp_size": s.cp_size, "lengths": list(s.lengths), "is_prefilling": list(s.prefilling)} for s in self.steps],
            "config": {"cudagraph_mode": self.config.cudagraph_mode, "token_sizes": list(self.config.token_sizes),
                       "decode_request_sizes": list(self.config.decode_request_sizes),
                       "query_lens": list(self.config.query_lens), "max_num_seqs": self.config.max_num_seqs},
            "should": g(self.should), "used": g(self.used()), "decided_at": list(self.decided_at),
            "ranks": [{"dp_rank": d, "rank": a.rank, "dispatched": g(a.dispatched), "replayed": g(a.replayed), "rows": a.rows,
                       "requests": a.requests, "refusal": a.refusal} for d, answers in enumerate(self.dp_answers) for a in answers],
        }


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


@dataclass(frozen=True)
class PathsReport:
    """Every path checked: (mode, placement, steps checked) and the violations found."""

    release: str
    paths: tuple[tuple[str, str, int, int], ...]  # (mode, placement, DP size, steps checked)
    violations: tuple[PathViolation, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    def text(self) -> str:
        head = (f"cpgraph check {self.release} graph paths: {'OK' if self.ok else 'FAILED'} - "
                + ", ".join(f"{mode} decodes {placement} DP {dp} ({cases} steps)" for mode, placement, dp, cases in self.paths))
        return "\n\n".join([head] + [v.text() for v in self.violations])

    def markdown(self) -> str:
        out = [f"### graph paths of {self.release} — {'✅ every invariant held' if self.ok else '❌ FAILED'}", ""]
        out += [f"- `{mode}`, decodes `{placement}`, DP {dp}: {cases} steps" for mode, placement, dp, cases in self.paths]
        for v in self.violations:
            out += ["", f"<details><summary><code>{v.invariant}</code> on {v.mode}</summary>", "", "```", v.text(), "```", "</details>"]
        return "\n".join(out) + "\n"

    def junit_cases(self) -> list[Any]:
        from cpgraph.formats import JUnitCase

        broken = {(v.mode, v.placement, len(v.steps)): v for v in self.violations}
        out = []
        for mode, placement, dp, _ in self.paths:
            name, v = f"{mode}/{placement}/dp{dp}", broken.get((mode, placement, dp))
            out.append(JUnitCase(name, f"cpgraph.check.paths.{self.release}") if v is None
                       else JUnitCase(name, f"cpgraph.check.paths.{self.release}", "failure", 0.0, v.why, v.text()))
        return out

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "paths": [{"mode": m, "placement": p, "dp_size": dp, "cases": n} for m, p, dp, n in self.paths],
                "violations": [v.to_json() for v in self.violations]}


def random_step(rng: random.Random, cp_size: int, placement: str, query_len: int) -> GraphStep:
    """One step in the proportions the module docstring gives."""
    kind = rng.random()
    if kind < 0.6:
        n = min(MAX_DECODES, int(rng.expovariate(1 / 8)) + 1)
        return GraphStep((query_len,) * n, (False,) * n, cp_size, placement)
    if kind < 0.8:
        prefills = [rng.randint(1, 600) for _ in range(rng.randint(1, 3))]
        decodes = [rng.randint(1, query_len) for _ in range(rng.randint(0, 8))]
        flags = [True] * len(prefills) + [False] * len(decodes)
        order = list(range(len(flags)))
        rng.shuffle(order)
        return GraphStep(tuple((prefills + decodes)[i] for i in order), tuple(flags[i] for i in order), cp_size, placement)
    n = rng.randint(1, 16)
    return GraphStep(tuple(rng.randint(1, query_len) for _ in range(n)), (False,) * n, cp_size, placement)


def random_config(rng: random.Random, mode: str, query_len: int, max_num_seqs: int) -> GraphConfig:
    """vLLM's default capture sizes, or one case in three a random short list of each."""
    if rng.random() < 2 / 3:
        decodes = (*range(1, 9), *range(16, max_num_seqs + 1, 8))
        return GraphConfig(mode, DEFAULT_TOKEN_SIZES, decodes, (query_len,), max_num_seqs)
    tokens = tuple(sorted(rng.sample(range(1, 1025), rng.randint(1, 6))))
    decodes = tuple(sorted(rng.sample(range(1, MAX_DECODES + 1), rng.randint(1, 6))))
    return GraphConfig(mode, tokens, decodes, (query_len,), max_num_seqs)


def _judged(driver: PathDriver, steps: Steps, config: GraphConfig) -> tuple[list[PathFinding], tuple[tuple[PathAnswer, ...], ...], tuple[Graph, ...]]:
    graphs = driver.captured(config)
    answers = driver.answers_dp(steps, config)
    return judge_dp(list(zip(steps, answers)), graphs), answers, graphs


def _broken(driver: PathDriver, steps: Steps, config: GraphConfig, invariant: str) -> PathFinding | None:
    return next((f for f in _judged(driver, steps, config)[0] if f.invariant == invariant), None)


def _smaller_step(step: GraphStep) -> list[GraphStep]:
    """A request fewer, or a prefill shorter."""
    out: list[GraphStep] = []
    n = len(step.lengths)
    for i in range(n):
        if n > 1:
            out.append(replace(step, lengths=step.lengths[:i] + step.lengths[i + 1:], prefilling=step.prefilling[:i] + step.prefilling[i + 1:]))
    for i, (length, prefill) in enumerate(zip(step.lengths, step.prefilling)):
        if prefill and length > 1:
            for shorter in sorted({length // 2, length - 1}):
                if shorter >= 1:
                    out.append(replace(step, lengths=step.lengths[:i] + (shorter,) + step.lengths[i + 1:]))
    return out


def _smaller(steps: Steps, config: GraphConfig, cp_sizes: Sequence[int], placement: Callable[[int], str]) -> list[tuple[Steps, GraphConfig]]:
    """Candidates one move smaller: a DP rank's step a request fewer or a prefill shorter, a smaller cp_size
    (every DP rank's), a captured size fewer or smaller."""
    out: list[tuple[Steps, GraphConfig]] = []
    for d, step in enumerate(steps):
        out += [(steps[:d] + (smaller,) + steps[d + 1:], config) for smaller in _smaller_step(step)]
    for p in sorted(cp_sizes):
        if p < steps[0].cp_size:
            out.append((tuple(replace(s, cp_size=p, placement=placement(p)) for s in steps), config))
    for tokens in _fewer_or_smaller(config.token_sizes):
        out.append((steps, replace(config, token_sizes=tokens)))
    for decodes in _fewer_or_smaller(config.decode_request_sizes):
        out.append((steps, replace(config, decode_request_sizes=decodes)))
    return out


def _fewer_or_smaller(sizes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """A capture list with one size fewer, or one size halved or one less (sorted, without repeats)."""
    out = [sizes[:i] + sizes[i + 1:] for i in range(len(sizes)) if len(sizes) > 1]
    for i, size in enumerate(sizes):
        for smaller in sorted({size // 2, size - 1}):
            if smaller >= 1:
                out.append(tuple(sorted(set(sizes[:i] + (smaller,) + sizes[i + 1:]))))
    return out


def minimise(driver: PathDriver, steps: Steps, config: GraphConfig, invariant: str, cp_sizes: Sequence[int],
             placement: Callable[[int], str]) -> tuple[Steps, GraphConfig]:
    """The steps and configuration shrunk while ``invariant`` stays broken: one move at a time to a fixed
    point, then a step move and a configuration move together (a request fewer needs a smaller graph too
    when the violation sits at a graph's edge), and again."""
    changed = True
    while changed:
        changed = False
        moves = _smaller(steps, config, cp_sizes, placement)
        for smaller_steps, smaller_config in moves:
            if _broken(driver, smaller_steps, smaller_config, invariant) is not None:
                steps, config, changed = smaller_steps, smaller_config, True
                break
        if changed:
            continue
        for smaller_steps, _ in (m for m in moves if m[1] == config):
            for _, smaller_config in (m for m in moves if m[0] == steps):
                if _broken(driver, smaller_steps, smaller_config, invariant) is not None:
                    steps, config, changed = smaller_steps, smaller_config, True
                    break
            if changed:
                break
    return steps, config


def check_paths(
    drivers: Sequence[PathDriver], *, cp_sizes: Sequence[int], modes: Sequence[str] | None = None, spec_tokens: int = 0,
    cases: int = 1000, seed: int = 0, max_num_seqs: int = 256, progress: Callable[[str], None] | None = None,
    decided_at: Callable[[str], tuple[str, ...]] | None = None, dp_sizes: Sequence[int] = (1,),
) -> PathsReport:
    """Check ``cases`` cases on every mode each driver runs (``modes`` narrows them) at every DP size, each case
    at a cp size drawn from ``cp_sizes`` with one step per DP rank, and return the report (first violation of
    each invariant per mode, placement and DP size, minimised)."""
    if not drivers:
        raise ValueError("check_paths needs at least one path driver")
    if type(spec_tokens) is not int or not 0 <= spec_tokens <= 16:
        raise ValueError(f"spec_tokens must be an int in 0..16, got {spec_tokens!r}")
    if type(cases) is not int or cases < 1:
        raise ValueError(f"cases must be an int >= 1, got {cases!r}")
    if not dp_sizes or not all(type(d) is int and 1 <= d <= 64 for d in dp_sizes):
        raise ValueError(f"dp_sizes must be ints in 1..64, got {dp_sizes!r}")
    q = 1 + spec_tokens
    paths: list[tuple[str, str, int, int]] = []
    violations: list[PathViolation] = []
    for driver in drivers:
        for mode in driver.modes:
            if modes is not None and mode not in modes:
                continue
            placement = driver.placement(max(cp_sizes))
            for dp in dp_sizes:
                rng = random.Random(f"{seed}:{mode}:{placement}:{dp}")
                seen: set[str] = set()
                for case in range(1, cases + 1):
                    p = rng.choice(list(cp_sizes))
                    steps = tuple(random_step(rng, p, driver.placement(p), q) for _ in range(dp))
                    config = random_config(rng, mode, q, max_num_seqs)
                    for finding in _judged(driver, steps, config)[0]:
                        if finding.invariant in seen:
                            continue
                        seen.add(finding.invariant)
                        small_steps, small_config = minimise(driver, steps, config, finding.invariant, cp_sizes, driver.placement)
                        found, answers, graphs = _judged(driver, small_steps, small_config)
                        final = next(f for f in found if f.invariant == finding.invariant)
                        where = decided_at(finding.invariant) if decided_at is not None else ()
                        should = fastest(graphs, held_by(list(zip(small_steps, answers))))
                        violations.append(PathViolation(
                            final.invariant, final.cost, final.why, mode, small_steps[0].placement, small_steps, small_config, answers,
                            should, where, case, driver.dcp_size,
                        ))
                        if progress is not None:
                            progress(f"graph paths: {final.invariant} violated on {mode}, decodes {placement}, DP {dp}, after {case} cases")
                paths.append((mode, placement, dp, cases))
                if progress is not None:
                    progress(f"graph paths: {mode}, decodes {placement}, DP {dp}: {cases} cases checked")
    release = drivers[0].version
    return PathsReport(release, tuple(paths), tuple(violations))
