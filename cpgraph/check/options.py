"""The options of one check run, validated once: bad input names the argument, the value and what is allowed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, TypeVar

from cpgraph.check.batch import Factor, parse_factor, parse_table
from cpgraph.check.judging import EFFICIENCY, INVARIANTS, SAFETY
from cpgraph.check.protocol import ASK_REPLAY, align_text
from cpgraph.reference import STRATEGIES, default_align_size
from cpgraph.reference.ep_graphs import MODELS
from cpgraph.reference.graph_paths import CUDAGRAPH_MODES
from cpgraph.reference.keying import keying_row

T = TypeVar("T")
DEFAULT_CAPACITIES = ("captured", "headroom:2", "arbitrary")
NUM_TOKENS = ("live", "padded", "both")  # n = sum(extend_seq_lens); n > the sum (DP/CP padding); either
SEARCHED_FACTORS: tuple[Factor, ...] = (1, 2, 3, 4)  # without --padding-factors, one random batch in five takes one


@dataclass(frozen=True)
class CheckOptions:
    """What to search and for how long. The run stops at ``budget_s``, when every checked invariant has a
    counterexample, or ``grace_s`` after the first violation (so a buggy policy is reported fast).

    ``max_cases`` bounds the work by a count instead: the search checks at most that many batches (split
    evenly between the search processes), and unless a time was also given there is no clock at all
    (``budget_s``, ``grace_s`` and ``minimize_s`` unbounded; the minimiser still stops after its 5000
    tries), so the same seed checks the same batches and reports the same violations on a fast machine
    and a busy one. With ``boundary`` the solver's models join the batches as they arrive: set it False
    for a run that is the same batch for batch."""

    cp_sizes: tuple[int, ...] = (1, 2, 4, 8)
    strategy: str = "zigzag"
    max_requests: int = 3
    max_tokens: int = 4096
    capacities: tuple[str, ...] = DEFAULT_CAPACITIES
    budget_s: float = 30.0
    safety_only: bool = False
    invariants: tuple[str, ...] = INVARIANTS
    max_padding_factor: Factor = 2
    seed: int = 0
    grace_s: float = 1.0
    minimize_s: float = 1.0
    boundary: bool = True
    ask_replay: str = "admitted"
    padding_factors: tuple[Factor, ...] | None = None  # None: search (F mostly, sometimes 1..4)
    align_sizes: tuple[str, ...] | None = None  # None: the strategy's default; else ints or 'kP'
    num_tokens: str = "both"
    context_len: int | None = None
    strategy_fixed: bool = True  # False: the strategy was not given, so a policy's declared one wins
    keying: str = "global"  # reference/keying.py: what the policy's graphs are keyed by
    keying_fixed: bool = True  # False: the keying was not given, so a policy's declared one wins
    decodes: bool = True  # batches with decodes (is_prefilling) where the strategy places them and the policy takes them
    max_cases: int | None = None  # None: bounded by budget_s; else at most this many batches (see above)
    # the graph-path subject (subjects/paths.py): checked when the policy offers path drivers, unless False
    graph_paths: bool | None = None
    cudagraph_modes: tuple[str, ...] | None = None  # None: every mode a driver runs
    dcp_sizes: tuple[int, ...] = (1, 2)
    dp_sizes: tuple[int, ...] = (1, 2)
    spec_tokens: int = 0
    path_cases: int = 200  # cases per path (mode, placement, dcp and DP size)
    call_timeout_s: float = 10.0  # the longest one policy call may take, on every subject
    # the EP subject (subjects/ep.py): checked when the policy offers an EP driver (ep_step_driver()); its steps
    # are bounded by max_cases (default 20,000 EP steps)
    ep_sizes: tuple[int, ...] = (2, 4, 8)
    ep_models: tuple[str, ...] = ("dense", "hybrid")  # reference/ep_graphs.py MODELS
    ep_spec_tokens: int = 3  # most speculative (MTP) tokens per decode
    ep_idle: bool = True  # EP ranks without a batch (dummy steps)

    def share(self, shard: int, shards: int) -> int | None:
        """The batches search process ``shard`` of ``shards`` checks under ``max_cases`` (None: no count)."""
        if self.max_cases is None:
            return None
        return self.max_cases // shards + (1 if shard < self.max_cases % shards else 0)

    @property
    def checked(self) -> frozenset[str]:
        wanted = frozenset(self.invariants)
        return wanted - frozenset(EFFICIENCY) if self.safety_only else wanted

    @property
    def factors(self) -> tuple[Factor, ...]:
        """The factors every phase uses first: the fixed ones, else the configured F."""
        return self.padding_factors if self.padding_factors is not None else (self.max_padding_factor,)

    def aligns(self, cp_size: int) -> tuple[int, ...]:
        """The alignments of batches at ``cp_size``: the fixed ones, else the strategy's default."""
        return _aligns(self.align_sizes, cp_size, self.strategy)

    def knobs(self) -> dict[str, object]:
        """The knobs of this run as JSON (factors as '3/2' where rational)."""
        return {
            "padding_factors": None if self.padding_factors is None else [str(f) for f in self.padding_factors],
            "max_padding_factor": str(self.max_padding_factor),
            "align_sizes": None if self.align_sizes is None else list(self.align_sizes),
            "num_tokens": self.num_tokens,
            "ask_replay": self.ask_replay,
            "context_len": self.context_len,
            "strategy": self.strategy,
            "keying": self.keying,
            "cp_sizes": list(self.cp_sizes),
        }


