"""The claim side of the end-to-end theorems: each invariant restated from its definition, never from the
spec's builders (proofs/theorems/end_to_end.py proves the spec's admission and replay against these).

- a padding window n <= B <= F*n for F = a/b is ``b*B <= a*n`` (no floor, no spec window);
- the rows a layout needs are "the least multiple of A at or above every load", as a relation;
- a bucket fits when it is within the window, recorded, with capacity >= those rows;
- "listed with room" names the bucket's own capacity and every rank's rows;
- CP-active is P > 1, n >= 2P and no request shorter than 2P.
The alignment A comes from the documented rule (``documented_align``), not from the spec's strategy table.

Under the local keying (vLLM 0.29 on) the claims are restated over the key, again from definitions: the
key m is "the least value at or above every load" (the largest load), a listed size fits when it is at
or above m, and a size holds its own rows on every rank (``sizes_holding_themselves``).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import z3

from cpgraph.proofs.engine.constants import constant_names
from cpgraph.spec.logic import And, Implies
from cpgraph.spec.batch import LiveBatch
from cpgraph.spec.selection import CaptureList, Selection
from cpgraph.spec.terms import BoolTerm, IntTerm, all_of, any_of

# docs/semantics.md: 2P for zigzag (two blocks a rank), P for interleave and contiguous, none (A = 1) for
# vLLM's DualChunkSwap rows (vLLM pads a rank's rows to the graph size and aligns nothing).
ALIGN_FACTOR = {"zigzag": 2, "interleave": 1, "contiguous": 1, "dual_chunk_swap": 0, "dual_chunk_swap_replicated": 0,
                "dual_chunk_swap_dcp": 0}


def documented_align(strategy: str, cp_size: int) -> int:
    """A for ``strategy`` at P ranks by the documented rule: factor * P, or 1 where the factor is 0."""
    factor = ALIGN_FACTOR[strategy]
    return factor * cp_size if factor else 1


def within_window(bucket: IntTerm, n: IntTerm, factor: Fraction) -> BoolTerm:
    """n <= B <= F*n for F = a/b, as b*B <= a*n (no floor, no spec window)."""
    return And(n <= bucket, factor.denominator * bucket <= factor.numerator * n)


def rows_needed(loads: Sequence[IntTerm], align_size: int, name: str) -> tuple[IntTerm, BoolTerm]:
    """The rows every rank pads to, as a relation: the least multiple of A that is >= every load."""
    k = z3.Int(f"{name}.k")
    need = align_size * k
    facts = And(all_of(need >= x for x in loads), any_of(need - align_size < x for x in loads))
    return need, facts


def bucket_fits(capture: CaptureList, i: int, n: IntTerm, factor: Fraction, need: IntTerm) -> BoolTerm:
    """Bucket i is in the fitting set: within the window, recorded, with capacity >= the rows needed."""
    return And(within_window(capture.buckets[i], n, factor), capture.recorded[i], capture.capacities[i] >= need)


def is_listed_with_room(capture: CaptureList, bucket: IntTerm, loads: Sequence[IntTerm]) -> BoolTerm:
    """``bucket`` is listed with a recorded capacity, and whichever listed bucket it is holds every rank's
    rows (stated per bucket, so a refutation names one bucket and one rank)."""
    listed = any_of(And(bucket == b, rec) for b, rec in zip(capture.buckets, capture.recorded))
    room = all_of(
        Implies(bucket == b, all_of(c >= x for x in loads)) for b, c in zip(capture.buckets, capture.capacities)
    )
    return And(listed, room)


# The strategies whose CP-activity gate asks for tokens, not blocks (stated here independently of the spec's table).
GATED_BY_TOKENS: frozenset[str] = frozenset({"interleave"})


def is_active(batch: LiveBatch, n: IntTerm, strategy: str = "zigzag") -> BoolTerm:
    """CP-active, restated per strategy: P > 1, n >= 2P and every request at least 2P long; under
    interleave (which spreads tokens, not blocks) P > 1 and the batch's tokens at least P."""
    p = batch.cp_size
    if strategy in GATED_BY_TOKENS:
        return And(z3.BoolVal(p > 1), batch.tokens >= p)
    return And(z3.BoolVal(p > 1), n >= 2 * p, all_of(s == 0 for s in batch.short_counts))


