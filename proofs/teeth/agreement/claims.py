"""Agreement for the claim side (proofs/theorems/claims.py), run by the teeth pass: every builder the theorems state
their invariants with, evaluated on concrete inputs at its edges against its definition written as plain
Python (and the reference where it has one).

The claims are the theorems' statements. A claim loosened by one (a window that admits B = n - 1, rows
one short of the busiest load) is caught by a wrong variant it no longer refutes; a lemma loosened or turned
false is not: the chains prove their lemmas guarded (where the claim fails), so a lemma's content never
changes a verdict while the claim holds. Here each builder is held to what its docstring says, lemmas
included:

- ``documented_align`` against the reference's strategy table (A at P = 1..8);
- ``within_window`` (n <= B <= F*n as b*B <= a*n), ``rows_needed`` (the least multiple of A at or above
  every load, read back through its facts), ``bucket_fits``, ``is_listed_with_room`` and ``is_active``
  (against ``reference.selection.is_cp_active``);
- the lemmas ``same_rows``, ``same_decision``, ``chosen_bucket_is_one_with_room``, ``chosen_bucket_has_room``,
  ``layout_within_rows``;
- the local keying's ``sizes_holding_themselves`` and ``size_fits``; ``same_definitions`` on two builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import z3

from cpgraph.spec.logic import And
from cpgraph.proofs.theorems import claims
from cpgraph.proofs.teeth.agreement.tally import Outcome, Tally, merged, spec_values
from cpgraph.reference import strategies as ref_strategies
from cpgraph.reference.capacity import align_up
from cpgraph.reference.selection import is_cp_active, window_top
from cpgraph.spec.batch import RequestsBatch
from cpgraph.spec.selection import CaptureList, Selection
from cpgraph.spec.terms import BoolTerm, IntTerm

WINDOW_FACTORS = (Fraction(1), Fraction(5, 4), Fraction(3, 2), Fraction(2))
LOAD_SETS = ((0,), (5,), (4, 7, 6), (8, 8), (0, 0, 1), (13, 1, 12, 2))


def _ints(values: Sequence[int]) -> tuple[IntTerm, ...]:
    return tuple(z3.IntVal(v) for v in values)


def _truth(tally: Tally, function: str, call: str, expected: bool, term: BoolTerm, facts: Sequence[BoolTerm] = ()) -> None:
    got = spec_values([term], facts)
    tally.compare(function, lambda: call, 0, expected, got if isinstance(got, str) else got[0])


def _capture(buckets: Sequence[int], table: dict[int, int]) -> CaptureList:
    return CaptureList(_ints(buckets), _ints([table.get(b, 0) for b in buckets]),
                       tuple(z3.BoolVal(b in table) for b in buckets))


def alignment_and_rows() -> Outcome:
    """``documented_align`` against the reference's table; ``rows_needed`` against align_up of the max."""
    tally = Tally()
    for sid, row in ref_strategies.STRATEGY_TABLE.items():
        for p in range(1, 9):
            tally.compare("documented_align", lambda: f"documented_align({sid!r}, {p})", p, row.align_size(p),
                          claims.documented_align(sid, p))
    for loads in LOAD_SETS:
        for a in (1, 2, 3, 8):
            need, facts = claims.rows_needed(_ints(loads), a, "agree.rows")
            got = spec_values([need], [facts])
            tally.compare("rows_needed", lambda: f"rows_needed({list(loads)}, {a})", 0, align_up(max(loads), a),
                          got if isinstance(got, str) else got[0])
    return tally.outcome()


