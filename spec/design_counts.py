"""The count encoding: a batch of any number of requests as counts per remainder class (nothing unrolled).

Per request, the strategy's per-rank loads depend only on the quotient and the remainder of its length:
L = S*q + m (0 <= m < S), loads_r(L) = c*q + e[m][r] (the class table below). A batch is then described
exactly by the count c_m of requests in each class m and the total quotient Q:

    R = sum_m c_m,   n = S*Q + sum_m m*c_m,   l_r = c*Q + sum_m c_m*e[m][r],   Q >= q_min*R

(q_min: the least quotient of a CP-active length L >= 2P). Every such (c, Q) is realised by a batch (give
each request of class m the length S*q_min + m, and the surplus quotient to one of them), so one solver
query over the counts covers every number of requests, and a model reads back as a concrete batch.

- zigzag:     S = 2P, c = 2, q_min = 1, e[m][r] = [r < m] + [2P-1-r < m]
- contiguous: S = P,  c = 1, q_min = 2, e[m][r] = floor(m(r+1)/P) - floor(mr/P)
- zigzag_pad: S = 2P, c = 2, q_min = 1, e[m][r] = 2*[m > 0]   (rows 2*ceil(L/2P) on every rank)
- interleave: loads depend on the total only (floor(n/P) + [r < n mod P]); a batch is (n, R), n >= 2P*R.

Two designs read one batch (a diff) with classes modulo the lcm M of their moduli (a class m mod M is
class m mod S of each, with quotient (M/S)*q + m div S), and, when their cp_size differ, the requests
shorter than the larger 2P counted apart per length (constant loads): such a batch is CP-active for the
smaller P only. A single request (the padded layout's last one) is a counts batch of exactly one request.

proofs/design_lemmas.py proves, for every P in its scope, that the class table equals the spec's own
per-request loads (spec/strategies.py) at every length, with wrong tables refuted. This module builds
terms only (no solver); it reads the spec's strategy table, never reference/.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import z3

from cpgraph.spec.strategies import STRATEGIES, interleave_loads
from cpgraph.spec.strategies import strategy as strategy_of
from cpgraph.spec.terms import BoolTerm, IntTerm, Loads, all_of

Excess = Callable[[int, int, int], int]  # (P, m, r) -> e[m][r]


@dataclass(frozen=True)
class ClassRow:
    """How one strategy's per-request loads split into a quotient part and a per-class excess.

    ``modulus`` None: the strategy's loads depend on the batch total only (no classes)."""

    strategy: str
    modulus: Callable[[int], int] | None  # S as a function of P
    per_quotient: int  # c: rows per unit of quotient, on every rank
    min_quotient: Callable[[int], int]  # least quotient of a length >= 2P
    excess: Excess | None

    def table(self, cp_size: int) -> tuple[tuple[int, ...], ...]:
        """e[m][r] for every class m and rank r."""
        return _table(self.strategy, cp_size)


def _zigzag_excess(p: int, m: int, r: int) -> int:
    return int(r < m) + int(2 * p - 1 - r < m)


def _contiguous_excess(p: int, m: int, r: int) -> int:
    return (m * (r + 1)) // p - (m * r) // p


def _zigzag_pad_excess(p: int, m: int, r: int) -> int:
    return 2 * int(m > 0)


CLASS_TABLE: Mapping[str, ClassRow] = MappingProxyType(
    {
        "zigzag": ClassRow("zigzag", lambda p: 2 * p, 2, lambda p: 1, _zigzag_excess),
        "contiguous": ClassRow("contiguous", lambda p: p, 1, lambda p: 2, _contiguous_excess),
        "zigzag_pad": ClassRow("zigzag_pad", lambda p: 2 * p, 2, lambda p: 1, _zigzag_pad_excess),
        "interleave": ClassRow("interleave", None, 0, lambda p: 0, None),
    }
)


def class_row(strategy: str) -> ClassRow:
    """The class-table row of ``strategy``; ValueError names the known ids (no silent default)."""
    if strategy not in CLASS_TABLE or strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(CLASS_TABLE)}; got {strategy!r}")
    return CLASS_TABLE[strategy]


