"""Design-level terms: a whole runner configuration (keying, selector, layout basis, per-rank capacities) on a batch.

Builds on spec.selection / spec.invariants / spec.design_counts; term builders only (no solver, nothing
from reference/). The batch is the count encoding (spec/design_counts.py): counts of requests per
remainder class (and short lengths counted apart), so one query covers every number of requests,
exactly (not an abstraction: every model is a real batch, read back by ``design_counts.realise``). When a
design lays out padded lengths, the last request is kept apart as a symbolic length (the pad B - n is
folded into it) and the others are counts.

Keying (the design's columns of reference/keying.py's table, passed in as plain values by the caller):
- windowed, gated (``global``, sglang): the key is n; the selector scans buckets in [n, F*n] (spec.selection);
  only CP-active batches (P > 1, every length >= 2P) take the graph path; capacities are recorded per rank.
- not windowed, not gated (``local``, vLLM 0.29+): the key is m = the largest rank-local rows (the live
  loads' maximum; A = 1); the selector takes the first size >= the key in scan order with no window; every
  batch is keyed; a size s holds s rows (the capacities the caller passes). The invariants read the key:
  padding_limit is key <= B, minimal_bucket and no_needless_fallback range over the sizes >= m.
- ``admission_key`` different from the keying's key (vLLM 0.26-0.28: admission by n, replay keyed by m):
  admission scans by its key, replay is keyed by the keying's key itself (the graph replayed is the one
  of size m), and admission_replay requires the two to be the same graph.

Selector variants: ``search`` (spec.selection.scan_select: smallest bucket in [n, F*n] with room, in scan
order) and ``smallest`` (pad to the first bucket >= n in scan order, stop above F*n, no capacity check).
F is a Fraction: B <= F*n is B*den <= num*n, exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import z3

from cpgraph.spec.logic import And, If, Implies, Not, Or
from cpgraph.spec.arith import align_up
from cpgraph.spec.capacity import busiest_load, required_local_tokens
from cpgraph.spec.design_counts import Counts, class_row, counts_batch, counts_loads, shared_modulus
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
from cpgraph.spec.strategies import interleave_loads
from cpgraph.spec.terms import BoolTerm, Defined, IntTerm, Loads, all_of, any_of, check_index


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
    key: str = "num_tokens"  # what replay is keyed by: num_tokens | local_rows (KEYS)
    admission_key: str = "num_tokens"  # what admission dispatches by
    windowed: bool = True  # max_padding_factor bounds the bucket (global); False: no upper bound (local)
    gated: bool = True  # only CP-active batches take the graph path (global); False: every batch (local)

    def __post_init__(self) -> None:
        for field_name, value in (("key", self.key), ("admission_key", self.admission_key)):
            if value not in KEYS:
                raise ValueError(f"{field_name} must be one of {', '.join(KEYS)}; got {value!r}")

    @property
    def split(self) -> bool:
        """Admission and replay read different keys."""
        return self.key != self.admission_key

    @property
    def shortest(self) -> int:
        """The least length of a request the design keys a batch with (2P when gated, else 1)."""
        return 2 * self.cp_size if self.gated else 1

    @property
    def least_long(self) -> int:
        """The least length its encoding may count by class: the gate's, or where the class table is exact."""
        row = class_row(self.strategy)
        return max(self.shortest, row.regular_from(self.cp_size) if row.modulus is not None else 0)

    def capture_list(self, rank: int) -> CaptureList:
        """The capture list as rank ``rank`` recorded it (a rank outside 0..P-1 is a ValueError)."""
        check_index("rank", rank, self.cp_size, f"a rank of cp_size {self.cp_size}")
        return concrete_capture_list(self.buckets, dict(self.capacities[rank]))

    def rank_groups(self) -> tuple[tuple[int, ...], ...]:
        """Ranks grouped by identical recorded capacities (ranks in one group decide alike)."""
        groups: dict[tuple[tuple[int, int], ...], list[int]] = {}
        for rank, caps in enumerate(self.capacities):
            groups.setdefault(caps, []).append(rank)
        return tuple(tuple(g) for g in groups.values())


RowsAt = Callable[[IntTerm, str], Defined]
KEYS = ("num_tokens", "local_rows")  # what a keying's selector compares: the batch's tokens, or its busiest rank's rows


