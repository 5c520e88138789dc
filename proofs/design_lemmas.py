"""The abstraction lemmas behind ``cpgraph review``'s count encoding (spec/design_counts.py), with wrong variants.

The review describes a batch of any number of requests by the count of requests in each remainder class
(mod M, a multiple of the strategy's S) and the total quotient. That is exact when:

1. ``class_loads_equal_request_loads`` (request): one request of any length L >= 0, written L = M*q + m,
   has, on every rank, exactly the loads the encoding gives a count vector with a single 1 at class m and
   quotient q (c*((M/S)*q + m div S) + e[m mod S][r]), and its tokens M*q + m = L. Interleave, whose
   loads depend on the total only: the spec's loads of a batch equal the encoding's loads of its total.
2. ``count_loads_add_up`` (step): the encoding is additive: the loads and tokens of the counts a + b
   (quotients Q_a + Q_b) are the sums of those of a and b, rank by rank. With (1) and the base (no
   requests: zero loads), by induction over requests the encoding's loads of a batch's counts equal the
   spec's loads of the batch, for any number of requests.

Each lemma is checked for one (strategy, P, M) per call (``design_lemmas``, run by the review for the
design's own P) and for every strategy and P = 1..64 by tests/unit/test_design_lemmas.py. ``VARIANTS``
are wrong class tables that must be refuted (tests/unit/test_design_lemmas.py asserts it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

from cpgraph.proofs.check import Status, Verdict, check
from cpgraph.spec.arith import divmod_by
from cpgraph.spec.design_counts import CLASS_TABLE, ClassRow, Counts, class_row, counts_loads
from cpgraph.spec.strategies import strategy as strategy_of
from cpgraph.spec.terms import BoolTerm, all_of

LEMMA_RLIMIT = 50_000_000
CP_MAX = 64  # the scope the tests prove: every P in 1..CP_MAX, every strategy


@dataclass(frozen=True)
class LemmaQuery:
    """One lemma instance: ``hypotheses => claim``."""

    name: str
    statement: str
    claim: BoolTerm
    hypotheses: tuple[BoolTerm, ...]


def _single(modulus: int, length: z3.ArithRef, name: str) -> tuple[Counts, BoolTerm]:
    """The counts of a one-request batch of length L: a 1 at class L mod M, quotient L div M (the split's
    variables are ``{name}.q`` and ``{name}.m``: the same as the spec's own split of L by M, when it has one,
    so the solver need not re-derive that two splits of one length agree)."""
    split = divmod_by(length, modulus, name)
    counts = tuple(z3.If(split.remainder == k, z3.IntVal(1), z3.IntVal(0)) for k in range(modulus))
    return Counts(modulus, counts, split.quotient, z3.IntVal(1), length, 0, z3.BoolVal(True)), split.holds


def request_lemma(strategy: str, cp_size: int, modulus: int | None = None, *, row: ClassRow | None = None) -> LemmaQuery:
    """Lemma 1 for one strategy, P and modulus M (default: the strategy's own S); ``row`` swaps in a wrong
    class table (a variant)."""
    p = cp_size
    got = class_row(strategy)
    spec_row = strategy_of(strategy)
    length = z3.Int("L")
    if got.modulus is None or spec_row.request_loads is None:
        # interleave: the spec lays out the total; the encoding reads the total only
        lengths = (z3.Int("L0"), z3.Int("L1"), z3.Int("L2"))
        spec_loads = spec_row.batch_loads(lengths, p, "spec.total")
        batch = Counts(1, (), z3.Sum(list(lengths)), z3.IntVal(3), z3.Sum(list(lengths)), 0, z3.BoolVal(True))
        ours = counts_loads(strategy, p, batch, "spec")  # the total split by P under the spec's own name
        claim = all_of(a == b for a, b in zip(spec_loads.loads, ours.loads))
        return LemmaQuery(
            "class_loads_equal_request_loads",
            f"{strategy}, P={p}: the loads of any batch equal the encoding's loads of its total",
            claim,
            (all_of(x >= 0 for x in lengths), spec_loads.holds, ours.holds),
        )
    m_total = modulus or got.modulus(p)
    single, split_holds = _single(m_total, length, "spec")
    ours = counts_loads(strategy, p, single, "enc", row=row)
    spec_loads = spec_row.request_loads(length, p, "spec")
    tokens = m_total * single.quotient + z3.Sum([k * c for k, c in enumerate(single.counts)])
    claim = z3.And(all_of(a == b for a, b in zip(spec_loads.loads, ours.loads)), tokens == length)
    return LemmaQuery(
        "class_loads_equal_request_loads",
        f"{strategy}, P={p}, classes mod {m_total}: one request of any length L has, on every rank, the "
        "class table's loads c*q + e[L mod S][r], and tokens M*q + m = L",
        claim,
        (length >= 0, split_holds, spec_loads.holds),
    )


def step_lemma(strategy: str, cp_size: int, modulus: int | None = None) -> LemmaQuery:
    """Lemma 2: the encoding's loads and tokens add up over a split of the counts (the induction step)."""
    got = class_row(strategy)
    m_total = modulus or (got.modulus(cp_size) if got.modulus is not None else 1)

    def counts(name: str) -> Counts:
        cs = tuple(z3.Int(f"{name}.c{k}") for k in range(m_total)) if m_total > 1 else ()
        q = z3.Int(f"{name}.Q")
        tokens = m_total * q + z3.Sum([k * c for k, c in enumerate(cs)] or [z3.IntVal(0)])
        return Counts(m_total, cs, q, z3.Sum(list(cs) or [z3.IntVal(0)]), tokens, 0, z3.BoolVal(True))

    a, b = counts("a"), counts("b")
    both = Counts(
        m_total,
        tuple(x + y for x, y in zip(a.counts, b.counts)),
        a.quotient + b.quotient,
        a.requests + b.requests,
        a.tokens + b.tokens,
        0,
        z3.BoolVal(True),
    )
    la, lb, lab = (counts_loads(strategy, cp_size, c, f"step{i}") for i, c in enumerate((a, b, both)))
    if got.modulus is None:
        # interleave's loads are not additive rank by rank (the total is re-split); its lemma 1 covers
        # every batch directly, so the step states conservation of tokens only
        claim = z3.Sum(list(lab.loads)) == z3.Sum(list(la.loads)) + z3.Sum(list(lb.loads))
    else:
        claim = all_of(x == y + w for x, y, w in zip(lab.loads, la.loads, lb.loads))
    hyps = tuple(x >= 0 for x in (*a.counts, *b.counts, a.quotient, b.quotient)) + (la.holds, lb.holds, lab.holds)
    return LemmaQuery(
        "count_loads_add_up",
        f"{strategy}, P={cp_size}: the encoding's loads of counts a + b are the loads of a plus those of b",
        claim,
        hyps,
    )


def design_lemmas(strategy: str, cp_size: int, modulus: int | None = None) -> tuple[tuple[str, str, Verdict], ...]:
    """The lemmas for one strategy and P, checked: (name, statement, verdict). Interleave needs only lemma 1
    (it covers every batch at once: its encoding has no counts to add up)."""
    out = []
    queries = [request_lemma(strategy, cp_size, modulus)]
    if class_row(strategy).modulus is not None:
        queries.append(step_lemma(strategy, cp_size, modulus))
    for query in queries:
        verdict = check(query.claim, hypotheses=list(query.hypotheses), rlimit=LEMMA_RLIMIT)
        out.append((query.name, query.statement, verdict))
    return tuple(out)


# -- wrong variants: class tables that must be refuted ------------------------------------------------------


@dataclass(frozen=True)
class WrongClassRow:
    """A deliberately wrong class table row for one strategy: request_lemma must refute it (P >= 2)."""

    name: str
    strategy: str
    row: ClassRow
    description: str


def _variant(strategy: str, name: str, excess: Callable[[int, int, int], int], description: str, per_quotient: int | None = None) -> WrongClassRow:
    base = CLASS_TABLE[strategy]
    row = ClassRow(strategy, base.modulus, per_quotient or base.per_quotient, base.min_quotient, excess)
    return WrongClassRow(name, strategy, row, description)


VARIANTS: tuple[WrongClassRow, ...] = (
    _variant("zigzag", "early_block_only", lambda p, m, r: int(r < m), "forgets the mirrored late block 2P-1-r"),
    _variant("zigzag", "off_by_one", lambda p, m, r: int(r <= m) + int(2 * p - 1 - r <= m), "[r <= m] for [r < m]"),
    _variant("zigzag", "wrong_partner", lambda p, m, r: int(r < m) + int(p + r < m), "late block P+r for 2P-1-r"),
    _variant("zigzag", "one_row_per_quotient", lambda p, m, r: int(r < m) + int(2 * p - 1 - r < m), "c = 1, not 2", 1),
    _variant("contiguous", "ceil_cuts", lambda p, m, r: -(-m * (r + 1) // p) + (m * r) // p, "ceil for the upper cut"),
    _variant("zigzag_pad", "floor_blocks", lambda p, m, r: 0, "rows 2*floor(L/2P): the partial block dropped"),
)


def variant_verdict(variant: WrongClassRow, cp_size: int) -> Status:
    """The verdict lemma 1 gets with the variant's class table (it must be refuted for P >= 2)."""
    query = request_lemma(variant.strategy, cp_size, row=variant.row)
    return check(query.claim, hypotheses=list(query.hypotheses), rlimit=LEMMA_RLIMIT).status


def check_lemma(query: LemmaQuery) -> Verdict:
    return check(query.claim, hypotheses=list(query.hypotheses), rlimit=LEMMA_RLIMIT)
