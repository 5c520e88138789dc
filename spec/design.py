"""Design-level terms: a whole runner configuration (selector, layout basis, per-rank capacities) on a batch.

Builds on spec.selection / spec.invariants (no solver calls). Two batch models:

- exact: R symbolic lengths (slots), each >= 2P when present (CP-active); trailing slots may be absent,
  so one model covers every batch of at most R requests. Loads come from spec.strategies.
- any_requests: the sound abstraction used for "any number of requests": n tokens, R >= 1 requests
  (n >= 2P*R), busiest rank M with n <= P*M <= n + R(P-1) (the per-request lemma summed by induction;
  interleave has M = ceil(n/P) exactly). A property proved here holds for every batch; a model found
  here may be spurious and must be confirmed on the exact model.

Selector variants: ``search`` (spec.selection.scan_select: smallest bucket in [n, F*n] with room) and
``smallest`` (pad to the first bucket >= n in scan order, stop above F*n, no capacity check).
Layout basis: ``live`` (replay lays out the live lengths) or ``padded`` (the pad B - n folded into the
last request before the layout is built).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

from cpgraph.reference.invariants import SAFETY
from cpgraph.spec.arith import align_up
from cpgraph.spec.capacity import required_local_tokens
from cpgraph.spec.invariants import (
    captured_bucket,
    minimal_bucket,
    no_needless_fallback,
    padding_limit,
    rank_consensus,
)
from cpgraph.spec.selection import (
    CaptureList,
    Selection,
    Window,
    concrete_capture_list,
    padding_window,
    same_selection,
    scan_select,
)
from cpgraph.spec.strategies import rank_loads
from cpgraph.spec.terms import BoolTerm, Defined, IntTerm, all_of, any_of, indicator, int_term



@dataclass(frozen=True)
class DesignSpec:
    """A design as plain numbers: buckets in scan order, per-rank recorded capacities (bucket, rows)."""

    strategy: str
    cp_size: int
    align_size: int
    buckets: tuple[int, ...]
    max_padding_factor: int
    layout_basis: str
    selector: str
    capacities: tuple[tuple[tuple[int, int], ...], ...]

    def capture_list(self, rank: int) -> CaptureList:
        return concrete_capture_list(self.buckets, dict(self.capacities[rank]))


RowsAt = Callable[[IntTerm, str], Defined]


@dataclass(frozen=True)
class Batch:
    """A symbolic CP batch seen by one design: tokens, request count, live rows, and rows replay needs."""

    num_tokens: IntTerm
    requests: IntTerm
    lengths: tuple[IntTerm, ...]  # empty for the any_requests abstraction
    active: BoolTerm  # CP-active for this design (P > 1, every length >= 2P)
    required: IntTerm  # required_local_tokens from the live lengths
    holds: BoolTerm
    replay_rows: RowsAt  # rows the replay layout needs when padded to a bucket term


def exact_lengths(slots: int, name: str, *, exact: bool) -> tuple[tuple[IntTerm, ...], BoolTerm]:
    """``slots`` lengths; with ``exact`` all present (>= 1), else trailing ones may be 0 (absent)."""
    lengths = tuple(z3.Int(f"{name}.L{i}") for i in range(slots))
    if exact:
        return lengths, all_of(x >= 1 for x in lengths)
    facts = [lengths[0] >= 1] + [x >= 0 for x in lengths[1:]]
    facts += [z3.Implies(lengths[i + 1] > 0, lengths[i] > 0) for i in range(slots - 1)]
    return lengths, all_of(facts)


def exact_batch(design: DesignSpec, lengths: tuple[IntTerm, ...], name: str) -> Batch:
    """The exact model of ``lengths`` (absent slots are 0) under ``design``."""
    p, a = design.cp_size, design.align_size
    n = z3.Sum(list(lengths))
    present = [x > 0 for x in lengths]
    count = z3.Sum([indicator(f) for f in present])
    active = z3.And(z3.BoolVal(p > 1), all_of(z3.Or(x == 0, x >= 2 * p) for x in lengths))
    loads = rank_loads(lengths, p, f"{name}.live", design.strategy)
    required = required_local_tokens(loads, a, f"{name}.live")

    def replay_rows(bucket: IntTerm, tag: str) -> Defined:
        if design.layout_basis == "live":
            return Defined(required.value, z3.BoolVal(True))
        pad = bucket - n
        last = [z3.And(present[i], z3.Not(present[i + 1])) for i in range(len(lengths) - 1)] + [present[-1]]
        folded = [x + z3.If(is_last, pad, 0) for x, is_last in zip(lengths, last)]
        replay = rank_loads(folded, p, f"{name}.{tag}", design.strategy)
        return required_local_tokens(replay, a, f"{name}.{tag}")

    return Batch(n, count, lengths, active, required.value, required.holds, replay_rows)


def any_requests_batch(
    design: DesignSpec, name: str, *, tokens: IntTerm | None = None, requests: IntTerm | None = None
) -> Batch:
    """The any-number-of-requests abstraction (sound: see the module docstring). Pass ``tokens`` and
    ``requests`` to let two designs read one batch (each keeps its own busiest load, named by ``name``)."""
    p, a = design.cp_size, design.align_size
    n = z3.Int(f"{name}.n") if tokens is None else tokens
    r = z3.Int(f"{name}.R") if requests is None else requests
    top = z3.Int(f"{name}.busiest")

    def busiest_bounds(tokens: IntTerm, busiest: IntTerm) -> BoolTerm:
        if design.strategy == "interleave":
            return z3.And(p * busiest >= tokens, p * busiest < tokens + p)
        return z3.And(p * busiest >= tokens, p * busiest <= tokens + r * (p - 1))

    rows = align_up(top, a, f"{name}.live.rows")
    holds = z3.And(r >= 1, n >= 2 * p * r, busiest_bounds(n, top), rows.holds)

    def replay_rows(bucket: IntTerm, tag: str) -> Defined:
        if design.layout_basis == "live":
            return Defined(rows.value, z3.BoolVal(True))
        padded = z3.Int(f"{name}.{tag}.busiest")
        up = align_up(padded, a, f"{name}.{tag}.rows")
        return Defined(up.value, z3.And(busiest_bounds(int_term(bucket), padded), up.holds))

    return Batch(n, r, (), z3.BoolVal(p > 1), rows.value, holds, replay_rows)


def smallest_select(capture: CaptureList, window: Window) -> Selection:
    """The pre-fix selector: the first bucket >= n in scan order, none if it is above F*n; no room check."""
    admitted: BoolTerm = z3.BoolVal(False)
    bucket: IntTerm = z3.IntVal(0)
    for i in reversed(range(len(capture))):
        b = capture.buckets[i]
        below, above = b < window.low, b > window.high
        admitted = z3.If(below, admitted, z3.Not(above))
        bucket = z3.If(below, bucket, z3.If(above, z3.IntVal(0), b))
    return Selection(admitted, bucket)


def design_select(design: DesignSpec, rank: int, batch: Batch) -> Selection:
    """Rank ``rank``'s decision; a batch that is not CP-active is never admitted."""
    capture = design.capture_list(rank)
    window = padding_window(batch.num_tokens, design.max_padding_factor)
    raw = (
        scan_select(capture, window, batch.required)
        if design.selector == "search"
        else smallest_select(capture, window)
    )
    return Selection(z3.And(batch.active, raw.admitted), raw.bucket)


