"""``cpgraph check`` on expert-parallel (EP) steps: a stack whose ranks that must agree are EP ranks, each with
its own batch (Megatron-Core's dynamic inference engine, ``cpgraph.adapters.megatron:ep``), judged by
``reference.ep_graphs.judge`` (the invariants' ``ep_step`` column).

An EP driver (``EpDriver``: the adapter's policy) has ``version``, the knobs the release offers
(``dispatchers``, ``sizings``, ``all_prefills``, ``auto_graphs``, ``max_spec_tokens``), ``graphs(config)`` (the
graphs the release captures; ``ConfigRefused``-like ValueError when the release itself refuses the
configuration), ``answers(config, steps)`` (each EP rank's graph or eager, agreed over the simulated
all-reduce) and ``decided_at(invariant)`` (the release's file:line).

Cases (seeded, the same on every machine): a configuration drawn from what the release offers (model kind,
dispatcher, MTP tokens, graph count and sizing, limits, mixed-prefill count, non-decode graphs, all-prefill
graphs, tensor-parallel size) at each EP size, then steps over it: each rank idle one time in six, else a
decode-only, prefill-only or mixed batch within the limits. The first violation of each invariant is minimised
(fewest EP ranks, then fewest requests, then fewest tokens, then the smallest configuration) and replayed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from cpgraph.check.finding import Violation
from cpgraph.reference.ep_graphs import MODELS, EpAnswer, EpConfig, EpFinding, GraphDims, RankStep, judge
from cpgraph.reference.invariants import INVARIANT_TABLE

STEPS_PER_CONFIG = 24
Steps = tuple[RankStep, ...]


@dataclass(frozen=True)
class EpSpace:
    """The part of the configuration space to explore: EP sizes, model kinds, most MTP tokens, idle ranks."""

    ep_sizes: tuple[int, ...] = (2, 4, 8)
    models: tuple[str, ...] = ("dense", "hybrid")
    spec_tokens: int = 3
    idle: bool = True

    def __post_init__(self) -> None:
        if not self.ep_sizes or any(not 2 <= e <= 64 for e in self.ep_sizes):
            raise ValueError(f"ep_sizes must be EP sizes in 2..64, got {list(self.ep_sizes)!r}")
        if not self.models or any(m not in MODELS for m in self.models):
            raise ValueError(f"models must be some of {', '.join(MODELS)}, got {list(self.models)!r}")
        if not 0 <= self.spec_tokens <= 16:
            raise ValueError(f"spec_tokens must be in 0..16, got {self.spec_tokens!r}")


class Offers(Protocol):
    """What a release offers of the configuration space (the knobs its code reads)."""

    version: str
    dispatchers: tuple[str, ...]
    sizings: tuple[str, ...]
    all_prefills: bool
    auto_graphs: bool
    max_spec_tokens: int


class EpDriver(Offers, Protocol):
    def graphs(self, config: EpConfig) -> tuple[GraphDims, ...]: ...

    def answers(self, config: EpConfig, steps: Sequence[RankStep]) -> tuple[EpAnswer, ...]: ...

    def decided_at(self, invariant: str, kind: str = "") -> tuple[str, ...]: ...


@dataclass(frozen=True)
class EpWitness:
    """The EP subject's witness of a finding (cpgraph/check/finding.py ``Witness``): the configuration, each EP
    rank's step and answer, the captured graphs; for a chunked prefill's admission (kind 'chunk'), the active
    batch (``steps[0]``), the token budget and the chunk admitted."""

    config: EpConfig
    steps: Steps
    answers: tuple[EpAnswer, ...]
    graphs: tuple[GraphDims, ...]
    budget: int | None = None
    chunk: int | None = None
    column = "ep_step"

    @property
    def where(self) -> str:
        return "a chunked-prefill admission" if self.budget is not None else "an EP step"

    def lines(self) -> list[str]:
        lines = [f"  configuration: {self.config.describe()}",
                 f"  captured ({len(self.graphs)}): {', '.join(str(g) for g in sorted(self.graphs))}"]
        for a, step in zip(self.answers, self.steps):
            lines.append(f"  EP rank {a.rank}: step {step if step is not None else 'idle (dummy step)'} -> {a.describe()}")
        if self.budget is not None:
            lines.append(f"  a new prefill beside the active batch {self.steps[0]}, token budget {self.budget}: the engine "
                         f"admits a chunk of {self.chunk if self.chunk is not None else 'none (eager)'}")
        return lines

    def footer(self, found_after: int) -> list[str]:
        return [f"  (found after {found_after} steps)"]

    def trailer(self) -> str:
        return ""

    def short(self) -> str:
        return (f"ep_size={self.config.ep_size} model={self.config.model} "
                f"steps=[{', '.join('idle' if s is None else str(s) for s in self.steps)}]")

    def to_json(self) -> dict[str, Any]:
        def dims(g: GraphDims | None) -> list[int] | None:
            return None if g is None else [g.tokens, g.prefill, g.decode]

        return {"config": vars(self.config) | {"matching": self.config.matching},
                "steps": [dims(s) for s in self.steps], "graphs": [dims(g) for g in self.graphs],
                "ranks": [{"rank": a.rank, "graph": dims(a.graph), "hung": a.hung} for a in self.answers],
                "budget": self.budget, "chunk": self.chunk}


EpViolation = Violation  # an EP finding is the one record (finding.py), its witness an EpWitness


def ep_violation(invariant: str, why: str, config: EpConfig, steps: Steps, answers: tuple[EpAnswer, ...],
                 graphs: tuple[GraphDims, ...], decided_at: tuple[str, ...], found_after: int, *, info: bool = False,
                 kind: str = "", budget: int | None = None, chunk: int | None = None) -> Violation:
    """The one record of an EP finding (a note when ``info``: reported as found, not minimised)."""
    return Violation(invariant, why, EpWitness(config, steps, answers, graphs, budget, chunk), found_after, decided_at,
                     kind=kind, info=info, minimised=not info)


@dataclass(frozen=True)
class EpReport:
    """Every EP step checked on one release: the violations (one per invariant, minimised), the information
    notes, how many steps and configurations (and how many the release itself refused)."""

    target: str
    version: str
    steps: int
    configs: int
    refused: int
    seconds: float
    violations: tuple[Violation, ...]
    notes: tuple[Violation, ...] = ()
    chunks: int = 0  # chunked prefills admitted by the CUDA-graph-aware admission (0.19 on), checked

    @property
    def ok(self) -> bool:
        return not self.violations

    def text(self) -> str:
        head = (f"cpgraph check {self.target} (megatron-core {self.version}): {self.steps} EP steps over {self.configs} "
                f"configurations ({self.refused} refused by the release)"
                + (f" and {self.chunks} chunked-prefill admissions" if self.chunks else "") + f" in {self.seconds:.1f}s: "
                + ("every invariant held" if self.ok else f"{len(self.violations)} invariant(s) violated"))
        return "\n\n".join([head, *[v.text() for v in self.violations], *[n.text() for n in self.notes]])

    def summary(self) -> str:
        """One line, as a part of the one report: OK with the counts, or FAILED naming each broken invariant."""
        counts = (f"{self.steps} EP steps over {self.configs} configurations, {self.refused} refused by the release"
                  + (f", {self.chunks} chunked-prefill admissions" if self.chunks else ""))
        if self.ok:
            return f"EP steps of megatron-core {self.version}: OK - {counts}"
        broken = ", ".join(dict.fromkeys(v.invariant + (f" ({v.kind})" if v.kind else "") for v in self.violations))
        return f"EP steps of megatron-core {self.version}: FAILED - {broken} ({counts})"

    def junit_cases(self, suite: str) -> list[Any]:
        """One testcase per broken invariant, or one passed case."""
        from cpgraph.formats import JUnitCase

        if self.ok:
            return [JUnitCase("EP steps", suite)]
        return [JUnitCase(v.invariant + (f" ({v.kind})" if v.kind else ""), suite, "failure", 0.0, v.why, v.text())
                for v in self.violations]

    def markdown(self) -> str:
        return "```\n" + self.text() + "\n```\n"

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "release": self.version, "ok": self.ok, "steps": self.steps, "chunks": self.chunks, "configs": self.configs,
                "refused": self.refused, "seconds": round(self.seconds, 3),
                "violations": [v.to_json() for v in self.violations], "notes": [n.to_json() for n in self.notes]}


# --- drawing cases ---------------------------------------------------------------------------------------------

def draw_config(rng: random.Random, driver: Offers, ep_size: int, space: EpSpace = EpSpace()) -> EpConfig:
    """A configuration the release offers, at ``ep_size``, within ``space``."""
    spec = rng.choice((0, 0, 0, 1, 2, 3))
    spec = min(spec, driver.max_spec_tokens, space.spec_tokens)
    max_requests = rng.choice((4, 8, 16, 32, 64))
    floor = max_requests * (spec + 1)
    max_tokens = rng.choice((floor, floor, 2 * floor, max(floor, 256), max(floor, 512)))
    return EpConfig(
        ep_size=ep_size, model=rng.choice(space.models), dispatcher=rng.choice(driver.dispatchers), spec_tokens=spec,
        num_cuda_graphs=rng.choice((1, 2, 3, 4, 8, 16, *((-1,) if driver.auto_graphs else ()))), max_requests=max_requests,
        max_tokens=max_tokens, max_sequence_length=rng.choice((64, 4096)),
        mixed_prefill_count=rng.choice((0, 1, 2, 4, 16)), non_decode_graphs=rng.random() < 0.8,
        all_prefills=driver.all_prefills and rng.random() < 0.3, cuda_graph_max_tokens=rng.choice((floor, 128, 512)),
        sizing=rng.choice(driver.sizings), tp_size=rng.choice((1, 1, 2)),
    )


def draw_step(rng: random.Random, config: EpConfig) -> GraphDims:
    """One rank's batch within the limits: decode-only, prefill-only or mixed."""
    k = config.tokens_per_decode
    kind = rng.random()
    most_decodes = max(1, min(config.max_requests, config.max_tokens // k))
    decodes = 0 if kind < 0.3 else rng.randint(1, rng.choice((2, 4, most_decodes)))
    decodes = min(decodes, most_decodes)
    if kind >= 0.65 or decodes == 0:
        room = config.max_tokens - decodes * k
        prefills = 0 if kind >= 0.65 or room < 1 or decodes >= config.max_requests else rng.randint(1, min(3, room, config.max_requests - decodes))
        if kind < 0.3 and prefills == 0 and room >= 1:
            prefills = 1
        tokens = 0 if prefills == 0 else rng.randint(prefills, max(prefills, min(room, rng.choice((8, 64, room)))))
        return GraphDims(tokens + decodes * k, prefills, decodes)
    return GraphDims(decodes * k, 0, decodes)


def draw_steps(rng: random.Random, config: EpConfig, idle: bool = True) -> Steps:
    steps: list[RankStep] = [None if idle and rng.random() < 1 / 6 else draw_step(rng, config) for _ in range(config.ep_size)]
    if all(s is None for s in steps):
        steps[rng.randrange(config.ep_size)] = draw_step(rng, config)
    return tuple(steps)


# --- judging and minimising ------------------------------------------------------------------------------------

def findings(driver: EpDriver, config: EpConfig, steps: Steps) -> tuple[list[EpFinding], tuple[EpAnswer, ...], tuple[GraphDims, ...]]:
    """The reference's findings on ``steps`` (each rank's answer and the captured graphs with them). A driver
    that raises on a step (other than ValueError: the configuration refused) cannot run it: admission_replay,
    as on the other subjects, every rank then shown as eager."""
    graphs = driver.graphs(config)
    try:
        answers = driver.answers(config, steps)
    except ValueError:
        raise
    except Exception as exc:
        eager = tuple(EpAnswer(r, None) for r in range(len(steps)))
        return [EpFinding("admission_replay", f"the EP driver raised {type(exc).__name__}: {exc} on this step (it cannot run it)")], eager, graphs
    return judge(steps, graphs, answers, matching=config.matching, equal_shapes=config.equal_shapes), answers, graphs


def _size(config: EpConfig, steps: Steps) -> tuple[int, ...]:
    live = [s for s in steps if s is not None]
    return (config.ep_size, sum(s.requests for s in live), sum(s.tokens for s in live), config.spec_tokens,
            config.max_requests, config.max_tokens, config.num_cuda_graphs % 1000, config.mixed_prefill_count, config.tp_size)


def _step_moves(step: RankStep, k: int) -> Iterator[RankStep]:
    if step is None:
        return
    t, p, d = step.tokens, step.prefill, step.decode
    prefill_tokens = t - d * k
    if d:
        yield GraphDims(t - k, p, d - 1) if p or d > 1 else None
        yield GraphDims(prefill_tokens + k, p, 1) if d > 1 else None
    if p:
        yield GraphDims(t - max(1, prefill_tokens // p), p - 1, d) if p > 1 else GraphDims(d * k, 0, d) if d else None
        for cut in {prefill_tokens - p, (prefill_tokens - p) // 2, 1}:
            if 0 < cut <= prefill_tokens - p:
                yield GraphDims(t - cut, p, d)


def _config_moves(config: EpConfig) -> Iterator[EpConfig]:
    k = config.tokens_per_decode
    for spec in range(config.spec_tokens):
        yield replace(config, spec_tokens=spec)
    if config.tp_size != 1:
        yield replace(config, tp_size=1)
    for count in (0, 1, 2, 4):
        if count < config.mixed_prefill_count:
            yield replace(config, mixed_prefill_count=count)
    for graphs in (1, 2, 3, 4):
        if config.num_cuda_graphs == -1 or graphs < config.num_cuda_graphs:
            yield replace(config, num_cuda_graphs=graphs)
    for most in (4, 8, 16):
        if most < config.max_requests:
            yield replace(config, max_requests=most)
    if config.max_sequence_length != 4096:
        yield replace(config, max_sequence_length=4096)
    if config.all_prefills:
        yield replace(config, all_prefills=False)
    if config.model != "dense":
        yield replace(config, model="dense")
    if config.max_tokens > config.max_requests * k:
        yield replace(config, max_tokens=config.max_requests * k)
        yield replace(config, max_tokens=max(config.max_requests * k, config.max_tokens // 2))


def minimise(driver: EpDriver, invariant: str, config: EpConfig, steps: Steps, budget: int = 600, kind: str = "",
             space: EpSpace = EpSpace()) -> tuple[EpConfig, Steps]:
    """A smaller (config, steps) that still breaks ``invariant`` (of ``kind``, when given): fewest EP ranks,
    requests, tokens, then configuration."""
    def breaks(c: EpConfig, s: Steps) -> bool:
        if all(x is None for x in s) or c.model not in space.models or (not space.idle and None in s) or any(x is not None and (x.tokens > c.max_tokens or x.requests > c.max_requests) for x in s):
            return False
        try:
            found, _, _ = findings(driver, c, s)
        except ValueError:
            return False
        return any(f.invariant == invariant and not f.info and (not kind or f.kind == kind) for f in found)

    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        candidates: list[tuple[EpConfig, Steps]] = []
        if config.ep_size > min(space.ep_sizes):
            for r in range(config.ep_size):
                candidates.append((replace(config, ep_size=config.ep_size - 1), steps[:r] + steps[r + 1:]))
        k = config.tokens_per_decode
        for r, step in enumerate(steps):
            candidates += [(config, steps[:r] + (m,) + steps[r + 1:]) for m in _step_moves(step, k)]
        candidates += [(c, _refit(steps, config, c)) for c in _config_moves(config)]
        for c, s in sorted(candidates, key=lambda cs: _size(*cs)):
            if _size(c, s) >= _size(config, steps):
                continue
            tries += 1
            if breaks(c, s):
                config, steps, improved = c, s, True
                break
    return config, steps


def _refit(steps: Steps, old: EpConfig, new: EpConfig) -> Steps:
    """``steps`` under a configuration with fewer tokens per decode: the decodes' tokens shrink with it."""
    if new.tokens_per_decode == old.tokens_per_decode:
        return steps
    return tuple(None if s is None else GraphDims(s.tokens - s.decode * (old.tokens_per_decode - new.tokens_per_decode), s.prefill, s.decode)
                 for s in steps)


# --- the check ------------------------------------------------------------------------------------------------

def check_ep(driver: EpDriver, *, target: str, cases: int, seed: int, space: EpSpace = EpSpace(),
             progress: Callable[[str], None] | None = None) -> EpReport:
    """``cases`` EP steps over configurations drawn at each EP size of ``space`` in turn (the module docstring)."""
    ep_sizes = space.ep_sizes
    rng = random.Random(seed)
    start = time.perf_counter()
    first: dict[str, tuple[EpFinding, EpConfig, Steps, int]] = {}
    done = configs = refused = 0
    while done < cases:
        config = draw_config(rng, driver, ep_sizes[configs % len(ep_sizes)], space)
        configs += 1
        try:
            driver.graphs(config)
        except ValueError:
            refused += 1
            if refused > 50 * cases:
                break
            continue
        for _ in range(min(STEPS_PER_CONFIG, cases - done)):
            steps = draw_steps(rng, config, space.idle)
            found, _, _ = findings(driver, config, steps)
            done += 1
            for f in found:
                key = f"{f.invariant}:{f.kind}"
                if key not in first:
                    first[key] = (f, config, steps, done)
        if progress is not None and configs % 50 == 0:
            progress(f"{done} EP steps, {configs} configurations, {len(first)} finding(s)")
    violations: list[Violation] = []
    notes: list[Violation] = []
    for key, (f, config, steps, after) in first.items():
        if not f.info:
            config, steps = minimise(driver, f.invariant, config, steps, kind=f.kind, space=space)
        found, answers, graphs = findings(driver, config, steps)
        again = next((g for g in found if g.invariant == f.invariant and g.kind == f.kind), f)
        (notes if f.info else violations).append(ep_violation(f.invariant, again.why, config, steps, answers, graphs,
                                                              driver.decided_at(f.invariant, f.kind), after, info=f.info, kind=f.kind))
    order = list(INVARIANT_TABLE)
    violations.sort(key=lambda v: (order.index(v.invariant), v.kind))
    return EpReport(target, driver.version, done, configs, refused, time.perf_counter() - start, tuple(violations), tuple(notes))
