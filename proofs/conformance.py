"""The one conformance harness: an implementation against the spec on concrete inputs.

Inputs come from three sources: the spec's clause edges drawn by Z3 (proofs.boundaries), exhaustive small
domains, and Hypothesis (``case_strategy``). For every case the harness runs both sides, the spec
evaluated concretely (proofs.evaluate) and the implementation (any object with the reference's function
API: rank_loads, required_local_tokens, capture_local_tokens, select_replay_bucket), compares them under
an explicit ``Mode``, and fails with a message that carries every input, the expected and the actual value.

Selection is compared on identical inputs: both sides get the spec's required rows, so a layout bug and a
selection bug are reported separately.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
import math
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

import hypothesis.strategies as st

from cpgraph import reference
from cpgraph.proofs.boundaries import boundary_cases
from cpgraph.proofs.evaluate import (
    spec_capture_local_tokens,
    spec_headroom_local_tokens,
    spec_rank_loads,
    spec_required_local_tokens,
    spec_select_replay_bucket,
)


class Implementation(Protocol):
    """What the harness calls: the reference's public function API (a module or an object)."""

    def rank_loads(self, extend_seq_lens: Any, *, cp_size: Any, strategy: Any = ...) -> tuple[int, ...]: ...

    def required_local_tokens(
        self, extend_seq_lens: Any, *, cp_size: Any, align_size: Any, strategy: Any = ...
    ) -> int: ...

    def capture_local_tokens(self, num_tokens: Any, *, cp_size: Any, align_size: Any, strategy: Any = ...) -> int: ...

    def select_replay_bucket(
        self,
        *,
        num_tokens: int,
        required_local_tokens: int,
        capture_num_tokens: Sequence[int],
        bucket_local_tokens: Mapping[int, int | None],
        max_padding_factor: int,
    ) -> int | None: ...


FUNCTIONS = ("rank_loads", "required_local_tokens", "capture_local_tokens", "select_replay_bucket")


class Mode(str, enum.Enum):
    """How actual values are judged against the spec's.

    EXACT: every value equals the spec's (a drop-in replacement of the reference).
    SAFE: loads equal; rows and capacities may be larger (conservative); a selected bucket must be
    captured, within the padding limit and have a recorded capacity >= the spec's required rows, and a
    fallback is allowed (efficiency is not judged).
    """

    EXACT = "exact"
    SAFE = "safe"


@dataclass(frozen=True)
class Case:
    """One concrete input to every function under test."""

    source: str  # where it came from: "boundary: <clause>", "exhaustive", "hypothesis", ...
    cp_size: int
    align_size: int
    strategy: str
    max_padding_factor: int
    num_tokens: int
    extend_seq_lens: tuple[int, ...]
    capture_num_tokens: tuple[int, ...]
    bucket_local_tokens: Mapping[int, int] = field(default_factory=dict)
    functions: tuple[str, ...] = FUNCTIONS  # which functions this case exercises

    def describe(self) -> str:
        return (
            f"[{self.source}] cp_size={self.cp_size}, align_size={self.align_size}, strategy={self.strategy!r}, "
            f"max_padding_factor={self.max_padding_factor}, num_tokens={self.num_tokens}, "
            f"extend_seq_lens={self.extend_seq_lens}, capture_num_tokens={self.capture_num_tokens}, "
            f"bucket_local_tokens={dict(self.bucket_local_tokens)}"
        )


@dataclass(frozen=True)
class Mismatch:
    """One function whose actual value the mode rejects."""

    case: Case
    function: str
    call: str
    expected: object
    actual: object
    why: str

    def describe(self) -> str:
        return (
            f"{self.function}: {self.why}\n  inputs: {self.case.describe()}\n  call: {self.call}\n"
            f"  expected (spec): {self.expected!r}\n  actual: {self.actual!r}"
        )


class ConformanceError(AssertionError):
    """The implementation disagrees with the spec; the message lists every mismatch (inputs, expected,
    actual)."""

    def __init__(self, mismatches: Sequence[Mismatch], checked: int, mode: Mode) -> None:
        self.mismatches = tuple(mismatches)
        shown = "\n".join(m.describe() for m in mismatches[:10])
        more = f"\n... and {len(mismatches) - 10} more" if len(mismatches) > 10 else ""
        super().__init__(f"{len(mismatches)} mismatch(es) in {checked} cases (mode {mode.value}):\n{shown}{more}")


def _call(impl: Implementation, function: str, **kwargs: Any) -> object:
    try:
        return getattr(impl, function)(*kwargs.pop("_args", ()), **kwargs)
    except Exception as exc:  # the harness reports a crash as an actual value, never hides it
        return exc


def compare(impl: Implementation, case: Case, *, mode: Mode = Mode.EXACT) -> list[Mismatch]:
    """Run the spec and ``impl`` on ``case``; the mismatches under ``mode`` (empty when they conform)."""
    p, a, kind, lengths = case.cp_size, case.align_size, case.strategy, case.extend_seq_lens
    out: list[Mismatch] = []

    def judge(function: str, call: str, expected: object, actual: object, ok: bool, why: str) -> None:
        if isinstance(actual, Exception) or not ok:
            reason = f"raised {type(actual).__name__}: {actual}" if isinstance(actual, Exception) else why
            out.append(Mismatch(case, function, call, expected, actual, reason))

    if "rank_loads" in case.functions:
        loads = spec_rank_loads(lengths, cp_size=p, strategy=kind)
        got = _call(impl, "rank_loads", _args=(lengths,), cp_size=p, strategy=kind)
        judge("rank_loads", f"rank_loads({lengths}, cp_size={p}, strategy={kind!r})", loads, got,
              tuple(got) == loads if isinstance(got, (tuple, list)) else False, "loads differ")

    rows = spec_required_local_tokens(lengths, cp_size=p, align_size=a, strategy=kind)
    if "required_local_tokens" in case.functions:
        got = _call(impl, "required_local_tokens", _args=(lengths,), cp_size=p, align_size=a, strategy=kind)
        judge("required_local_tokens",
              f"required_local_tokens({lengths}, cp_size={p}, align_size={a}, strategy={kind!r})",
              rows, got, _rows_ok(got, rows, mode), "rows differ" if mode is Mode.EXACT else "rows below the spec's")

    for bucket in case.capture_num_tokens if "capture_local_tokens" in case.functions else ():
        capacity = spec_capture_local_tokens(bucket, cp_size=p, align_size=a, strategy=kind)
        got = _call(impl, "capture_local_tokens", _args=(bucket,), cp_size=p, align_size=a, strategy=kind)
        judge("capture_local_tokens", f"capture_local_tokens({bucket}, cp_size={p}, align_size={a}, strategy={kind!r})",
              capacity, got, _rows_ok(got, capacity, mode),
              "capacity differs" if mode is Mode.EXACT else "capacity below the spec's")

    if "select_replay_bucket" not in case.functions:
        return out
    chosen = spec_select_replay_bucket(
        num_tokens=case.num_tokens,
        required_local_tokens=rows,
        capture_num_tokens=case.capture_num_tokens,
        bucket_local_tokens=case.bucket_local_tokens,
        max_padding_factor=case.max_padding_factor,
    )
    got = _call(
        impl,
        "select_replay_bucket",
        num_tokens=case.num_tokens,
        required_local_tokens=rows,
        capture_num_tokens=case.capture_num_tokens,
        bucket_local_tokens=dict(case.bucket_local_tokens),
        max_padding_factor=case.max_padding_factor,
    )
    call = (
        f"select_replay_bucket(num_tokens={case.num_tokens}, required_local_tokens={rows}, "
        f"capture_num_tokens={case.capture_num_tokens}, bucket_local_tokens={dict(case.bucket_local_tokens)}, "
        f"max_padding_factor={case.max_padding_factor})"
    )
    if mode is Mode.EXACT:
        judge("select_replay_bucket", call, chosen, got, got == chosen and type(got) is type(chosen), "bucket differs")
    else:
        judge("select_replay_bucket", call, chosen, got, _selection_safe(got, case, rows),
              "bucket breaks captured_bucket, padding_limit or capacity_fit")
    return out


