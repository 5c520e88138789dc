"""A semantic diff of two designs found by the solver: batches on which they decide differently.

Both designs read one symbolic batch. Each differing batch falls in one class:
- fixed: the old design crashes on it (some safety invariant fails), the new one does not;
- regressed: the old design replays it safely, the new one runs it eagerly, pads it to a larger bucket,
  or crashes;
- changed: any other difference (e.g. a graph where the old ran eagerly, or a smaller bucket).
A class the any-requests abstraction (spec.design) rules out is absent for every batch, of any number
of requests. Otherwise, when both designs share P and strategy and lay out live lengths, every batch of
1..8 requests is enumerated exactly (cpgraph.design.loads): the token ranges of the class per request
count, and each distinct decision change (old -> new) with its least batch (fewest requests, then
tokens), replayed through the reference. Other pairs get a least witness from z3 on the exact model.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import z3

from cpgraph.design.efficiency import runs
from cpgraph.design.evaluate import Outcome, evaluate, select
from cpgraph.design.loads import busiest_loads, example_batch
from cpgraph.design.review import MAX_EXACT_REQUESTS, SEARCH_EXTRA_REQUESTS, spec_of
from cpgraph.design.schema import Design
from cpgraph.design.solve import int_value, maximize, minimize
from cpgraph.reference import align_up
from cpgraph.spec.design import DesignTerms, any_requests_batch, design_terms, exact_batch, exact_lengths

CLASSES = ("fixed", "regressed", "changed")
MAX_TRANSITIONS = 4
RLIMIT = 10_000_000  # deterministic z3 resource units per query, not wall-clock


@dataclass(frozen=True)
class Change:
    """One decision change, old -> new, with the least batch showing it."""

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
    # exact token ranges per request count (1..ENUMERATED_REQUESTS), when both designs share P, strategy
    # and a live layout: every (n, busiest load) a batch can have is enumerated (cpgraph.design.loads)
    ranges: tuple[tuple[int, tuple[tuple[int, int], ...]], ...] = ()


@dataclass(frozen=True)
class Diff:
    old: Design
    new: Design
    classes: tuple[DiffClass, ...]

    def by_kind(self, kind: str) -> DiffClass:
        return next(c for c in self.classes if c.kind == kind)


def describe(outcome: Outcome) -> str:
    """'eager', 'graph 2304', or 'CRASH 2048 (capacity_fit)'."""
    if not outcome.admitted:
        return "eager"
    crash = [v for v in outcome.violated if v in ("capacity_fit", "captured_bucket", "admission_replay", "rank_consensus")]
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


def _abstract(old: Design, new: Design) -> tuple[DesignTerms, DesignTerms, z3.ArithRef, z3.ArithRef, z3.BoolRef]:
    """Both designs on one any-requests batch: shared n and R; one busiest load when the layouts agree."""
    n, requests = z3.Int("abs.n"), z3.Int("abs.R")
    old_batch = any_requests_batch(spec_of(old), "abs.old", tokens=n, requests=requests)
    new_batch = any_requests_batch(spec_of(new), "abs.new", tokens=n, requests=requests)
    old_terms = design_terms(spec_of(old), old_batch, "abs.old")
    new_terms = design_terms(spec_of(new), new_batch, "abs.new")
    facts = [old_batch.holds, new_batch.holds, old_terms.holds, new_terms.holds]
    if (old.cp_size, old.strategy) == (new.cp_size, new.strategy):
        facts.append(z3.Int("abs.old.busiest") == z3.Int("abs.new.busiest"))
    return old_terms, new_terms, n, requests, z3.And(facts)


def _exact(old: Design, new: Design, requests: int) -> tuple[tuple[z3.ArithRef, ...], dict[str, z3.BoolRef], z3.ArithRef]:
    lengths, length_facts = exact_lengths(requests, "x", exact=True)
    old_batch = exact_batch(spec_of(old), lengths, "old")
    new_batch = exact_batch(spec_of(new), lengths, "new")
    old_terms = design_terms(spec_of(old), old_batch, "old")
    new_terms = design_terms(spec_of(new), new_batch, "new")
    base = z3.And(length_facts, old_terms.holds, new_terms.holds)
    return lengths, {k: z3.And(base, t) for k, t in _class_terms(old_terms, new_terms).items()}, old_batch.num_tokens


def _witness(
    old: Design, new: Design, kind: str, first: int
) -> tuple[tuple[int, ...] | None, tuple[int, int] | None, str]:
    """Least exact batch of ``kind`` (from ``first`` requests up) and the token range at that request count."""
    reasons = []
    for requests in range(first, min(first + SEARCH_EXTRA_REQUESTS, MAX_EXACT_REQUESTS) + 1):
        lengths, facts, n = _exact(old, new, requests)
        low = minimize(facts[kind], [n], rlimit=RLIMIT)
        if low.status == "unknown":  # larger request counts only get harder
            reasons.append(f"R={requests}: solver gave up ({low.reason})")
            break
        if low.status != "refuted":
            continue
        batch = tuple(int_value(low.model, x) for x in lengths)
        high = maximize(facts[kind], n, rlimit=RLIMIT)
        top = int_value(high.model, n) if high.status == "refuted" else sum(batch)
        return batch, (sum(batch), top), ""
    return None, None, "; ".join(reasons)


def diff_designs(old: Design, new: Design, *, progress: bool = False) -> Diff:
    """Every class of differing decisions between ``old`` and ``new``, for any number of requests."""
    old_terms, new_terms, n, requests, base = _abstract(old, new)
    exact = enumerate_changes(old, new)
    classes = []
    for kind, term in _class_terms(old_terms, new_terms).items():
        if progress:
            print(f"  diff {old.name} -> {new.name}: {kind} ...", file=sys.stderr, flush=True)
        first = minimize(z3.And(base, term), [requests, n], rlimit=RLIMIT)
        if first.status == "proved":
            classes.append(DiffClass(kind, "none", None, (), False, "no batch, any number of requests"))
            continue
        start = int_value(first.model, requests) if first.status == "refuted" else 1
        if exact is not None and exact.firsts[kind]:
            classes.append(_from_enumeration(old, new, kind, exact))
            continue
        if exact is not None:
            start = max(start, ENUMERATED_REQUESTS + 1)  # 1..8 requests were enumerated: nothing there
        batch, region, reason = _witness(old, new, kind, start)
        if batch is None:
            scope = f"no batch of {'1' if exact is not None else start} to {start + SEARCH_EXTRA_REQUESTS} requests"
            note = reason or f"{scope}; the any-requests abstraction is inconclusive beyond"
            classes.append(DiffClass(kind, "unknown" if reason else "none", None, (), False, note))
            continue
        classes.append(
            DiffClass(kind, "found", region, (_change(old, new, batch),), False, f"token range at {len(batch)} requests")
        )
    return Diff(old, new, classes=tuple(classes))


def _from_enumeration(old: Design, new: Design, kind: str, exact: Enumerated) -> DiffClass:
    """A found class from the exact enumeration: least batch per decision change, ranges per request count."""
    changes = []
    for _, _, requests, tokens, busiest in exact.firsts[kind][:MAX_TRANSITIONS]:
        lengths = example_batch(tokens, requests, busiest, cp_size=old.cp_size, strategy=old.strategy)
        if lengths is not None:
            changes.append(_change(old, new, lengths))
    spans = [r for _, runs in exact.ranges[kind] for r in runs]
    region = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None
    return DiffClass(
        kind,
        "found",
        region,
        tuple(changes),
        len(exact.firsts[kind]) > MAX_TRANSITIONS,
        f"exact over 1..{ENUMERATED_REQUESTS} requests; {len(exact.firsts[kind])} distinct decision changes",
        exact.ranges[kind],
    )


ENUMERATED_REQUESTS = 8


def _rank_decisions(design: Design, n: int, required: int) -> tuple[int | None, bool]:
    """(rank 0's bucket, crashes) from n and the live rows alone (live layout only)."""
    caps = design.capacities()
    chosen = [select(design, n, required, caps[r]) for r in range(design.cp_size if design.per_rank_table else 1)]
    crash = len(set(chosen)) > 1 or any(
        b is not None and (b not in caps[r] or required > caps[r][b]) for r, b in enumerate(chosen)
    )
    return chosen[0], crash


Decision = tuple[int | None, bool]  # (rank 0's bucket or None for eager, replay crashes)


@dataclass(frozen=True)
class Enumerated:
    """Per class: exact token ranges by request count, and the least (requests, n, busiest) batch of each
    distinct decision change (old decision, new decision), in order of fewest requests then tokens."""

    ranges: dict[str, tuple[tuple[int, tuple[tuple[int, int], ...]], ...]]
    firsts: dict[str, tuple[tuple[Decision, Decision, int, int, int], ...]]


def enumerate_changes(old: Design, new: Design) -> Enumerated | None:
    """Every CP-active batch of 1..ENUMERATED_REQUESTS requests, exactly, when both designs share P and
    strategy and lay out live lengths (then each decision reads only n and the busiest load)."""
    if (old.cp_size, old.strategy) != (new.cp_size, new.strategy) or "padded" in (old.layout_basis, new.layout_basis):
        return None
    p = old.cp_size
    if p < 2:
        return None
    top = max(max(old.buckets), max(new.buckets))
    ranges: dict[str, list[tuple[int, tuple[tuple[int, int], ...]]]] = {k: [] for k in CLASSES}
    firsts: dict[str, dict[tuple[Decision, Decision], tuple[int, int, int]]] = {k: {} for k in CLASSES}
    memo: dict[tuple[int, int], tuple[Decision, Decision, str | None]] = {}
    for requests in range(1, ENUMERATED_REQUESTS + 1):
        hits: dict[str, list[int]] = {k: [] for k in CLASSES}
        for n in range(2 * p * requests, top + 1):
            kinds = set()
            for busiest in busiest_loads(n, requests, cp_size=p, strategy=old.strategy):
                key = (n, busiest)
                if key not in memo:
                    before = _rank_decisions(old, n, align_up(busiest, old.align_size))
                    after = _rank_decisions(new, n, align_up(busiest, new.align_size))
                    memo[key] = (before, after, _kind(before, after))
                before, after, kind = memo[key]
                if kind is not None:
                    kinds.add(kind)
                    firsts[kind].setdefault((before, after), (requests, n, busiest))
            for kind in kinds:
                hits[kind].append(n)
        for kind, ns in hits.items():
            if ns:
                ranges[kind].append((requests, runs(ns)))
    return Enumerated(
        {k: tuple(v) for k, v in ranges.items()},
        {k: tuple((b, a) + hit for (b, a), hit in sorted(v.items(), key=lambda kv: kv[1])) for k, v in firsts.items()},
    )


def _kind(before: tuple[int | None, bool], after: tuple[int | None, bool]) -> str | None:
    """The class of a change between two (bucket, crashes) decisions (None: they agree)."""
    (old_bucket, old_crash), (new_bucket, new_crash) = before, after
    if old_crash and not new_crash:
        return "fixed"
    if not old_crash and old_bucket is not None and (
        new_crash or new_bucket is None or new_bucket > old_bucket
    ):
        return "regressed"
    if (old_bucket, old_crash) != (new_bucket, new_crash):
        return "changed"
    return None


def _change(old: Design, new: Design, lengths: tuple[int, ...]) -> Change:
    before, after = evaluate(old, lengths), evaluate(new, lengths)
    return Change(describe(before), describe(after), lengths, before, after)
