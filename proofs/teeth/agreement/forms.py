"""Agreement for the spec's batch forms (spec/batch.py) and its term helpers, run by the teeth pass.

The theorems quantify over a batch form's variables under its ``holds``. A form whose facts shut out a batch
of one request, or let in the empty batch, or whose request, token and short-request counts are off by one
at an edge keeps every theorem proved: the counts feed only the CP-active gate, and a gate that never sees
a short request proves as well as one that does. Each form is evaluated here on concrete batches at its
edges and compared with the obvious count of the same batch (``reference.selection.is_cp_active`` for the
gate, ``reference.layout.rank_loads`` for class loads):

- ``requests_batch(P, K)``: K lengths, a length 0 being no request. ``holds`` iff every length >= 0 and one
  is >= 1; ``requests`` counts the lengths >= 1, ``tokens`` is their sum, ``short_requests`` counts the
  lengths in 1..2P-1; the spec's gate on the batch is the reference's.
- ``any_layout(P)``: ``holds`` iff every load >= 0, N >= 0, R >= 1 and 0 <= short <= R (the free counts
  at and one past each end).
- ``class_batch(P)``: the class state of concrete lengths (each length as quotient and remainder mod 2P)
  satisfies ``holds``; its requests, tokens and short requests are the batch's, and its loads (every
  class-encodable strategy) are the reference's.
- ``spec.terms``: ``add``, ``sub`` and ``mul`` on two literals, a literal and a term, and two terms.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

import z3

from cpgraph.proofs.teeth.agreement.tally import BIG, Outcome, Tally, merged, spec_values
from cpgraph.reference.layout import rank_loads as ref_rank_loads
from cpgraph.reference.lists import compact
from cpgraph.reference.selection import is_cp_active
from cpgraph.spec import admission as spec_admission
from cpgraph.spec import arith as spec_arith
from cpgraph.spec import batch as spec_batch
from cpgraph.spec import strategies as spec_strategies
from cpgraph.spec import terms as spec_terms
from cpgraph.spec import zigzag as spec_zigzag
from cpgraph.spec.arith import DivMod
from cpgraph.spec.terms import BoolTerm, Defined, IntTerm, int_term

FORM_CP_SIZES = (1, 2, 3, 4)
SLOTS = 3  # lengths in a requests batch here (a 0 is no request)


def _pinned(variables: Sequence[IntTerm], values: Sequence[int]) -> list[BoolTerm]:
    return [v == x for v, x in zip(variables, values)]


def request_tuples(p: int) -> tuple[tuple[int, ...], ...]:
    """``SLOTS`` lengths at the form's edges: no request, one of 1 in each slot, 2P-1 and 2P side by side,
    every slot short or long, one length past 2**40, a negative length (not a batch)."""
    s = 2 * p
    return (
        (0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1), (s - 1, s, 0), (0, s, s - 1), (s, s, s),
        (s - 1, s - 1, s - 1), (s + 1, 0, 2), (BIG, 0, s - 1), (-1, 1, 0), (2, -1, s),
    )


def requests_forms(cp_sizes: Sequence[int] = FORM_CP_SIZES) -> Outcome:
    """``requests_batch``'s facts and counts, and the gate on it, against the batch's own counts."""
    tally = Tally()
    for p in cp_sizes:
        form = spec_batch.requests_batch(p, SLOTS, "agree.rb")
        for lengths in request_tuples(p):
            pins = _pinned(form.lengths, lengths)
            call = f"requests_batch({p}, {SLOTS}) with lengths {compact(lengths)}"
            holds = spec_values([form.holds], pins)
            valid = all(x >= 0 for x in lengths) and any(x >= 1 for x in lengths)
            tally.compare("requests_batch holds", lambda: call, p, valid, holds if isinstance(holds, str) else holds[0])
            if not valid:
                continue
            live = [x for x in lengths if x >= 1]
            n = sum(live)
            got = spec_values([form.requests, form.tokens, form.short_requests,
                               spec_admission.cp_active(form, n)], pins)
            expected = (len(live), n, sum(1 for x in live if x < 2 * p), is_cp_active(live, num_tokens=n, cp_size=p))
            for i, what in enumerate(("requests", "tokens", "short_requests", "cp_active")):
                tally.compare(f"requests_batch {what}", lambda: call, p, expected[i], got if isinstance(got, str) else got[i])
    return tally.outcome()


def any_layout_forms(cp_sizes: Sequence[int] = FORM_CP_SIZES) -> Outcome:
    """``any_layout``'s facts at and one past each end of its free counts."""
    tally = Tally()
    for p in cp_sizes:
        form = spec_batch.any_layout(p, "agree.al")
        short = form.short_counts[0]
        zero = (0,) * p
        cases = [(zero, 0, 1, 0), (zero, 0, 1, 1), ((BIG,) * p, BIG, BIG, BIG), (zero, 0, 0, 0), (zero, -1, 1, 0),
                 (zero, 0, 1, -1), (zero, 0, 1, 2), (zero, 0, 3, 3)]
        cases += [(tuple(-1 if r == bad else 0 for r in range(p)), 0, 1, 0) for bad in (0, p - 1)]
        for loads, n, r, k in cases:
            valid = min(loads) >= 0 and n >= 0 and r >= 1 and 0 <= k <= r
            pins = [*_pinned(form.loads, loads), form.tokens == n, form.requests == r, short == k]
            got = spec_values([form.holds], pins)
            call = f"any_layout({p}) with loads {compact(loads)}, N={n}, R={r}, short={k}"
            tally.compare("any_layout holds", lambda: call, p, valid, got if isinstance(got, str) else got[0])
    return tally.outcome()


