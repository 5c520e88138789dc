"""Prove every invariant for a design over every batch, or refute it with a minimal replayed counterexample.

Each invariant is one query on the count encoding (spec/design_counts.py via spec/design.py): a batch of
any number of requests is described by the count of requests in each remainder class plus the total
quotient, so the query covers every number of requests and every length at once, exactly.
- none (unsatisfiable): proved for every batch.
- found: iterative tightening (proofs/engine/search.py) gives the fewest requests, then the fewest tokens
  among batches with that many requests; the model reads back as a concrete batch
  (design_counts.realise), which is replayed through cpgraph.design.evaluate (the reference) and must
  break the invariant there before it is shown.
- unknown (the solver's deterministic rlimit ran out, or the replay disagrees): said, with the reason.
The abstraction lemma behind the encoding (class loads equal the spec's per-request loads, for the
design's P and strategy) is proved first, in proofs/theorems/design_lemmas.py.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass

import z3

from cpgraph.design.evaluate import INVARIANTS, SAFETY, Outcome, evaluate, replay_message
from cpgraph.design.schema import Design, DesignError
from cpgraph.proofs.theorems.design_lemmas import design_lemmas
from cpgraph.proofs.engine.check import Value
from cpgraph.proofs.engine.search import Found, least, value
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.spec.design import DesignBatch, DesignSpec, DesignTerms, any_batch, design_terms, short_lengths
from cpgraph.spec.design_counts import MAX_SHORT_CLASSES, Counts, largest_cp_size, realise, realise_total

DESCRIPTIONS = {i: row.sentence for i, row in INVARIANT_TABLE.items()}  # from the one invariant table


def spec_of(design: Design) -> DesignSpec:
    """The design as the spec's plain numbers (its keying's columns from reference/keying.py)."""
    return DesignSpec(
        strategy=design.strategy,
        cp_size=design.cp_size,
        align_size=design.align_size,
        buckets=design.buckets,
        max_padding_factor=design.max_padding_factor,
        layout_basis=design.layout_basis,
        selector=design.selector,
        capacities=tuple(tuple(sorted(c.items())) for c in design.capacities()),
        key=design.key,
        admission_key=design.admits_by,
        windowed=design.keyed.windowed,
        gated=design.keyed.gated,
    )


def check_scope(designs: tuple[Design, ...], what: str) -> None:
    """DesignError when one batch for ``designs`` counts more lengths apart than the encoding's limit
    (spec.design_counts.MAX_SHORT_CLASSES; dual_chunk_swap counts every length below 2P(2P-3)+2 apart)."""
    count = short_lengths(tuple(spec_of(d) for d in designs))
    if count > MAX_SHORT_CLASSES:
        names = ", ".join(f"{d.name} ({d.strategy}, cp_size {d.cp_size})" for d in designs)
        limits = ", ".join(
            f"{d.strategy} cp_size <= {largest_cp_size(d.strategy)}" for d in designs if largest_cp_size(d.strategy)
        )
        raise DesignError(
            f"{what} of {names}: the count encoding would count {count} request lengths apart, above its limit "
            f"of {MAX_SHORT_CLASSES} (MAX_SHORT_CLASSES: dual_chunk_swap counts every length below its exact "
            f"range apart; allowed: {limits}); plan and simulate take any cp_size"
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
    """``status``: proved | refuted | unknown, with the scope the verdict covers."""

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
    """The abstraction lemmas behind the count encoding, for this design's P and strategy."""
    return tuple(
        Lemma(name, statement, verdict.status.value, verdict.seconds)
        for name, statement, verdict in design_lemmas(design.strategy, design.cp_size)
    )


@functools.lru_cache(maxsize=8)
def _terms(spec: DesignSpec) -> tuple[DesignBatch, DesignTerms]:
    """The design on any batch (built once per design; z3 terms are immutable)."""
    batch = any_batch(spec, "x")
    return batch, design_terms(spec, batch, "x", SAFETY)


def read_counts(counts: Counts, model: Mapping[str, Value]) -> tuple[tuple[int, ...], int, int, int]:
    """(counts per class, quotient, requests, tokens) of a counts batch in a model."""
    got = tuple(value(model, str(c)) for c in counts.counts)
    return got, value(model, str(counts.quotient)), value(model, str(counts.requests)), value(model, str(counts.tokens))


