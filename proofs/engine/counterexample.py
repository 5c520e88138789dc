"""A refuted query's counterexample: the model minimised to the least size (fewest tokens), the query's shown
terms evaluated on it, and its replay through the reference."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import z3

from cpgraph.proofs.engine.check import Status, Value, Verdict, check
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.engine.results import Failure


def _substitute(term: z3.ExprRef, model: Mapping[str, Value]) -> z3.ExprRef:
    pairs = [
        (z3.Bool(k) if isinstance(v, bool) else z3.Int(k), z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v))
        for k, v in model.items()
    ]
    return z3.simplify(z3.substitute(term, *pairs)) if pairs else z3.simplify(term)


def minimise(query: Query, verdict: Verdict, *, rounds: int = 40) -> Mapping[str, Value]:
    """The refuting model with the least ``query.size`` (binary search on an upper bound, each probe one
    `check`); the original model when the query has no size or a probe is unknown."""
    model = verdict.model
    if query.size is None or not model:
        return model
    current = _substitute(query.size, model)
    if not z3.is_int_value(current):
        return model
    low, high = -1, current.as_long()  # size <= low has no counterexample (or is unexplored below 0)
    probe_low = check(query.claim, hypotheses=(*query.hypotheses, query.size <= 0), rlimit=query.rlimit)
    if probe_low.status is Status.REFUTED:
        return probe_low.model
    low = 0
    for _ in range(rounds):
        if high - low <= 1:
            break
        mid = (low + high) // 2
        probe = check(query.claim, hypotheses=(*query.hypotheses, query.size <= mid), rlimit=query.rlimit)
        if probe.status is Status.REFUTED:
            high, model = mid, probe.model
        elif probe.status is Status.PROVED:
            low = mid
        else:
            break
    return model


UNDER_DEFINED = ("refuted only without the definitions this step leaves out (it is proved from the chain's earlier "
                 "lemmas); with them it holds: the chain lacks a lemma, the theorem has no counterexample here")


def failure_of(label: str, query: Query, verdict: Verdict, *, shrink: bool) -> Failure:
    """The Failure for a query not proved: a refuted one with its (minimised, when ``shrink``) model, shown terms
    and replay."""
    if verdict.status is not Status.REFUTED:
        return Failure(label, verdict)
    if query.definitions:  # a step proved from lemmas alone: its model need not be a run of the sides
        query = dataclasses.replace(query, hypotheses=(*query.hypotheses, *query.definitions), definitions=())
        verdict = check(query.claim, hypotheses=query.hypotheses, rlimit=query.rlimit, model=True)
        if verdict.status is Status.PROVED:
            return Failure(label, Verdict(Status.UNKNOWN, verdict.seconds, reason=UNDER_DEFINED))
        if verdict.status is not Status.REFUTED:
            return Failure(label, verdict)
    model = minimise(query, verdict) if shrink else verdict.model
    shown = {name: str(_substitute(term, model)) for name, term in query.shown}
    replay = query.replay(model) if query.replay is not None else ""
    return Failure(label, verdict, model, shown, replay)