def class_state(lengths: Sequence[int], p: int) -> tuple[int, list[int], list[int]]:
    """(Q, c, s) of concrete lengths >= 1: each length as 2P*q + m, long (q >= 1) or short."""
    s = 2 * p
    quotients, longs, shorts = 0, [0] * s, [0] * s
    for length in lengths:
        q, m = divmod(length, s)
        quotients += q
        (longs if q else shorts)[m] += 1
    return quotients, longs, shorts


def class_forms(cp_sizes: Sequence[int] = FORM_CP_SIZES) -> Outcome:
    """``class_batch``'s facts, counts and loads on the class states of concrete batches."""
    tally = Tally()
    for p in cp_sizes:
        form = spec_batch.class_batch(p, "agree.cb")
        for lengths in [t for t in request_tuples(p) if min(t) >= 0 and max(t) >= 1]:
            live = [x for x in lengths if x >= 1]
            q, c, s = class_state(live, p)
            pins = [form.quotients == q, *_pinned(form.long_counts, c), *_pinned(form.short_counts, s)]
            call = f"class_batch({p}) as the class state of {compact(live)}"
            n = sum(live)
            got = spec_values([form.holds, form.requests, form.tokens, form.short_requests], pins)
            expected = (True, len(live), n, sum(1 for x in live if x < 2 * p))
            for i, what in enumerate(("holds", "requests", "tokens", "short_requests")):
                tally.compare(f"class_batch {what}", lambda: call, p, expected[i], got if isinstance(got, str) else got[i])
            for kind in spec_strategies.CLASS_ENCODABLE:
                loads = form.layout_loads(kind, f"agree.cb.{kind}")
                values = spec_values(list(loads.loads), [*pins, loads.holds])
                tally.compare("class_batch loads", lambda: f"{call} under {kind!r}", p,
                              ref_rank_loads(live, cp_size=p, strategy=kind), values)
    return tally.outcome()


Built = tuple[IntTerm | BoolTerm, BoolTerm]  # a builder's value and the facts defining it
TRUE = z3.BoolVal(True)


def _mixed(tally: Tally, function: str, call: str, expected: int | bool, build: Callable[[], Built],
           facts: Sequence[BoolTerm]) -> None:
    """One builder called with literals and terms mixed: ``build()`` gives its value and facts, read under
    ``facts`` (which pin the terms); a crash is the spec's answer, so a disagreement."""
    try:
        term, holds = build()
    except (TypeError, ValueError, z3.Z3Exception) as exc:
        tally.compare(function, lambda: call, 0, expected, f"spec raised {type(exc).__name__}: {exc}")
        return
    values = spec_values([term], [*facts, holds])
    tally.compare(function, lambda: call, 0, expected, values if isinstance(values, str) else values[0])


def _quotient(d: DivMod) -> Built:
    return d.quotient, d.holds


def _remainder(d: DivMod) -> Built:
    return d.remainder, d.holds


def _value(d: Defined) -> Built:
    return d.value, d.holds


