"""A semantic diff of two designs: the batches on which they decide differently, for any number of requests.

Both designs read one batch in the count encoding (spec/design.py ``shared_counts``: classes modulo the
lcm of the two strategies' moduli, requests shorter than the larger design's 2P, or than a
dual_chunk_swap table's exact range, counted apart one length each, the last request kept apart when a
design pads). Each differing batch falls in one class:
- fixed: the old design crashes on it (some safety invariant fails), the new one does not;
- regressed: the old design replays it safely, the new one runs it eagerly, pads it to a larger bucket,
  or crashes;
- changed: any other difference (e.g. a graph where the old ran eagerly, or a smaller bucket).
How each figure is computed:
- found / none and the least batch (fewest requests, then fewest tokens): one query per class on the
  shared count encoding, then iterative tightening (proofs/engine/search.py); exact for every number of
  requests. The batch is replayed through both designs (cpgraph.design.evaluate) before it is shown.
- token ranges: when both designs are keyed globally, share cp_size and strategy (not dual_chunk_swap,
  whose least busiest load is not proved) and lay out live lengths, each decision
  reads only n and the busiest load M, and M ranges over lo(n)..hi(n) (cpgraph/design/busiest.py), so
  every n from 2P to the larger largest bucket is scanned exactly, M cut into the segments where neither
  design's decision changes; the class's ranges are the runs of n where some segment is in the class.
  Otherwise (a local keying among them, another strategy or P) the range is the envelope [least n, greatest n] of the class (two
  more queries), said so.
- an unknown (rlimit) in any query makes that class unknown; ``cpgraph review`` then exits 3.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import z3

from cpgraph.design.busiest import BusiestRange, batch_with_busiest, busiest_range, exact_from
from cpgraph.design.segments import runs, segment_points
from cpgraph.design.evaluate import CRASHES, SAFETY, Outcome, decide_at, evaluate
from cpgraph.design.review import check_scope, lengths_of, spec_of
from cpgraph.design.schema import Design
from cpgraph.proofs.engine.search import Found, least, value
from cpgraph.spec.design import (
    DesignBatch, DesignSpec, DesignTerms, batch_shape, design_batch, design_terms, shared_counts,
)
from cpgraph.spec.design_counts import Counts
from cpgraph.spec.terms import BoolTerm, IntTerm

CLASSES = ("fixed", "regressed", "changed")
MAX_TRANSITIONS = 4
MAX_SHARED_MODULUS = 512  # classes in one shared count encoding (lcm of the two designs' moduli)


@dataclass(frozen=True)
class Change:
    """One decision change, old -> new, with a batch showing it."""

    old: str
    new: str
    extend_seq_lens: tuple[int, ...]
    old_outcome: Outcome
    new_outcome: Outcome


@dataclass(frozen=True)
class DiffClass:
    kind: str
    status: str  # found | none | unknown
    region: tuple[int, int] | None
    changes: tuple[Change, ...]
    more: bool  # more distinct changes exist than listed
    note: str = ""
    # exact token ranges (requests 0 = any number of requests), when the scan applies (module docstring)
    ranges: tuple[tuple[int, tuple[tuple[int, int], ...]], ...] = ()


@dataclass(frozen=True)
class Diff:
    old: Design
    new: Design
    classes: tuple[DiffClass, ...]

    def by_kind(self, kind: str) -> DiffClass:
        return next(c for c in self.classes if c.kind == kind)

    @property
    def unknown(self) -> tuple[DiffClass, ...]:
        return tuple(c for c in self.classes if c.status == "unknown")


def describe(outcome: Outcome) -> str:
    """'eager', 'graph 2304', or 'CRASH 2048 (capacity_fit)'."""
    if not outcome.admitted:
        return "eager"
    crash = [v for v in outcome.violated if v in CRASHES]
    if crash:
        return f"CRASH {outcome.bucket} ({', '.join(crash)})"
    return f"graph {outcome.bucket}"


def _class_terms(old: DesignTerms, new: DesignTerms) -> dict[str, z3.BoolRef]:
    differs = z3.Or(
        old.admitted != new.admitted,
        z3.And(old.admitted, new.admitted, old.bucket != new.bucket),
        old.unsafe != new.unsafe,
    )
    fixed = z3.And(old.unsafe, z3.Not(new.unsafe))
    regressed = z3.And(
        z3.Not(old.unsafe),
        old.admitted,
        z3.Or(new.unsafe, z3.Not(new.admitted), new.bucket > old.bucket),
    )
    changed = z3.And(differs, z3.Not(fixed), z3.Not(regressed))
    return {"fixed": fixed, "regressed": regressed, "changed": changed}


def _kind(before: tuple[int | None, bool], after: tuple[int | None, bool]) -> str | None:
    """The class of a change between two (bucket, crashes) decisions (None: they agree)."""
    (old_bucket, old_crash), (new_bucket, new_crash) = before, after
    if old_crash and not new_crash:
        return "fixed"
    if not old_crash and old_bucket is not None and (new_crash or new_bucket is None or new_bucket > old_bucket):
        return "regressed"
    if (old_bucket, old_crash) != (new_bucket, new_crash):
        return "changed"
    return None


def _change(old: Design, new: Design, lengths: tuple[int, ...]) -> Change:
    before, after = evaluate(old, lengths), evaluate(new, lengths)
    return Change(describe(before), describe(after), lengths, before, after)


Decision = tuple[int | None, bool]  # (rank 0's bucket or None for eager, replay crashes)


def _decide(design: Design, n: int, required: int) -> Decision:
    """(rank 0's bucket, crashes) from n and the live rows alone (live layout only)."""
    return decide_at(design, n, required)


@dataclass(frozen=True)
class Scanned:
    """Per class: exact token ranges, and the least (n, busiest) of each distinct decision change."""

    ranges: dict[str, tuple[tuple[int, int], ...]]
    firsts: dict[str, tuple[tuple[Decision, Decision, int, int], ...]]


def scannable(old: Design, new: Design) -> bool:
    """The exact token-range scan applies: both designs global (a decision reads n and the busiest load
    only), one cp_size and strategy whose least busiest load is exact (not dual_chunk_swap's), live layouts."""
    return (
        old.keyed.windowed
        and new.keyed.windowed
        and (old.cp_size, old.strategy) == (new.cp_size, new.strategy)
        and exact_from(old.strategy, old.cp_size) == 2 * old.cp_size
        and old.layout_basis == new.layout_basis == "live"
        and old.cp_size > 1
    )


def scan_changes(old: Design, new: Design) -> Scanned:
    """Every n from 2P to the larger largest bucket, every busiest load segment (see the module docstring)."""
    p = old.cp_size
    top = max(max(old.buckets), max(new.buckets))
    rng: BusiestRange = busiest_range(old.strategy, p, top)
    hits: dict[str, list[int]] = {k: [] for k in CLASSES}
    firsts: dict[str, dict[tuple[Decision, Decision], tuple[int, int]]] = {k: {} for k in CLASSES}
    memo: dict[tuple[int, int, int], tuple[Decision, Decision, str | None]] = {}
    for interval, n, m in segment_points(rng, (old, new), top):
        key = (interval, old.align_size * -(-m // old.align_size), new.align_size * -(-m // new.align_size))
        if key not in memo:
            before, after = _decide(old, n, key[1]), _decide(new, n, key[2])
            memo[key] = (before, after, _kind(before, after))
        before, after, kind = memo[key]
        if kind is not None:
            if not hits[kind] or hits[kind][-1] != n:
                hits[kind].append(n)
            firsts[kind].setdefault((before, after), (n, m))
    return Scanned(
        {k: runs(v) for k, v in hits.items()},
        {k: tuple((b, a) + hit for (b, a), hit in sorted(v.items(), key=lambda kv: kv[1])) for k, v in firsts.items()},
    )


def diff_designs(old: Design, new: Design, *, progress: bool = False) -> Diff:
    """Every class of differing decisions between ``old`` and ``new``, for any number of requests."""
    check_scope((old, new), "cpgraph review --against")
    specs = (spec_of(old), spec_of(new))
    modulus, _, _ = batch_shape(specs)
    if modulus > MAX_SHARED_MODULUS:
        note = (
            f"one batch for both designs needs {modulus} remainder classes (lcm of their strategies' moduli), "
            f"above the limit {MAX_SHARED_MODULUS}"
        )
        return Diff(old, new, tuple(DiffClass(k, "unknown", None, (), False, note) for k in CLASSES))
    pair = _pair(old, new, specs)
    classes = []
    for kind, term in _class_terms(pair.old_terms, pair.new_terms).items():
        if progress:
            print(f"  diff {old.name} -> {new.name}: {kind} ...", file=sys.stderr, flush=True)
        classes.append(_diff_class(pair, kind, term))
    return Diff(old, new, classes=tuple(classes))


@dataclass(frozen=True)
class _Pair:
    """Both designs on one shared batch: the facts every class query starts from, and the scan (None
    when it does not apply). Every term built for the batch stays referenced until the diff returns: z3
    reuses the ids of freed terms and its models (the batches shown) follow the ids, so terms and answers
    live exactly as long as they did when diff_designs was one function."""

    old: Design
    new: Design
    counts: Counts
    last: IntTerm | None
    old_batch: DesignBatch
    new_batch: DesignBatch
    old_terms: DesignTerms
    new_terms: DesignTerms
    base: list[BoolTerm]
    top: int  # the larger largest bucket
    floor: int  # the least n either design keys a batch with (2P for a global design, 1 for a local one)
    ceiling: int  # the most tokens a differing batch can have (top, or P * top under local keying)
    scanned: Scanned | None
    # the latest answer of each query (least batch, envelope low, envelope high), freed when the next
    # query of its kind answers
    held: dict[str, Found] = field(default_factory=dict)


def _pair(old: Design, new: Design, specs: tuple[DesignSpec, DesignSpec]) -> _Pair:
    counts, last, facts = shared_counts(specs, "d")
    old_batch = design_batch(specs[0], counts, last, "d.old")
    new_batch = design_batch(specs[1], counts, last, "d.new")
    old_terms = design_terms(specs[0], old_batch, "d.old", SAFETY)
    new_terms = design_terms(specs[1], new_batch, "d.new", SAFETY)
    # every difference has a design admitting the batch, so a bucket >= its admission key: under global
    # keying n is at most the largest bucket; under local, m is (and n <= P*m: the loads sum to at least n)
    top = max(max(old.buckets), max(new.buckets))
    base = [facts, old_batch.holds, new_batch.holds, old_terms.holds, new_terms.holds]
    if all(spec.windowed for spec in specs):
        base.append(old_batch.num_tokens <= top)
    else:
        base.append(old_batch.num_tokens <= max(old.cp_size, new.cp_size) * top)
    floor = min(spec.shortest for spec in specs)
    scanned = scan_changes(old, new) if scannable(old, new) else None
    ceiling = top if all(spec.windowed for spec in specs) else max(old.cp_size, new.cp_size) * top
    return _Pair(old, new, counts, last, old_batch, new_batch, old_terms, new_terms, base, top, floor, ceiling, scanned)


def _diff_class(pair: _Pair, kind: str, term: z3.BoolRef) -> DiffClass:
    """One class: its least batch (fewest requests, then tokens), replayed through both designs, then its
    token ranges (exact from the scan, else the envelope)."""
    n, requests = pair.old_batch.num_tokens, pair.old_batch.requests
    # the scan's least n of the class (any number of requests) is a floor for the least n at any R
    spans = pair.scanned.ranges[kind] if pair.scanned is not None else ()
    found = pair.held["found"] = least(pair.base + [term], [(requests, 1), (n, spans[0][0] if spans else pair.floor)])
    if found.status == "none":
        return DiffClass(kind, "none", None, (), False, "no batch, any number of requests")
    if found.status == "unknown":
        return DiffClass(kind, "unknown", None, (), False, f"solver gave up: {found.reason}")
    lengths = lengths_of(pair.old_batch, found.model)
    first = _change(pair.old, pair.new, lengths)
    if _kind(_summary(first.old_outcome), _summary(first.new_outcome)) != kind:
        return DiffClass(kind, "unknown", None, (first,), False, "the solver's batch is not confirmed by the replay")
    least_note = f"least batch: {len(lengths)} requests, {sum(lengths)} tokens (fewest requests, then tokens)"
    if pair.scanned is not None:
        return _scanned_class(pair, pair.scanned, kind, first, least_note)
    return _envelope_class(pair, kind, term, first, least_note)


def _scanned_class(pair: _Pair, scanned: Scanned, kind: str, first: Change, least_note: str) -> DiffClass:
    """A found class with the scan's exact token ranges and up to MAX_TRANSITIONS more distinct changes."""
    lengths = first.extend_seq_lens
    changes = [first]
    for _, _, tokens, busiest in scanned.firsts[kind][:MAX_TRANSITIONS]:
        example = batch_with_busiest(busiest_range(pair.old.strategy, pair.old.cp_size, pair.top), tokens, busiest, busiest)
        if example is not None and example != lengths:
            changes.append(_change(pair.old, pair.new, example))
    spans = scanned.ranges[kind]
    region = (spans[0][0], spans[-1][1]) if spans else (sum(lengths), sum(lengths))
    note = f"exact token ranges over any number of requests; {len(scanned.firsts[kind])} distinct decision changes; {least_note}"
    return DiffClass(kind, "found", region, tuple(changes), len(scanned.firsts[kind]) > MAX_TRANSITIONS, note, ((0, spans),))


def _envelope_class(pair: _Pair, kind: str, term: z3.BoolRef, first: Change, least_note: str) -> DiffClass:
    """A found class with the envelope [least n, greatest n] over any number of requests (two more queries)."""
    n = pair.old_batch.num_tokens
    low = pair.held["low"] = least(pair.base + [term], [(n, pair.floor)])  # over every number of requests
    high = pair.held["high"] = least(pair.base + [term], [(-n, -pair.ceiling)])
    if low.status != "found" or high.status != "found":
        reason = low.reason if low.status != "found" else high.reason
        return DiffClass(kind, "unknown", None, (first,), False, f"token envelope: solver gave up: {reason}")
    low_n, top_n = value(low.model, "objective.0"), -value(high.model, "objective.0")
    note = (
        "envelope [least n, greatest n] of the class over any number of requests (exact token ranges need a "
        f"shared cp_size and strategy and live layouts{_envelope_why(pair)}); {least_note}"
    )
    return DiffClass(kind, "found", (low_n, top_n), (first,), False, note)


def _envelope_why(pair: _Pair) -> str:
    """What else the exact scan needs, when that is why it did not apply (said only then: the text of a
    global pair of differing strategies or P stays as it was)."""
    if not (pair.old.keyed.windowed and pair.new.keyed.windowed):
        return ", under global keying"
    if (pair.old.cp_size, pair.old.strategy) == (pair.new.cp_size, pair.new.strategy):
        return f", and a strategy whose least busiest load is exact ({pair.old.strategy}'s is not proved)"
    return ""


def _summary(outcome: Outcome) -> Decision:
    return outcome.bucket, outcome.admitted and any(v in SAFETY for v in outcome.violated)