def recorded_rows(capture: CaptureList, bucket: IntTerm) -> tuple[BoolTerm, IntTerm]:
    """(bucket has a recorded capacity, that capacity) for a bucket term."""
    recorded = any_of(z3.And(bucket == b, rec) for b, rec in zip(capture.buckets, capture.recorded))
    rows: IntTerm = z3.IntVal(0)
    for b, c in zip(capture.buckets, capture.capacities):
        rows = z3.If(bucket == b, c, rows)
    return recorded, rows


@dataclass(frozen=True)
class DesignTerms:
    """One design on one batch: the decision, whether replay crashes, and every invariant as a claim."""

    admitted: BoolTerm
    bucket: IntTerm
    unsafe: BoolTerm  # some safety invariant fails on this batch (replay would crash or ranks diverge)
    claims: dict[str, BoolTerm]  # invariant id -> holds on this batch
    holds: BoolTerm  # facts defining the batch and the replay layouts


def design_terms(design: DesignSpec, batch: Batch, name: str) -> DesignTerms:
    """Every rank's selection and the SEMANTICS.md invariants over them (claims true = invariant holds)."""
    selections = [design_select(design, r, batch) for r in range(design.cp_size)]
    facts = [batch.holds]
    fit_claims, replay_claims, captured, limits, minimal, needless = [], [], [], [], [], []
    replayed: dict[int, Defined] = {}
    for r, sel in enumerate(selections):
        capture = design.capture_list(r)
        window = padding_window(batch.num_tokens, design.max_padding_factor)
        key = sel.bucket.get_id()
        if key not in replayed:  # ranks with the same capture list share one replay layout
            replayed[key] = batch.replay_rows(sel.bucket, f"{name}.replay{len(replayed)}")
            facts.append(replayed[key].holds)
        rows = replayed[key].value
        recorded, capacity = recorded_rows(capture, sel.bucket)
        succeeds = z3.And(sel.admitted, recorded, rows <= capacity)
        fit_claims.append(z3.Implies(z3.And(sel.admitted, recorded), rows <= capacity))
        replay_claims.append(same_selection(sel, Selection(succeeds, sel.bucket)))
        captured.append(captured_bucket(sel, capture))
        limits.append(padding_limit(sel, window))
        minimal.append(minimal_bucket(sel, capture, window, batch.required))
        needless.append(z3.Implies(batch.active, no_needless_fallback(sel, capture, window, batch.required)))
    claims = {
        "rank_consensus": rank_consensus(selections),
        "admission_replay": all_of(replay_claims),
        "captured_bucket": all_of(captured),
        "padding_limit": all_of(limits),
        "capacity_fit": all_of(fit_claims),
        "minimal_bucket": all_of(minimal),
        "no_needless_fallback": all_of(needless),
    }
    unsafe = z3.Not(all_of(claims[i] for i in SAFETY))
    return DesignTerms(selections[0].admitted, selections[0].bucket, unsafe, claims, all_of(facts))