def term_helpers() -> Outcome:
    """``add``, ``sub`` and ``mul`` of spec/terms.py: literals fold, a literal with a term and two terms
    evaluate to the integer result."""
    tally = Tally()
    x, y = z3.Int("agree.x"), z3.Int("agree.y")
    for name, fn, expect in (("add", spec_terms.add, operator.add), ("sub", spec_terms.sub, operator.sub),
                             ("mul", spec_terms.mul, operator.mul)):
        for a, b in ((7, 3), (-2, 5), (0, BIG)):
            for left, right, shown in ((a, b, f"{a}, {b}"), (a, y, f"{a}, y={b}"), (x, b, f"x={a}, {b}"),
                                       (x, y, f"x={a}, y={b}"), (z3.IntVal(a), b, f"IntVal({a}), {b}")):
                _mixed(tally, f"terms.{name}", f"{name}({shown})", expect(a, b), lambda: (fn(left, right), TRUE),
                       [x == a, y == b])
    return tally.outcome()


def folding_builders() -> Outcome:
    """The spec's builders that fold literals to numerals (spec/arith.py, spec/strategies.py DualChunkSwap,
    spec/zigzag.py), each called with every mix of a literal and a term: the folded path and the term path
    give the same value, and a mix never takes the literal path."""
    tally = Tally()
    x, y = z3.Int("agree.fold.x"), z3.Int("agree.fold.y")
    for a, b in ((7, 3), (12, 4), (0, 5)):
        pins = [x == a, y == b]
        up = -(-a // b)
        for left, right, shown in ((a, y, f"{a}, y={b}"), (x, b, f"x={a}, {b}"), (x, y, f"x={a}, y={b}"), (a, b, f"{a}, {b}")):
            _mixed(tally, "arith.divmod_by", f"divmod_by({shown})", a // b,
                   lambda: _quotient(spec_arith.divmod_by(left, right, "agree.fold.d")), pins)
            _mixed(tally, "arith.divmod_by", f"divmod_by({shown}).remainder", a % b,
                   lambda: _remainder(spec_arith.divmod_by(left, right, "agree.fold.d")), pins)
            _mixed(tally, "arith.ceil_div", f"ceil_div({shown})", up,
                   lambda: _value(spec_arith.ceil_div(left, right, "agree.fold.c")), pins)
            _mixed(tally, "arith.align_up", f"align_up({shown})", b * up,
                   lambda: _value(spec_arith.align_up(left, right, "agree.fold.u")), pins)
    for length, chunk in ((10, 3), (5, 3), (2, 3)):
        pins = [x == length, y == chunk]
        mixes = ((length, y, f"{length}, c={chunk}"), (x, chunk, f"L={length}, {chunk}"), (x, y, f"L={length}, c={chunk}"))
        for j in (0, 1, 3):
            for left, right, shown in mixes:
                _mixed(tally, "strategies.dual_chunk_swap_chunk", f"dual_chunk_swap_chunk({shown}, {j})",
                       min(chunk, max(0, length - j * chunk)),
                       lambda: (int_term(spec_strategies.dual_chunk_swap_chunk(left, right, j)), TRUE), pins)
        for p in (2, 3):
            for left, right, shown in mixes[:2]:
                _mixed(tally, "strategies.is_short_for_dcp", f"is_short_for_dcp({shown}, {p})", (2 * p - 1) * chunk >= length,
                       lambda: (spec_strategies.is_short_for_dcp(left, right, p), TRUE), pins)  # a mix: a term
    for length, p in ((13, 2), (8, 3), (3, 4)):
        q, m = divmod(length, 2 * p)
        symbolic = spec_zigzag.zigzag_split(x, p, "agree.fold.z")
        for j in (0, p, 2 * p - 1):
            _mixed(tally, "zigzag.zigzag_block_len", f"zigzag_block_len(L={length} at P={p}, {j})", q + (j < m),
                   lambda: (spec_zigzag.zigzag_block_len(symbolic, j), symbolic.holds), [x == length])
        for r in range(p):
            expected = sum(q + (blk < m) for blk in (r, 2 * p - 1 - r))
            for shown, length_term, rank in ((f"L={length}, rank {r}", x, r), (f"{length}, rank r={r}", length, y)):
                split = spec_zigzag.zigzag_split(length_term, p, "agree.fold.r")
                _mixed(tally, "zigzag.zigzag_rank_load", f"zigzag_rank_load({shown}) at P={p}", expected,
                       lambda: (spec_zigzag.zigzag_rank_load(split, rank, p), split.holds), [x == length, y == r])
    return tally.outcome()


def batch_forms() -> Outcome:
    """Every form and the term helpers, as one family."""
    return merged((requests_forms(), any_layout_forms(), class_forms(), term_helpers(), folding_builders()))
