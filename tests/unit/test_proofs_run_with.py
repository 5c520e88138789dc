"""The proofs and the teeth pass share one pool of workers (proofs/run.py ``run_with``,
proofs/teeth/run.py ``prove_with_teeth``): the calls after the proofs come back in their own order, and a run
with a theorem not proved reads none of them."""

from __future__ import annotations

import dataclasses

import pytest
import z3

from cpgraph.proofs import run

from cpgraph.proofs.teeth import run as teeth
from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.registry import BY_NAME

CHEAP = "padding_window_holds_n_for_every_factor"  # one symbolic query
CALLS = [(teeth.teeth_task, t) for t in teeth.teeth_tasks([CHEAP])]


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_calls_after_the_proofs_come_back_in_their_order(jobs: int) -> None:
    results, after = run.run_with([BY_NAME[CHEAP]], cp_max=4, jobs=jobs, witnesses=True, after=CALLS)
    assert [r.status for r in results] == [Status.PROVED]
    assert after is not None and len(after) == len(CALLS) >= 2
    assert after == [teeth.teeth_task(call[1]) for call in CALLS]  # each in its own slot, whatever finished first


def test_prove_with_teeth_gives_the_bites_of_the_separate_pass() -> None:
    results, bites = teeth.prove_with_teeth([BY_NAME[CHEAP]], cp_max=4, jobs=2)
    apart, _ = teeth.teeth([CHEAP], proved=run.run_obligations([BY_NAME[CHEAP]], cp_max=4, witnesses=True), cp_max=4)
    assert [r.status for r in results] == [Status.PROVED]
    assert [(b.theorem, b.variant, b.expected, b.got) for b in bites] == [(b.theorem, b.variant, b.expected, b.got) for b in apart]
    assert bites and all(b.ok for b in bites)


def test_a_theorem_not_proved_reads_none_of_the_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    # In one process (jobs=1) the registry can be patched: the theorem now claims something false.
    x = z3.Int("x")
    real = BY_NAME[CHEAP]
    false = dataclasses.replace(real, build=lambda _: (Query("false", x > 0, (x >= 0,)),))
    monkeypatch.setitem(run.BY_NAME, CHEAP, false)
    called: list[object] = []
    monkeypatch.setattr(teeth, "teeth_task", lambda task: called.append(task) or ())
    spied = [(teeth.teeth_task, task) for _, task in CALLS]  # the patched function, looked up now
    results, after = run.run_with([false], cp_max=4, jobs=1, after=spied)
    assert [r.status for r in results] == [Status.REFUTED]
    assert after is None and called == []  # the calls are not run for a run that failed
    results, bites = teeth.prove_with_teeth([false], cp_max=4, jobs=1)
    assert [r.status for r in results] == [Status.REFUTED] and bites == () and called == []
    monkeypatch.setitem(run.BY_NAME, CHEAP, real)
    results, after = run.run_with([real], cp_max=4, jobs=1, after=spied)
    assert after is not None and len(called) == len(CALLS)  # the spy does see the calls of a proved run


def test_a_verdict_only_run_reports_the_refutation_without_a_model_or_replay() -> None:
    x = z3.Int("x")
    replayed: list[object] = []
    queries = (
        Query("holds", x >= 0, (x >= 1,)),
        Query("fails", x > 5, (x >= 1,), replay=lambda model: replayed.append(model) or "replayed"),
    )
    full = run.run_queries("t", 0, queries, "t")
    assert full.failure is not None and full.failure.label == "t fails" and full.failure.model["x"] <= 5
    assert full.failure.replay == "replayed" and len(replayed) == 1
    quick = run.run_queries("t", 0, queries, "t", verdict_only=True)
    assert quick.failure is not None and quick.failure.label == "t fails"
    assert quick.failure.verdict.status is Status.REFUTED
    assert quick.failure.model == {} and quick.failure.replay == "" and len(replayed) == 1  # no second replay