@lru_cache(maxsize=256)
def _aligns(align_sizes: tuple[str, ...] | None, cp_size: int, strategy: str) -> tuple[int, ...]:
    if align_sizes is None:
        return (default_align_size(cp_size=cp_size, strategy=strategy),)
    out: list[int] = []
    for text in align_sizes:
        value = (int(text[:-1] or 1) * cp_size) if text.endswith("P") else int(text)
        if value not in out:
            out.append(value)
    return tuple(out)


def _int(name: str, value: object, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int >= {minimum}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return value


UNBOUNDED = float("inf")  # a time limit left off: a run bounded by max_cases has no clock


def _seconds(name: str, value: object, *, positive: bool, default: float, counted: bool) -> float:
    """A time option: ``default`` when not given (None), unbounded when the run is bounded by ``counted``."""
    if value is None:
        return UNBOUNDED if counted else default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {value!r} ({type(value).__name__})")
    if value < 0 or (positive and value == 0) or value != value:
        raise ValueError(f"{name} must be a number of seconds {'> 0' if positive else '>= 0'}, got {value}")
    return float(value)


def make_options(
    *,
    cp_sizes: Iterable[int] = (1, 2, 4, 8),
    strategy: str | None = None,
    max_requests: int = 3,
    max_tokens: int = 4096,
    capacities: Iterable[str] | str = DEFAULT_CAPACITIES,
    budget_s: float | None = None,
    safety_only: bool = False,
    invariants: Iterable[str] | None = None,
    max_padding_factor: Factor | float | str = 2,
    seed: int = 0,
    grace_s: float | None = None,
    minimize_s: float | None = None,
    boundary: bool = True,
    ask_replay: str = "admitted",
    padding_factors: Iterable[Factor | float | str] | str | None = None,
    align_sizes: Iterable[int | str] | str | None = None,
    num_tokens: str = "both",
    context_len: int | None = None,
    keying: str | None = None,
    decodes: bool = True,
    max_cases: int | None = None,
    graph_paths: bool | None = None,
    cudagraph_modes: Iterable[str] | str | None = None,
    dcp_sizes: Iterable[int] = (1, 2),
    dp_sizes: Iterable[int] = (1, 2),
    spec_tokens: int = 0,
    path_cases: int = 200,
    call_timeout_s: float = 10.0,
    ep_sizes: Iterable[int] = (2, 4, 8),
    ep_models: Iterable[str] | str = ("dense", "hybrid"),
    ep_spec_tokens: int = 3,
    ep_idle: bool = True,
) -> CheckOptions:
    """Validate and freeze the options of ``check_policy`` (TypeError/ValueError on bad input). A time left
    as None is its default (budget_s 30, grace_s 1, minimize_s 1), or unbounded when ``max_cases`` is given."""
    if isinstance(cp_sizes, (str, bytes)) or not isinstance(cp_sizes, Iterable):
        raise TypeError(f"cp_sizes must be a sequence of ints >= 1 (e.g. (1, 2, 4, 8)), got {cp_sizes!r}")
    sizes = tuple(sorted({_int("cp_sizes[]", p, 1) for p in cp_sizes}))
    if not sizes:
        raise ValueError("cp_sizes must name at least one cp_size (e.g. (1, 2, 4, 8)), got none")
    if max(sizes) > 64:
        raise ValueError(f"cp_sizes must be <= 64 (one batch is asked of every rank), got {max(sizes)}")
    strategy_fixed = strategy is not None
    strategy = "zigzag" if strategy is None else strategy
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    tables = tuple(capacities.split(",")) if isinstance(capacities, str) else tuple(capacities)
    if not tables:
        raise ValueError("capacities must name at least one of captured, headroom:R, arbitrary; got none")
    for spec in tables:
        parse_table(spec)
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
    factor = parse_factor("max_padding_factor", max_padding_factor)
    if ask_replay not in ASK_REPLAY:
        raise ValueError(f"ask_replay must be one of {', '.join(ASK_REPLAY)}; got {ask_replay!r}")
    if num_tokens not in NUM_TOKENS:
        raise ValueError(f"num_tokens must be one of {', '.join(NUM_TOKENS)}; got {num_tokens!r}")
    factors = None if padding_factors is None else _list("padding_factors", padding_factors, parse_factor)
    aligns = None if align_sizes is None else _list("align_sizes", align_sizes, align_text)
    ctx = None if context_len is None else _int("context_len", context_len, 1)
    keying_fixed = keying is not None
    keyed = keying_row("global" if keying is None else keying).id
    if not isinstance(decodes, bool):
        raise TypeError(f"decodes must be a bool, got {decodes!r}")
    cases = None if max_cases is None else _int("max_cases", max_cases, 1)
    counted = cases is not None
    made = CheckOptions(
        cp_sizes=sizes,
        strategy=strategy,
        max_requests=max_r,
        max_tokens=max_n,
        capacities=tables,
        budget_s=_seconds("budget_s", budget_s, positive=True, default=30.0, counted=counted),
        safety_only=safety_only,
        invariants=chosen,
        max_padding_factor=factors[0] if factors is not None else factor,
        seed=_int("seed", seed, 0),
        grace_s=_seconds("grace_s", grace_s, positive=False, default=1.0, counted=counted),
        minimize_s=_seconds("minimize_s", minimize_s, positive=False, default=1.0, counted=counted),
        boundary=bool(boundary),
        ask_replay=ask_replay,
        padding_factors=factors,
        align_sizes=aligns,
        num_tokens=num_tokens,
        context_len=ctx,
        strategy_fixed=strategy_fixed,
        keying=keyed,
        keying_fixed=keying_fixed,
        decodes=decodes,
        max_cases=cases,
        call_timeout_s=_seconds("call_timeout_s", call_timeout_s, positive=True, default=10.0, counted=False),
        **path_options(graph_paths, cudagraph_modes, dcp_sizes, dp_sizes, spec_tokens, path_cases),
        **ep_options(ep_sizes, ep_models, ep_spec_tokens, ep_idle),
    )
    return keyed_options(made) if keyed == "local" else made


def path_options(graph_paths: object, modes: object, dcp_sizes: object, dp_sizes: object, spec_tokens: object,
                 path_cases: object) -> dict[str, Any]:
    """The graph-path subject's options, validated (bad input names the argument, the value and what is allowed)."""
    if graph_paths is not None and not isinstance(graph_paths, bool):
        raise TypeError(f"graph_paths must be a bool or None (when the policy offers path drivers), got {graph_paths!r}")
    chosen = None if modes is None else _list("cudagraph_modes", modes, _mode)

    def sizes(name: str, value: object, high: int) -> tuple[int, ...]:
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise TypeError(f"{name} must be a sequence of ints in 1..{high}, got {value!r}")
        out = tuple(dict.fromkeys(_int(f"{name}[]", v, 1) for v in value))
        if not out or max(out) > high:
            raise ValueError(f"{name} must be ints in 1..{high}, got {value!r}")
        return out

    spec = _int("spec_tokens", spec_tokens, 0)
    if spec > 16:
        raise ValueError(f"spec_tokens must be an int in 0..16, got {spec_tokens!r}")
    return {"graph_paths": graph_paths, "cudagraph_modes": chosen, "dcp_sizes": sizes("dcp_sizes", dcp_sizes, 64),
            "dp_sizes": sizes("dp_sizes", dp_sizes, 8), "spec_tokens": spec, "path_cases": _int("path_cases", path_cases, 1)}


def ep_options(ep_sizes: object, models: object, spec_tokens: object, idle: object) -> dict[str, Any]:
    """The EP subject's options, validated (bad input names the argument, the value and what is allowed)."""
    if isinstance(ep_sizes, (str, bytes)) or not isinstance(ep_sizes, Iterable):
        raise TypeError(f"ep_sizes must be a sequence of EP sizes in 2..64, got {ep_sizes!r}")
    sizes = tuple(dict.fromkeys(_int("ep_sizes[]", e, 2) for e in ep_sizes))
    if not sizes or max(sizes) > 64:
        raise ValueError(f"ep_sizes must be EP sizes in 2..64, got {ep_sizes!r}")
    kinds = _list("ep_models", models, _model)
    spec = _int("ep_spec_tokens", spec_tokens, 0)
    if spec > 16:
        raise ValueError(f"ep_spec_tokens must be an int in 0..16, got {spec_tokens!r}")
    if not isinstance(idle, bool):
        raise TypeError(f"ep_idle must be a bool, got {idle!r}")
    return {"ep_sizes": sizes, "ep_models": kinds, "ep_spec_tokens": spec, "ep_idle": idle}


def _model(name: str, value: object) -> str:
    value = value.strip() if isinstance(value, str) else value
    if value not in MODELS:
        raise ValueError(f"{name} must be one of {', '.join(MODELS)}; got {value!r}")
    return str(value)


def _mode(name: str, value: object) -> str:
    if value not in CUDAGRAPH_MODES:
        raise ValueError(f"{name} must be one of {', '.join(CUDAGRAPH_MODES)}; got {value!r}")
    return str(value)


def keyed_options(opts: CheckOptions) -> CheckOptions:
    """``opts`` as a check under its keying: under ``local`` every batch meets a 'sizes' table (a size s
    holds s rows), n is the lengths' sum (vLLM has no padded n), and the boundary models (stated for the
    global keying's window) are not asked; the small-domain edges are the key's instead."""
    if opts.keying != "local":
        return opts
    return replace(opts, capacities=("sizes",), num_tokens="live", boundary=False)


def _list(name: str, value: object, parse: Callable[[str, object], T]) -> tuple[T, ...]:
    """A comma-separated string or an iterable, each item parsed; at least one, duplicates dropped."""
    if isinstance(value, str):
        items: list[object] = [part for part in value.split(",") if part.strip()]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise TypeError(f"{name} must be a comma-separated string or a sequence, got {value!r} ({type(value).__name__})")
    out: list[T] = []
    for item in items:
        parsed = parse(f"{name}[]", item)
        if parsed not in out:
            out.append(parsed)
    if not out:
        raise ValueError(f"{name} must name at least one value, got {value!r}")
    return tuple(out)
