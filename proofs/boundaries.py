"""Concrete inputs at every clause edge of the spec, drawn by Z3: the conformance harness's boundary cases.

Each case sits exactly on one edge of a clause in spec/: L mod 2P at 0, P-1, P, P+1, 2P-1; required equal
to and one above a capacity; a captured capacity overflowed by a multi-request batch; a bucket at n, at F*n
and at F*n+1; a missing capacity; the CP-active thresholds (n = 2P, a length of 2P-1).

Two steps per case. Z3 draws the lengths from a model of the edge's length facts (residues via spec.arith,
token bounds, CP-activity, the overflow edge via the proven closed forms of spec.capacity). Then the spec is
evaluated on those lengths (proofs.evaluate) to place capacities and buckets exactly on the edge. An edge
the bounds cannot reach (z3 answers unsat: a proof that no lengths within the bounds sit on it) is skipped,
never faked. An edge z3 cannot decide (unknown, e.g. its resource limit) is a BoundaryDrawError naming the
edge and z3's reason: a failure, never a silent skip. Deterministic (same solver input, same model) and
cached.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import z3

from cpgraph.proofs.check import least_model

from cpgraph import reference
from cpgraph.proofs.evaluate import spec_capture_local_tokens, spec_required_local_tokens
from cpgraph.spec.arith import align_up, ceil_div, divmod_by
from cpgraph.spec.capacity import capture_local_tokens, headroom_bound, required_local_tokens
from cpgraph.spec.strategies import rank_loads
from cpgraph.spec.terms import BoolTerm, IntTerm

_RLIMIT = 2_000_000


class BoundaryDrawError(RuntimeError):
    """Z3 could not decide whether an edge is reachable (unknown): the case cannot be drawn, and dropping it
    would hide an untested edge."""
_SPEC_DRAW_MAX_CP_SIZE = 8  # above this, drawing through the spec's P-rank loads costs seconds


@dataclass(frozen=True)
class BoundaryCase:
    clause: str  # the edge, e.g. "L mod 2P = P+1", "required = capacity + 1", "bucket = F*n + 1", "missing capacity"
    cp_size: int
    align_size: int
    max_padding_factor: int
    num_tokens: int
    extend_seq_lens: tuple[int, ...]
    capture_num_tokens: tuple[int, ...]
    bucket_local_tokens: Mapping[int, int]  # absent key = missing capacity


@dataclass(frozen=True)
class _Config:
    cp_size: int
    align_size: int
    factor: int
    max_requests: int
    max_tokens: int
    strategy: str


# An edge: how many requests, the extra length facts, and the capture list with capacities placed from the
# drawn lengths (``required`` is the spec's rows for them; None capacity = missing).
LengthFacts = Callable[[tuple[IntTerm, ...], IntTerm], list[BoolTerm]]
Captures = Callable[[tuple[int, ...], int], list[tuple[int, int | None]]]


def _draw_lengths(
    config: _Config, k: int, facts: LengthFacts, *, active: bool, clause: str = "", rlimit: int | None = None
) -> tuple[int, ...] | None:
    """The least lengths (fewest tokens, then lexicographically) on the edge, or None when the bounds
    cannot reach it (unsat). An optimum, not the solver's first model: the same case whatever else the
    process has asked z3 before. Unknown raises BoundaryDrawError."""
    lengths = tuple(z3.Int(f"L{i}") for i in range(k))
    n = z3.Sum(list(lengths))
    shortest = 2 * config.cp_size if active and config.cp_size > 1 else 1
    limit = _RLIMIT if rlimit is None else rlimit
    facts_all = [
        n <= config.max_tokens,
        *[x >= shortest for x in lengths],
        # Non-increasing lengths: one representative per multiset.
        *[lengths[i] >= lengths[i + 1] for i in range(k - 1)],
        *facts(lengths, n),
    ]
    least = least_model(facts_all, [n, *lengths], lengths, rlimit=limit)
    if least.reason:
        raise BoundaryDrawError(
            f"z3 could not draw the edge {clause!r} (cp_size={config.cp_size}, strategy={config.strategy}, "
            f"{k} request(s), max_tokens={config.max_tokens}): unknown, {least.reason}"
        )
    return least.values


def _residue_edges(cp_size: int) -> list[tuple[str, int]]:
    """The residues 0, P-1, P, P+1, 2P-1 of L mod 2P, each once; names of coinciding residues are joined
    (at P = 2, "P+1 = 2P-1")."""
    s = 2 * cp_size
    named = [("0", 0), ("P-1", cp_size - 1), ("P", cp_size), ("P+1", cp_size + 1), ("2P-1", s - 1)]
    labels: dict[int, list[str]] = {}
    for label, value in named:
        labels.setdefault(value % s, []).append(label)
    return [(" = ".join(names), residue) for residue, names in labels.items()]


def _check_args(
    cp_size: object, align_size: object, max_padding_factor: object, max_requests: object, max_tokens: object
) -> None:
    for name, value in (
        ("cp_size", cp_size),
        ("max_padding_factor", max_padding_factor),
        ("max_requests", max_requests),
        ("max_tokens", max_tokens),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if align_size is not None and (not isinstance(align_size, int) or isinstance(align_size, bool) or align_size < 1):
        raise ValueError(f"align_size must be None (the strategy default) or an int >= 1, got {align_size!r}")


def boundary_cases(
    *,
    cp_size: int,
    align_size: int | None = None,
    max_padding_factor: int = 2,
    max_requests: int = 3,
    max_tokens: int = 4096,
    strategy: str = "zigzag",
) -> tuple[BoundaryCase, ...]:
    """Every reachable clause edge for this configuration, one case each (cached; same output every call).

    ``align_size`` None means the strategy's default (reference.default_align_size). Lengths are
    CP-active (>= 2P when P > 1) except in the "not CP-active" edge; num_tokens = sum of lengths <=
    ``max_tokens``; at most ``max_requests`` requests.
    """
    _check_args(cp_size, align_size, max_padding_factor, max_requests, max_tokens)
    if strategy not in reference.STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(reference.STRATEGIES)}; got {strategy!r}")
    a = reference.default_align_size(cp_size=cp_size, strategy=strategy) if align_size is None else align_size
    return _boundary_cases(_Config(cp_size, a, max_padding_factor, max_requests, max_tokens, strategy))


@functools.lru_cache(maxsize=512)
def _boundary_cases(config: _Config) -> tuple[BoundaryCase, ...]:
    p, f = config.cp_size, config.factor
    cases: list[BoundaryCase] = []

    def required(lengths: tuple[int, ...]) -> int:
        return spec_required_local_tokens(lengths, cp_size=p, align_size=config.align_size, strategy=config.strategy)

    def captured(bucket: int) -> int:
        return spec_capture_local_tokens(bucket, cp_size=p, align_size=config.align_size, strategy=config.strategy)

    def emit(clause: str, k: int, facts: LengthFacts, captures: Captures, *, active: bool = True) -> None:
        if k > config.max_requests:
            return
        lengths = _draw_lengths(config, k, facts, active=active, clause=clause)
        if lengths is None:
            return
        n = sum(lengths)
        listed = captures(lengths, n)
        cases.append(
            BoundaryCase(
                clause=clause,
                cp_size=p,
                align_size=config.align_size,
                max_padding_factor=f,
                num_tokens=n,
                extend_seq_lens=lengths,
                capture_num_tokens=tuple(b for b, _ in listed),
                bucket_local_tokens=types.MappingProxyType({b: c for b, c in listed if c is not None}),
            )
        )

    def no_facts(lengths: tuple[IntTerm, ...], n: IntTerm) -> list[BoolTerm]:
        return []

    def window(n: int) -> list[int]:
        return [n, f * n] if f > 1 else [n]

    def captured_window(lengths: tuple[int, ...], n: int) -> list[tuple[int, int | None]]:
        return [(b, captured(b)) for b in window(n)]

    for label, residue in _residue_edges(p):
        for k in sorted({1, config.max_requests}):

            def residue_facts(lengths: tuple[IntTerm, ...], n: IntTerm, residue: int = residue) -> list[BoolTerm]:
                splits = [divmod_by(x, 2 * p, f"edge{i}") for i, x in enumerate(lengths)]
                return [z3.And(s.holds, s.remainder == residue) for s in splits]

            emit(f"L mod 2P = {label}" + (f" ({k} requests)" if k > 1 else ""), k, residue_facts, captured_window)

    many = min(2, config.max_requests)
    emit("required = capacity", many, no_facts, lambda ls, n: [(n, required(ls))])

    def one_short(ls: tuple[int, ...], n: int) -> list[tuple[int, int | None]]:
        rows = required(ls)
        return [(n, rows - 1), (f * n, rows)] if f > 1 else [(n, rows - 1)]

    emit("required = capacity + 1", many, no_facts, one_short)

    if config.strategy == "zigzag" and p > 1:
        # Every length at L mod 2P = P+1 hits the headroom bound exactly (proofs: headroom_bound_is_tight), so
        # the busiest rank holds floor((n + k(P-1))/P); the captured capacity is align_up(ceil(n/P), A).
        k = config.max_requests

        def overflow_facts(lengths: tuple[IntTerm, ...], n: IntTerm) -> list[BoolTerm]:
            splits = [divmod_by(x, 2 * p, f"edge{i}") for i, x in enumerate(lengths)]
            busiest = headroom_bound(n, p, k, "edge.busiest")
            rows = align_up(busiest.value, config.align_size, "edge.rows")
            share = ceil_div(n, p, "edge.share")
            capacity = align_up(share.value, config.align_size, "edge.capacity")
            return [
                *[z3.And(s.holds, s.remainder == (p + 1) % (2 * p)) for s in splits],
                busiest.holds, rows.holds, share.holds, capacity.holds,
                rows.value > capacity.value,
            ]

        def overflowed(ls: tuple[int, ...], n: int) -> list[tuple[int, int | None]]:
            listed = captured_window(ls, n)
            first = listed[0][1]
            assert first is not None and required(ls) > first, f"spec disagrees with its closed form at {ls}"
            return listed

        def overflow_by_spec(lengths: tuple[IntTerm, ...], n: IntTerm) -> list[BoolTerm]:
            # Any residues: the spec's own loads and capacities (affordable for small P only).
            loads = rank_loads(lengths, p, "edge.loads")
            rows = required_local_tokens(loads, config.align_size, "edge.required")
            capacity = capture_local_tokens(n, p, config.align_size, "edge.captured")
            return [loads.holds, rows.holds, capacity.holds, rows.value > capacity.value]

        if k >= 2:
            clause = f"required > captured capacity ({k} requests overflow bucket n)"
            before = len(cases)
            emit(clause, k, overflow_facts, overflowed)
            if len(cases) == before and p <= _SPEC_DRAW_MAX_CP_SIZE:
                emit(clause, k, overflow_by_spec, overflowed)

    emit("bucket = n", 1, no_facts, lambda ls, n: [(n, captured(n))])
    emit(
        "bucket = F*n",
        many,
        lambda ls, n: [n >= 2],
        lambda ls, n: [(n - 1, required(ls)), (f * n, required(ls))],
    )
    emit("bucket = F*n + 1", many, no_facts, lambda ls, n: [(f * n + 1, required(ls))])
    emit(
        "missing capacity",
        many,
        no_facts,
        lambda ls, n: [(n, None), (f * n if f > 1 else n + 1, required(ls))],
    )
    if p > 1:
        emit("num_tokens = 2P (least CP-active)", 1, lambda ls, n: [n == 2 * p], lambda ls, n: [(n, captured(n))])
        emit(
            "L = 2P - 1 (not CP-active)",
            many,
            lambda ls, n: [ls[-1] == 2 * p - 1, n >= 2 * p],
            captured_window,
            active=False,
        )
    return tuple(cases)
