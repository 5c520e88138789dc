"""A batch as admission and replay see it (``LiveBatch``), in three forms: remainder classes (``ClassBatch``,
any number of requests, the class-encodable strategies), any layout (``AnyLayout``: free per-rank loads,
every strategy at once), and a few requests of symbolic lengths (``RequestsBatch``, any strategy).

ClassBatch: write each length as L = 2P*q + m (0 <= m < 2P). For every class-encodable strategy of the
table (spec/strategies.py ``CLASS_ENCODABLE``: zigzag, contiguous, interleave), one request's per-rank
loads are ``q * loads(2P) + loads(m)`` (the quotient part is the same block on every rank), so a whole
batch's loads depend only on

    Q      = the sum of the quotients,
    c[m]   = how many long requests (q >= 1) have remainder m,
    s[m]   = how many short requests (q = 0, so L = m < 2P) have remainder m,

as ``Q * loads(2P) + sum_m (c[m] + s[m]) * loads(m)`` (interleave: the loads of the total). One ClassBatch
therefore stands for every batch of every size at once: R = sum(c) + sum(s) is a variable, and so is n.
proofs/theorems/batch.py proves the abstraction (one request's loads split that way; adding a request moves the
class formula exactly as it moves the loads) and every concrete batch maps to one ClassBatch, so a claim
proved over ClassBatch holds for every batch. Conversely every ClassBatch is realised by a concrete batch
(``proofs.engine.replay_batch.realise``), so a refutation here is a real counterexample. The DualChunkSwap rows
are not class-encodable (their loads for q < 2P-2 depend on q and m jointly): ``class_loads`` raises a
ValueError for them, and the theorems that need them use ``AnyLayout`` or ``RequestsBatch``.

AnyLayout: P free loads l_r >= 0, a free token count and request count, a free count of requests shorter
than 2P. It stands for every batch under every layout at once, so a claim that reads a batch only through
its loads (and the gate's counts) and is proved over AnyLayout holds for every strategy, present or future.
Its models are not batches in general (nothing ties the loads to lengths); refutations that must be
replayed use a ClassBatch or a RequestsBatch.

RequestsBatch: R lengths L_i >= 0 (a length 0 is no request), at least one non-empty, loads by the
strategy table's own per-request builders: every model is a real batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import z3

from cpgraph.spec.logic import And, If, Implies, Or, Sum
from cpgraph.spec.strategies import RequestLoads, class_encodable, interleave_loads, rank_loads
from cpgraph.spec.terms import BoolTerm, IntTerm, Loads, all_of, literal


class LiveBatch(Protocol):
    """What admission and replay read of a batch: P, the facts that define it, the gate's counts of requests
    shorter than 2P, its requests and tokens, and its per-rank loads under a strategy (built under a name,
    so two sides build their own terms)."""

    @property
    def cp_size(self) -> int: ...

    @property
    def holds(self) -> BoolTerm: ...

    @property
    def short_counts(self) -> tuple[IntTerm, ...]: ...

    @property
    def short_requests(self) -> IntTerm: ...

    @property
    def requests(self) -> IntTerm: ...

    @property
    def tokens(self) -> IntTerm: ...

    def layout_loads(self, kind: str, name: str) -> Loads: ...


@dataclass(frozen=True)
class ClassBatch:
    """Any batch of any number of requests on ``cp_size`` ranks (see the module docstring)."""

    cp_size: int
    quotients: IntTerm  # Q
    long_counts: tuple[IntTerm, ...]  # c[m], m = 0..2P-1
    short_counts: tuple[IntTerm, ...]  # s[m]
    holds: BoolTerm

    @property
    def requests(self) -> IntTerm:
        """R: the number of requests."""
        return Sum([*self.long_counts, *self.short_counts])

    @property
    def short_requests(self) -> IntTerm:
        """How many requests are shorter than 2P."""
        return Sum(list(self.short_counts))

    @property
    def tokens(self) -> IntTerm:
        """sum(extend_seq_lens) = 2P*Q + sum_m m*(c[m] + s[m])."""
        s = 2 * self.cp_size
        return s * self.quotients + Sum(
            [m * (c + r) for m, (c, r) in enumerate(zip(self.long_counts, self.short_counts))]
        )

    def layout_loads(self, kind: str, name: str) -> Loads:
        """The class formula's loads under strategy ``kind`` (ValueError for a row that is not class-encodable)."""
        return class_loads(self, kind, name)