@functools.lru_cache(maxsize=256)
def _table(strategy: str, cp_size: int) -> tuple[tuple[int, ...], ...]:
    return _excess_table(CLASS_TABLE[strategy], cp_size)


def _excess_table(row: ClassRow, cp_size: int) -> tuple[tuple[int, ...], ...]:
    if row.excess is None or row.modulus is None:
        raise ValueError(f"strategy {row.strategy!r} has no class table")
    excess = row.excess
    return tuple(tuple(excess(cp_size, m, r) for r in range(cp_size)) for m in range(row.modulus(cp_size)))


@dataclass(frozen=True)
class Counts:
    """Any number of CP-active requests as counts: ``counts[m]`` requests of length = m mod ``modulus``
    (empty: no classes, only the total matters), ``quotient`` Q = the sum of their quotients, ``requests``
    R, ``tokens`` n. ``holds`` states the encoding's facts (every length >= ``min_length``)."""

    modulus: int
    counts: tuple[IntTerm, ...]
    quotient: IntTerm
    requests: IntTerm
    tokens: IntTerm
    min_length: int
    holds: BoolTerm
    short: tuple[tuple[int, IntTerm], ...] = ()  # (length, count) of requests shorter than min_length

    def short_count_below(self, length: int) -> IntTerm:
        """How many of the short requests are shorter than ``length`` (0: all of them are long enough)."""
        below = [c for s, c in self.short if s < length]
        return z3.Sum(below) if below else z3.IntVal(0)

    def least_quotient(self, cls: int) -> int:
        """The least quotient of a class-``cls`` length >= min_length."""
        return least_quotient(self.modulus, self.min_length, cls)


