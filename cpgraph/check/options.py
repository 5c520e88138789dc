"""The options of one check run, validated once: bad input names the argument, the value and what is allowed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cpgraph.check.batch import parse_table
from cpgraph.check.invariants import EFFICIENCY, INVARIANTS, SAFETY
from cpgraph.reference import STRATEGIES

DEFAULT_CAPACITIES = ("captured", "headroom:2", "arbitrary")


@dataclass(frozen=True)
class CheckOptions:
    """What to search and for how long. The run stops at ``budget_s``, when every checked invariant has a
    counterexample, or ``grace_s`` after the first violation (so a buggy policy is reported fast)."""

    cp_sizes: tuple[int, ...] = (1, 2, 4, 8)
    strategy: str = "zigzag"
    max_requests: int = 3
    max_tokens: int = 4096
    capacities: tuple[str, ...] = DEFAULT_CAPACITIES
    budget_s: float = 30.0
    safety_only: bool = False
    invariants: tuple[str, ...] = INVARIANTS
    max_padding_factor: int = 2
    seed: int = 0
    grace_s: float = 1.0
    minimize_s: float = 1.0
    boundary: bool = True

    @property
    def checked(self) -> frozenset[str]:
        wanted = frozenset(self.invariants)
        return wanted - frozenset(EFFICIENCY) if self.safety_only else wanted


def _int(name: str, value: object, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int >= {minimum}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return value


def _seconds(name: str, value: object, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {value!r} ({type(value).__name__})")
    if value < 0 or (positive and value == 0) or value != value:
        raise ValueError(f"{name} must be a number of seconds {'> 0' if positive else '>= 0'}, got {value}")
    return float(value)


def make_options(
    *,
    cp_sizes: Iterable[int] = (1, 2, 4, 8),
    strategy: str = "zigzag",
    max_requests: int = 3,
    max_tokens: int = 4096,
    capacities: Iterable[str] | str = DEFAULT_CAPACITIES,
    budget_s: float = 30.0,
    safety_only: bool = False,
    invariants: Iterable[str] | None = None,
    max_padding_factor: int = 2,
    seed: int = 0,
    grace_s: float = 1.0,
    minimize_s: float = 1.0,
    boundary: bool = True,
) -> CheckOptions:
    """Validate and freeze the options of ``check_policy`` (TypeError/ValueError on bad input)."""
    if isinstance(cp_sizes, (str, bytes)) or not isinstance(cp_sizes, Iterable):
        raise TypeError(f"cp_sizes must be a sequence of ints >= 1 (e.g. (1, 2, 4, 8)), got {cp_sizes!r}")
    sizes = tuple(sorted({_int("cp_sizes[]", p, 1) for p in cp_sizes}))
    if not sizes:
        raise ValueError("cp_sizes must name at least one cp_size (e.g. (1, 2, 4, 8)), got none")
    if max(sizes) > 64:
        raise ValueError(f"cp_sizes must be <= 64 (one batch is asked of every rank), got {max(sizes)}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    tables = tuple(capacities.split(",")) if isinstance(capacities, str) else tuple(capacities)
    if not tables:
        raise ValueError("capacities must name at least one of captured, headroom:R, arbitrary; got none")
    for spec in tables:
        kind, _ = parse_table(spec)
        if kind == "headroom" and strategy != "zigzag":
            raise ValueError(f"capacities {spec!r} needs strategy 'zigzag' (headroom is a zigzag bound), got {strategy!r}")
    chosen = INVARIANTS if invariants is None else tuple(invariants)
    unknown = [i for i in chosen if i not in INVARIANTS]
    if unknown or not chosen:
        raise ValueError(f"invariants must be among {', '.join(INVARIANTS)}; got {list(chosen)!r}")
    if not isinstance(safety_only, bool):
        raise TypeError(f"safety_only must be a bool, got {safety_only!r}")
    if safety_only and not set(chosen) & set(SAFETY):
        raise ValueError(f"safety_only leaves nothing to check among invariants={list(chosen)!r}")
    max_r = _int("max_requests", max_requests, 1)
    max_n = _int("max_tokens", max_tokens, 2)
    factor = _int("max_padding_factor", max_padding_factor, 1)
    return CheckOptions(
        cp_sizes=sizes,
        strategy=strategy,
        max_requests=max_r,
        max_tokens=max_n,
        capacities=tables,
        budget_s=_seconds("budget_s", budget_s, positive=True),
        safety_only=safety_only,
        invariants=chosen,
        max_padding_factor=factor,
        seed=_int("seed", seed, 0),
        grace_s=_seconds("grace_s", grace_s, positive=False),
        minimize_s=_seconds("minimize_s", minimize_s, positive=False),
        boundary=bool(boundary),
    )