@dataclass(frozen=True)
class AnyLayout:
    """Every batch under every layout, seen through its per-rank loads (see the module docstring)."""

    cp_size: int
    loads: tuple[IntTerm, ...]  # l_r, one free load per rank
    short_counts: tuple[IntTerm, ...]  # one free count: the requests shorter than 2P
    requests: IntTerm
    tokens: IntTerm
    holds: BoolTerm

    @property
    def short_requests(self) -> IntTerm:
        return Sum(list(self.short_counts))

    def layout_loads(self, kind: str, name: str) -> Loads:
        """The same free loads whatever the strategy: they stand for every strategy's layout."""
        del kind, name
        return Loads(self.loads, z3.BoolVal(True))


def any_layout(cp_size: int, name: str) -> AnyLayout:
    """Fresh ``{name}.l{r}`` >= 0 (r < P), ``{name}.N`` >= 0 tokens, ``{name}.R`` >= 1 requests and
    ``{name}.short`` >= 0 of them shorter than 2P: any batch, any layout."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    loads = tuple(z3.Int(f"{name}.l{r}") for r in range(cp_size))
    tokens, requests, short = z3.Int(f"{name}.N"), z3.Int(f"{name}.R"), z3.Int(f"{name}.short")
    holds = all_of([*(x >= 0 for x in loads), tokens >= 0, requests >= 1, short >= 0, short <= requests])
    return AnyLayout(cp_size, loads, (short,), requests, tokens, holds)


@dataclass(frozen=True)
class RequestsBatch:
    """A batch of at most ``len(lengths)`` requests of any lengths (see the module docstring)."""

    cp_size: int
    lengths: tuple[IntTerm, ...]
    holds: BoolTerm

    @property
    def short_counts(self) -> tuple[IntTerm, ...]:
        """[1 <= L_i < 2P] per request (a length 0 is no request)."""
        p = self.cp_size
        return tuple(If(And(x >= 1, x < 2 * p), z3.IntVal(1), z3.IntVal(0)) for x in self.lengths)

    @property
    def short_requests(self) -> IntTerm:
        return Sum(list(self.short_counts))

    @property
    def requests(self) -> IntTerm:
        """The non-empty requests."""
        return Sum([If(x >= 1, z3.IntVal(1), z3.IntVal(0)) for x in self.lengths])

    @property
    def tokens(self) -> IntTerm:
        return Sum(list(self.lengths))

    def layout_loads(self, kind: str, name: str) -> Loads:
        """The strategy table's loads of these lengths (every strategy)."""
        return rank_loads(self.lengths, self.cp_size, name, kind)


def requests_batch(cp_size: int, max_requests: int, name: str) -> RequestsBatch:
    """Fresh lengths ``{name}.L{i}`` >= 0 (i < ``max_requests``), at least one of them >= 1."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    if max_requests < 1:
        raise ValueError(f"max_requests must be an int >= 1, got {max_requests}")
    lengths = tuple(z3.Int(f"{name}.L{i}") for i in range(max_requests))
    holds = And(all_of(x >= 0 for x in lengths), Or([x >= 1 for x in lengths]))
    return RequestsBatch(cp_size, lengths, holds)


def class_batch(cp_size: int, name: str) -> ClassBatch:
    """Fresh variables ``{name}.Q``, ``{name}.c{m}``, ``{name}.s{m}`` for a non-empty batch: counts >= 0,
    every long request has a quotient >= 1 (Q >= sum c), and with no long request Q = 0."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    s = 2 * cp_size
    q = z3.Int(f"{name}.Q")
    long_counts = tuple(z3.Int(f"{name}.c{m}") for m in range(s))
    short_counts = tuple(z3.Int(f"{name}.s{m}") for m in range(s))
    state = ClassBatch(cp_size, q, long_counts, short_counts, z3.BoolVal(True))
    return ClassBatch(cp_size, q, long_counts, short_counts, is_a_batch(state))