@dataclass(frozen=True)
class DesignBatch:
    """A symbolic CP batch seen by one design: tokens, request count, live rows, and rows replay needs.

    ``counts`` is the count encoding the batch is built on (spec/design_counts.py); ``last`` is the one
    request kept apart when the layout basis is padded (the pad is folded into it), else None."""

    num_tokens: IntTerm
    requests: IntTerm
    counts: Counts
    last: IntTerm | None
    active: BoolTerm  # keyed by this design: CP-active (P > 1, every length >= 2P) when gated, else always
    required: IntTerm  # required_local_tokens from the live lengths
    holds: BoolTerm
    replay_rows: RowsAt  # rows the replay layout needs when padded to a bucket term
    busiest: IntTerm | None = None  # the largest live rank-local rows (set when a key reads it)

    def key(self, name: str) -> IntTerm:
        """The value of key ``name`` on this batch: n, or the largest rank-local rows m."""
        if name == "num_tokens":
            return self.num_tokens
        if name == "local_rows" and self.busiest is not None:
            return self.busiest
        raise ValueError(f"key must be one of {', '.join(KEYS)} (local_rows built by design_batch); got {name!r}")


def batch_shape(designs: Sequence[DesignSpec]) -> tuple[int, int, bool]:
    """(modulus, least long length, keep the last request apart) of one batch every design in ``designs``
    reads: lengths below the least long length are counted apart (DesignSpec.least_long)."""
    modulus = shared_modulus(tuple((d.strategy, d.cp_size) for d in designs))
    least = max(d.least_long for d in designs)
    return modulus, least, any(d.layout_basis == "padded" for d in designs)


def short_lengths(designs: Sequence[DesignSpec]) -> int:
    """How many lengths one batch for ``designs`` counts apart (each its own count variable)."""
    _, least, _ = batch_shape(designs)
    return max(0, least - min(d.shortest for d in designs))


def shared_counts(designs: Sequence[DesignSpec], name: str) -> tuple[Counts, IntTerm | None, BoolTerm]:
    """One batch of any number of requests for all ``designs``: counts for every request but (when some
    design lays out padded lengths) the last, which stays a symbolic length. Returns (counts of the others,
    the last length or None, facts); the batch has counts.requests (+1) requests and counts.tokens (+ last)."""
    modulus, least, keep_last = batch_shape(designs)
    shortest = min(d.shortest for d in designs)
    short_from = shortest if shortest < least else None
    if keep_last:
        others = counts_batch(modulus, least, f"{name}.others", min_requests=0, short_from=short_from)
        last = z3.Int(f"{name}.last")
        return others, last, And(others.holds, last >= shortest)
    batch = counts_batch(modulus, least, name, short_from=short_from)
    return batch, None, batch.holds


def _one_request(design: DesignSpec, modulus: int, length: IntTerm, name: str) -> Loads:
    """Loads of one request of ``length`` tokens (any length >= 0) through the count encoding: one class
    count (or, below the class table's exact range, one short length's count) set to 1
    (proofs/theorems/design_lemmas.py: equal to the strategy's own per-request loads)."""
    row = class_row(design.strategy)
    regular = row.regular_from(design.cp_size) if row.modulus is not None else 0
    single = counts_batch(
        modulus, regular, name, requests=z3.IntVal(1), tokens=length, short_from=0 if regular else None
    )
    loads = counts_loads(design.strategy, design.cp_size, single, name)
    return Loads(loads.loads, And(loads.holds, single.holds))


