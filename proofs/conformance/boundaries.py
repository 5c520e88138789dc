"""Concrete inputs at every clause edge of the spec, drawn by Z3: the conformance harness's boundary cases.

Each case sits exactly on one edge of a clause in spec/: L mod 2P at 0, P-1, P, P+1, 2P-1; required equal
to and one above a capacity; a captured capacity overflowed by a multi-request batch; a bucket at n, at F*n
and at F*n+1; a missing capacity; the CP-active thresholds (n = 2P, a length of 2P-1).

Two steps per case. Z3 draws the lengths from a model of the edge's length facts (residues via spec.arith,
token bounds, CP-activity, the overflow edge via the proven closed forms of spec.capacity). Then the spec is
evaluated on those lengths (proofs.engine.evaluate) to place capacities and buckets exactly on the edge. An edge
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

from cpgraph.spec.logic import And, Sum
from cpgraph.proofs.engine.check import least_model

import cpgraph.reference as reference
from cpgraph.proofs.engine.evaluate import spec_capture_local_tokens, spec_required_local_tokens
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
    n = Sum(list(lengths))
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
    edges = _Edges(config)
    edges.residues()
    edges.capacities()
    edges.overflow()
    edges.buckets()
    edges.cp_activity()
    return tuple(edges.cases)


def _no_facts(lengths: tuple[IntTerm, ...], n: IntTerm) -> list[BoolTerm]:
    return []


def _residue_facts(cp_size: int, residue: int) -> LengthFacts:
    """Every length at L mod 2P = ``residue``."""

    def facts(lengths: tuple[IntTerm, ...], n: IntTerm) -> list[BoolTerm]:
        splits = [divmod_by(x, 2 * cp_size, f"edge{i}") for i, x in enumerate(lengths)]
        return [And(s.holds, s.remainder == residue) for s in splits]

    return facts


class _Edges:
    """The cases of one configuration, drawn family by family (one method each, called in the order
    _boundary_cases lists them): the spec's rows and capacities for the drawn lengths, and ``emit``, which
    draws one edge and records its case."""

    def __init__(self, config: _Config) -> None:
        self.config = config
        self.p, self.f = config.cp_size, config.factor
        self.many = min(2, config.max_requests)  # requests in a multi-request edge
        self.cases: list[BoundaryCase] = []

    def required(self, lengths: tuple[int, ...]) -> int:
        c = self.config
        return spec_required_local_tokens(lengths, cp_size=self.p, align_size=c.align_size, strategy=c.strategy)

    def captured(self, bucket: int) -> int:
        c = self.config
        return spec_capture_local_tokens(bucket, cp_size=self.p, align_size=c.align_size, strategy=c.strategy)

    def window(self, n: int) -> list[int]:
        return [n, self.f * n] if self.f > 1 else [n]

    def captured_window(self, lengths: tuple[int, ...], n: int) -> list[tuple[int, int | None]]:
        return [(b, self.captured(b)) for b in self.window(n)]

    def emit(self, clause: str, k: int, facts: LengthFacts, captures: Captures, *, active: bool = True) -> None:
        """Draw the edge with ``k`` requests and record its case; nothing when k is above max_requests or
        the bounds cannot reach the edge."""
        if k > self.config.max_requests:
            return
        lengths = _draw_lengths(self.config, k, facts, active=active, clause=clause)
        if lengths is None:
            return
        n = sum(lengths)
        listed = captures(lengths, n)
        self.cases.append(
            BoundaryCase(
                clause=clause,
                cp_size=self.p,
                align_size=self.config.align_size,
                max_padding_factor=self.f,
                num_tokens=n,
                extend_seq_lens=lengths,
                capture_num_tokens=tuple(b for b, _ in listed),
                bucket_local_tokens=types.MappingProxyType({b: c for b, c in listed if c is not None}),
            )
        )

    def residues(self) -> None:
        """L mod 2P at each named residue, with one request and with max_requests."""
        for label, residue in _residue_edges(self.p):
            for k in sorted({1, self.config.max_requests}):
                clause = f"L mod 2P = {label}" + (f" ({k} requests)" if k > 1 else "")
                self.emit(clause, k, _residue_facts(self.p, residue), self.captured_window)

    def capacities(self) -> None:
        """The required rows equal to, and one above, bucket n's capacity."""
        self.emit("required = capacity", self.many, _no_facts, lambda ls, n: [(n, self.required(ls))])
        self.emit("required = capacity + 1", self.many, _no_facts, self._one_short)

    def _one_short(self, ls: tuple[int, ...], n: int) -> list[tuple[int, int | None]]:
        rows = self.required(ls)
        return [(n, rows - 1), (self.f * n, rows)] if self.f > 1 else [(n, rows - 1)]

    def overflow(self) -> None:
        """A captured capacity overflowed by max_requests requests (zigzag, P > 1, at least 2 requests):
        drawn through the closed forms, else (small P only) through the spec's own loads."""
        p, k = self.p, self.config.max_requests
        if self.config.strategy != "zigzag" or p <= 1 or k < 2:
            return
        clause = f"required > captured capacity ({k} requests overflow bucket n)"
        before = len(self.cases)
        self.emit(clause, k, self._overflow_facts, self._overflowed)
        if len(self.cases) == before and p <= _SPEC_DRAW_MAX_CP_SIZE:
            self.emit(clause, k, self._overflow_by_spec, self._overflowed)

    def _overflow_facts(self, lengths: tuple[IntTerm, ...], n: IntTerm) -> list[BoolTerm]:
        # Every length at L mod 2P = P+1 hits the headroom bound exactly (proofs: headroom_bound_is_tight), so
        # the busiest rank holds floor((n + k(P-1))/P); the captured capacity is align_up(ceil(n/P), A).
        p, k, a = self.p, self.config.max_requests, self.config.align_size
        splits = [divmod_by(x, 2 * p, f"edge{i}") for i, x in enumerate(lengths)]
        busiest = headroom_bound(n, p, k, "edge.busiest")
        rows = align_up(busiest.value, a, "edge.rows")
        share = ceil_div(n, p, "edge.share")
        capacity = align_up(share.value, a, "edge.capacity")
        return [
            *[And(s.holds, s.remainder == (p + 1) % (2 * p)) for s in splits],
            busiest.holds, rows.holds, share.holds, capacity.holds,
            rows.value > capacity.value,
        ]

    def _overflow_by_spec(self, lengths: tuple[IntTerm, ...], n: IntTerm) -> list[BoolTerm]:
        # Any residues: the spec's own loads and capacities (affordable for small P only).
        p, a = self.p, self.config.align_size
        loads = rank_loads(lengths, p, "edge.loads")
        rows = required_local_tokens(loads, a, "edge.required")
        capacity = capture_local_tokens(n, p, a, "edge.captured")
        return [loads.holds, rows.holds, capacity.holds, rows.value > capacity.value]

    def _overflowed(self, ls: tuple[int, ...], n: int) -> list[tuple[int, int | None]]:
        listed = self.captured_window(ls, n)
        first = listed[0][1]
        assert first is not None and self.required(ls) > first, f"spec disagrees with its closed form at {ls}"
        return listed

    def buckets(self) -> None:
        """A bucket at n, at F*n and at F*n+1, and a missing capacity."""
        f, many, required = self.f, self.many, self.required
        self.emit("bucket = n", 1, _no_facts, lambda ls, n: [(n, self.captured(n))])
        self.emit(
            "bucket = F*n",
            many,
            lambda ls, n: [n >= 2],
            lambda ls, n: [(n - 1, required(ls)), (f * n, required(ls))],
        )
        self.emit("bucket = F*n + 1", many, _no_facts, lambda ls, n: [(f * n + 1, required(ls))])
        self.emit(
            "missing capacity",
            many,
            _no_facts,
            lambda ls, n: [(n, None), (f * n if f > 1 else n + 1, required(ls))],
        )

    def cp_activity(self) -> None:
        """The CP-active thresholds (P > 1): n = 2P, and a length of 2P-1."""
        p = self.p
        if p <= 1:
            return
        self.emit(
            "num_tokens = 2P (least CP-active)", 1, lambda ls, n: [n == 2 * p], lambda ls, n: [(n, self.captured(n))]
        )
        self.emit(
            "L = 2P - 1 (not CP-active)",
            self.many,
            lambda ls, n: [ls[-1] == 2 * p - 1, n >= 2 * p],
            self.captured_window,
            active=False,
        )