def is_a_batch(state: ClassBatch) -> BoolTerm:
    """What ``class_batch`` assumes of its variables: a reachable state with at least one request
    (proofs/theorems/batch.py proves every non-empty batch's state satisfies exactly this)."""
    return And(is_reachable(state), state.requests >= 1)


def is_reachable(batch: ClassBatch) -> BoolTerm:
    """What every class state reached by adding requests one by one satisfies: counts >= 0, each long
    request has a quotient >= 1 (Q >= sum c) and with no long request Q = 0. proofs/theorems/batch.py proves the
    empty batch has it and one more request keeps it (this one builder is both the lemma and its use)."""
    longs = Sum(list(batch.long_counts))
    return all_of(
        [
            *[c >= 0 for c in batch.long_counts],
            *[c >= 0 for c in batch.short_counts],
            batch.quotients >= longs,
            Implies(longs == 0, batch.quotients == 0),
        ]
    )


def class_loads(batch: ClassBatch, kind: str, name: str) -> Loads:
    """Per-rank loads of every batch in ``batch`` under the class-encodable strategy ``kind`` (ValueError for
    any other row, naming the rows the abstraction holds for):
    Q * loads(2P) + sum_m (c[m] + s[m]) * loads(m), the per-class loads taken from the strategy table's
    own per-request builder on concrete lengths (interleave: the loads of the total).

    Encoded by summation by parts so every rank's term stays small: with suffix counts
    T[j] = sum_{m >= j} (c[m] + s[m]) (fresh ``{name}.T{j}``), sum_m v(m) cnt[m] = sum_j (v(j) - v(j-1)) T[j];
    zigzag's rank r then reads 2Q + T[r+1] + T[2P-r].
    """
    p, s = batch.cp_size, 2 * batch.cp_size
    row = class_encodable(kind)
    if row.request_loads is None:
        return interleave_loads(batch.tokens, p, f"{name}.total")
    unit = _concrete(row.request_loads, s, p)
    per_class = [_concrete(row.request_loads, m, p) for m in range(s)]
    counts = [c + r for c, r in zip(batch.long_counts, batch.short_counts)]
    suffix = [z3.Int(f"{name}.T{j}") for j in range(s)]
    facts = [suffix[j] == counts[j] + (suffix[j + 1] if j + 1 < s else 0) for j in range(s)]
    loads = []
    for r in range(p):
        steps = [(j, per_class[j][r] - (per_class[j - 1][r] if j else 0)) for j in range(s)]
        loads.append(Sum([batch.quotients * unit[r], *(d * suffix[j] for j, d in steps if d)]))
    return Loads(tuple(loads), all_of(facts))


@lru_cache(maxsize=4096)
def _concrete(request_loads: RequestLoads, length: int, cp_size: int) -> tuple[int, ...]:
    """One request's per-rank loads as Python ints, from the row's own builder on a concrete length. Cached
    per (builder, length, P): every class batch at P reads the same 2P + 1 rows (a concrete length makes no
    variable, so the name given to the builder is never read), and building them is the costly part of a
    class batch's loads at large P (z3 numerals folded back to ints)."""
    values = [literal(x) for x in request_loads(length, cp_size, f"class{length}").loads]
    if any(v is None for v in values):
        raise ValueError("a per-class load must fold to a numeral (concrete length and cp_size)")
    return tuple(v for v in values if v is not None)