# -- lemmas: one builder each, used as the steps of every chain that needs them --------------------------------


def same_rows(first: IntTerm, second: IntTerm) -> tuple[str, BoolTerm]:
    """Two independently built row counts of the same layout agree."""
    return "rows agree", first == second


def same_decision(first: Selection, second: Selection) -> tuple[str, BoolTerm]:
    """Two decisions agree: the same admit verdict, and the same bucket when admitted."""
    return "decisions agree", And(first.admitted == second.admitted, Implies(first.admitted, first.bucket == second.bucket))


def chosen_bucket_is_one_with_room(capture: CaptureList, chosen: Selection, rows: IntTerm) -> tuple[str, BoolTerm]:
    """An admitted bucket is some listed bucket recorded with a capacity >= the rows the decision required (the
    scan's own shape; ``chosen_bucket_has_room`` follows from it on a sorted list, and on a 32-bucket list z3 is
    unstable across seeds proving that one from the scan directly)."""
    some = any_of(And(chosen.bucket == b, rec, c >= rows)
                  for b, c, rec in zip(capture.buckets, capture.capacities, capture.recorded))
    return "chosen bucket is one with room", Implies(chosen.admitted, some)


def chosen_bucket_has_room(capture: CaptureList, chosen: Selection, rows: IntTerm) -> tuple[str, BoolTerm]:
    """An admitted bucket is listed with a recorded capacity >= the rows the decision required."""
    return "chosen bucket has room", Implies(chosen.admitted, is_listed_with_room(capture, chosen.bucket, (rows,)))


def layout_within_rows(loads: Sequence[IntTerm], rows: IntTerm) -> tuple[str, BoolTerm]:
    """Every rank's rows of a layout are within the rows computed for it."""
    return "layout within rows", all_of(x <= rows for x in loads)


# -- the local keying, restated --------------------------------------------------------------------------------


def sizes_holding_themselves(capture: CaptureList) -> CaptureList:
    """The capture list as the local keying reads it: every listed size has a capacity, the size itself."""
    return CaptureList(capture.buckets, capture.buckets, tuple(z3.BoolVal(True) for _ in capture.buckets))


def size_fits(capture: CaptureList, i: int, key: IntTerm) -> BoolTerm:
    """Size i fits a batch with key m: it is at or above m (it holds m rows on every rank)."""
    return capture.buckets[i] >= key


def _constants(terms: Sequence[z3.ExprRef], prefix: str) -> set[str]:
    """The names (past ``prefix``) of the integer constants named under ``prefix`` in ``terms``."""
    return {name[len(prefix):] for name in constant_names(terms, ints_only=True) if name.startswith(prefix)}


def same_definitions(
    first: Sequence[z3.ExprRef], first_prefix: str, second: Sequence[z3.ExprRef], second_prefix: str
) -> BoolTerm:
    """The fresh variables two builds of the same terms define for the same thing agree: each integer
    constant named ``{first_prefix}.X`` in ``first`` equals ``{second_prefix}.X`` in ``second`` (a chunk size,
    a quotient). A lemma (proved from both builds' facts, e.g. divmod uniqueness), never an assumption: it
    keeps the steps that compare two independently built layouts small."""
    mine, theirs = _constants(first, f"{first_prefix}."), _constants(second, f"{second_prefix}.")
    return all_of(z3.Int(f"{first_prefix}.{k}") == z3.Int(f"{second_prefix}.{k}") for k in sorted(mine & theirs))