def least_quotient(modulus: int, min_length: int, cls: int) -> int:
    return max(0, -(-(min_length - cls) // modulus))


def shared_modulus(strategies: tuple[tuple[str, int], ...]) -> int:
    """The least modulus every (strategy, P) class table divides (1: only total-dependent strategies)."""
    out = 1
    for strategy, p in strategies:
        row = class_row(strategy)
        if row.modulus is not None:
            out = math.lcm(out, row.modulus(p))
    return out


def counts_batch(
    modulus: int,
    min_length: int,
    name: str,
    *,
    requests: IntTerm | None = None,
    tokens: IntTerm | None = None,
    min_requests: int = 1,
    short_from: int | None = None,
) -> Counts:
    """Any batch of at least ``min_requests`` requests, every length >= ``min_length``, as counts per class
    mod ``modulus`` (modulus 1: the total and the request count only). With ``short_from`` < min_length,
    requests of each length in [short_from, min_length) are counted apart (their loads are constants), so
    designs with different cp_size read one batch: it is CP-active for the larger P only without them."""
    r = z3.Int(f"{name}.R") if requests is None else requests
    n = z3.Int(f"{name}.n") if tokens is None else tokens
    q = z3.Int(f"{name}.Q")
    lows = range(short_from, min_length) if short_from is not None else range(0)
    short = tuple((s, z3.Int(f"{name}.s{s}")) for s in lows)
    short_n = z3.Sum([s * c for s, c in short]) if short else z3.IntVal(0)
    short_r = z3.Sum([c for _, c in short]) if short else z3.IntVal(0)
    short_facts = [c >= 0 for _, c in short]
    if modulus == 1:
        long_r = z3.Int(f"{name}.long")
        holds = all_of(
            short_facts
            + [long_r >= 0, r == long_r + short_r, r >= min_requests, n - short_n >= min_length * long_r, q == n - short_n]
            + [z3.Implies(long_r == 0, q == 0)]
        )
        return Counts(1, (), q, r, n, min_length, holds, short)
    counts = tuple(z3.Int(f"{name}.c{m}") for m in range(modulus))
    least = [least_quotient(modulus, min_length, m) for m in range(modulus)]
    facts = short_facts + [c >= 0 for c in counts] + [
        r == z3.Sum(list(counts)) + short_r,
        r >= min_requests,
        q >= z3.Sum([least[m] * counts[m] for m in range(modulus) if least[m]] or [z3.IntVal(0)]),
        z3.Implies(z3.Sum(list(counts)) == 0, q == 0),  # no quotient without a request to carry it
        n == modulus * q + z3.Sum([m * counts[m] for m in range(1, modulus)] or [z3.IntVal(0)]) + short_n,
    ]
    return Counts(modulus, counts, q, r, n, min_length, all_of(facts), short)


def counts_loads(strategy: str, cp_size: int, batch: Counts, name: str, *, row: ClassRow | None = None) -> Loads:
    """Per-rank loads of a counts batch under ``strategy`` at ``cp_size`` ranks: c*(M/S)*Q + sum_m
    c_m*(c*(m div S) + e[m mod S][r]) (M the batch's modulus, S the strategy's), or interleave's loads of n.
    ``row`` replaces the strategy's class-table row (proofs/design_lemmas.py's wrong variants)."""
    row = class_row(strategy) if row is None else row
    p = cp_size
    if row.modulus is None:
        split = interleave_loads(batch.tokens, p, f"{name}.total")
        return Loads(split.loads, split.holds)
    short_loads = [
        (count, strategy_of(strategy).batch_loads((length,), p, f"{name}.short{length}").loads)
        for length, count in batch.short
    ]
    s = row.modulus(p)
    if batch.modulus % s:
        raise ValueError(f"the batch's modulus {batch.modulus} is not a multiple of {strategy}'s {s} at cp_size={p}")
    table = row.table(p) if row is CLASS_TABLE.get(strategy) else _excess_table(row, p)
    scale = row.per_quotient * (batch.modulus // s)
    loads = []
    for rank in range(p):
        terms = []
        for m, count in enumerate(batch.counts):
            weight = row.per_quotient * (m // s) + table[m % s][rank]
            if weight:
                terms.append(weight * count)
        for count, fixed in short_loads:
            terms.append(fixed[rank] * count)
        loads.append(scale * batch.quotient + (z3.Sum(terms) if terms else z3.IntVal(0)))
    return Loads(tuple(loads), z3.BoolVal(True))


def realise(
    batch_modulus: int,
    min_length: int,
    counts: tuple[int, ...],
    quotient: int,
    tokens: int,
    short: tuple[tuple[int, int], ...] = (),
) -> tuple[int, ...]:
    """A concrete batch with these counts: class m gets the least length >= min_length of its class, the
    surplus quotient goes to the first request (modulus 1: min_length-token requests, the rest on the
    first). Raises ValueError when the values are not a model of the encoding."""
    if batch_modulus == 1:
        requests = len(counts) if counts else 0
        raise ValueError(f"use realise_total for modulus 1 (got {requests} counts)")
    lengths = [
        batch_modulus * least_quotient(batch_modulus, min_length, m) + m
        for m in range(batch_modulus)
        for _ in range(counts[m])
    ]
    fixed = [length for length, count in short for _ in range(count)]
    surplus = tokens - sum(lengths) - sum(fixed)
    if min(counts, default=0) < 0 or surplus < 0 or surplus % batch_modulus:
        raise ValueError(f"counts {counts} and quotient {quotient} are not a batch of {tokens} tokens")
    if lengths:
        lengths[0] += surplus
    elif surplus:
        raise ValueError(f"no requests but {tokens} tokens")
    return tuple(lengths) + tuple(fixed)


def realise_total(
    min_length: int, requests: int, tokens: int, short: tuple[tuple[int, int], ...] = ()
) -> tuple[int, ...]:
    """A batch of ``requests`` requests and ``tokens`` tokens: the short ones as counted, the others each
    >= min_length."""
    fixed = tuple(length for length, count in short for _ in range(count))
    requests, tokens = requests - len(fixed), tokens - sum(fixed)
    if requests < 0 or tokens < min_length * requests or (requests == 0 and tokens):
        raise ValueError(f"no batch of {requests} requests >= {min_length} tokens with {tokens} tokens")
    if requests == 0:
        return fixed
    return (tokens - min_length * (requests - 1),) + (min_length,) * (requests - 1) + fixed