def per_request_excess_claim(strategy: str, cp_size: int, name: str) -> tuple[BoolTerm, BoolTerm]:
    """(facts, claim): for one request of any length L, every rank's load l_r has P*l_r <= L + P - 1, and
    the loads sum to L. With the induction step this is the any_requests abstraction's upper bound."""
    length = z3.Int(f"{name}.L")
    loads = rank_loads((length,), cp_size, name, strategy)
    claim = z3.And(
        all_of(cp_size * x <= length + cp_size - 1 for x in loads.loads),
        loads.total() == length,
    )
    return z3.And(length >= 0, loads.holds), claim


def induction_step_claim(cp_size: int, name: str) -> tuple[BoolTerm, BoolTerm]:
    """(facts, claim): a rank within the bound for k requests and N tokens, plus one request within its
    per-request bound, stays within the bound for k + 1 requests and N + L tokens."""
    before, extra, tokens, length, k = (z3.Int(f"{name}.{v}") for v in ("l", "x", "N", "L", "k"))
    p = cp_size
    facts = z3.And(k >= 1, p * before <= tokens + k * (p - 1), p * extra <= length + p - 1)
    return facts, p * (before + extra) <= (tokens + length) + (k + 1) * (p - 1)


def first_bucket_fits_claim(design: DesignSpec, batch: Batch, max_requests: int) -> tuple[BoolTerm, BoolTerm]:
    """(facts, claim) of the headroom theorem: for every CP-active batch of at most ``max_requests``
    requests, the first bucket >= n within the padding limit has a recorded capacity >= the live rows,
    so padding to the smallest bucket >= n never overflows (rank 0's capacities)."""
    capture = design.capture_list(0)
    first = smallest_select(capture, padding_window(batch.num_tokens, design.max_padding_factor))
    recorded, rows = recorded_rows(capture, first.bucket)
    facts = z3.And(batch.holds, batch.active, batch.requests <= max_requests)
    return facts, z3.Implies(first.admitted, z3.And(recorded, batch.required <= rows))
