"""Prove every SEMANTICS.md invariant for a design, or refute it with a minimal replayed counterexample.

For each invariant:
1. Try the any-number-of-requests abstraction (spec.design.any_requests_batch). It rests on two lemmas
   proved here first for the design's P and strategy: the per-request excess lemma and its induction
   step. Proved there = proved for every length and every number of requests.
2. Otherwise the abstraction's least request count R_a is a lower bound for a real counterexample (the
   abstraction is sound); search exact batches from R_a requests upward, fewest requests first, then
   fewest tokens, and replay the witness through cpgraph.design.evaluate (the reference). With a live
   layout every decision reads only n and the busiest load, so the search enumerates every (n, busiest
   load) a batch can have (cpgraph.design.loads: exhaustive, fast, deterministic); with a padded layout
   it asks z3 for the least n on the exact model of R symbolic lengths.
3. If no exact witness turns up within the search bound, the verdict is ``bounded``: safe for every
   batch of fewer requests than the bound, stated as such, never reported as proved.
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass

import z3

from cpgraph.design.evaluate import INVARIANTS, SAFETY, Outcome, evaluate, replay_message, violations_at
from cpgraph.design.loads import busiest_loads, example_batch
from cpgraph.design.schema import Design
from cpgraph.design.solve import int_value, minimize, prove
from cpgraph.proofs.check import check
from cpgraph.reference import align_up, capture_local_tokens, required_local_tokens
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.spec.design import (
    Batch,
    DesignTerms,
    DesignSpec,
    any_requests_batch,
    design_terms,
    exact_batch,
    exact_lengths,
    first_bucket_fits_claim,
    induction_step_claim,
    per_request_excess_claim,
)

SEARCH_EXTRA_REQUESTS = 3  # exact requests tried beyond the abstraction's lower bound
MAX_EXACT_REQUESTS = 24
CONSTRUCTIVE_EXTRA_REQUESTS = 8
WITNESS_RLIMIT = 8_000_000
DESCRIPTIONS = {i: row.sentence for i, row in INVARIANT_TABLE.items()}  # from the one invariant table


def spec_of(design: Design) -> DesignSpec:
    """The design as the spec's plain numbers."""
    return DesignSpec(
        strategy=design.strategy,
        cp_size=design.cp_size,
        align_size=design.align_size,
        buckets=design.buckets,
        max_padding_factor=design.max_padding_factor,
        layout_basis=design.layout_basis,
        selector=design.selector,
        capacities=tuple(tuple(sorted(c.items())) for c in design.capacities()),
    )


@dataclass(frozen=True)
class Witness:
    """A concrete batch, what the design does with it, and the reference's replay of it."""

    extend_seq_lens: tuple[int, ...]
    outcome: Outcome
    replay: str

    @property
    def num_tokens(self) -> int:
        return sum(self.extend_seq_lens)


@dataclass(frozen=True)
class Lemma:
    name: str
    statement: str
    status: str
    seconds: float


@dataclass(frozen=True)
class InvariantResult:
    """``status``: proved | refuted | bounded | unknown, with the scope the verdict covers."""

    invariant: str
    kind: str
    status: str
    scope: str
    seconds: float
    witness: Witness | None = None
    note: str = ""


def witness_of(design: Design, lengths: tuple[int, ...]) -> Witness:
    outcome = evaluate(design, lengths)
    return Witness(lengths, outcome, replay_message(design, outcome))


def prove_lemmas(design: Design) -> tuple[Lemma, ...]:
    """The two facts the any-requests abstraction rests on, for this P and strategy."""
    p = design.cp_size
    out = []
    facts, claim = per_request_excess_claim(design.strategy, p, "lemma")
    verdict = check(claim, hypotheses=[facts])
    out.append(
        Lemma(
            "per_request_excess",
            f"one request of any length L: every rank holds l_r with {p}*l_r <= L + {p - 1}; loads sum to L",
            verdict.status.value,
            verdict.seconds,
        )
    )
    facts, claim = induction_step_claim(p, "step")
    verdict = check(claim, hypotheses=[facts])
    out.append(
        Lemma(
            "headroom_induction_step",
            f"{p}*l <= N + k*{p - 1} and one more request within its bound give {p}*l' <= N' + (k+1)*{p - 1}",
            verdict.status.value,
            verdict.seconds,
        )
    )
    if design.capacity_rule == "headroom":
        batch = any_requests_batch(spec_of(design), "head")
        facts, claim = first_bucket_fits_claim(spec_of(design), batch, design.max_requests)
        verdict = check(claim, hypotheses=[facts])
        extra = sum(
            rows - capture_local_tokens(b, cp_size=p, align_size=design.align_size)
            for b, rows in design.capacities()[0].items()
        )
        out.append(
            Lemma(
                "headroom_first_bucket_fits",
                f"every batch of at most {design.max_requests} requests fits the first bucket >= n within "
                f"[n, {design.max_padding_factor}n] (any lengths; costs {extra} rows per rank over the "
                "single-request rule, per bucket in the efficiency table)",
                verdict.status.value,
                verdict.seconds,
            )
        )
    return tuple(out)


