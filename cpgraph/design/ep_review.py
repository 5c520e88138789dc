"""``cpgraph review`` of an EP design (cpgraph/design/ep.py): each invariant proved or refuted for ANY step on
every EP rank (each busy rank's tokens, prefill and decode requests symbolic) over the design's captured graphs.

One query per invariant on the spec's terms (spec/ep_graphs.py: the design's sync, then ``match`` on each rank),
through the one solver helper (proofs/engine/search.py): none (proved for every step), found (the least step:
fewest requests, then tokens, realised as reference ``GraphDims``, each rank's graph recomputed by the
reference's matching and the reference judge must find the invariant broken before it is shown), unknown.
Every rank is busy (an idle rank's dummy step is the release's, checked by ``cpgraph check``, not the design).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import z3

from cpgraph.design.ep import EpDesign
from cpgraph.proofs.engine.search import least, value
from cpgraph.reference.ep_graphs import EpAnswer, EpFinding, GraphDims, judge, synced_match as ref_synced
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.spec.ep_graphs import Dims, Matched, SYNC, applicable, consensus, dims, match, step_facts
from cpgraph.spec.logic import And, Not, Or
from cpgraph.spec.terms import BoolTerm, IntTerm, all_of, any_of

INVARIANTS = ("rank_consensus", "captured_bucket", "padding_limit", "capacity_fit", "minimal_bucket", "no_needless_fallback")


@dataclass(frozen=True)
class EpVerdict:
    invariant: str
    status: str  # proved | refuted | unknown
    seconds: float
    steps: tuple[GraphDims, ...] = ()
    answers: tuple[EpAnswer, ...] = ()
    findings: tuple[EpFinding, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class EpReview:
    design: EpDesign
    invariants: tuple[EpVerdict, ...]
    seconds: float

    @property
    def exit_code(self) -> int:
        """3: some invariant unknown; else 1: some refuted; else 0."""
        if any(v.status == "unknown" for v in self.invariants):
            return 3
        return 1 if any(v.status == "refuted" for v in self.invariants) else 0

    def text(self) -> str:
        d = self.design
        lines = [f"cpgraph review {d.name} (EP design: {d.matching} matching, sync {d.sync}, EP {d.ep_size}, "
                 f"{len(d.graphs)} graphs, k = {d.tokens_per_decode}) in {self.seconds:.1f}s", ""]
        for v in self.invariants:
            row = INVARIANT_TABLE[v.invariant]
            lines.append(f"{v.invariant:22} {v.status:8} {row.stated('ep_step')}")
            for r, (step, a) in enumerate(zip(v.steps, v.answers)):
                lines.append(f"    EP rank {r}: step {step} -> {a.describe()}")
            lines += [f"    reference judge: {f.why}" for f in v.findings if f.invariant == v.invariant]
            if v.note:
                lines.append(f"    {v.note}")
        return "\n".join(lines)


def _ranks(design: EpDesign) -> list[Dims]:
    return [dims(f"rank{r}") for r in range(design.ep_size)]


def _matched(design: EpDesign, steps: Sequence[Dims]) -> list[Matched]:
    graphs = [Dims(z3.IntVal(g.tokens), z3.IntVal(g.prefill), z3.IntVal(g.decode)) for g in design.graphs]
    sync = "tokens" if design.sync == "decode_only" else design.sync
    out = [match(s, graphs, design.matching) for s in SYNC[sync](steps)]
    if design.sync == "decode_only":
        decode_only = all_of(s.prefill == 0 for s in steps)
        out = [Matched(And(decode_only, m.found), m.dims) for m in out]
    return out


def _runs_at(design: EpDesign, step: Dims, t: int) -> BoolTerm:
    """``step`` matches a captured graph of exactly ``t`` tokens."""
    return any_of(applicable(Dims(z3.IntVal(g.tokens), z3.IntVal(g.prefill), z3.IntVal(g.decode)), step, design.matching)
                  for g in design.graphs if g.tokens == t)


def _broken(design: EpDesign, invariant: str, steps: Sequence[Dims], matched: Sequence[Matched]) -> BoolTerm:
    if invariant == "rank_consensus":
        return Not(consensus(matched))
    if invariant == "captured_bucket":
        return any_of(And(m.found, Not(any_of(And(m.dims.tokens == g.tokens, m.dims.prefill == g.prefill, m.dims.decode == g.decode)
                                              for g in design.graphs))) for m in matched)
    if invariant == "padding_limit":
        return any_of(And(m.found, m.dims.tokens < s.tokens) for m, s in zip(matched, steps))
    if invariant == "capacity_fit":
        return any_of(And(m.found, m.dims.tokens >= s.tokens, _not_holding(design, m.dims, s)) for m, s in zip(matched, steps))
    counts = sorted({g.tokens for g in design.graphs})
    common = {t: all_of(_runs_at(design, s, t) for s in steps) for t in counts}
    if invariant == "no_needless_fallback":
        return And(all_of(Not(m.found) for m in matched), any_of(common.values()))
    return And(consensus(matched), matched[0].found, any_of(And(c, matched[0].dims.tokens > t) for t, c in common.items()))


def _not_holding(design: EpDesign, g: Dims, s: Dims) -> BoolTerm:
    if design.matching == "strict":
        return Or(g.prefill < s.prefill, And(s.prefill > 0, g.decode < s.decode), And(s.prefill == 0, g.prefill + g.decode < s.decode))
    return Or(g.prefill < s.prefill, g.prefill + g.decode < s.prefill + s.decode)


def _reference(design: EpDesign, steps: Sequence[GraphDims]) -> list[GraphDims | None]:
    if design.sync == "decode_only" and any(s.prefill for s in steps):
        return [None] * len(steps)
    sync = "tokens" if design.sync == "decode_only" else design.sync
    return ref_synced(steps, design.graphs, design.matching, sync)


def _facts(design: EpDesign, steps: Sequence[Dims]) -> list[BoolTerm]:
    k = design.tokens_per_decode
    return [And(step_facts(s), s.tokens >= s.prefill + s.decode * k) for s in steps]


def review_ep(design: EpDesign) -> EpReview:
    """Every invariant of ``design`` proved or refuted (module docstring)."""
    start = time.perf_counter()
    verdicts: list[EpVerdict] = []
    for invariant in INVARIANTS:
        began = time.perf_counter()
        steps = _ranks(design)
        matched = _matched(design, steps)
        requests: IntTerm = z3.Sum([s.prefill + s.decode for s in steps])
        tokens: IntTerm = z3.Sum([s.tokens for s in steps])
        found = least([*_facts(design, steps), _broken(design, invariant, steps, matched)], [(requests, design.ep_size), (tokens, design.ep_size)])
        seconds = time.perf_counter() - began
        if found.status == "none":
            verdicts.append(EpVerdict(invariant, "proved", seconds))
            continue
        if found.status != "found":
            verdicts.append(EpVerdict(invariant, "unknown", seconds, note=found.reason))
            continue
        model = found.model
        real = tuple(GraphDims(value(model, f"rank{r}.T"), value(model, f"rank{r}.P"), value(model, f"rank{r}.D"))
                     for r in range(design.ep_size))
        answers = tuple(EpAnswer(r, g) for r, g in enumerate(_reference(design, real)))
        judged = tuple(judge(real, design.graphs, answers, matching=design.matching, equal_shapes=True))
        confirmed = any(f.invariant == invariant and not f.info for f in judged)
        verdicts.append(EpVerdict(invariant, "refuted" if confirmed else "unknown", seconds, real, answers, judged,
                                  "" if confirmed else "the reference judge does not confirm the witness"))
    return EpReview(design, tuple(verdicts), time.perf_counter() - start)


__all__ = ["INVARIANTS", "EpReview", "EpVerdict", "review_ep"]
