"""The bulk harness's runner family: drawn runners (capture lists of 32 to 48 buckets, capacity tables with
some rows short, missing or over) and batches at their edges, each path's plan judged against the mirror's
and the replayed layout against the plan."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import cpgraph.reference as reference
from cpgraph.proofs.conformance.draw import Draw
from cpgraph.proofs.conformance.families import accepts, align_for
from cpgraph.proofs.conformance.mirror import (
    MIRROR_STRATEGIES,
    PlanTuple,
    RunnerArgs,
    mirror_align_up,
    mirror_plan,
    mirror_rank_loads,
    mirror_required,
)
from cpgraph.proofs.conformance.paths import DecisionPath, Planner, Replayer
from cpgraph.proofs.conformance.report import Family, attempt
from cpgraph.reference.lists import compact


def _runner_config(draw: Draw) -> RunnerArgs:
    rng = draw.rng
    p = draw.cp_size()
    kind = rng.choice(MIRROR_STRATEGIES)
    a = align_for(draw, p, kind)
    factor = draw.factor()
    size = rng.randint(32, 48)
    top = rng.choice((4096, 65536, 10**6))
    buckets = sorted(set(rng.randint(1, top) for _ in range(size)) | {2 * p, 2 * p - 1 if p > 1 else 1})
    table: dict[int, int] = {}
    missing = rng.choice((0.0, 0.0, 0.1))  # most runners record every capacity (impl's bisection when monotone)
    for b in buckets:
        if rng.random() < missing:
            continue
        captured = mirror_required((b,), p, a, kind)
        table[b] = max(0, captured + (rng.choice((0, 0, 0, -1, a, -a)) if rng.random() < 0.5 else 0))
    return RunnerArgs(p, a, kind, factor, tuple(buckets), table)


def _batch_for(draw: Draw, config: RunnerArgs) -> tuple[tuple[int, ...], int]:
    rng = draw.rng
    p, buckets = config.cp_size, config.started
    roll = rng.random()
    if roll < 0.2:
        # The overflow edge: 2 to 4 requests with L mod 2P = P+1 need more rows than one request of the same
        # n was captured with (the 520-vs-512 crash), so a single-request shortcut shows.
        s = 2 * p
        lengths = tuple(s * rng.randint(1, max(1, 4096 // s)) + (p + 1) % s for _ in range(rng.randint(2, 4)))
        return lengths, sum(lengths)
    if roll < 0.27:
        # A short request (2P-1, or 2P: the edge) mixed in among long ones, first, in the middle or last, the
        # total near a bucket: only the short-request gate tells it from an admitted batch.
        s = 2 * p
        longs = [s * rng.randint(2, max(2, 4096 // s)) + rng.randrange(s) for _ in range(rng.randint(1, 3))]
        longs.insert(rng.randint(0, len(longs)), s - 1 if rng.random() < 0.75 else s)
        return tuple(longs), sum(longs)
    if roll < 0.35:
        # The gates: n around 2P, lengths around 2P (short, exact, one over).
        lengths = tuple(max(0, 2 * p + rng.choice((-2, -1, 0, 0, 1))) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.5:
            lengths = (max(1, 2 * p - 1 - rng.randint(0, 2 * p)),)
    elif roll < 0.7 and buckets:
        # A batch whose total sits at or near a bucket edge.
        edge = buckets[-1] if rng.random() < 0.25 else rng.choice(buckets)  # the largest: the too-many-tokens gate
        target = max(1, edge + rng.choice((-1, 0, 0, 1)))
        k = rng.randint(1, 4)
        cut = sorted(rng.randint(0, target) for _ in range(k - 1))
        lengths = tuple(b - a for a, b in zip([0, *cut], [*cut, target]))
    else:
        lengths = draw.lengths(p)
    total = sum(lengths)
    if total == 0:
        lengths, total = (*lengths[:-1], 1), total + 1
    n = total + (rng.choice((1, 2 * p, rng.randint(1, total))) if rng.random() < 0.1 else 0)
    return lengths, n


def family_plan(paths: Sequence[DecisionPath], draw: Draw, configs: int, per_config: int,
                replays: int) -> tuple[Family, Family]:
    """The runner's plan (its gates in order, the fallback reason, the selection) on ``per_config`` batches for
    each of ``configs`` drawn runners, and the replayed layout of up to ``replays`` admitted batches per runner."""
    plans, replay = Family("runner plan"), Family("replay and layout rows")
    for path in paths:
        if path.planner is None:
            plans.not_compared.append(f"{path.name}.plan: not provided")
        if path.replayer is None:
            replay.not_compared.append(f"{path.name}.replay: not provided")
    for _ in range(configs):
        config = _runner_config(draw)
        if not config.started:
            continue
        planners = [(path.name, path.planner(config)) for path in paths
                    if path.planner is not None and accepts(path, config.strategy)]
        replayers = [(path.name, path.replayer(config)) for path in paths
                     if path.replayer is not None and accepts(path, config.strategy)]
        _judge_refusals(config, planners, plans, replay)
        done = 0
        for _ in range(per_config):
            lengths, n = _batch_for(draw, config)
            expected = mirror_plan(config, lengths, n)

            def inputs() -> str:
                return f"{config}, extend_seq_lens={compact(lengths)}, num_tokens={n}"

            plans.cases += 1
            for name, plan in planners:
                plans.judge(name, "plan", expected, attempt(plan, lengths, n), inputs)
            if expected[1] is not None and done < replays and sum(lengths) <= 4096:
                done += 1
                _judge_replay(config, lengths, n, expected, replayers, replay, inputs)
    return plans, replay


def _judge_refusals(config: RunnerArgs, planners: Sequence[tuple[str, Planner]], plans: Family,
                    replay: Family) -> None:
    """Invalid input is refused with a ValueError, never truncated: a layout with cp_size 0 or too few rows, and
    a plan of fewer tokens than the lengths hold, a negative length, no request, or n = 0."""
    good = (2 * config.cp_size + 1, 2 * config.cp_size)
    busiest = max(mirror_rank_loads(good, config.cp_size, config.strategy))
    for bad in ({"cp_size": 0}, {"rows": -1}, {"rows": busiest - 1}):
        replay.cases += 1
        call = {"cp_size": config.cp_size, "strategy": config.strategy} | bad
        actual = attempt(reference.build_layout, good, **call)
        got = type(actual).__name__ if isinstance(actual, Exception) else f"returned {actual!r}"
        replay.judge("reference", "build_layout (invalid input)", "ValueError", got,
                     lambda call=call: f"build_layout({good}, **{call})")  # type: ignore[misc]
    invalid: tuple[tuple[tuple[int, ...], int], ...] = (
        (good, sum(good) - 1), ((2 * config.cp_size, -1), 4 * config.cp_size), ((), 8), ((0,), 0),
    )
    for lengths, n in invalid:
        plans.cases += 1
        for name, plan in planners:
            actual = attempt(plan, lengths, n)
            got = type(actual).__name__ if isinstance(actual, Exception) else f"returned {actual!r}"
            plans.judge(name, "plan (invalid input)", "ValueError", got,
                        lambda lengths=lengths, n=n: f"{config}, extend_seq_lens={compact(lengths)}, num_tokens={n}")  # type: ignore[misc]


def _judge_replay(config: RunnerArgs, lengths: tuple[int, ...], n: int, expected: PlanTuple,
                  replayers: Sequence[tuple[str, Replayer]], replay: Family, inputs: Callable[[], str]) -> None:
    """An admitted batch's layout (its rows, loads and inverse) and each path's replayed rows (the admitted
    bucket's capacity)."""
    replay.cases += 1
    loads = mirror_rank_loads(lengths, config.cp_size, config.strategy)
    layout = attempt(reference.build_layout, lengths, cp_size=config.cp_size, strategy=config.strategy)
    rows = layout.rows if isinstance(layout, reference.Layout) else layout
    replay.judge("reference", "build_layout rows", max(loads), rows, inputs)
    if isinstance(layout, reference.Layout):
        replay.judge("reference", "build_layout loads", tuple(loads), layout.loads, inputs)
        replay.judge("reference", "align_up(layout rows) = required", expected[0],
                     mirror_align_up(layout.rows, config.align_size), inputs)
        # The layout's inverse: the first, last and one middle token of each request round-trip.
        for request, length in enumerate(lengths):
            for token in {0, length // 2, length - 1} if length else set():
                where = attempt(layout.locate, request, token)
                back = layout.token_at(*where) if isinstance(where, tuple) else where
                replay.judge("reference", "token_at(locate(request, token))", (request, token), back, inputs)
    for name, replayer in replayers:
        replay.judge(name, "replay rows = admitted capacity", expected[2], attempt(replayer, lengths, n), inputs)
