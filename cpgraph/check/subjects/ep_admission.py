"""``cpgraph check`` on Megatron-Core's CUDA-graph-aware admission (0.19 on): a new prefill admitted beside an
active batch as a chunk snapped to a graph boundary (the engine's ``_find_cg_chunk_size``), judged by
``reference.ep_graphs.judge_chunk``: the chunk is within the budget, the step it makes replays a graph of the
planned token count (admission_replay), and it is the largest a graph boundary allows (no_needless_fallback).

Cases (seeded): a configuration with the gating on (``cuda_graph_all_prefills``, non-decode graphs, the nvls
dispatcher, the only one that keeps non-decode graphs under EP), an active batch (decodes, at most one prefill)
and a token budget. The first violation of each invariant is minimised (fewest active requests and tokens, the
smallest budget, then the smallest configuration) and replayed.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace
from typing import Any, Protocol

from cpgraph.check.finding import Violation
from cpgraph.check.subjects.ep_steps import EpReport, EpSpace, Offers, _config_moves, check_ep, draw_config, ep_violation
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.reference.ep_graphs import EpConfig, EpFinding, GraphDims, judge_chunk


class ChunkDriver(Offers, Protocol):
    def graphs(self, config: EpConfig) -> tuple[GraphDims, ...]: ...

    def chunk(self, config: EpConfig, active: GraphDims, budget: int) -> tuple[bool, int | None]: ...

    def decided_at(self, invariant: str, kind: str = "") -> tuple[str, ...]: ...


Case = tuple[EpConfig, GraphDims, int]


def _findings(driver: ChunkDriver, case: Case) -> tuple[bool, int | None, list[EpFinding]]:
    config, active, budget = case
    gating, chunk = driver.chunk(config, active, budget)
    if not gating:
        return False, chunk, []
    return True, chunk, judge_chunk(active, driver.graphs(config), budget, chunk, config.matching)


def _draw(rng: random.Random, driver: ChunkDriver, space: EpSpace) -> Case | None:
    config = replace(draw_config(rng, driver, rng.choice(space.ep_sizes), space), all_prefills=True, non_decode_graphs=True,
                     dispatcher="nvls" if "nvls" in driver.dispatchers else driver.dispatchers[0])
    k = config.tokens_per_decode
    decodes = rng.randint(0, max(0, min(config.max_requests - 2, config.max_tokens // k - 1, 12)))
    prefill = rng.randint(0, 1) if decodes + 2 <= config.max_requests else 0
    tokens = decodes * k + (rng.randint(1, 24) if prefill else 0)
    if tokens >= config.max_tokens or decodes + prefill == 0 and rng.random() < 0.5:
        return None
    return config, GraphDims(tokens, prefill, decodes), rng.randint(1, config.max_tokens - tokens)


def _moves(case: Case) -> list[Case]:
    config, active, budget = case
    k = config.tokens_per_decode
    out: list[Case] = []
    if active.decode:
        out.append((config, GraphDims(active.tokens - k, active.prefill, active.decode - 1), budget))
    if active.prefill:
        out.append((config, GraphDims(active.decode * k, 0, active.decode), budget))
    for b in {budget // 2, budget - 1}:
        if b >= 1:
            out.append((config, active, b))
    for c in _config_moves(config):
        if c.spec_tokens == config.spec_tokens and active.tokens < c.max_tokens and active.requests < c.max_requests:
            out.append((c, active, min(budget, c.max_tokens - active.tokens)))
    return out


def _size(case: Case) -> tuple[int, ...]:
    config, active, budget = case
    return (active.requests, active.tokens, budget, config.max_requests, config.max_tokens, config.num_cuda_graphs % 1000,
            config.mixed_prefill_count, config.tp_size, config.ep_size)


def _minimise(driver: ChunkDriver, invariant: str, case: Case, budget: int = 300) -> Case:
    tries, improved = 0, True
    while improved and tries < budget:
        improved = False
        for candidate in sorted(_moves(case), key=_size):
            if _size(candidate) >= _size(case):
                continue
            tries += 1
            try:
                _, _, found = _findings(driver, candidate)
            except ValueError:
                continue
            if any(f.invariant == invariant for f in found):
                case, improved = candidate, True
                break
    return case


def check_admission(driver: ChunkDriver, *, cases: int, seed: int, space: EpSpace = EpSpace()) -> tuple[int, list[Violation]]:
    """``cases`` chunked-prefill admissions with the gating on: how many were checked, and the violations."""
    rng = random.Random(seed ^ 0xC4)
    first: dict[str, tuple[Case, int]] = {}
    done = tries = 0
    while done < cases and tries < 20 * cases:
        tries += 1
        case = _draw(rng, driver, space)
        if case is None:
            continue
        try:
            gating, _, found = _findings(driver, case)
        except ValueError:  # the release refuses the configuration
            continue
        if not gating:
            continue
        done += 1
        for f in found:
            first.setdefault(f.invariant, (case, done))
    out: list[Violation] = []
    for invariant, (case, after) in first.items():
        case = _minimise(driver, invariant, case)
        config, active, budget = case
        _, chunk, found = _findings(driver, case)
        why = next((f.why for f in found if f.invariant == invariant), "")
        out.append(ep_violation(invariant, why, config, (active,), (), driver.graphs(config), driver.decided_at(invariant, "chunk"),
                                after, kind="chunk", budget=budget, chunk=chunk))
    return done, out


def check_release(driver: Any, *, target: str, cases: int, seed: int, space: EpSpace = EpSpace(),
                  progress: Any = None) -> EpReport:
    """Everything the release offers checked: ``cases`` EP steps (cpgraph/check/subjects/ep_steps.py), then, where the release
    has the CUDA-graph-aware admission (``driver.admission``), a quarter as many chunked-prefill admissions."""
    start = time.perf_counter()
    report = check_ep(driver, target=target, cases=cases, seed=seed, space=space, progress=progress)
    if not getattr(driver, "admission", False):
        return report
    chunks, found = check_admission(driver, cases=max(1, cases // 4), seed=seed, space=space)
    order = list(INVARIANT_TABLE)
    violations = sorted((*report.violations, *found), key=lambda v: (order.index(v.invariant), v.kind))
    return replace(report, violations=tuple(violations), chunks=chunks, seconds=time.perf_counter() - start)
