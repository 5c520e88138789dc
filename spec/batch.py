"""A batch of any number of requests, described by its requests' remainder classes mod 2P.

Write each length as L = 2P*q + m (0 <= m < 2P). For every strategy of the table, one request's per-rank
loads are ``q * loads(2P) + loads(m)`` (the quotient part is the same block on every rank), so a whole
batch's loads depend only on

    Q      = the sum of the quotients,
    c[m]   = how many long requests (q >= 1) have remainder m,
    s[m]   = how many short requests (q = 0, so L = m < 2P) have remainder m,

as ``Q * loads(2P) + sum_m (c[m] + s[m]) * loads(m)`` (interleave: the loads of the total). One ClassBatch
therefore stands for every batch of every size at once: R = sum(c) + sum(s) is a variable, and so is n.
proofs/batch.py proves the abstraction (one request's loads split that way; adding a request moves the
class formula exactly as it moves the loads) and every concrete batch maps to one ClassBatch, so a claim
proved over ClassBatch holds for every batch. Conversely every ClassBatch is realised by a concrete batch
(``proofs.replay_batch.realise``), so a refutation here is a real counterexample.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from cpgraph.spec.strategies import interleave_loads, strategy
from cpgraph.spec.terms import BoolTerm, IntTerm, Loads, all_of, literal


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
        return z3.Sum([*self.long_counts, *self.short_counts])

    @property
    def short_requests(self) -> IntTerm:
        """How many requests are shorter than 2P."""
        return z3.Sum(list(self.short_counts))

    @property
    def tokens(self) -> IntTerm:
        """sum(extend_seq_lens) = 2P*Q + sum_m m*(c[m] + s[m])."""
        s = 2 * self.cp_size
        return s * self.quotients + z3.Sum(
            [m * (c + r) for m, (c, r) in enumerate(zip(self.long_counts, self.short_counts))]
        )


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
    (proofs/batch.py proves every non-empty batch's state satisfies exactly this)."""
    return z3.And(is_reachable(state), state.requests >= 1)


def is_reachable(batch: ClassBatch) -> BoolTerm:
    """What every class state reached by adding requests one by one satisfies: counts >= 0, each long
    request has a quotient >= 1 (Q >= sum c) and with no long request Q = 0. proofs/batch.py proves the
    empty batch has it and one more request keeps it (this one builder is both the lemma and its use)."""
    longs = z3.Sum(list(batch.long_counts))
    return all_of(
        [
            *[c >= 0 for c in batch.long_counts],
            *[c >= 0 for c in batch.short_counts],
            batch.quotients >= longs,
            z3.Implies(longs == 0, batch.quotients == 0),
        ]
    )


def class_loads(batch: ClassBatch, kind: str, name: str) -> Loads:
    """Per-rank loads of every batch in ``batch`` under strategy ``kind``:
    Q * loads(2P) + sum_m (c[m] + s[m]) * loads(m), the per-class loads taken from the strategy table's
    own per-request builder on concrete lengths (interleave: the loads of the total).

    Encoded by summation by parts so every rank's term stays small: with suffix counts
    T[j] = sum_{m >= j} (c[m] + s[m]) (fresh ``{name}.T{j}``), sum_m v(m) cnt[m] = sum_j (v(j) - v(j-1)) T[j];
    zigzag's rank r then reads 2Q + T[r+1] + T[2P-r].
    """
    p, s = batch.cp_size, 2 * batch.cp_size
    row = strategy(kind)
    if row.request_loads is None:
        return interleave_loads(batch.tokens, p, f"{name}.total")
    unit = _concrete(row.request_loads(s, p, f"{name}.unit"))
    per_class = [_concrete(row.request_loads(m, p, f"{name}.class{m}")) for m in range(s)]
    counts = [c + r for c, r in zip(batch.long_counts, batch.short_counts)]
    suffix = [z3.Int(f"{name}.T{j}") for j in range(s)]
    facts = [suffix[j] == counts[j] + (suffix[j + 1] if j + 1 < s else 0) for j in range(s)]
    loads = []
    for r in range(p):
        steps = [(j, per_class[j][r] - (per_class[j - 1][r] if j else 0)) for j in range(s)]
        loads.append(z3.Sum([batch.quotients * unit[r], *(d * suffix[j] for j, d in steps if d)]))
    return Loads(tuple(loads), all_of(facts))


def _concrete(loads: Loads) -> tuple[int, ...]:
    values = [literal(x) for x in loads.loads]
    if any(v is None for v in values):
        raise ValueError("a per-class load must fold to a numeral (concrete length and cp_size)")
    return tuple(v for v in values if v is not None)