def _rows_ok(actual: object, expected: int, mode: Mode) -> bool:
    if not isinstance(actual, int) or isinstance(actual, bool):
        return False
    return actual == expected if mode is Mode.EXACT else actual >= expected


def _selection_safe(actual: object, case: Case, required: int) -> bool:
    if actual is None:
        return True
    if not isinstance(actual, int) or isinstance(actual, bool):
        return False
    n, f = case.num_tokens, case.max_padding_factor
    capacity = case.bucket_local_tokens.get(actual)
    return actual in case.capture_num_tokens and n <= actual <= f * n and capacity is not None and capacity >= required


def check_conformance(impl: Implementation, cases: Iterable[Case], *, mode: Mode = Mode.EXACT) -> int:
    """Compare every case; raise ConformanceError with every mismatch, else return the number checked."""
    mismatches: list[Mismatch] = []
    checked = 0
    for case in cases:
        checked += 1
        mismatches.extend(compare(impl, case, mode=mode))
    if mismatches:
        raise ConformanceError(mismatches, checked, mode)
    return checked


# -- case sources ----------------------------------------------------------------------------------------------

def boundary_conformance_cases(
    cp_sizes: Iterable[int], *, strategies: Sequence[str] = reference.STRATEGIES, max_padding_factor: int = 2,
    max_requests: int = 3, max_tokens: int = 4096,
) -> Iterator[Case]:
    """The Z3-drawn clause edges (proofs.boundaries) for every cp_size and strategy."""
    for p in cp_sizes:
        for kind in strategies:
            for edge in boundary_cases(
                cp_size=p, max_padding_factor=max_padding_factor, max_requests=max_requests,
                max_tokens=max_tokens, strategy=kind,
            ):
                yield Case(
                    f"boundary: {edge.clause}", p, edge.align_size, kind, edge.max_padding_factor, edge.num_tokens,
                    edge.extend_seq_lens, edge.capture_num_tokens, edge.bucket_local_tokens,
                )


def exhaustive_layout_cases(max_cp_size: int = 4, *, strategies: Sequence[str] = reference.STRATEGIES) -> Iterator[Case]:
    """Every cp_size <= ``max_cp_size``; every single length 1..4P+1 and every pair of lengths 1..2P+1; the
    capture list [n, 2n] with upstream's captured capacities."""
    for p in range(1, max_cp_size + 1):
        for kind in strategies:
            a = reference.default_align_size(cp_size=p, strategy=kind)
            batches: list[tuple[int, ...]] = [(x,) for x in range(1, 4 * p + 2)]
            batches += [tuple(pair) for pair in itertools.product(range(1, 2 * p + 2), repeat=2)]
            for lengths in batches:
                n = sum(lengths)
                buckets = (n, 2 * n)
                caps = {b: reference.capture_local_tokens(b, cp_size=p, align_size=a, strategy=kind) for b in buckets}
                yield Case("exhaustive layout", p, a, kind, 2, n, tuple(lengths), buckets, caps)


def exhaustive_selection_cases(*, max_bucket: int = 5, max_list_length: int = 3) -> Iterator[Case]:
    """Every sorted capture list over 1..``max_bucket`` of up to ``max_list_length`` buckets, every capacity
    in {missing, 1, 2} per bucket, n in {2, 3}, F in {1, 2}, for one request (P = 1, required rows = n
    aligned to 1): the selection's every branch (below n, in the window, above F*n, missing, short)."""
    for k in range(1, max_list_length + 1):
        for buckets in itertools.combinations(range(1, max_bucket + 1), k):
            for caps in itertools.product((None, 1, 2), repeat=k):
                table = {b: c for b, c in zip(buckets, caps) if c is not None}
                for n in (2, 3):
                    for f in (1, 2):
                        yield Case(
                            "exhaustive selection", 1, 1, "zigzag", f, n, (n,), tuple(buckets), table,
                            functions=("select_replay_bucket",),
                        )