def windows_and_fits() -> Outcome:
    """``within_window``, ``bucket_fits`` and ``is_listed_with_room`` at their edges."""
    tally = Tally()
    for factor in WINDOW_FACTORS:
        for n in (1, 7, 8, 13):
            top = window_top(n, factor)
            for b in sorted({n - 1, n, n + 1, top - 1, top, top + 1}):
                _truth(tally, "within_window", f"within_window({b}, {n}, {factor!r})", n <= b <= top,
                       claims.within_window(z3.IntVal(b), z3.IntVal(n), factor))
    buckets, table = (8, 12, 16, 24), {8: 3, 12: 5, 24: 9}  # 16 captured without a recorded capacity
    capture = _capture(buckets, table)
    for i, b in enumerate(buckets):
        for need in (table.get(b, 0) - 1, table.get(b, 0), table.get(b, 0) + 1):
            for n in (b // 2, b // 2 + 1, b, b + 1):
                expected = n <= b <= 2 * n and b in table and table[b] >= need
                _truth(tally, "bucket_fits", f"bucket_fits({list(buckets)}, {table}, i={i}, n={n}, F=2, need={need})",
                       expected, claims.bucket_fits(capture, i, z3.IntVal(n), Fraction(2), z3.IntVal(need)))
    for bucket in (*buckets, 10, 0):
        for loads in ((1, 3), (3, 3), (3, 4), (9, 2)):
            expected = bucket in table and all(table[bucket] >= x for x in loads)
            _truth(tally, "is_listed_with_room", f"is_listed_with_room({list(buckets)}, {table}, {bucket}, {list(loads)})",
                   expected, claims.is_listed_with_room(capture, z3.IntVal(bucket), _ints(loads)))
    return tally.outcome()


def gate_and_lemmas() -> Outcome:
    """``is_active`` against the reference's gate; the chain lemmas' truth tables; the local keying's."""
    tally = Tally()
    for p in (1, 2, 3, 4):
        s = 2 * p
        for lengths, n in (((s,), s), ((s - 1,), s), ((s,), s - 1), ((s, s - 1), 2 * s), ((1, s + 3), s + 4), ((s, s), 2 * s)):
            batch = RequestsBatch(p, _ints(lengths), z3.BoolVal(True))
            for strategy in ("zigzag", "interleave"):
                _truth(tally, "is_active", f"is_active({list(lengths)}, n={n}, {strategy!r}) at cp_size={p}",
                       is_cp_active(list(lengths), num_tokens=n, cp_size=p, strategy=strategy),
                       claims.is_active(batch, z3.IntVal(n), strategy))
        for lengths in ((1,), (p - 1 or 1,), (p,), (1, p - 1 or 1)):  # interleave's own edge: the sum at P
            batch = RequestsBatch(p, _ints(lengths), z3.BoolVal(True))
            n = max(sum(lengths), 1)
            _truth(tally, "is_active", f"is_active({list(lengths)}, n={n}, 'interleave') at cp_size={p}",
                   is_cp_active(list(lengths), num_tokens=n, cp_size=p, strategy="interleave"),
                   claims.is_active(batch, z3.IntVal(n), "interleave"))
    for a, b in ((3, 3), (3, 4), (0, 0)):
        _truth(tally, "same_rows", f"same_rows({a}, {b})", a == b, claims.same_rows(z3.IntVal(a), z3.IntVal(b))[1])
    pairs = (((True, 5), (True, 5)), ((True, 5), (True, 6)), ((True, 5), (False, 5)), ((False, 5), (False, 6)),
             ((False, 5), (True, 5)))
    for (fa, fb), (sa, sb) in pairs:
        first, second = Selection(z3.BoolVal(fa), z3.IntVal(fb)), Selection(z3.BoolVal(sa), z3.IntVal(sb))
        _truth(tally, "same_decision", f"same_decision(({fa}, {fb}), ({sa}, {sb}))",
               fa == sa and (not fa or fb == sb), claims.same_decision(first, second)[1])
    capture = _capture((8, 16), {8: 4})
    for admitted, bucket, rows in ((True, 8, 4), (True, 8, 5), (True, 16, 1), (False, 16, 9), (True, 12, 1)):
        expected = not admitted or (bucket == 8 and 4 >= rows)
        _truth(tally, "chosen_bucket_has_room", f"chosen_bucket_has_room([8, 16], {{8: 4}}, ({admitted}, {bucket}), {rows})",
               expected, claims.chosen_bucket_has_room(capture, Selection(z3.BoolVal(admitted), z3.IntVal(bucket)), z3.IntVal(rows))[1])
    for admitted, bucket, rows in ((True, 8, 4), (True, 8, 5), (True, 16, 1), (True, 16, 0), (False, 16, 9), (True, 12, 1), (True, 9, 4)):
        expected = not admitted or (bucket == 8 and 4 >= rows)
        _truth(tally, "chosen_bucket_is_one_with_room", f"chosen_bucket_is_one_with_room([8, 16], {{8: 4}}, ({admitted}, "
               f"{bucket}), {rows})", expected,
               claims.chosen_bucket_is_one_with_room(capture, Selection(z3.BoolVal(admitted), z3.IntVal(bucket)), z3.IntVal(rows))[1])
    for loads, rows in (((3, 4), 4), ((3, 5), 4), ((0,), 0)):
        _truth(tally, "layout_within_rows", f"layout_within_rows({list(loads)}, {rows})", max(loads) <= rows,
               claims.layout_within_rows(_ints(loads), z3.IntVal(rows))[1])
    sizes = claims.sizes_holding_themselves(_capture((4, 9), {}))
    for i, b in enumerate((4, 9)):
        _truth(tally, "sizes_holding_themselves", f"sizes_holding_themselves([4, 9]) at {i}", True,
               And(sizes.buckets[i] == b, sizes.capacities[i] == b, sizes.recorded[i]))
        for key in (b - 1, b, b + 1):
            _truth(tally, "size_fits", f"size_fits([4, 9], {i}, key={key})", b >= key, claims.size_fits(sizes, i, z3.IntVal(key)))
    x, y, z = z3.Int("agree.a.q"), z3.Int("agree.b.q"), z3.Int("agree.a.only")
    same = claims.same_definitions([x + z], "agree.a", [y], "agree.b")
    _truth(tally, "same_definitions", "same_definitions(a.q, b.q) with a.q = 3, b.q = 3", True, same, [x == 3, y == 3, z == 0])
    _truth(tally, "same_definitions", "same_definitions(a.q, b.q) with a.q = 3, b.q = 4", False, same, [x == 3, y == 4, z == 0])
    return tally.outcome()


def claim_builders() -> Outcome:
    """Every part, as one family."""
    return merged((alignment_and_rows(), windows_and_fits(), gate_and_lemmas()))