def lengths_of(batch: DesignBatch, model: Mapping[str, Value]) -> tuple[int, ...]:
    """The concrete batch a model of the count encoding describes (the last request last)."""
    counts = batch.counts
    per_class, quotient, requests, tokens = read_counts(counts, model)
    short = tuple((length, value(model, str(count))) for length, count in counts.short)
    if counts.modulus == 1:
        others = realise_total(counts.min_length, requests, tokens, short)
    else:
        others = realise(counts.modulus, counts.min_length, per_class, quotient, tokens, short)
    if batch.last is None:
        return others
    return others + (value(model, str(batch.last)),)


def least_breaking(spec: DesignSpec, invariant: str) -> tuple[Found, tuple[int, ...] | None]:
    """The batch breaking ``invariant`` with the fewest requests, then the fewest tokens (None: no batch)."""
    batch, terms = _terms(spec)
    top = max(spec.buckets)
    if spec.windowed:
        # Implied bounds that prune the search (sound: a safety break needs an admitted bucket >= n, an
        # efficiency break a fitting bucket >= n, so n <= the largest bucket, and every request has >= 2P tokens)
        bounds = [batch.num_tokens <= top, 2 * spec.cp_size * batch.requests <= top]
    else:
        # keyed by m with no window: a safety break needs an admitted size >= its admission key (n or m),
        # an efficiency break a fitting size >= m, and m <= n; the loads sum to at least n, so n <= P*m
        # (sound, implied by the definitions)
        m = batch.key("local_rows")
        bounds = [m <= top, batch.num_tokens <= spec.cp_size * m, batch.requests <= batch.num_tokens]
    found = least(
        [batch.holds, terms.holds, batch.active, z3.Not(terms.claims[invariant]), *bounds],
        [(batch.requests, 1), (batch.num_tokens, spec.shortest)],
    )
    if found.status != "found":
        return found, None
    return found, lengths_of(batch, found.model)


def review_invariant(design: Design, spec: DesignSpec, invariant: str, lemmas_ok: bool) -> InvariantResult:
    kind = "safety" if invariant in SAFETY else "efficiency"
    start = time.perf_counter()
    found, lengths = least_breaking(spec, invariant)
    seconds = time.perf_counter() - start
    if found.status == "unknown":
        return InvariantResult(invariant, kind, "unknown", "solver gave up", seconds, None, found.reason)
    if found.status == "none":
        if not lemmas_ok:
            return InvariantResult(
                invariant, kind, "unknown", "count encoding", seconds, None,
                "no batch breaks it in the count encoding, but the abstraction lemma was not proved",
            )
        return InvariantResult(
            invariant, kind, "proved", "all lengths, any number of requests (count encoding)", seconds
        )
    assert lengths is not None
    witness = witness_of(design, lengths)
    if invariant not in witness.outcome.violated:
        return InvariantResult(
            invariant, kind, "unknown", "encoding check", seconds, witness,
            "the solver's witness is not confirmed by the reference replay (spec/design.py disagrees)",
        )
    scope = (
        f"minimal: fewest requests ({len(lengths)}), then fewest tokens ({sum(lengths)}), over every batch "
        f"[count encoding, {found.queries} queries]"
    )
    return InvariantResult(invariant, kind, "refuted", scope, seconds, witness)


def review_invariants(design: Design, *, progress: bool = False) -> tuple[tuple[Lemma, ...], tuple[InvariantResult, ...]]:
    """Lemmas, then every invariant in docs/semantics.md order."""
    check_scope((design,), "cpgraph review")
    spec = spec_of(design)
    lemmas = prove_lemmas(design)
    lemmas_ok = all(lemma.status == "proved" for lemma in lemmas)
    results = []
    for invariant in INVARIANTS:
        if progress:
            print(f"  {design.name}: {invariant} ...", file=sys.stderr, flush=True)
        results.append(review_invariant(design, spec, invariant, lemmas_ok))
    return lemmas, tuple(results)