@st.composite
def case_strategy(draw: st.DrawFn, *, max_cp_size: int = 16, max_length: int = 3000) -> Case:
    """A random Case: a batch, a sorted capture list around its token count, capacities (some missing,
    some short), a padding factor."""
    p = draw(st.integers(1, max_cp_size), label="cp_size")
    kind = draw(st.sampled_from(reference.STRATEGIES), label="strategy")
    a = draw(st.sampled_from((reference.default_align_size(cp_size=p, strategy=kind), 1, 8)), label="align_size")
    lengths = tuple(draw(st.lists(st.integers(0, max_length), min_size=1, max_size=4), label="extend_seq_lens"))
    n = max(1, sum(lengths))
    f = draw(st.integers(1, 3), label="max_padding_factor")
    buckets = draw(st.lists(st.integers(1, 3 * n + 2), min_size=1, max_size=6, unique=True), label="buckets")
    table: dict[int, int] = {}
    for b in sorted(buckets):
        if draw(st.booleans(), label=f"recorded[{b}]"):
            table[b] = draw(st.integers(0, max(1, 2 * n // p + 2 * a)), label=f"capacity[{b}]")
    return Case("hypothesis", p, a, kind, f, n, lengths, tuple(sorted(buckets)), table)


# -- decision paths at scale ------------------------------------------------------------------------------------
#
# The sections above judge one implementation against the spec evaluated through Z3: exact, but about a
# millisecond a case. The bulk harness below compares whole decision paths (the reference's and impl's) case by
# case against the spec's closed forms ("the mirror": plain-integer formulas that each run checks against the
# spec's own terms evaluated on literals, `validate_mirror`), a million cases in well under a minute: P up to 64,
# capture lists of 32 to 48 buckets, n up to 10^6 and values past 2^53 (where float arithmetic is wrong), the
# CP-active gates, the runner's plan with its fallback reason, replay, layout rows and the fitting set.


@dataclass(frozen=True)
class RunnerConfig:
    """What a runner is built with: the capture list as given (buckets below 2P are dropped at start-up) and an
    explicit capacity table (absent = missing capacity)."""

    cp_size: int
    align_size: int
    strategy: str
    max_padding_factor: int | Fraction
    capture_num_tokens: tuple[int, ...]
    bucket_local_tokens: Mapping[int, int]

    @property
    def started(self) -> tuple[int, ...]:
        """The buckets the runner keeps (>= 2P)."""
        return tuple(b for b in self.capture_num_tokens if b >= 2 * self.cp_size)


# A plan as compared: (required rows, bucket or None, its capacity or None, fallback reason value or None).
PlanTuple = tuple[int, "int | None", "int | None", "str | None"]
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
    planner: Callable[[RunnerConfig], Planner] | None = None
    replayer: Callable[[RunnerConfig], Replayer] | None = None
    strategies: tuple[str, ...] = ()  # the strategies this path accepts (empty = every one the mirror knows)
    headroom_local_tokens: Callable[..., int] | None = None  # zigzag headroom capacity (num_tokens, *, cp_size, align_size, max_requests)
    busiest_load: Callable[..., int] | None = None  # max_r l_r (lengths, *, cp_size, strategy)
    default_align_size: Callable[..., int] | None = None  # (*, cp_size, strategy)


def _reference_planner(config: RunnerConfig) -> Planner:
    runner = reference.ReferenceRunner(
        cp_size=config.cp_size, capture_num_tokens=config.capture_num_tokens, align_size=config.align_size,
        strategy=config.strategy, max_padding_factor=config.max_padding_factor,
        capture_rule=reference.CaptureRule(kind="table", table=dict(config.bucket_local_tokens)),
    )

    def plan(lengths: tuple[int, ...], n: int) -> PlanTuple:
        p = runner.plan(lengths, n)
        return p.required_local_tokens, p.bucket, p.bucket_local_tokens, None if p.fallback is None else p.fallback.value

    return plan


def _reference_replayer(config: RunnerConfig) -> Replayer:
    runner = reference.ReferenceRunner(
        cp_size=config.cp_size, capture_num_tokens=config.capture_num_tokens, align_size=config.align_size,
        strategy=config.strategy, max_padding_factor=config.max_padding_factor,
        capture_rule=reference.CaptureRule(kind="table", table=dict(config.bucket_local_tokens)),
    )

    def replay(lengths: tuple[int, ...], n: int) -> int:
        layout = runner.replay(runner.plan(lengths, n))
        if layout.loads != reference.rank_loads(lengths, cp_size=config.cp_size, strategy=config.strategy):
            raise AssertionError(f"replayed layout's loads {layout.loads} are not the live lengths' loads")
        return layout.rows

    return replay


def _impl_planner(config: RunnerConfig) -> Planner:
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
        _reference_planner, _reference_replayer, headroom_local_tokens=reference.headroom_local_tokens,
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


# -- the mirror: the spec's closed forms on plain ints -----------------------------------------------------------

MIRROR_STRATEGIES = ("zigzag", "interleave", "contiguous", "zigzag_pad")


def mirror_align_up(value: int, align_size: int) -> int:
    """spec.arith.align_up: align_size * ceil(value / align_size), exact for every int."""
    return -(-value // align_size) * align_size


def mirror_rank_loads(lengths: Sequence[int], cp_size: int, strategy: str) -> list[int]:
    """spec.strategies.rank_loads on plain ints (the spec's per-request formulas, summed over requests)."""
    p = cp_size
    if strategy == "interleave":
        q, m = divmod(sum(lengths), p)
        return [q + (r < m) for r in range(p)]
    loads = [0] * p
    if strategy == "zigzag":
        s = 2 * p
        for length in lengths:
            q, m = divmod(length, s)
            for r in range(p):
                loads[r] += 2 * q + (r < m) + (s - 1 - r < m)
    elif strategy == "contiguous":
        for length in lengths:
            for r in range(p):
                loads[r] += (length * (r + 1)) // p - (length * r) // p
    elif strategy == "zigzag_pad":
        rows = sum(2 * -(-length // (2 * p)) for length in lengths)
        loads = [rows] * p
    else:
        raise ValueError(f"the mirror has no formula for strategy {strategy!r}; known: {', '.join(MIRROR_STRATEGIES)}")
    return loads


def mirror_required(lengths: Sequence[int], cp_size: int, align_size: int, strategy: str) -> int:
    """spec.capacity.required_local_tokens: align_up(max_r l_r, A) from the live lengths."""
    return mirror_align_up(max(mirror_rank_loads(lengths, cp_size, strategy)), align_size)


@functools.lru_cache(maxsize=1024)
def mirror_request_excess(cp_size: int, strategy: str) -> int:
    """The most one request puts on a rank beyond its mean, max over L of P*max_r l_r(L) - L, read off the
    mirror's own loads (they depend on L mod 2P only: the residues 0..2P-1 cover every length)."""
    return max(cp_size * max(mirror_rank_loads((m,), cp_size, strategy)) - m for m in range(2 * cp_size))


def mirror_headroom(num_tokens: int, cp_size: int, align_size: int, max_requests: int, strategy: str = "zigzag") -> int:
    """spec.capacity.headroom_local_tokens for zigzag: align_up(floor((N + min(R, N)(P-1)) / P), A); for the other
    strategies the same with their own per-request excess, and ceil(N/P) for interleave (its loads depend on N
    only)."""
    if strategy == "interleave":
        return mirror_align_up(-(-num_tokens // cp_size), align_size)
    requests = min(max_requests, num_tokens)
    excess = mirror_request_excess(cp_size, strategy)
    return mirror_align_up((num_tokens + requests * excess) // cp_size, align_size)


def mirror_fitting(
    n: int, required: int, buckets: Sequence[int], table: Mapping[int, int], factor: int | Fraction
) -> tuple[int, ...]:
    """spec.selection.fits over the list: n <= B <= F*n, capacity recorded and >= required."""
    high = factor * n
    return tuple(b for b in buckets if n <= b <= high and b in table and table[b] >= required)


def mirror_select(
    n: int, required: int, buckets: Sequence[int], table: Mapping[int, int], factor: int | Fraction
) -> int | None:
    """spec.selection.is_least_fitting: the least fitting bucket, or None (the scan is proved to compute it)."""
    fitting = mirror_fitting(n, required, buckets, table, factor)
    return min(fitting) if fitting else None


def mirror_active(lengths: Sequence[int], n: int, cp_size: int) -> bool:
    """The CP-active gate: P > 1, n >= 2P and every length >= 2P."""
    return cp_size > 1 and n >= 2 * cp_size and min(lengths) >= 2 * cp_size


def mirror_plan(config: RunnerConfig, lengths: Sequence[int], n: int) -> PlanTuple:
    """The runner's decision: the gates in the documented order, then the selection."""
    p, required = config.cp_size, mirror_required(lengths, config.cp_size, config.align_size, config.strategy)
    buckets = config.started
    reason: str | None = None
    if p == 1:
        reason = "cp_disabled"
    elif n < 2 * p:
        reason = "too_few_tokens"
    elif min(lengths) < 2 * p:
        reason = "short_request"
    elif n > buckets[-1]:
        reason = "too_many_tokens"
    elif not any(n <= b <= config.max_padding_factor * n for b in buckets):
        reason = "no_bucket_within_padding_limit"
    else:
        table = {b: c for b, c in config.bucket_local_tokens.items() if b in buckets}
        bucket = mirror_select(n, required, buckets, table, config.max_padding_factor)
        if bucket is None:
            reason = "no_capacity_within_padding_limit"
        else:
            return required, bucket, table[bucket], None
    return required, None, None, reason


# -- drawing cases ------------------------------------------------------------------------------------------------

BIG = 2**53


class _Draw:
    """Edge-biased integers: residues 0, P-1, P, P+1, 2P-1 (mod 2P), values near 2^53 and beyond, n up to 10^6."""

    def __init__(self, seed: int) -> None:
        import random

        self.rng = random.Random(seed)

    def factor(self) -> int | Fraction:
        """The padding factor F: 1, 2 (upstream's), 3, or a rational one (5/4, 3/2, 7/3: B <= F*n is B <= floor(F*n))."""
        return self.rng.choice((1, 2, 2, 3, Fraction(5, 4), Fraction(3, 2), Fraction(7, 3)))

    def cp_size(self) -> int:
        rng = self.rng
        return rng.choice((1, 2, 3, 4, 8, 16, 31, 32, 63, 64)) if rng.random() < 0.4 else rng.randint(1, 64)

    def length(self, p: int, *, huge: bool = False) -> int:
        rng = self.rng
        s = 2 * p
        roll = rng.random()
        if roll < 0.05:
            return rng.choice((0, 1, s - 1, s, s + 1))
        if huge:
            q = rng.choice((BIG // s - 1, BIG // s, BIG // s + 1, rng.randint(BIG // s, 2**62 // s)))
        elif roll < 0.5:
            q = rng.randint(0, 10**6 // s + 1)
        else:
            q = rng.randint(1, 64)
        residue = rng.choice((0, p - 1, p, p + 1, s - 1)) if rng.random() < 0.6 else rng.randrange(s)
        return s * q + residue % s

    def lengths(self, p: int, *, huge: bool = False) -> tuple[int, ...]:
        rng = self.rng
        roll = rng.random()
        # Mostly 1-4 requests; some 5-40; some 48-96 (impl takes its vectorised path from 48 requests, for
        # lengths that fit int64: so a long batch is never huge).
        if roll >= 0.94:
            return tuple(self.length(p) for _ in range(rng.randint(48, 96)))
        k = rng.choice((1, 1, 2, 3, 4)) if roll < 0.91 else rng.randint(5, 40)
        return tuple(self.length(p, huge=huge and rng.random() < 0.7) for _ in range(k))

    def value(self) -> int:
        rng = self.rng
        roll = rng.random()
        if roll < 0.3:
            return rng.randint(0, 10**6)
        if roll < 0.6:
            return BIG + rng.randint(-64, 64) * rng.choice((1, 1, 3, 1 << 10))
        return rng.randint(BIG, 2**80)

    def capture_list(
        self, n: int, factor: int | Fraction, required: int, *, size: int
    ) -> tuple[tuple[int, ...], dict[int, int]]:
        """``size`` sorted buckets around [n, F*n] (n, F*n and F*n+1 often among them; often 8 or more below n,
        so the answer sits past the 8th bucket), capacities around ``required`` (equal, one short, one over, or
        anywhere), about 15% missing."""
        rng = self.rng
        high = math.floor(factor * n)  # the largest bucket within the window
        chosen = {e for e in (n, high, high + 1, n - 1) if e >= 1 and rng.random() < 0.5}
        if rng.random() < 0.05:
            chosen.add(1)  # the least bucket a list may hold
        below = min(rng.randint(0, size // 2 + 8), max(0, n - 1 - n // 4))
        while len(chosen) < below:
            chosen.add(rng.randint(max(1, n // 4), n - 1))
        while len(chosen) < size:
            chosen.add(rng.randint(n, 3 * high + 2))
        buckets = tuple(sorted(chosen))
        table: dict[int, int] = {}
        missing = rng.choice((0.0, 0.15, 0.15))  # a third of the lists record every capacity (impl's bisection)
        monotone = rng.random() < 0.25  # and some record capacities that grow with the bucket
        for b in buckets:
            roll = rng.random()
            if monotone:
                table[b] = max(0, required + (b - n) // max(1, factor) - 1 + int(rng.random() * 3))
                continue
            if roll < missing:
                continue
            offset = -1 if roll < 0.35 else 0 if roll < 0.6 else 1 if roll < 0.75 else int((rng.random() - 0.5) * 2 * required)
            table[b] = max(0, required + offset)
        return buckets, table


# -- the bulk run -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BulkMismatch:
    family: str
    path: str
    function: str
    inputs: str
    expected: object
    actual: object

    def describe(self) -> str:
        return (f"[{self.family}] {self.path}.{self.function}: expected (spec) {self.expected!r}, actual "
                f"{self.actual!r}\n  inputs: {self.inputs}")


@dataclass(frozen=True)
class FamilyReport:
    family: str
    cases: int
    comparisons: int
    seconds: float
    mismatches: int
    examples: tuple[BulkMismatch, ...]
    not_compared: tuple[str, ...] = ()  # "path.function: why" for a side a path does not provide


@dataclass(frozen=True)
class BulkReport:
    families: tuple[FamilyReport, ...]
    mirror_checks: int  # mirror-vs-spec comparisons made first (validate_mirror)

    @property
    def cases(self) -> int:
        return sum(f.cases for f in self.families)

    @property
    def comparisons(self) -> int:
        return sum(f.comparisons for f in self.families)

    @property
    def seconds(self) -> float:
        return sum(f.seconds for f in self.families)

    @property
    def mismatches(self) -> int:
        return sum(f.mismatches for f in self.families)

    def summary(self) -> str:
        lines = [f"{self.cases} cases, {self.comparisons} comparisons in {self.seconds:.1f} s "
                 f"({self.cases / max(self.seconds, 1e-9):,.0f} cases/s); mirror checked against the spec on "
                 f"{self.mirror_checks} inputs"]
        for f in self.families:
            lines.append(f"  {f.family}: {f.cases} cases, {f.comparisons} comparisons, {f.seconds:.1f} s, "
                         f"{f.mismatches} mismatches" + (f"; not compared: {'; '.join(f.not_compared)}" if f.not_compared else ""))
        return "\n".join(lines)


class BulkConformanceError(AssertionError):
    """Some decision path disagrees with the spec's mirror; the message shows every family's first mismatches."""

    def __init__(self, report: BulkReport) -> None:
        self.report = report
        shown = [m.describe() for f in report.families for m in f.examples[:5]]
        super().__init__(f"{report.mismatches} mismatch(es) in {report.cases} cases\n{report.summary()}\n" + "\n".join(shown))


class _Family:
    """Counts and the first mismatches of one family."""

    MAX_EXAMPLES = 20

    def __init__(self, name: str) -> None:
        self.name = name
        self.cases = 0
        self.comparisons = 0
        self.mismatches = 0
        self.examples: list[BulkMismatch] = []
        self.not_compared: list[str] = []

    def judge(self, path: str, function: str, expected: object, actual: object, inputs: Callable[[], str]) -> None:
        self.comparisons += 1
        if actual == expected and type(actual) is type(expected):
            return
        self.mismatches += 1
        if len(self.examples) < self.MAX_EXAMPLES:
            self.examples.append(BulkMismatch(self.name, path, function, inputs(), expected, actual))

    def report(self, seconds: float) -> FamilyReport:
        return FamilyReport(self.name, self.cases, self.comparisons, seconds, self.mismatches, tuple(self.examples),
                            tuple(self.not_compared))


def _attempt(function: Callable[..., object], *args: object, **kwargs: object) -> object:
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # a crash is a value the spec never gives: reported, never hidden
        return exc


def _accepts(path: DecisionPath, strategy: str) -> bool:
    return not path.strategies or strategy in path.strategies


def _family_arith(paths: Sequence[DecisionPath], draw: _Draw, count: int) -> _Family:
    fam = _Family("align_up")
    rng = draw.rng
    for _ in range(count):
        value = draw.value()
        align = rng.choice((1, 2, 3, 4, 8, 16, 64, 128)) if rng.random() < 0.7 else rng.randint(1, 4096)
        expected = mirror_align_up(value, align)
        fam.cases += 1
        for path in paths:
            fam.judge(path.name, "align_up", expected, _attempt(path.align_up, value, align),
                      lambda: f"align_up({value}, {align})")
    return fam


def _family_gates(paths: Sequence[DecisionPath], draw: _Draw, count: int) -> _Family:
    fam = _Family("cp_active")
    rng = draw.rng
    for _ in range(count):
        p = draw.cp_size()
        s = 2 * p
        k = rng.randint(1, 4)
        lengths = tuple(max(0, s + rng.choice((-1, 0, 0, 1, rng.randint(-s, 4 * s)))) for _ in range(k))
        total = sum(lengths)
        roll = rng.random()
        # n is the batch's token count, padded (n > total) or, for the bare gate, any count (n < total too).
        n = max(1, total + (rng.choice((0, 1, s - total if s > total else 0)) if roll < 0.3 else
                            -rng.randint(0, total) if roll < 0.4 else 0))
        expected = mirror_active(lengths, n, p)
        fam.cases += 1
        for path in paths:
            fam.judge(path.name, "is_cp_active", expected,
                      _attempt(path.is_cp_active, lengths, num_tokens=n, cp_size=p),
                      lambda: f"is_cp_active({lengths}, num_tokens={n}, cp_size={p})")
    return fam


def _align_for(draw: _Draw, p: int, strategy: str) -> int:
    factor = 2 if strategy in ("zigzag", "zigzag_pad") else 1
    return factor * p if draw.rng.random() < 0.8 else draw.rng.choice((1, 8, 3 * p))


def _family_rows(paths: Sequence[DecisionPath], draw: _Draw, count: int) -> _Family:
    fam = _Family("required_local_tokens")
    rng = draw.rng
    for _ in range(count):
        p = draw.cp_size()
        kind = rng.choice(MIRROR_STRATEGIES)
        a = _align_for(draw, p, kind)
        lengths = draw.lengths(p, huge=rng.random() < 0.2)
        busiest = max(mirror_rank_loads(lengths, p, kind))
        expected = mirror_align_up(busiest, a)
        fam.cases += 1
        for path in paths:
            if _accepts(path, kind):
                fam.judge(path.name, "required_local_tokens", expected,
                          _attempt(path.required_local_tokens, lengths, cp_size=p, align_size=a, strategy=kind),
                          lambda: f"required_local_tokens({lengths}, cp_size={p}, align_size={a}, strategy={kind!r})")
                if path.busiest_load is not None:
                    fam.judge(path.name, "busiest load", busiest,
                              _attempt(path.busiest_load, lengths, cp_size=p, strategy=kind),
                              lambda: f"max rank load of {lengths}, cp_size={p}, strategy={kind!r}")
    return fam


def _family_capture(paths: Sequence[DecisionPath], draw: _Draw, count: int) -> _Family:
    fam = _Family("capture_local_tokens")
    rng = draw.rng
    for _ in range(count):
        p = draw.cp_size()
        kind = rng.choice(MIRROR_STRATEGIES)
        a = _align_for(draw, p, kind)
        bucket = max(1, draw.length(p, huge=rng.random() < 0.3))
        expected = mirror_required((bucket,), p, a, kind)
        fam.cases += 1
        for path in paths:
            if _accepts(path, kind):
                fam.judge(path.name, "capture_local_tokens", expected,
                          _attempt(path.capture_local_tokens, bucket, cp_size=p, align_size=a, strategy=kind),
                          lambda: f"capture_local_tokens({bucket}, cp_size={p}, align_size={a}, strategy={kind!r})")
    return fam


def _family_headroom(paths: Sequence[DecisionPath], draw: _Draw, count: int) -> _Family:
    fam = _Family("headroom_local_tokens")
    rng = draw.rng
    for path in paths:
        if path.headroom_local_tokens is None:
            fam.not_compared.append(f"{path.name}.headroom_local_tokens: not provided")
    for _ in range(count):
        p = draw.cp_size()
        kind = "zigzag" if rng.random() < 0.5 else rng.choice(MIRROR_STRATEGIES)
        a = _align_for(draw, p, kind)
        n = max(1, draw.length(p, huge=rng.random() < 0.3))
        r = rng.choice((1, 2, 3, 4, 8, 64)) if rng.random() < 0.8 else rng.randint(1, 2 * n + 2)
        expected = mirror_headroom(n, p, a, r, kind)
        fam.cases += 1
        for path in paths:
            if path.headroom_local_tokens is not None and _accepts(path, kind):
                # zigzag through the default argument (the reference's original signature), others by name
                call = {} if kind == "zigzag" else {"strategy": kind}
                fam.judge(path.name, "headroom_local_tokens", expected,
                          _attempt(path.headroom_local_tokens, n, cp_size=p, align_size=a, max_requests=r, **call),
                          lambda: f"headroom_local_tokens({n}, cp_size={p}, align_size={a}, max_requests={r}, "
                                  f"strategy={kind!r})")
    return fam


def _family_selection(paths: Sequence[DecisionPath], draw: _Draw, count: int, per_list: int = 40) -> _Family:
    """Capture lists of 32 to 48 buckets (a runner's list is fixed; batches vary), each asked ``per_list``
    selections with n and required on its edges: n at a bucket or one past it, F*n at a bucket or one short,
    required equal to a capacity or one above."""
    fam = _Family("select_replay_bucket")
    rng = draw.rng
    for path in paths:
        if path.fitting_buckets is None:
            fam.not_compared.append(f"{path.name}.fitting_buckets: not provided")
    while fam.cases < count:
        center = rng.randint(64, 10**6) if rng.random() < 0.7 else rng.randint(BIG - 10**6, 2**62)
        factor = draw.factor()
        buckets, table = draw.capture_list(center, factor, max(1, center // 8), size=rng.randint(32, 48))
        caps = list(table.values()) or [0]
        for _ in range(min(per_list, count - fam.cases)):
            b = buckets[int(rng.random() * len(buckets))]
            roll = rng.random()
            if roll < 0.35:
                n = b + (roll < 0.1)
            elif roll < 0.7:
                n = max(1, math.ceil(b / Fraction(factor)) + (roll < 0.45) - (roll > 0.6))  # F*n at or next to b
            else:
                n = max(1, center + int((rng.random() - 0.5) * center))
            cap = caps[int(rng.random() * len(caps))]
            required = max(0, cap + (rng.random() < 0.3) - (rng.random() < 0.1))
            expected = mirror_select(n, required, buckets, table, factor)
            expected_set = mirror_fitting(n, required, buckets, table, factor)
            kwargs = dict(num_tokens=n, required_local_tokens=required, capture_num_tokens=buckets,
                          bucket_local_tokens=table, max_padding_factor=factor)

            def inputs(n: int = n, required: int = required) -> str:
                return (f"num_tokens={n}, required_local_tokens={required}, max_padding_factor={factor}, "
                        f"capture_num_tokens={buckets}, bucket_local_tokens={table}")

            fam.cases += 1
            for path in paths:
                fam.judge(path.name, "select_replay_bucket", expected, _attempt(path.select_replay_bucket, **kwargs),
                          inputs)
                if path.fitting_buckets is not None:
                    fam.judge(path.name, "fitting_buckets", expected_set, _attempt(path.fitting_buckets, **kwargs),
                              inputs)
    return fam


def _family_errors(paths: Sequence[DecisionPath], draw: _Draw, count: int) -> _Family:
    """Invalid inputs (the contract every public function shares with the reference): an empty batch, a negative
    or bool length, cp_size, align_size or num_tokens below 1, an unknown strategy, a negative required count, an
    unsorted or repeated capture list, a negative capacity, a padding factor below 1. Expected: the exception type
    the contract names (ValueError for a bad value, TypeError for a bad type); anything else is a mismatch."""
    fam = _Family("invalid inputs")
    rng = draw.rng
    good_lengths = (16, 9)
    good_select: dict[str, Any] = dict(num_tokens=20, required_local_tokens=4, capture_num_tokens=(20, 40),
                                       bucket_local_tokens={20: 4, 40: 8}, max_padding_factor=2)
    row_cases: list[tuple[str, Any, dict[str, Any]]] = [
        ("ValueError", (), {}), ("ValueError", (16, -1), {}), ("TypeError", (16, True), {}),
        ("TypeError", "16", {}), ("ValueError", good_lengths, {"cp_size": 0}), ("TypeError", good_lengths, {"cp_size": 2.0}),
        ("ValueError", good_lengths, {"align_size": 0}), ("ValueError", good_lengths, {"strategy": "ring"}),
    ]
    capture_cases: list[tuple[str, Any, dict[str, Any]]] = [
        ("ValueError", 0, {}), ("ValueError", -5, {}), ("TypeError", True, {}), ("ValueError", 64, {"cp_size": 0}),
        ("ValueError", 64, {"align_size": 0}), ("ValueError", 64, {"strategy": "ring"}),
    ]
    select_cases: list[tuple[str, dict[str, Any]]] = [
        ("ValueError", {"num_tokens": 0}), ("ValueError", {"required_local_tokens": -1}),
        ("ValueError", {"capture_num_tokens": (40, 20)}), ("ValueError", {"capture_num_tokens": (20, 20, 40)}),
        ("ValueError", {"bucket_local_tokens": {20: -1, 40: 8}}), ("ValueError", {"max_padding_factor": 0}),
        ("TypeError", {"num_tokens": 20.0}),
    ]
    headroom_cases: list[tuple[str, Any, dict[str, Any]]] = [
        ("ValueError", 0, {}), ("ValueError", 64, {"cp_size": 0}), ("ValueError", 64, {"align_size": 0}),
        ("ValueError", 64, {"max_requests": 0}), ("TypeError", 64.0, {}),
    ]
    busiest_cases: list[tuple[str, Any, dict[str, Any]]] = [
        ("ValueError", good_lengths, {"cp_size": 0}), ("ValueError", (), {}), ("ValueError", good_lengths, {"strategy": "ring"}),
        ("TypeError", good_lengths, {"cp_size": True}),
    ]
    align_cases: list[tuple[str, dict[str, Any]]] = [
        ("ValueError", {"cp_size": 0}), ("ValueError", {"strategy": "ring"}), ("TypeError", {"cp_size": 2.5}),
    ]
    active_cases: list[tuple[str, Any, dict[str, Any]]] = [
        ("ValueError", (), {}), ("ValueError", good_lengths, {"num_tokens": 0}), ("ValueError", good_lengths, {"cp_size": 0}),
        ("ValueError", (16, -2), {}),
    ]
    for _ in range(count):
        p = draw.cp_size()
        kind = rng.choice(MIRROR_STRATEGIES)
        which = rng.randrange(7)
        shape = dict(cp_size=p, align_size=2 * p, strategy=kind)
        args: tuple[Any, ...]
        if which == 0:
            expected, lengths, bad = row_cases[rng.randrange(len(row_cases))]
            function, args, call = "required_local_tokens", (lengths,), shape | bad
        elif which == 1:
            expected, bucket, bad = capture_cases[rng.randrange(len(capture_cases))]
            function, args, call = "capture_local_tokens", (bucket,), shape | bad
        elif which == 5:
            expected, lengths, bad = busiest_cases[rng.randrange(len(busiest_cases))]
            function, args, call = "busiest_load", (lengths,), dict(cp_size=p, strategy=kind) | bad
        elif which == 6:
            expected, bad = align_cases[rng.randrange(len(align_cases))]
            function, args, call = "default_align_size", (), dict(cp_size=p, strategy=kind) | bad
        elif which == 4:
            expected, bucket, bad = headroom_cases[rng.randrange(len(headroom_cases))]
            call = dict(cp_size=p, align_size=2 * p, max_requests=3) | bad
            function, args = "headroom_local_tokens", (bucket,)
        elif which == 2:
            expected, bad = select_cases[rng.randrange(len(select_cases))]
            function, args, call = "select_replay_bucket", (), good_select | bad
        else:
            expected, lengths, bad = active_cases[rng.randrange(len(active_cases))]
            total = max(1, sum(x for x in lengths if x > 0))
            function, args, call = "is_cp_active", (lengths,), dict(num_tokens=total, cp_size=p) | bad
        text = f"{function}({', '.join(repr(a) for a in args)}{', ' if args else ''}**{call})"
        fam.cases += 1
        for path in paths:
            if getattr(path, function) is None:
                continue
            actual = _attempt(getattr(path, function), *args, **call)
            got = type(actual).__name__ if isinstance(actual, Exception) else f"returned {actual!r}"
            fam.judge(path.name, function, expected, got, lambda text=text: text)  # type: ignore[misc]
    return fam


def _runner_config(draw: _Draw) -> RunnerConfig:
    rng = draw.rng
    p = draw.cp_size()
    kind = rng.choice(MIRROR_STRATEGIES)
    a = _align_for(draw, p, kind)
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
    return RunnerConfig(p, a, kind, factor, tuple(buckets), table)


def _batch_for(draw: _Draw, config: RunnerConfig) -> tuple[tuple[int, ...], int]:
    rng = draw.rng
    p, buckets = config.cp_size, config.started
    roll = rng.random()
    if roll < 0.2:
        # The overflow edge: 2 to 4 requests with L mod 2P = P+1 need more rows than one request of the same
        # n was captured with (the 520-vs-512 crash), so a single-request shortcut shows.
        s = 2 * p
        lengths = tuple(s * rng.randint(1, max(1, 4096 // s)) + (p + 1) % s for _ in range(rng.randint(2, 4)))
        return lengths, sum(lengths)
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


def _family_plan(paths: Sequence[DecisionPath], draw: _Draw, configs: int, per_config: int,
                 replays: int) -> tuple[_Family, _Family]:
    plans, replay = _Family("runner plan"), _Family("replay and layout rows")
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
                    if path.planner is not None and _accepts(path, config.strategy)]
        replayers = [(path.name, path.replayer(config)) for path in paths
                     if path.replayer is not None and _accepts(path, config.strategy)]
        done = 0
        good = (2 * config.cp_size + 1, 2 * config.cp_size)
        busiest = max(mirror_rank_loads(good, config.cp_size, config.strategy))
        for bad in ({"cp_size": 0}, {"rows": -1}, {"rows": busiest - 1}):  # a layout is refused, never truncated
            replay.cases += 1
            call = {"cp_size": config.cp_size, "strategy": config.strategy} | bad
            actual = _attempt(reference.build_layout, good, **call)
            got = type(actual).__name__ if isinstance(actual, Exception) else f"returned {actual!r}"
            replay.judge("reference", "build_layout (invalid input)", "ValueError", got,
                         lambda call=call: f"build_layout({good}, **{call})")  # type: ignore[misc]
        invalid: tuple[tuple[tuple[int, ...], int], ...] = (
            (good, sum(good) - 1), ((2 * config.cp_size, -1), 4 * config.cp_size), ((), 8), ((0,), 0),
        )
        for lengths, n in invalid:
            plans.cases += 1  # invalid: fewer tokens than the lengths hold, a negative length, no request, n = 0
            for name, plan in planners:
                actual = _attempt(plan, lengths, n)
                got = type(actual).__name__ if isinstance(actual, Exception) else f"returned {actual!r}"
                plans.judge(name, "plan (invalid input)", "ValueError", got,
                            lambda lengths=lengths, n=n: f"{config}, extend_seq_lens={lengths}, num_tokens={n}")  # type: ignore[misc]
        for i in range(per_config):
            lengths, n = _batch_for(draw, config)
            expected = mirror_plan(config, lengths, n)

            def inputs() -> str:
                return f"{config}, extend_seq_lens={lengths}, num_tokens={n}"

            plans.cases += 1
            for name, plan in planners:
                plans.judge(name, "plan", expected, _attempt(plan, lengths, n), inputs)
            if expected[1] is not None and done < replays and sum(lengths) <= 4096:
                done += 1
                replay.cases += 1
                loads = mirror_rank_loads(lengths, config.cp_size, config.strategy)
                layout = _attempt(reference.build_layout, lengths, cp_size=config.cp_size, strategy=config.strategy)
                rows = layout.rows if isinstance(layout, reference.Layout) else layout
                replay.judge("reference", "build_layout rows", max(loads), rows, inputs)
                if isinstance(layout, reference.Layout):
                    replay.judge("reference", "build_layout loads", tuple(loads), layout.loads, inputs)
                    replay.judge("reference", "align_up(layout rows) = required", expected[0],
                                 mirror_align_up(layout.rows, config.align_size), inputs)
                    # The layout's inverse: the first, last and one middle token of each request round-trip.
                    for request, length in enumerate(lengths):
                        for token in {0, length // 2, length - 1} if length else set():
                            where = _attempt(layout.locate, request, token)
                            back = layout.token_at(*where) if isinstance(where, tuple) else where
                            replay.judge("reference", "token_at(locate(request, token))", (request, token), back,
                                         inputs)
                for name, replayer in replayers:
                    replay.judge(name, "replay rows = admitted capacity", expected[2], _attempt(replayer, lengths, n),
                                 inputs)
    return plans, replay


@dataclass(frozen=True)
class BulkPlan:
    """How many cases each family draws (``scaled`` multiplies them all)."""

    align_up: int = 420_000
    cp_active: int = 300_000
    required_local_tokens: int = 45_000
    capture_local_tokens: int = 100_000
    select_replay_bucket: int = 90_000
    invalid_inputs: int = 20_000
    headroom_local_tokens: int = 40_000
    runner_configs: int = 250
    plans_per_config: int = 160
    replays_per_config: int = 12
    mirror_checks: int = 600

    def scaled(self, factor: float) -> BulkPlan:
        """Every count times ``factor`` (at least 1); replays per runner stay as they are (they are per runner)."""
        return BulkPlan(*(getattr(self, f.name) if f.name == "replays_per_config" else
                          max(1, round(getattr(self, f.name) * factor)) for f in dataclasses.fields(self)))


def run_bulk(paths: Sequence[DecisionPath], *, plan: BulkPlan = BulkPlan(), seed: int = 0,
             validate: bool = True) -> BulkReport:
    """Compare every path against the spec's mirror on every family's cases (deterministic for a seed); the
    mirror itself is first checked against the spec's own terms (``validate_mirror``). Never raises for a
    mismatch: see ``check_bulk``."""
    import time

    checks = validate_mirror(plan.mirror_checks, seed=seed) if validate else 0
    families: list[FamilyReport] = []
    steps: list[tuple[str, Callable[[_Draw], tuple[_Family, ...]]]] = [
        ("align_up", lambda d: (_family_arith(paths, d, plan.align_up),)),
        ("cp_active", lambda d: (_family_gates(paths, d, plan.cp_active),)),
        ("required", lambda d: (_family_rows(paths, d, plan.required_local_tokens),)),
        ("capture", lambda d: (_family_capture(paths, d, plan.capture_local_tokens),)),
        ("headroom", lambda d: (_family_headroom(paths, d, plan.headroom_local_tokens),)),
        ("selection", lambda d: (_family_selection(paths, d, plan.select_replay_bucket),)),
        ("errors", lambda d: (_family_errors(paths, d, plan.invalid_inputs),)),
        ("plan", lambda d: _family_plan(paths, d, plan.runner_configs, plan.plans_per_config, plan.replays_per_config)),
    ]
    for name, step in steps:
        start = time.perf_counter()
        produced = step(_Draw(seed * 1_000_003 + zlib.crc32(name.encode())))  # by name: adding a family moves no other
        seconds = (time.perf_counter() - start) / len(produced)
        families.extend(f.report(seconds) for f in produced)
    return BulkReport(tuple(families), checks)


def check_bulk(paths: Sequence[DecisionPath], *, plan: BulkPlan = BulkPlan(), seed: int = 0) -> BulkReport:
    """``run_bulk``, raising BulkConformanceError (every family's first mismatches, inputs shown) on any."""
    report = run_bulk(paths, plan=plan, seed=seed)
    if report.mismatches:
        raise BulkConformanceError(report)
    return report


class MirrorError(AssertionError):
    """The mirror's closed forms disagree with the spec's own terms: the bulk harness's expected side is wrong."""


def validate_mirror(count: int, *, seed: int = 0) -> int:
    """Compare the mirror with the spec's terms evaluated on literals (the spec folds literal inputs to numerals:
    no solver call) for loads, required rows, capture rows and align_up, P up to 64 and values past 2^53; and with
    the spec's scan (proofs.evaluate) on capture lists of 32+ buckets. Raises MirrorError; returns the checks made."""
    import z3

    from cpgraph.proofs.evaluate import value_of
    from cpgraph.spec.arith import align_up as spec_align_up
    from cpgraph.spec.selection import concrete_capture_list, padding_window, scan_select
    from cpgraph.spec.strategies import rank_loads as spec_loads

    def literal(term: object, what: str) -> int:
        folded = z3.simplify(term)
        if not z3.is_int_value(folded):
            raise MirrorError(f"the spec's {what} does not fold to a numeral on literal inputs: {folded}")
        return int(folded.as_long())

    draw = _Draw(seed + 7919)
    rng = draw.rng
    checks = 0
    for i in range(count):
        p = draw.cp_size() if i % 4 else rng.randint(1, 8)
        kind = MIRROR_STRATEGIES[i % len(MIRROR_STRATEGIES)]
        lengths = draw.lengths(p, huge=i % 3 == 0)[:4]
        spec = spec_loads(lengths, p, "mirror", kind)
        got = [literal(x, f"{kind} load") for x in spec.loads]
        if not z3.is_true(z3.simplify(spec.holds)):
            raise MirrorError(f"the spec's {kind} loads carry facts on literal inputs: {spec.holds}")
        if got != mirror_rank_loads(lengths, p, kind):
            raise MirrorError(f"{kind} loads of {lengths} at P={p}: spec {got}, mirror {mirror_rank_loads(lengths, p, kind)}")
        if i % 5 == 0:  # the spec's headroom term keeps a min(R, N) and a quotient: one small solver call each
            n, r = max(1, draw.length(p, huge=i % 3 == 0)), rng.randint(1, 70)
            spec_room = spec_headroom_local_tokens(n, cp_size=p, align_size=2 * p, max_requests=r)
            if spec_room != mirror_headroom(n, p, 2 * p, r):
                raise MirrorError(f"headroom_local_tokens({n}, P={p}, R={r}): spec {spec_room}, mirror "
                                  f"{mirror_headroom(n, p, 2 * p, r)}")
            checks += 1
        value, align = draw.value(), rng.randint(1, 256)
        spec_up = literal(spec_align_up(value, align, "mirror").value, "align_up")
        if spec_up != mirror_align_up(value, align):
            raise MirrorError(f"align_up({value}, {align}): spec {spec_up}, mirror {mirror_align_up(value, align)}")
        checks += 2
    for i in range(max(1, count // 50)):
        n = rng.randint(1, 10**6) if i % 2 else rng.randint(BIG, 2**62)
        factor = draw.factor()
        required = rng.randint(0, max(1, n // 4))
        buckets, table = draw.capture_list(n, factor, required, size=rng.randint(32, 40))
        # The spec's scan over the concrete list, with the window's facts (a rational F has a quotient).
        window = padding_window(n, factor)
        chosen = scan_select(concrete_capture_list(buckets, table), window, required)
        spec_bucket = value_of(chosen.bucket, window.holds) if value_of(chosen.admitted, window.holds) else None
        if spec_bucket != mirror_select(n, required, buckets, table, factor):
            raise MirrorError(f"selection n={n}, required={required}, F={factor}, buckets={buckets}, table={table}: "
                              f"spec {spec_bucket}, mirror {mirror_select(n, required, buckets, table, factor)}")
        checks += 1
    return checks