def design_batch(design: DesignSpec, counts: Counts, last: IntTerm | None, name: str) -> DesignBatch:
    """``design`` on a batch given as counts (plus an optional last request kept apart)."""
    p, a = design.cp_size, design.align_size
    by_total = class_row(design.strategy).modulus is None  # loads of the total only (interleave)
    others = counts_loads(design.strategy, p, counts, f"{name}.others")
    if last is None:
        n, r, live = counts.tokens, counts.requests, others
    else:
        n, r = counts.tokens + last, counts.requests + 1
        if by_total:
            total = interleave_loads(n, p, f"{name}.live.total")
            live = Loads(total.loads, And(others.holds, total.holds))
        else:
            live = others.plus(_one_request(design, counts.modulus, last, f"{name}.live.last"))
    required = required_local_tokens(live, a, f"{name}.live")
    busiest = None
    if "local_rows" in (design.key, design.admission_key):
        top = busiest_load(live, f"{name}.key")
        busiest = top.value
        required = Defined(required.value, And(required.holds, top.holds))

    def replay_rows(bucket: IntTerm, tag: str) -> Defined:
        if design.layout_basis == "live":
            return Defined(required.value, z3.BoolVal(True))
        if last is None:
            raise ValueError("a padded layout basis needs the last request kept apart (shared_counts does it)")
        pad = bucket - n
        if by_total:
            # loads of the total only, and the replay's total is the bucket: its rows are a constant per bucket
            rows: IntTerm = z3.IntVal(0)
            for b in design.buckets:
                heaviest = interleave_loads(b, p, f"{name}.{tag}.b{b}").loads[0]  # rank 0 holds the most
                rows = If(bucket == b, align_up(heaviest, a, f"{name}.{tag}.rows{b}").value, rows)
            return Defined(rows, z3.BoolVal(True))
        else:
            folded = z3.Int(f"{name}.{tag}.folded")
            one = _one_request(design, counts.modulus, folded, f"{name}.{tag}.last")
            replay = Loads(others.plus(one).loads, And(one.holds, folded == last + pad))
        return required_local_tokens(replay, a, f"{name}.{tag}")

    holds = And(live.holds, required.holds)
    active: BoolTerm = z3.BoolVal(True)
    if design.gated:
        active = And(z3.BoolVal(p > 1), counts.short_count_below(2 * p) == 0)
        if last is not None:
            active = And(active, last >= 2 * p)
    return DesignBatch(n, r, counts, last, active, required.value, holds, replay_rows, busiest)


def any_batch(design: DesignSpec, name: str) -> DesignBatch:
    """``design`` on any CP-active batch, of any number of requests (its own count encoding)."""
    counts, last, facts = shared_counts((design,), name)
    batch = design_batch(design, counts, last, name)
    return replace(batch, holds=And(facts, batch.holds))


def smallest_select(capture: CaptureList, window: Window) -> Selection:
    """The pre-fix selector: the first bucket >= n in scan order, none if it is above F*n; no room check."""
    admitted: BoolTerm = z3.BoolVal(False)
    bucket: IntTerm = z3.IntVal(0)
    for i in reversed(range(len(capture))):
        b = capture.buckets[i]
        below, above = b < window.low, b > window.high
        admitted = If(below, admitted, Not(above))
        bucket = If(below, bucket, If(above, z3.IntVal(0), b))
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
    return Selection(And(batch.active, raw.admitted), raw.bucket)


def recorded_rows(capture: CaptureList, bucket: IntTerm) -> tuple[BoolTerm, IntTerm]:
    """(bucket has a recorded capacity, that capacity) for a bucket term."""
    recorded = any_of(And(bucket == b, rec) for b, rec in zip(capture.buckets, capture.recorded))
    rows: IntTerm = z3.IntVal(0)
    for b, c in zip(capture.buckets, capture.capacities):
        rows = If(bucket == b, c, rows)
    return recorded, rows


@dataclass(frozen=True)
class DesignTerms:
    """One design on one batch: the decision, whether replay crashes, and every invariant as a claim."""

    admitted: BoolTerm
    bucket: IntTerm
    unsafe: BoolTerm  # some safety invariant fails on this batch (replay would crash or ranks diverge)
    claims: dict[str, BoolTerm]  # invariant id -> holds on this batch
    holds: BoolTerm  # facts defining the batch and the replay layouts


def open_select(selector: str, capture: CaptureList, key: IntTerm, required: IntTerm) -> Selection:
    """A keying with no window (local): the first bucket >= ``key`` in scan order whose capacity holds
    ``required`` rows (search) or the first >= ``key`` at all (smallest); none when no bucket is."""
    if selector not in SELECTORS:
        raise ValueError(f"selector must be one of {', '.join(SELECTORS)}; got {selector!r}")
    chosen = Selection(z3.BoolVal(False), z3.IntVal(0))
    for i in reversed(range(len(capture))):
        b = capture.buckets[i]
        take = b >= key if selector == "smallest" else And(b >= key, capture.recorded[i], capture.capacities[i] >= required)
        chosen = Selection(Or(take, chosen.admitted), If(take, b, chosen.bucket))
    return chosen


