"""A counterexample is a run of the sides: a chain's step proved from its earlier lemmas alone (its own facts
empty) is checked again with the definitions it left out before its model is minimised and replayed, and a
step refuted only without them is not reported as a counterexample (proofs/engine/counterexample.py)."""

from __future__ import annotations

import pytest
import z3

from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.engine.counterexample import UNDER_DEFINED, failure_of
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.run import run_queries
from cpgraph.proofs.teeth.variants.end_to_end import LONG_P
from cpgraph.proofs.theorems import end_to_end_local as local
from cpgraph.spec import replay as spec_replay
from cpgraph.spec.replay import tripwire
from cpgraph.spec.selection import CaptureList
from cpgraph.spec.terms import BoolTerm, IntTerm


def _holds(term: z3.BoolRef, model: dict[str, object]) -> bool:
    pairs = [(z3.Bool(k) if isinstance(v, bool) else z3.Int(k), z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v))
             for k, v in model.items()]
    return bool(z3.is_true(z3.simplify(z3.substitute(term, *pairs))))


def test_a_last_step_refuted_from_lemmas_alone_is_refuted_again_with_the_definitions(monkeypatch: pytest.MonkeyPatch) -> None:
    # Replay's tripwire reads the first 8 sizes only: the sides' decisions agree, and the chain's last step (proved
    # from the lemmas alone) is refuted; its model without replay's definitions named a size the batch never keys.
    def first_8(capture: CaptureList, bucket: IntTerm, loads: tuple[IntTerm, ...]) -> BoolTerm:
        return tripwire(CaptureList(capture.buckets[:8], capture.capacities[:8], capture.recorded[:8]), bucket, loads)

    monkeypatch.setattr(spec_replay, "tripwire", first_8)
    queries = local.local_admitted_batches_replay_the_admitted_size(LONG_P)
    result = run_queries("local_admitted_batches_replay_the_admitted_size", LONG_P, queries, f"P={LONG_P}", shrink=False)
    failure = result.failure
    assert failure is not None and failure.verdict.status is Status.REFUTED
    refuted = next(q for q in queries if failure.label.endswith(q.part))
    assert refuted.definitions, "the refuted step is the one proved from lemmas alone"
    # The model is a run of both sides: every definition the step left out holds in it.
    assert all(_holds(d, dict(failure.model)) for d in refuted.definitions)
    # So the shown decision is the reference's: the replayed story names the size admission took.
    assert f"least size >= m: {failure.shown['admitted']}" in failure.replay


def test_a_step_refuted_only_without_its_definitions_is_not_a_counterexample() -> None:
    x, y = z3.Int("x"), z3.Int("y")
    query = Query("claim (toy)", x == y, (x >= 0,), size=x, definitions=(x == y,))
    result = run_queries("toy", 0, (query,), "toy")
    assert result.failure is not None
    assert result.failure.verdict.status is Status.UNKNOWN and result.failure.verdict.reason == UNDER_DEFINED
    assert not result.failure.model and not result.failure.replay


def test_a_refutation_that_survives_the_definitions_keeps_their_model() -> None:
    x, y = z3.Int("x"), z3.Int("y")
    query = Query("claim (toy)", x < 5, (x >= 0,), size=x, definitions=(y == 2 * x,))
    failure = run_queries("toy", 0, (query,), "toy").failure
    assert failure is not None and failure.verdict.status is Status.REFUTED
    assert failure.model["x"] == 5 and failure.model["y"] == 10  # minimised on x, y defined by the left-out fact
    assert failure_of("toy", query, failure.verdict, shrink=False).verdict.status is Status.REFUTED