def least_abstract_requests(spec: DesignSpec, invariant: str) -> int | None:
    """The fewest requests for which the abstraction breaks ``invariant`` (None: it never does or gave up)."""
    batch, terms = _abstract(spec)
    facts = z3.And(batch.holds, terms.holds, batch.active, z3.Not(terms.claims[invariant]))
    verdict = minimize(facts, [batch.requests, batch.num_tokens], rlimit=WITNESS_RLIMIT)
    if verdict.status != "refuted":
        return None
    return int_value(verdict.model, batch.requests)


@functools.lru_cache(maxsize=8)
def _abstract(spec: DesignSpec) -> tuple[Batch, DesignTerms]:
    """The design on the any-requests abstraction (built once per design; z3 terms are immutable)."""
    batch = any_requests_batch(spec, "abs")
    return batch, design_terms(spec, batch, "abs")


def exact_witness(spec: DesignSpec, invariant: str, requests: int) -> tuple[tuple[int, ...] | None, str]:
    """Fewest-token batch of exactly ``requests`` requests breaking ``invariant`` (None if none / gave up)."""
    lengths, length_facts = exact_lengths(requests, "x", exact=True)
    batch = exact_batch(spec, lengths, "x")
    terms = design_terms(spec, batch, "x")
    # Loads are sums over requests, so any order of the first R-1 lengths gives the same decision (the
    # last request is kept apart: a padded layout folds the pad into it). Sorting them prunes R! orders.
    order = [lengths[i] >= lengths[i + 1] for i in range(len(lengths) - 2)]
    facts = z3.And(length_facts, batch.active, terms.holds, z3.Not(terms.claims[invariant]), *order)
    verdict = minimize(facts, [batch.num_tokens], rlimit=WITNESS_RLIMIT)
    if verdict.status == "refuted":
        return tuple(int_value(verdict.model, x) for x in lengths), ""
    return None, verdict.reason


ENUMERATION_REQUEST_LIMIT = 16  # remainder multisets grow as C(2P+R-1, R)


def enumerated_witness(design: Design, invariant: str, requests: int) -> tuple[int, ...] | None:
    """Fewest-token batch of exactly ``requests`` requests breaking ``invariant``, by exhaustive enumeration
    of every (n, busiest load) such a batch can have (cpgraph.design.loads; live layout only). Batches
    above the largest bucket run eagerly under every selector, so the scan stops there."""
    p, a = design.cp_size, design.align_size
    memo: dict[tuple[int, int], bool] = {}
    for n in range(2 * p * requests, max(design.buckets) + 1):
        for busiest in busiest_loads(n, requests, cp_size=p, strategy=design.strategy):
            required = align_up(busiest, a)
            if (n, required) not in memo:
                memo[(n, required)] = invariant in violations_at(design, n, required)
            if memo[(n, required)]:
                return example_batch(n, requests, busiest, cp_size=p, strategy=design.strategy)
    return None