def _keyed_fits(capture: CaptureList, index: int, key: IntTerm, required: IntTerm) -> BoolTerm:
    """Bucket ``index`` fits under a keying with no window: >= the key, recorded, room for the rows."""
    check_index("index", index, len(capture), f"a bucket of a {len(capture)}-bucket capture list")
    return And(capture.buckets[index] >= key, capture.recorded[index], capture.capacities[index] >= required)


def design_terms(design: DesignSpec, batch: DesignBatch, name: str, safety: Sequence[str]) -> DesignTerms:
    """Every rank's selection and the invariants over them (claims true = invariant holds); ``safety``
    names the claims whose failure makes the batch unsafe (the caller's invariant table). Ranks with the
    same recorded capacities share one selection term (they decide alike)."""
    if not design.windowed:
        return _open_terms(design, batch, name, safety)
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
        succeeds = And(sel.admitted, recorded, rows <= capacity)
        fit_claims.append(Implies(And(sel.admitted, recorded), rows <= capacity))
        replay_claims.append(same_selection(sel, Selection(succeeds, sel.bucket)))
        captured.append(captured_bucket(sel, capture))
        limits.append(padding_limit(sel, window))
        minimal.append(minimal_bucket(sel, capture, window, batch.required))
        needless.append(Implies(batch.active, no_needless_fallback(sel, capture, window, batch.required)))
    claims = [fit_claims, replay_claims, captured, limits, minimal, needless]
    return _assemble(groups, selections, claims, facts, safety)


def _open_terms(design: DesignSpec, batch: DesignBatch, name: str, safety: Sequence[str]) -> DesignTerms:
    """design_terms for a keying with no window (local): admission scans by the admission key, replay is
    keyed by the keying's key (the admitted bucket, or under a split the key itself), and the invariants
    read the key m: padding_limit m <= B, the fitting buckets those >= m with room."""
    key, admission = batch.key(design.key), batch.key(design.admission_key)
    groups = design.rank_groups()
    facts = [batch.holds]
    selections = []
    fit_claims, replay_claims, captured, limits, minimal, needless = [], [], [], [], [], []
    for index, group in enumerate(groups):
        capture = design.capture_list(group[0])
        raw = open_select(design.selector, capture, admission, batch.required)
        sel = Selection(And(batch.active, raw.admitted), raw.bucket)
        selections.append(sel)
        replay = Selection(sel.admitted, key if design.split else sel.bucket)
        replayed = batch.replay_rows(replay.bucket, f"{name}.replay{index}")
        facts.append(replayed.holds)
        rows = replayed.value
        recorded, capacity = recorded_rows(capture, replay.bucket)
        succeeds = And(sel.admitted, recorded, rows <= capacity)
        if design.split:  # the graph replayed must be the one admitted
            succeeds = And(succeeds, replay.bucket == sel.bucket)
        fit_claims.append(Implies(And(sel.admitted, recorded), rows <= capacity))
        replay_claims.append(same_selection(sel, Selection(succeeds, sel.bucket)))
        captured.append(captured_bucket(replay, capture))
        limits.append(Implies(sel.admitted, key <= replay.bucket))
        fitting = [_keyed_fits(capture, i, key, batch.required) for i in range(len(capture))]
        minimal.append(
            Implies(sel.admitted, all_of(Implies(f, replay.bucket <= b) for f, b in zip(fitting, capture.buckets)))
        )
        needless.append(Implies(And(batch.active, any_of(fitting)), sel.admitted))
    claims = [fit_claims, replay_claims, captured, limits, minimal, needless]
    return _assemble(groups, selections, claims, facts, safety)


def _assemble(
    groups: tuple[tuple[int, ...], ...],
    selections: Sequence[Selection],
    per_group: Sequence[Sequence[BoolTerm]],
    facts: Sequence[BoolTerm],
    safety: Sequence[str],
) -> DesignTerms:
    """The claims by invariant id (the groups' claims conjoined; consensus over the groups' selections)."""
    fit_claims, replay_claims, captured, limits, minimal, needless = per_group
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
    unsafe = Not(all_of(claims[i] for i in safety))
    first = groups.index(next(g for g in groups if 0 in g))
    return DesignTerms(selections[first].admitted, selections[first].bucket, unsafe, claims, all_of(facts))
