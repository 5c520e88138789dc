"""The count encoding: a batch of any number of requests as counts per remainder class (nothing unrolled).

Per request, the strategy's per-rank loads depend only on the quotient and the remainder of its length, from
the row's ``regular_from(P)`` on: L = S*q + m (0 <= m < S), loads_r(L) = c*q + e[m][r] (the class table
below). Shorter lengths are counted apart, one count per length, with their loads as constants. A batch is
then described exactly by the count c_m of (long) requests in each class m, the total quotient Q, and the
count s_L of requests of each short length L:

    R = sum_m c_m + sum_L s_L,   n = S*Q + sum_m m*c_m + sum_L L*s_L,
    l_r = c*Q + sum_m c_m*e[m][r] + sum_L s_L*loads_r(L),   Q >= sum_m q_min(m)*c_m

(q_min(m): the least quotient of a class-m length >= min_length, the batch's least long length). Every
such (c, Q, s) is realised by a batch (give each long request of class m the least such length, the
surplus quotient to one of them, each short one its length), so one solver query over the counts covers
every number of requests, and a model reads back as a concrete batch.

- zigzag:     S = 2P, c = 2, exact from 0, e[m][r] = [r < m] + [2P-1-r < m]
- contiguous: S = P,  c = 1, exact from 0, e[m][r] = floor(m(r+1)/P) - floor(mr/P)
- dual_chunk_swap, dual_chunk_swap_replicated (vLLM; the same loads for prefills): S = 2P, c = 2, exact
  from 2P(2P-3) + 2 (P >= 2), e[0] = 0, e[m] = (m - 2P + 2, 2, ..., 2): spec/design_dcs.py. Below that
  (L = 9, P = 4: (2, 2, 2, 3)) the loads are not q*loads(2P) + loads(m), so every shorter length is its
  own class: 2P(2P-3) + 2 classes, which bounds the cp_size a review takes (``MAX_SHORT_CLASSES``).
- dual_chunk_swap_dcp: the same, exact from 2P(2P-2) + 2 (shorter prefills may be copied to every rank).
- interleave: loads depend on the total only (floor(n/P) + [r < n mod P]); a batch is (n, R), n >= 2P*R.

Two designs read one batch (a diff) with classes modulo the lcm M of their moduli (a class m mod M is
class m mod S of each, with quotient (M/S)*q + m div S), and every length below the larger least long
length counted apart (constant loads): such a batch may be CP-active for one design only. A single
request (the padded layout's last one) is a counts batch of exactly one request.

proofs/theorems/design_lemmas.py proves, for every P in its scope, that the class table (short lengths included)
equals the per-request loads at every length (the spec's strategy table's, or the row's own definition
where the spec has none: spec/design_dcs.py), with wrong tables refuted. This module builds terms only
(no solver); it reads the spec's strategy table and spec/design_dcs.py, never reference/.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Mapping

import z3

from cpgraph.spec.logic import Implies, Sum
from cpgraph.spec import design_dcs
from cpgraph.spec.strategies import STRATEGIES, interleave_loads
from cpgraph.spec.strategies import strategy as strategy_of
from cpgraph.spec.terms import BoolTerm, IntTerm, Loads, all_of

Excess = Callable[[int, int, int], int]  # (P, m, r) -> e[m][r]
Definition = Callable[[IntTerm, int, str], Loads]  # (length, P, name) -> one request's loads as terms

# Lengths one review's encoding counts apart, at most: dual_chunk_swap and its dcp row at cp_size <= 13 (600 and
# 626 lengths); at 16 (930) the solver's rlimit runs out on some invariants (benchmarked: unknown, never wrong).
MAX_SHORT_CLASSES: Final = 640


def _exact_from_zero(cp_size: int) -> int:
    return 0


@dataclass(frozen=True)
class ClassRow:
    """How one strategy's per-request loads split into a quotient part and a per-class excess.

    ``modulus`` None: the strategy's loads depend on the batch total only (no classes). ``regular_from``:
    the least length the class table is exact from (shorter lengths are counted apart). ``short_loads``:
    one short length's loads as ints (None: the spec's strategy table computes them); ``definition``: the
    per-request loads the abstraction lemma compares the table with (None: the spec's strategy table's)."""

    strategy: str
    modulus: Callable[[int], int] | None  # S as a function of P
    per_quotient: int  # c: rows per unit of quotient, on every rank
    excess: Excess | None
    regular_from: Callable[[int], int] = _exact_from_zero
    short_loads: Callable[[int, int], tuple[int, ...]] | None = None  # (length, P) -> loads
    definition: Definition | None = None

    def table(self, cp_size: int) -> tuple[tuple[int, ...], ...]:
        """e[m][r] for every class m and rank r."""
        return _table(self.strategy, cp_size)

    def loads_of_length(self, length: int, cp_size: int, name: str) -> tuple[IntTerm, ...]:
        """One request of a concrete length, as constant terms."""
        if self.short_loads is not None:
            return tuple(z3.IntVal(x) for x in self.short_loads(length, cp_size))
        return strategy_of(self.strategy).batch_loads((length,), cp_size, name).loads


def _zigzag_excess(p: int, m: int, r: int) -> int:
    return int(r < m) + int(2 * p - 1 - r < m)


def _contiguous_excess(p: int, m: int, r: int) -> int:
    return (m * (r + 1)) // p - (m * r) // p


def _dcs_short(length: int, cp_size: int) -> tuple[int, ...]:
    return design_dcs.short_loads("dcs", length, cp_size)


def _dcp_short(length: int, cp_size: int) -> tuple[int, ...]:
    return design_dcs.short_loads("dcp", length, cp_size)


def _dcs_definition(length: IntTerm, cp_size: int, name: str) -> Loads:
    return design_dcs.request_load_terms(length, cp_size, name)


def _dcp_definition(length: IntTerm, cp_size: int, name: str) -> Loads:
    return design_dcs.request_load_terms(length, cp_size, name, dcp=True)


def _dcs_row(strategy: str, dcp: bool) -> ClassRow:
    return ClassRow(
        strategy, lambda p: 2 * p, 2, design_dcs.excess,
        design_dcs.dcp_regular_from if dcp else design_dcs.regular_from,
        _dcp_short if dcp else _dcs_short,
        _dcp_definition if dcp else _dcs_definition,
    )


CLASS_TABLE: Mapping[str, ClassRow] = MappingProxyType(
    {
        "zigzag": ClassRow("zigzag", lambda p: 2 * p, 2, _zigzag_excess),
        "contiguous": ClassRow("contiguous", lambda p: p, 1, _contiguous_excess),
        "dual_chunk_swap": _dcs_row("dual_chunk_swap", False),
        "dual_chunk_swap_replicated": _dcs_row("dual_chunk_swap_replicated", False),
        "dual_chunk_swap_dcp": _dcs_row("dual_chunk_swap_dcp", True),
        "interleave": ClassRow("interleave", None, 0, None),
    }
)


def class_row(strategy: str) -> ClassRow:
    """The class-table row of ``strategy``; ValueError names the known ids (no silent default). A row
    without its own definition needs the spec's strategy table to have the strategy."""
    row = CLASS_TABLE.get(strategy)
    if row is None or (row.definition is None and strategy not in STRATEGIES):
        known = [s for s, r in CLASS_TABLE.items() if r.definition is not None or s in STRATEGIES]
        raise ValueError(f"strategy must be one of {', '.join(known)}; got {strategy!r}")
    return row