def constructed_witness(design: Design, invariant: str, requests: int) -> tuple[int, ...] | None:
    """A replay overflow of a padded-layout design from the tight family: every request but the last
    has length 3P+1 (L mod 2P = P+1, the busiest rank at the headroom bound; 2P+1 for contiguous), so
    the replay batch, whose last request absorbs the pad, is as unbalanced as R requests can be. For each
    bucket whose replay layout overflows, the least n of the family that the selector pads to it.
    Not exhaustive: used only where the exact z3 search gives up."""
    if design.layout_basis != "padded" or invariant not in ("capacity_fit", "admission_replay"):
        return None
    p = design.cp_size
    short = 2 * p + 1 if design.strategy == "contiguous" else 3 * p + 1
    head = (short,) * (requests - 1)
    best: tuple[int, ...] | None = None
    caps = design.capacities()[0]
    for bucket in design.buckets:
        last = bucket - sum(head)
        if last < 2 * p or bucket not in caps:
            continue
        rows = required_local_tokens(head + (last,), cp_size=p, align_size=design.align_size, strategy=design.strategy)
        if rows <= caps[bucket]:
            continue
        low = max(-(-bucket // design.max_padding_factor), sum(head) + 2 * p)
        for n in range(low, bucket + 1):
            lengths = head + (n - sum(head),)
            if invariant in evaluate(design, lengths).violated:
                if best is None or n < sum(best):
                    best = lengths
                break
    return best


def review_invariant(design: Design, spec: DesignSpec, invariant: str, lemmas_ok: bool) -> InvariantResult:
    kind = "safety" if invariant in SAFETY else "efficiency"
    start = time.perf_counter()
    batch, terms = _abstract(spec)
    verdict = prove([batch.holds, terms.holds], terms.claims[invariant])
    if verdict.status == "proved" and lemmas_ok:
        return InvariantResult(
            invariant, kind, "proved", "all lengths, any number of requests", time.perf_counter() - start
        )
    lower = least_abstract_requests(spec, invariant) if verdict.status == "refuted" else 1
    first = lower if lower is not None else 1
    last = min(first + SEARCH_EXTRA_REQUESTS, MAX_EXACT_REQUESTS)
    reasons = []
    checked = first - 1  # every batch of at most ``checked`` requests is known not to break it
    enumerate_loads = design.layout_basis == "live" and last <= ENUMERATION_REQUEST_LIMIT
    constructive = False  # after z3 gives up: only the tight family, over a few more request counts
    requests = first - 1
    while requests < (last if not constructive else min(last + CONSTRUCTIVE_EXTRA_REQUESTS, MAX_EXACT_REQUESTS)):
        requests += 1
        how = "exhaustive load enumeration" if enumerate_loads else "z3"
        if enumerate_loads:
            lengths: tuple[int, ...] | None = enumerated_witness(design, invariant, requests)
        elif constructive:
            lengths = constructed_witness(design, invariant, requests)
            how = "constructed from the tight family after z3 gave up; fewest tokens not guaranteed"
        else:
            lengths, reason = exact_witness(spec, invariant, requests)
            if reason:
                reasons.append(f"R={requests}: {reason}")
                lengths = constructed_witness(design, invariant, requests)
                constructive = lengths is None and design.layout_basis == "padded"
                if lengths is None and not constructive:
                    break
                how = "constructed from the tight family after z3 gave up; fewest tokens not guaranteed"
        if lengths is None:
            if not constructive:
                checked = requests
            continue
        witness = witness_of(design, lengths)
        seconds = time.perf_counter() - start
        if invariant not in witness.outcome.violated:
            return InvariantResult(
                invariant, kind, "unknown", "encoding check", seconds, witness,
                "the witness is not confirmed by the reference replay (spec/design.py or loads.py disagrees)",
            )
        if how.startswith("constructed"):
            scope = f"a batch of {requests} requests and {witness.num_tokens} tokens [{how}]"
            if checked:
                scope += f"; no batch of at most {checked} requests breaks it"
            return InvariantResult(invariant, kind, "refuted", scope, seconds, witness)
        scope = f"minimal: fewest requests ({requests}), then fewest tokens ({witness.num_tokens}) [{how}]"
        below = []
        if first > 1:
            below.append(f"below {first} requests by the abstraction")
        if requests > first:
            span = str(first) if requests - 1 == first else f"{first}..{requests - 1}"
            below.append(f"{span} requests by exhaustive search")
        if below:
            scope += "; no batch of fewer requests breaks it (" + ", ".join(below) + ")"
        return InvariantResult(invariant, kind, "refuted", scope, seconds, witness)
    seconds = time.perf_counter() - start
    bound = f"holds for every batch of at most {checked} requests" if checked else "no request count checked"
    if first > 1:
        bound += f" (below {first}: proved for any length by the abstraction)"
    if reasons:
        return InvariantResult(invariant, kind, "unknown", bound, seconds, None, "solver gave up: " + "; ".join(reasons))
    return InvariantResult(
        invariant, kind, "bounded", bound, seconds, None, "the any-requests abstraction is inconclusive beyond that"
    )


def review_invariants(design: Design, *, progress: bool = False) -> tuple[tuple[Lemma, ...], tuple[InvariantResult, ...]]:
    """Lemmas, then every invariant in SEMANTICS.md order."""
    spec = spec_of(design)
    lemmas = prove_lemmas(design)
    lemmas_ok = all(lemma.status == "proved" for lemma in lemmas)
    results = []
    for invariant in INVARIANTS:
        if progress:
            print(f"  {design.name}: {invariant} ...", file=sys.stderr, flush=True)
        results.append(review_invariant(design, spec, invariant, lemmas_ok))
    return lemmas, tuple(results)

