"""Design-level terms: a whole runner configuration (selector, layout basis, per-rank capacities) on a batch.

Builds on spec.selection / spec.invariants / spec.design_counts; term builders only (no solver, nothing
from reference/). The batch is the count encoding (spec/design_counts.py): counts of requests per
remainder class, so one query covers every number of requests, exactly (not an abstraction: every model
is a real batch, read back by ``design_counts.realise``). When a design lays out padded lengths, the last
request is kept apart as a symbolic length (the pad B - n is folded into it) and the others are counts.

Selector variants: ``search`` (spec.selection.scan_select: smallest bucket in [n, F*n] with room, in scan
order) and ``smallest`` (pad to the first bucket >= n in scan order, stop above F*n, no capacity check).
F is a Fraction: B <= F*n is B*den <= num*n, exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import z3

from cpgraph.spec.arith import align_up
from cpgraph.spec.capacity import required_local_tokens
from cpgraph.spec.design_counts import Counts, counts_batch, counts_loads, shared_modulus
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
from cpgraph.spec.strategies import interleave_loads, strategy
from cpgraph.spec.terms import BoolTerm, Defined, IntTerm, Loads, all_of, any_of


@dataclass(frozen=True)
class DesignSpec:
    """A design as plain numbers: buckets in scan order, per-rank recorded capacities (bucket, rows)."""

    strategy: str
    cp_size: int
    align_size: int
    buckets: tuple[int, ...]
    max_padding_factor: Fraction
    layout_basis: str
    selector: str
    capacities: tuple[tuple[tuple[int, int], ...], ...]

    def capture_list(self, rank: int) -> CaptureList:
        return concrete_capture_list(self.buckets, dict(self.capacities[rank]))

    def rank_groups(self) -> tuple[tuple[int, ...], ...]:
        """Ranks grouped by identical recorded capacities (ranks in one group decide alike)."""
        groups: dict[tuple[tuple[int, int], ...], list[int]] = {}
        for rank, caps in enumerate(self.capacities):
            groups.setdefault(caps, []).append(rank)
        return tuple(tuple(g) for g in groups.values())


RowsAt = Callable[[IntTerm, str], Defined]


@dataclass(frozen=True)
class DesignBatch:
    """A symbolic CP batch seen by one design: tokens, request count, live rows, and rows replay needs.

    ``counts`` is the count encoding the batch is built on (spec/design_counts.py); ``last`` is the one
    request kept apart when the layout basis is padded (the pad is folded into it), else None."""

    num_tokens: IntTerm
    requests: IntTerm
    counts: Counts
    last: IntTerm | None
    active: BoolTerm  # CP-active for this design (P > 1; every length >= 2P is part of ``counts``)
    required: IntTerm  # required_local_tokens from the live lengths
    holds: BoolTerm
    replay_rows: RowsAt  # rows the replay layout needs when padded to a bucket term


def batch_shape(designs: Sequence[DesignSpec]) -> tuple[int, int, bool]:
    """(modulus, least length, keep the last request apart) of one batch every design in ``designs`` reads."""
    modulus = shared_modulus(tuple((d.strategy, d.cp_size) for d in designs))
    least = max(2 * d.cp_size for d in designs)
    return modulus, least, any(d.layout_basis == "padded" for d in designs)


def shared_counts(designs: Sequence[DesignSpec], name: str) -> tuple[Counts, IntTerm | None, BoolTerm]:
    """One batch of any number of requests for all ``designs``: counts for every request but (when some
    design lays out padded lengths) the last, which stays a symbolic length. Returns (counts of the others,
    the last length or None, facts); the batch has counts.requests (+1) requests and counts.tokens (+ last)."""
    modulus, least, keep_last = batch_shape(designs)
    shortest = min(2 * d.cp_size for d in designs)
    short_from = shortest if shortest < least else None
    if keep_last:
        others = counts_batch(modulus, least, f"{name}.others", min_requests=0, short_from=short_from)
        last = z3.Int(f"{name}.last")
        return others, last, z3.And(others.holds, last >= shortest)
    batch = counts_batch(modulus, least, name, short_from=short_from)
    return batch, None, batch.holds


def _one_request(design: DesignSpec, modulus: int, length: IntTerm, name: str) -> Loads:
    """Loads of one request of ``length`` tokens (any length >= 0) through the count encoding: one class
    count set to 1 (proofs/design_lemmas.py: equal to the strategy's own per-request loads)."""
    single = counts_batch(modulus, 0, name, requests=z3.IntVal(1), tokens=length)
    loads = counts_loads(design.strategy, design.cp_size, single, name)
    return Loads(loads.loads, z3.And(loads.holds, single.holds))


def design_batch(design: DesignSpec, counts: Counts, last: IntTerm | None, name: str) -> DesignBatch:
    """``design`` on a batch given as counts (plus an optional last request kept apart)."""
    p, a = design.cp_size, design.align_size
    row = strategy(design.strategy)
    others = counts_loads(design.strategy, p, counts, f"{name}.others")
    if last is None:
        n, r, live = counts.tokens, counts.requests, others
    else:
        n, r = counts.tokens + last, counts.requests + 1
        if row.request_loads is None:  # loads of the total only
            total = interleave_loads(n, p, f"{name}.live.total")
            live = Loads(total.loads, z3.And(others.holds, total.holds))
        else:
            live = others.plus(_one_request(design, counts.modulus, last, f"{name}.live.last"))
    required = required_local_tokens(live, a, f"{name}.live")

    def replay_rows(bucket: IntTerm, tag: str) -> Defined:
        if design.layout_basis == "live":
            return Defined(required.value, z3.BoolVal(True))
        if last is None:
            raise ValueError("a padded layout basis needs the last request kept apart (shared_counts does it)")
        pad = bucket - n
        if row.request_loads is None:
            # loads of the total only, and the replay's total is the bucket: its rows are a constant per bucket
            rows: IntTerm = z3.IntVal(0)
            for b in design.buckets:
                busiest = interleave_loads(b, p, f"{name}.{tag}.b{b}").loads[0]  # rank 0 holds the most
                rows = z3.If(bucket == b, align_up(busiest, a, f"{name}.{tag}.rows{b}").value, rows)
            return Defined(rows, z3.BoolVal(True))
        else:
            folded = z3.Int(f"{name}.{tag}.folded")
            one = _one_request(design, counts.modulus, folded, f"{name}.{tag}.last")
            replay = Loads(others.plus(one).loads, z3.And(one.holds, folded == last + pad))
        return required_local_tokens(replay, a, f"{name}.{tag}")

    holds = z3.And(live.holds, required.holds)
    active = z3.And(z3.BoolVal(p > 1), counts.short_count_below(2 * p) == 0)
    if last is not None:
        active = z3.And(active, last >= 2 * p)
    return DesignBatch(n, r, counts, last, active, required.value, holds, replay_rows)


def any_batch(design: DesignSpec, name: str) -> DesignBatch:
    """``design`` on any CP-active batch, of any number of requests (its own count encoding)."""
    counts, last, facts = shared_counts((design,), name)
    batch = design_batch(design, counts, last, name)
    return replace(batch, holds=z3.And(facts, batch.holds))


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


SELECTORS: dict[str, Callable[[CaptureList, Window, IntTerm], Selection]] = {
    "search": scan_select,  # the fix: the first bucket in [n, F*n] whose capacity holds the live rows
    "smallest": lambda capture, window, required: smallest_select(capture, window),  # pre-fix: no room check
}


def design_select(design: DesignSpec, rank: int, batch: DesignBatch, window: Window) -> Selection:
    """Rank ``rank``'s decision; a batch that is not CP-active is never admitted."""
    if design.selector not in SELECTORS:
        raise ValueError(f"selector must be one of {', '.join(SELECTORS)}; got {design.selector!r}")
    raw = SELECTORS[design.selector](design.capture_list(rank), window, batch.required)
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


def design_terms(design: DesignSpec, batch: DesignBatch, name: str, safety: Sequence[str]) -> DesignTerms:
    """Every rank's selection and the invariants over them (claims true = invariant holds); ``safety``
    names the claims whose failure makes the batch unsafe (the caller's invariant table). Ranks with the
    same recorded capacities share one selection term (they decide alike)."""
    window = padding_window(batch.num_tokens, design.max_padding_factor, f"{name}.window")
    groups = design.rank_groups()
    selections = [design_select(design, g[0], batch, window) for g in groups]
    facts = [batch.holds, window.holds]
    fit_claims, replay_claims, captured, limits, minimal, needless = [], [], [], [], [], []
    for index, (group, sel) in enumerate(zip(groups, selections)):
        capture = design.capture_list(group[0])
        replayed = batch.replay_rows(sel.bucket, f"{name}.replay{index}")
        facts.append(replayed.holds)
        rows = replayed.value
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
    unknown = [i for i in safety if i not in claims]
    if unknown:
        raise ValueError(f"safety must name invariants among {', '.join(claims)}; got {unknown!r}")
    unsafe = z3.Not(all_of(claims[i] for i in safety))
    first = groups.index(next(g for g in groups if 0 in g))
    return DesignTerms(selections[first].admitted, selections[first].bucket, unsafe, claims, all_of(facts))