def largest_cp_size(strategy: str) -> int | None:
    """The largest cp_size whose lengths counted apart (from 1 to the class table's exact range) stay within
    MAX_SHORT_CLASSES (None: every cp_size, the table being exact from 0)."""
    row = class_row(strategy)
    if row.modulus is None or row.regular_from(64) == 0:
        return None
    p = 1
    while row.regular_from(p + 1) - 1 <= MAX_SHORT_CLASSES:
        p += 1
    return p


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
        return Sum(below) if below else z3.IntVal(0)

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
    short_n = Sum([s * c for s, c in short]) if short else z3.IntVal(0)
    short_r = Sum([c for _, c in short]) if short else z3.IntVal(0)
    short_facts = [c >= 0 for _, c in short]
    if modulus == 1:
        long_r = z3.Int(f"{name}.long")
        holds = all_of(
            short_facts
            + [long_r >= 0, r == long_r + short_r, r >= min_requests, n - short_n >= min_length * long_r, q == n - short_n]
            + [Implies(long_r == 0, q == 0)]
        )
        return Counts(1, (), q, r, n, min_length, holds, short)
    counts = tuple(z3.Int(f"{name}.c{m}") for m in range(modulus))
    least = [least_quotient(modulus, min_length, m) for m in range(modulus)]
    facts = short_facts + [c >= 0 for c in counts] + [
        r == Sum(list(counts)) + short_r,
        r >= min_requests,
        q >= Sum([least[m] * counts[m] for m in range(modulus) if least[m]] or [z3.IntVal(0)]),
        Implies(Sum(list(counts)) == 0, q == 0),  # no quotient without a request to carry it
        n == modulus * q + Sum([m * counts[m] for m in range(1, modulus)] or [z3.IntVal(0)]) + short_n,
    ]
    return Counts(modulus, counts, q, r, n, min_length, all_of(facts), short)


def counts_loads(strategy: str, cp_size: int, batch: Counts, name: str, *, row: ClassRow | None = None) -> Loads:
    """Per-rank loads of a counts batch under ``strategy`` at ``cp_size`` ranks: c*(M/S)*Q + sum_m
    c_m*(c*(m div S) + e[m mod S][r]) (M the batch's modulus, S the strategy's), or interleave's loads of n.
    ``row`` replaces the strategy's class-table row (proofs/theorems/design_lemmas.py's wrong variants)."""
    row = class_row(strategy) if row is None else row
    p = cp_size
    if row.modulus is None:
        split = interleave_loads(batch.tokens, p, f"{name}.total")
        return Loads(split.loads, split.holds)
    short_loads = [(count, row.loads_of_length(length, p, f"{name}.short{length}")) for length, count in batch.short]
    s = row.modulus(p)
    if batch.counts and batch.min_length < row.regular_from(p):
        raise ValueError(
            f"{strategy}'s class table at cp_size={p} is exact from length {row.regular_from(p)}; the batch counts "
            f"lengths from {batch.min_length} by class (count the shorter ones apart)"
        )
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
        loads.append(scale * batch.quotient + (Sum(terms) if terms else z3.IntVal(0)))
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
