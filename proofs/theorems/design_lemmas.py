"""The abstraction lemmas behind ``cpgraph review``'s count encoding (spec/design_counts.py), with wrong variants.

The review describes a batch of any number of requests by the count of requests in each remainder class
(mod M, a multiple of the strategy's S) and the total quotient. That is exact when:

1. ``class_loads_equal_request_loads`` (request): one request of any length L >= 0 has, on every rank,
   exactly the loads the encoding gives it: from the row's ``regular_from(P)`` = T on, written L = M*q + m,
   a count vector with a single 1 at class m and quotient q (c*((M/S)*q + m div S) + e[m mod S][r]); below
   T, a single 1 at its own length's count with that length's constant loads. Its tokens are L either
   way. The loads compared with are the spec's strategy table's, or (dual_chunk_swap rows, which the spec
   table does not state) the definition's terms in spec/design_dcs.py (c = ceil(L/2P), chunk j =
   min(c, max(0, L - j*c)), chunks r and 2P-1-r). Interleave, whose loads depend on the total only: the
   spec's loads of a batch equal the encoding's loads of its total.
2. ``count_loads_add_up`` (step): the encoding is additive: the loads and tokens of the counts a + b
   (quotients Q_a + Q_b, short counts added length by length) are the sums of those of a and b, rank by
   rank. With (1) and the base (no requests: zero loads), by induction over requests the encoding's loads
   of a batch's counts equal the per-request loads of the batch, for any number of requests.

Each lemma is checked for one (strategy, P, M) per call (``design_lemmas``, run by the review for the
design's own P) and by tests/unit/test_design_lemmas.py for zigzag, contiguous and interleave at
P = 1..16, 32, 64 and for the dual_chunk_swap rows at every P the review takes (their short classes bound
it: spec.design_counts.MAX_SHORT_CLASSES). ``VARIANTS``
are wrong class tables that must be refuted (tests/unit/test_design_lemmas.py asserts it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import z3

from cpgraph.spec.logic import And, If, Implies, Sum
from cpgraph.proofs.engine.check import Status, Verdict, check
from cpgraph.spec import design_dcs
from cpgraph.spec.arith import divmod_by
from cpgraph.spec.design_counts import CLASS_TABLE, ClassRow, Counts, class_row, counts_loads
from cpgraph.spec.strategies import strategy as strategy_of
from cpgraph.spec.terms import BoolTerm, Loads, all_of

LEMMA_RLIMIT = 50_000_000
CP_MAX = 64  # the scope the tests prove: every P in 1..CP_MAX, every strategy


@dataclass(frozen=True)
class LemmaQuery:
    """One lemma instance: ``hypotheses => claim``, and ``hypotheses => case`` for each of ``cases`` (parts
    checked as queries of their own: the short lengths' ground claims, which z3 folds at once alone but
    which slow the symbolic part down when conjoined with it)."""

    name: str
    statement: str
    claim: BoolTerm
    hypotheses: tuple[BoolTerm, ...]
    cases: tuple[BoolTerm, ...] = ()


def _single(modulus: int, length: z3.ArithRef, name: str, regular_from: int = 0) -> tuple[Counts, BoolTerm]:
    """The counts of a one-request batch of length L (read from ``regular_from`` on): a 1 at class L mod M,
    quotient L div M (the split's variables are ``{name}.q`` and ``{name}.m``: the same as the spec's own
    split of L by M, when it has one, so the solver need not re-derive that two splits of one length agree)."""
    split = divmod_by(length, modulus, name)
    counts = tuple(If(split.remainder == k, z3.IntVal(1), z3.IntVal(0)) for k in range(modulus))
    return Counts(modulus, counts, split.quotient, z3.IntVal(1), length, regular_from, z3.BoolVal(True)), split.holds


def _short(modulus: int, length: int, regular_from: int) -> Counts:
    """The counts of a one-request batch of a short length (below ``regular_from``): its own count is 1."""
    short = ((length, z3.IntVal(1)),)  # no class counts at all (none is 1)
    return Counts(modulus, (), z3.IntVal(0), z3.IntVal(1), z3.IntVal(length), regular_from, z3.BoolVal(True), short)


def request_lemma(strategy: str, cp_size: int, modulus: int | None = None, *, row: ClassRow | None = None) -> LemmaQuery:
    """Lemma 1 for one strategy, P and modulus M (default: the strategy's own S); ``row`` swaps in a wrong
    class table (a variant)."""
    p = cp_size
    got = class_row(strategy)
    length = z3.Int("L")
    if got.modulus is None:
        spec_row = strategy_of(strategy)
        # interleave: the spec lays out the total; the encoding reads the total only
        lengths = (z3.Int("L0"), z3.Int("L1"), z3.Int("L2"))
        spec_loads = spec_row.batch_loads(lengths, p, "spec.total")
        batch = Counts(1, (), Sum(list(lengths)), z3.IntVal(3), Sum(list(lengths)), 0, z3.BoolVal(True))
        ours = counts_loads(strategy, p, batch, "spec")  # the total split by P under the spec's own name
        claim = all_of(a == b for a, b in zip(spec_loads.loads, ours.loads))
        return LemmaQuery(
            "class_loads_equal_request_loads",
            f"{strategy}, P={p}: the loads of any batch equal the encoding's loads of its total",
            claim,
            (all_of(x >= 0 for x in lengths), spec_loads.holds, ours.holds),
        )
    used = got if row is None else row
    m_total = modulus or got.modulus(p)
    regular = used.regular_from(p)
    single, split_holds = _single(m_total, length, "spec", regular)
    ours = counts_loads(strategy, p, single, "enc", row=row)
    spec_loads = _request_loads(got, strategy)(length, p, "spec")
    tokens = m_total * single.quotient + Sum([k * c for k, c in enumerate(single.counts)])
    claim = And(all_of(a == b for a, b in zip(spec_loads.loads, ours.loads)), tokens == length)
    if not regular:
        return LemmaQuery(
            "class_loads_equal_request_loads",
            f"{strategy}, P={p}, classes mod {m_total}: one request of any length L has, on every rank, the "
            "class table's loads c*q + e[L mod S][r], and tokens M*q + m = L",
            claim,
            (length >= 0, split_holds, spec_loads.holds),
        )
    # below T each length is its own class: the claim at every such length is ground (z3 folds it)
    shorts = []
    for short in range(regular):
        encoded = counts_loads(strategy, p, _short(m_total, short, regular), f"enc.s{short}", row=row)
        defined = _request_loads(got, strategy)(z3.IntVal(short), p, f"spec.s{short}")
        shorts.append(And(defined.holds, all_of(a == b for a, b in zip(defined.loads, encoded.loads))))
    return LemmaQuery(
        "class_loads_equal_request_loads",
        f"{strategy}, P={p}, classes mod {m_total}: one request of any length L >= {regular} has, on every rank, "
        f"the class table's loads c*q + e[L mod S][r] and tokens M*q + m = L; every L < {regular} is its own "
        "class with its own loads",
        Implies(length >= regular, claim),
        (length >= 0, split_holds, spec_loads.holds),
        (all_of(shorts),),
    )


def _request_loads(row: ClassRow, strategy: str) -> Callable[[z3.ArithRef, int, str], Loads]:
    """The loads the lemma compares the encoding with: the row's own definition, or the spec's strategy
    table's per-request loads (a variant swaps the encoding only, never these)."""
    if row.definition is not None:
        return row.definition
    request_loads = strategy_of(strategy).request_loads
    if request_loads is None:  # pragma: no cover - a row with classes has per-request loads
        raise ValueError(f"strategy {strategy!r} has classes but no per-request loads")
    return request_loads


def step_lemma(strategy: str, cp_size: int, modulus: int | None = None) -> LemmaQuery:
    """Lemma 2: the encoding's loads and tokens add up over a split of the counts (the induction step),
    short lengths (counted apart below the row's ``regular_from``) included."""
    got = class_row(strategy)
    m_total = modulus or (got.modulus(cp_size) if got.modulus is not None else 1)
    regular = got.regular_from(cp_size) if got.modulus is not None else 0

    def counts(name: str) -> Counts:
        cs = tuple(z3.Int(f"{name}.c{k}") for k in range(m_total)) if m_total > 1 else ()
        short = tuple((s, z3.Int(f"{name}.s{s}")) for s in range(1, regular))
        q = z3.Int(f"{name}.Q")
        tokens = m_total * q + Sum([k * c for k, c in enumerate(cs)] + [s * c for s, c in short] or [z3.IntVal(0)])
        requests = Sum(list(cs) + [c for _, c in short] or [z3.IntVal(0)])
        return Counts(m_total, cs, q, requests, tokens, regular, z3.BoolVal(True), short)

    a, b = counts("a"), counts("b")
    both = Counts(
        m_total,
        tuple(x + y for x, y in zip(a.counts, b.counts)),
        a.quotient + b.quotient,
        a.requests + b.requests,
        a.tokens + b.tokens,
        regular,
        z3.BoolVal(True),
        tuple((s, x + y) for (s, x), (_, y) in zip(a.short, b.short)),
    )
    la, lb, lab = (counts_loads(strategy, cp_size, c, f"step{i}") for i, c in enumerate((a, b, both)))
    if got.modulus is None:
        # interleave's loads are not additive rank by rank (the total is re-split); its lemma 1 covers
        # every batch directly, so the step states conservation of tokens only
        claim = Sum(list(lab.loads)) == Sum(list(la.loads)) + Sum(list(lb.loads))
    else:
        claim = all_of(x == y + w for x, y, w in zip(lab.loads, la.loads, lb.loads))
    shorts = tuple(c for _, c in (*a.short, *b.short))
    hyps = tuple(x >= 0 for x in (*a.counts, *b.counts, *shorts, a.quotient, b.quotient)) + (la.holds, lb.holds, lab.holds)
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
        out.append((query.name, query.statement, check_lemma(query)))
    return tuple(out)


# -- wrong variants: class tables that must be refuted ------------------------------------------------------


@dataclass(frozen=True)
class WrongClassRow:
    """A deliberately wrong class table row for one strategy: request_lemma must refute it (P >= 2)."""

    name: str
    strategy: str
    row: ClassRow
    description: str


def _variant(
    strategy: str,
    name: str,
    excess: Callable[[int, int, int], int] | None,
    description: str,
    per_quotient: int | None = None,
    **fields: Any,
) -> WrongClassRow:
    base = CLASS_TABLE[strategy]
    row = replace(base, per_quotient=per_quotient or base.per_quotient, excess=excess or base.excess, **fields)
    return WrongClassRow(name, strategy, row, description)


def _period_split(p: int, m: int, r: int) -> int:
    """loads(m) itself: loads(L) = q*loads(2P) + loads(L mod 2P), the split that holds for zigzag."""
    return design_dcs.request_loads(m, p)[r]


VARIANTS: tuple[WrongClassRow, ...] = (
    _variant("zigzag", "early_block_only", lambda p, m, r: int(r < m), "forgets the mirrored late block 2P-1-r"),
    _variant("zigzag", "off_by_one", lambda p, m, r: int(r <= m) + int(2 * p - 1 - r <= m), "[r <= m] for [r < m]"),
    _variant("zigzag", "wrong_partner", lambda p, m, r: int(r < m) + int(p + r < m), "late block P+r for 2P-1-r"),
    _variant("zigzag", "one_row_per_quotient", lambda p, m, r: int(r < m) + int(2 * p - 1 - r < m), "c = 1, not 2", 1),
    _variant("contiguous", "ceil_cuts", lambda p, m, r: -(-m * (r + 1) // p) + (m * r) // p, "ceil for the upper cut"),
    _variant("dual_chunk_swap", "period_split", _period_split,
             "q*loads(2P) + loads(L mod 2P) at every length (false below 2P(2P-3)+2: L = 9, P = 4 is (2, 2, 2, 3))",
             regular_from=lambda p: 0),
    _variant("dual_chunk_swap", "zigzag_remainder", lambda p, m, r: int(r < m) + int(2 * p - 1 - r < m),
             "zigzag's excess (the remainder to the leading chunks) for the short last chunk"),
    _variant("dual_chunk_swap", "threshold_one_short", None,
             "the closed form from 2P(2P-3)+1 (one length too early: L = 2P(2P-3)+1 has two short chunks)",
             regular_from=lambda p: max(0, design_dcs.regular_from(p) - 1)),
    _variant("dual_chunk_swap_dcp", "dcp_not_copied", None, "short prefills split, not copied to every rank",
             short_loads=lambda length, p: design_dcs.request_loads(length, p)),
)


def variant_verdict(variant: WrongClassRow, cp_size: int) -> Status:
    """The verdict lemma 1 gets with the variant's class table (it must be refuted for P >= 2)."""
    return check_lemma(request_lemma(variant.strategy, cp_size, row=variant.row)).status


def check_lemma(query: LemmaQuery) -> Verdict:
    """The lemma's verdict: its claim and each case checked in turn; the first that is not proved decides
    (its verdict, with the seconds of every query so far), else proved."""
    seconds = 0.0
    for claim in (query.claim, *query.cases):
        verdict = check(claim, hypotheses=list(query.hypotheses), rlimit=LEMMA_RLIMIT)
        seconds += verdict.seconds
        if not verdict.proved:
            return replace(verdict, seconds=seconds)
    return replace(verdict, seconds=seconds)
