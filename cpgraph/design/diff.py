"""A semantic diff of two designs found by the solver: batches on which they decide differently.

Both designs read one symbolic batch. Each differing batch falls in one class:
- fixed: the old design crashes on it (some safety invariant fails), the new one does not;
- regressed: the old design replays it safely, the new one runs it eagerly, pads it to a larger bucket,
  or crashes;
- changed: any other difference (e.g. a graph where the old ran eagerly, or a smaller bucket).
A class the any-requests abstraction (spec.design) rules out is absent for every batch. Otherwise: a
minimal exact witness (fewest requests, then fewest tokens) replayed through the reference, the token
range [least n, largest n] where the class occurs at the witness's request count, and further distinct
decision changes (old -> new) found on the abstraction and made concrete by cpgraph.design.loads.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass

import z3

from cpgraph.design.evaluate import Outcome, evaluate, select
from cpgraph.design.loads import busiest_loads, example_batch
from cpgraph.design.review import MAX_EXACT_REQUESTS, SEARCH_EXTRA_REQUESTS, spec_of
from cpgraph.design.schema import Design
from cpgraph.design.solve import int_value, maximize, minimize
from reference import align_up
from spec.design import DesignTerms, any_requests_batch, design_terms, exact_batch, exact_lengths

CLASSES = ("fixed", "regressed", "changed")
MAX_TRANSITIONS = 4
MAX_ENUMERATED_REQUESTS = 6
TIMEOUT_MS = 8_000


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
        low = minimize(facts[kind], [n], timeout_ms=TIMEOUT_MS)
        if low.status == "unknown":
            reasons.append(f"R={requests}: {low.reason}")
        if low.status != "refuted":
            continue
        batch = tuple(int_value(low.model, x) for x in lengths)
        high = maximize(facts[kind], n, timeout_ms=TIMEOUT_MS)
        top = int_value(high.model, n) if high.status == "refuted" else sum(batch)
        return batch, (sum(batch), top), ""
    return None, None, "; ".join(reasons)


def diff_designs(old: Design, new: Design, *, progress: bool = False) -> Diff:
    """Every class of differing decisions between ``old`` and ``new``, for any number of requests."""
    old_terms, new_terms, n, requests, base = _abstract(old, new)
    exact = enumerated_ranges(old, new)
    classes = []
    for kind, term in _class_terms(old_terms, new_terms).items():
        if progress:
            print(f"  diff {old.name} -> {new.name}: {kind} ...", file=sys.stderr, flush=True)
        first = minimize(z3.And(base, term), [requests, n], timeout_ms=TIMEOUT_MS)
        if first.status == "proved":
            classes.append(DiffClass(kind, "none", None, (), False, "no batch, any number of requests"))
            continue
        start = int_value(first.model, requests) if first.status == "refuted" else 1
        batch, region, reason = _witness(old, new, kind, start)
        if batch is None:
            status = "unknown" if reason else "none"
            note = reason or f"the abstraction finds candidates, but no batch of {start} to {start + SEARCH_EXTRA_REQUESTS} requests"
            classes.append(DiffClass(kind, status, None, (), False, note))
            continue
        changes = [_change(old, new, batch)]
        more = False
        blocked = [_block(old_terms, new_terms, changes[0])]
        for _ in range(MAX_TRANSITIONS + 2):  # further changes, from the abstraction, made concrete
            verdict = minimize(z3.And(base, term, *blocked), [requests, n], timeout_ms=TIMEOUT_MS)
            if verdict.status != "refuted":
                break
            if len(changes) == MAX_TRANSITIONS:
                more = True
                break
            tokens, count = int_value(verdict.model, n), int_value(verdict.model, requests)
            blocked.append(
                z3.Not(
                    z3.And(
                        old_terms.admitted == verdict.model.eval(old_terms.admitted, model_completion=True),
                        old_terms.bucket == int_value(verdict.model, old_terms.bucket),
                        new_terms.admitted == verdict.model.eval(new_terms.admitted, model_completion=True),
                        new_terms.bucket == int_value(verdict.model, new_terms.bucket),
                    )
                )
            )
            change = _concretize(old, new, kind, tokens, count, changes)
            if change is not None:
                changes.append(change)
        classes.append(
            DiffClass(
                kind, "found", region, tuple(changes), more, f"token range at {len(batch)} requests", exact.get(kind, ())
            )
        )
    return Diff(old, new, classes=tuple(classes))


ENUMERATED_REQUESTS = 8


def _rank_decisions(design: Design, n: int, required: int) -> tuple[int | None, bool]:
    """(rank 0's bucket, crashes) from n and the live rows alone (live layout only)."""
    caps = design.capacities()
    chosen = [select(design, n, required, caps[r]) for r in range(design.cp_size if design.per_rank_table else 1)]
    crash = len(set(chosen)) > 1 or any(
        b is not None and (b not in caps[r] or required > caps[r][b]) for r, b in enumerate(chosen)
    )
    return chosen[0], crash


def enumerated_ranges(old: Design, new: Design) -> dict[str, tuple[tuple[int, tuple[tuple[int, int], ...]], ...]]:
    """class -> ((requests, token ranges), ...) over every CP-active batch of 1..ENUMERATED_REQUESTS requests."""
    if (old.cp_size, old.strategy) != (new.cp_size, new.strategy) or "padded" in (old.layout_basis, new.layout_basis):
        return {}
    p = old.cp_size
    if p < 2:
        return {}
    top = max(max(old.buckets), max(new.buckets))
    out: dict[str, list[tuple[int, tuple[tuple[int, int], ...]]]] = {k: [] for k in CLASSES}
    memo: dict[tuple[int, int], str | None] = {}
    for requests in range(1, ENUMERATED_REQUESTS + 1):
        hits: dict[str, list[int]] = {k: [] for k in CLASSES}
        for n in range(2 * p * requests, top + 1):
            kinds = set()
            for busiest in busiest_loads(n, requests, cp_size=p, strategy=old.strategy):
                key = (n, busiest)
                if key not in memo:
                    before = _rank_decisions(old, n, align_up(busiest, old.align_size))
                    after = _rank_decisions(new, n, align_up(busiest, new.align_size))
                    memo[key] = _kind(before, after)
                if memo[key] is not None:
                    kinds.add(memo[key])
            for kind in kinds:
                hits[str(kind)].append(n)
        for kind, ns in hits.items():
            if ns:
                out[kind].append((requests, _runs(ns)))
    return {k: tuple(v) for k, v in out.items()}


def _runs(points: list[int]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for n in points:
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return tuple(out)


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


def _concretize(
    old: Design, new: Design, kind: str, tokens: int, requests: int, seen: list[Change]
) -> Change | None:
    """A real batch near an abstract point (n .. n+4P-1 tokens, R .. R+2 requests) showing a new change of ``kind``."""
    p = old.cp_size
    for count, n in itertools.product(range(requests, min(requests + 2, MAX_ENUMERATED_REQUESTS) + 1), range(tokens, tokens + 4 * p)):
        for busiest in busiest_loads(n, count, cp_size=p, strategy=old.strategy):
            lengths = example_batch(n, count, busiest, cp_size=p, strategy=old.strategy)
            if lengths is None:
                continue
            change = _change(old, new, lengths)
            if _classify(change) == kind and all((c.old, c.new) != (change.old, change.new) for c in seen):
                return change
    return None


def _change(old: Design, new: Design, lengths: tuple[int, ...]) -> Change:
    before, after = evaluate(old, lengths), evaluate(new, lengths)
    return Change(describe(before), describe(after), lengths, before, after)


def _classify(change: Change) -> str | None:
    """The class of a concrete change (None when the designs agree on it)."""
    old, new = change.old_outcome, change.new_outcome
    return _kind((old.bucket, old.admitted and old.crashes), (new.bucket, new.admitted and new.crashes))


def _block(old_terms: DesignTerms, new_terms: DesignTerms, change: Change) -> z3.BoolRef:
    """Exclude the (old decision, new decision) pair of ``change`` from further search."""
    def same(terms: DesignTerms, bucket: int | None) -> z3.BoolRef:
        if bucket is None:
            return z3.Not(terms.admitted)
        return z3.And(terms.admitted, terms.bucket == bucket)

    return z3.Not(z3.And(same(old_terms, change.old_outcome.bucket), same(new_terms, change.new_outcome.bucket)))
