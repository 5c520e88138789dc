"""The decision paths the bulk harness compares with the mirror: the reference's (runner plan and replay
included) and impl's (its own formulas, bisection selector and plan), each as a ``DecisionPath``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cpgraph.reference as reference
from cpgraph.proofs.conformance.mirror import MIRROR_STRATEGIES, PlanTuple, RunnerArgs

Planner = Callable[[tuple[int, ...], int], PlanTuple]
Replayer = Callable[[tuple[int, ...], int], int]  # rows of the replayed layout (raises if not admitted)


@dataclass(frozen=True)
class DecisionPath:
    """One implementation's decision path, as the bulk harness calls it. ``fitting_buckets``, ``planner`` and
    ``replayer`` may be None (not provided by this implementation; the report says so)."""

    name: str
    align_up: Callable[[int, int], int]
    is_cp_active: Callable[..., bool]
    required_local_tokens: Callable[..., int]
    capture_local_tokens: Callable[..., int]
    select_replay_bucket: Callable[..., "int | None"]
    fitting_buckets: Callable[..., tuple[int, ...]] | None = None
    planner: Callable[[RunnerArgs], Planner] | None = None
    replayer: Callable[[RunnerArgs], Replayer] | None = None
    strategies: tuple[str, ...] = ()  # the strategies this path accepts (empty = every one the mirror knows)
    headroom_local_tokens: Callable[..., int] | None = None  # zigzag headroom capacity (num_tokens, *, cp_size, align_size, max_requests)
    busiest_load: Callable[..., int] | None = None  # max_r l_r (lengths, *, cp_size, strategy)
    default_align_size: Callable[..., int] | None = None  # (*, cp_size, strategy)


def _reference_runner(config: RunnerArgs) -> reference.ReferenceRunner:
    return reference.ReferenceRunner(
        cp_size=config.cp_size, capture_num_tokens=config.capture_num_tokens, align_size=config.align_size,
        strategy=config.strategy, max_padding_factor=config.max_padding_factor,
        capture_rule=reference.CaptureRule(kind="table", table=dict(config.bucket_local_tokens)),
    )


def reference_planner(config: RunnerArgs) -> Planner:
    """The reference runner's plan for ``config``, as a PlanTuple."""
    runner = _reference_runner(config)

    def plan(lengths: tuple[int, ...], n: int) -> PlanTuple:
        p = runner.plan(lengths, n)
        return p.required_local_tokens, p.bucket, p.bucket_local_tokens, None if p.fallback is None else p.fallback.value

    return plan


def _reference_replayer(config: RunnerArgs) -> Replayer:
    runner = _reference_runner(config)

    def replay(lengths: tuple[int, ...], n: int) -> int:
        layout = runner.replay(runner.plan(lengths, n))
        if layout.loads != reference.rank_loads(lengths, cp_size=config.cp_size, strategy=config.strategy):
            raise AssertionError(f"replayed layout's loads {layout.loads} are not the live lengths' loads")
        return layout.rows

    return replay


def _impl_planner(config: RunnerArgs) -> Planner:
    from cpgraph.impl import decision

    started = config.started
    selector = decision.Selector.build(started, {b: c for b, c in config.bucket_local_tokens.items() if b in started})

    boundary = getattr(decision, "plan_lengths", None)  # the validating boundary, where impl has one

    def plan(lengths: tuple[int, ...], n: int) -> PlanTuple:
        if boundary is not None:
            p = boundary(lengths, n, cp_size=config.cp_size, align_size=config.align_size, selector=selector,
                         max_padding_factor=config.max_padding_factor, strategy=config.strategy)
        else:
            p = decision.plan_batch(
                lengths, num_tokens=n, cp_size=config.cp_size, align_size=config.align_size, selector=selector,
                max_padding_factor=config.max_padding_factor, strategy=config.strategy,
            )
        return p.required_local_tokens, p.bucket, p.bucket_local_tokens, None if p.fallback is None else p.fallback.value

    return plan


def reference_path() -> DecisionPath:
    """The reference's decision path (runner plan and replay included)."""
    return DecisionPath(
        "reference", reference.align_up, reference.is_cp_active, reference.required_local_tokens,
        reference.capture_local_tokens, reference.select_replay_bucket, reference.fitting_buckets,
        reference_planner, _reference_replayer, headroom_local_tokens=reference.headroom_local_tokens,
        busiest_load=_reference_busiest, default_align_size=reference.default_align_size,
    )


def _reference_busiest(lengths: Sequence[int], *, cp_size: int, strategy: str = "zigzag") -> int:
    return max(reference.rank_loads(lengths, cp_size=cp_size, strategy=strategy))


def impl_path() -> DecisionPath:
    """impl's decision path (cpgraph.impl.decision): its own formulas, bisection selector and plan."""
    from cpgraph.impl import decision

    accepted = []
    for kind in MIRROR_STRATEGIES:
        try:
            decision.required_local_tokens((8,), cp_size=2, align_size=4, strategy=kind)
        except ValueError:
            continue
        accepted.append(kind)
    return DecisionPath(
        "impl", decision.align_up, decision.is_cp_active, decision.required_local_tokens,
        decision.capture_local_tokens, decision.select_replay_bucket, None, _impl_planner, None, tuple(accepted),
        headroom_local_tokens=decision.headroom_local_tokens, busiest_load=decision.max_rank_load,
        default_align_size=decision.default_align_size,
    )
