"""The agreement stage of `cpgraph prove` (proofs/teeth/agreement/stage.py): the spec evaluated on edge cases against the
reference. Unchanged, every family agrees; each planted change that keeps the theorems true but makes the spec
disagree with the reference (issue 21) makes the stage fail, and so `cpgraph prove`.

A planted change is applied as a monkeypatch bound everywhere the original spec function is bound (the
spec's modules import each other's functions by name), which is what editing the function's source does.
Cost: about 12 s of CPU in all (measured at a load average of 10), half of it the unchanged run of every
family (the stage's own cost in `cpgraph prove`)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import pytest
import z3

from cpgraph.cli import main
from cpgraph.proofs.teeth.agreement import stage as ag
from cpgraph.proofs.teeth import run as teeth
from cpgraph.proofs.engine.check import Status
from cpgraph.reference.lists import compact
from cpgraph.spec import admission, arith, capacity, keying, selection, strategies, terms
from cpgraph.spec.terms import Defined, int_term


def _everywhere(monkeypatch: pytest.MonkeyPatch, original: object, new: object) -> int:
    """Bind ``new`` wherever a cpgraph module binds ``original``; how many bindings were replaced."""
    replaced = 0
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("cpgraph."):
            for attr, value in list(vars(module).items()):
                if value is original:
                    monkeypatch.setattr(module, attr, new)
                    replaced += 1
    assert replaced, f"{original} is bound nowhere"
    return replaced


# -- the planted changes ----------------------------------------------------------------------------------------


def plant_gate_without_short_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """(a) The CP-active gate without its short-request condition (P > 1 and n >= 2P only)."""

    def cp_active(batch: Any, num_tokens: Any, strategy_id: str = "zigzag") -> z3.BoolRef:
        p = batch.cp_size
        return z3.And(z3.BoolVal(p > 1), int_term(num_tokens) >= 2 * p)

    _everywhere(monkeypatch, admission.cp_active, cp_active)


def plant_contiguous_capture_as_mean(monkeypatch: pytest.MonkeyPatch) -> None:
    """(b) A contiguous bucket's capture capacity taken as the mean rows floor(B/P), not the busiest rank's."""
    real = capacity.capture_local_tokens

    def capture_local_tokens(num_tokens: Any, cp_size: int, align_size: Any, name: str, kind: str = "zigzag") -> Defined:
        if kind != "contiguous":
            return real(num_tokens, cp_size, align_size, name, kind)
        mean = arith.floor_div(int_term(num_tokens), cp_size, f"{name}.mean")
        rows = arith.align_up(mean.value, align_size, f"{name}.rows")
        return Defined(rows.value, z3.And(mean.holds, rows.holds))

    _everywhere(monkeypatch, real, capture_local_tokens)


def plant_scan_of_the_first_8_buckets(monkeypatch: pytest.MonkeyPatch) -> None:
    """(c) The scan limited to the first 8 buckets of the capture list."""
    real = selection.scan_select

    def scan_select(capture: selection.CaptureList, window: selection.Window, required: Any) -> selection.Selection:
        first = selection.CaptureList(capture.buckets[:8], capture.capacities[:8], capture.recorded[:8])
        return real(first, window, required)

    _everywhere(monkeypatch, real, scan_select)


def plant_window_top_one_past(monkeypatch: pytest.MonkeyPatch) -> None:
    """The window's top edge one past floor(F*n)."""

    def at_or_below_top(bucket: Any, window: selection.Window) -> z3.BoolRef:
        return z3.BoolVal(True) if window.high is None else int_term(bucket) <= window.high + 1

    def above_top(bucket: Any, window: selection.Window) -> z3.BoolRef:
        return z3.BoolVal(False) if window.high is None else int_term(bucket) > window.high + 1

    _everywhere(monkeypatch, selection.at_or_below_top, at_or_below_top)
    _everywhere(monkeypatch, selection.above_top, above_top)


def plant_middle_ranks_decide_from_their_own_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranks 0 < r < P-1 decide from their own load, not the busiest rank's."""
    real = admission.rank_decision

    def rank_decision(loads: terms.Loads, rank: Any, setup: Any, num_tokens: Any, name: str) -> Any:
        p = len(loads.loads)
        if isinstance(rank, int) and 0 < rank < p - 1:
            return real(terms.Loads((loads.loads[rank],), loads.holds), rank, setup, num_tokens, name)
        return real(loads, rank, setup, num_tokens, name)

    _everywhere(monkeypatch, real, rank_decision)


def plant_local_key_is_the_token_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local keying keyed by n (the global count) instead of the largest rank-local rows."""
    local = dataclasses.replace(keying.KEYINGS["local"], key=lambda n, loads, name: Defined(int_term(n), z3.BoolVal(True)))
    monkeypatch.setitem(keying.KEYINGS, "local", local)


def plant_round_robin_decodes_replicated(monkeypatch: pytest.MonkeyPatch) -> None:
    """dual_chunk_swap's decodes copied to every rank in the spec's table (the reference deals them round-robin)."""
    row = dataclasses.replace(strategies.STRATEGIES["dual_chunk_swap"], decodes="replicated")
    monkeypatch.setitem(strategies.STRATEGIES, "dual_chunk_swap", row)


def plant_align_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """align_up rounding down."""

    def align_up(value: Any, align_size: Any, name: str) -> Defined:
        down = arith.floor_div(value, align_size, f"{name}.down")
        return Defined(down.value * int_term(align_size), down.holds)

    _everywhere(monkeypatch, arith.align_up, align_up)


def plant_local_keying_windowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local keying given sglang's window [m, F*m]."""
    monkeypatch.setitem(keying.KEYINGS, "local", dataclasses.replace(keying.KEYINGS["local"], windowed=True))


def plant_local_keying_reads_recorded_capacities(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local keying reading the recorded capacity table instead of a size holding itself."""
    monkeypatch.setattr(keying.Keying, "capacities", lambda self, capture: capture)


def plant_dcp_copy_rule_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    """dual_chunk_swap_dcp copying a prefill only when (2P-1)*c > L (the reference: >=)."""

    def is_short_for_dcp(length: Any, chunk: Any, cp_size: int) -> z3.BoolRef:
        return (2 * cp_size - 1) * int_term(chunk) > int_term(length)

    _everywhere(monkeypatch, strategies.is_short_for_dcp, is_short_for_dcp)


def plant_headroom_without_the_request_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The headroom bound with R requests uncapped by N (the reference caps R at N)."""

    def headroom_bound(num_tokens: Any, cp_size: int, max_requests: Any, name: str) -> Defined:
        n, r = int_term(num_tokens), int_term(max_requests)
        return arith.floor_div(n + r * (cp_size - 1), cp_size, f"{name}.headroom")

    _everywhere(monkeypatch, capacity.headroom_bound, headroom_bound)


def plant_replay_of_the_padded_lengths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replay laying out the padded count (the pad folded into the last request), not the live lengths."""
    from cpgraph.spec import replay as spec_replay
    from cpgraph.spec.batch import RequestsBatch

    real = spec_replay.replay

    def padded(batch: Any, n: Any, name: str) -> RequestsBatch:
        extra = int_term(n) - batch.tokens
        return RequestsBatch(batch.cp_size, (*batch.lengths[:-1], batch.lengths[-1] + extra), batch.holds)

    def replay(batch: Any, n: Any, setup: Any, rank: Any, name: str, **how: Any) -> Any:
        return real(batch, n, setup, rank, name, **{**how, "layout": padded})

    _everywhere(monkeypatch, real, replay)


def _local(kind: str = "dual_chunk_swap", p: int = 3) -> list[ag.BatchCase]:
    return [c for c in ag.batch_cases("local") if c.strategy == kind and c.cp_size == p]


def _gate_cases() -> list[ag.BatchCase]:
    return [c for c in ag.batch_cases("global") if c.strategy == "zigzag" and c.cp_size == 3]


def _long_selections() -> ag.Outcome:
    return ag.selections([c for c in ag.selection_cases() if len(c.buckets) >= 32 and c.factor == 2])


# (planted change, the family of the stage that must catch it (restricted to a part of its own cases to keep
# the test cheap), the function that must disagree)
PLANTED: list[tuple[Callable[[pytest.MonkeyPatch], None], Callable[[], ag.Outcome], str]] = [
    (plant_gate_without_short_requests, lambda: ag.whole_batches(_gate_cases()), "admission"),
    (plant_contiguous_capture_as_mean, lambda: ag.capture_capacities(("contiguous",), (2, 3)), "capture_local_tokens"),
    (plant_scan_of_the_first_8_buckets, _long_selections, "select_replay_bucket"),
    (plant_scan_of_the_first_8_buckets, lambda: ag.whole_batches([c for c in ag.batch_cases() if len(c.buckets) >= 32]),
     "admission"),
    (plant_window_top_one_past, lambda: ag.selections([c for c in ag.selection_cases() if len(c.buckets) <= 4]),
     "select_replay_bucket"),
    (plant_middle_ranks_decide_from_their_own_load,
     lambda: ag.whole_batches([c for c in _gate_cases() if c.table is not None]), "admission"),
    (plant_local_key_is_the_token_count, lambda: ag.whole_batches(_local()), "admission"),
    (plant_round_robin_decodes_replicated, ag.tables, "strategy table"),
    (plant_align_down, lambda: ag.loads_and_rows(("zigzag",), (2,)), "required_local_tokens"),
    (plant_local_keying_windowed, lambda: ag.whole_batches(_local()), "admission"),
    (plant_local_keying_windowed, ag.tables, "keying table"),
    (plant_local_keying_reads_recorded_capacities, lambda: ag.whole_batches(_local()), "replay"),
    (plant_dcp_copy_rule_strict, lambda: ag.loads_and_rows(("dual_chunk_swap_dcp",), (2, 3)), "rank_loads"),
    (plant_headroom_without_the_request_cap, lambda: ag.capture_capacities(("zigzag",), (2,)), "headroom_local_tokens"),
    (plant_replay_of_the_padded_lengths,
     lambda: ag.whole_batches([c for c in _gate_cases() if c.num_tokens > sum(c.lengths) and c.table]), "replay"),
]


@pytest.mark.parametrize(("plant", "family", "function"), PLANTED, ids=[p[0].__name__ + "-" + p[2] for p in PLANTED])
def test_a_planted_change_makes_the_stage_fail(
    monkeypatch: pytest.MonkeyPatch, plant: Callable[[pytest.MonkeyPatch], None], family: Callable[[], ag.Outcome],
    function: str,
) -> None:
    assert not family().disagreements  # the same cases agree before the change
    plant(monkeypatch)
    outcome = family()
    found = [d for d in outcome.disagreements if d.function == function]
    assert found, f"{plant.__name__} went unseen by {function}"
    lost = [b for b in ag.bites_of(outcome) if not b.ok]
    assert lost and all(b.theorem == ag.THEOREM and b.expected is Status.PROVED for b in lost)
    assert any(f"reference (expected) {found[0].expected!r}, spec (actual) {found[0].actual!r}" in b.description
               for b in lost)


def test_the_gate_disagreement_names_a_short_request_in_a_pasteable_call(monkeypatch: pytest.MonkeyPatch) -> None:
    plant_gate_without_short_requests(monkeypatch)
    found = ag.whole_batches(_gate_cases()).disagreements
    assert found and all(d.expected is None and isinstance(d.actual, int) for d in found)  # the reference falls back
    first = found[0]
    assert first.inputs.startswith("ReferenceRunner(cp_size=3") and " at rank " in first.inputs
    call = first.inputs.rsplit(" at rank ", 1)[0]
    from fractions import Fraction

    from cpgraph.reference.runner import CaptureRule, ReferenceRunner

    plan = eval(call, {"ReferenceRunner": ReferenceRunner, "CaptureRule": CaptureRule, "Fraction": Fraction})  # noqa: S307
    assert plan.bucket is None and plan.fallback.value == "short_request"


def test_long_lists_are_written_compactly() -> None:
    case = next(c for c in ag.selection_cases() if len(c.buckets) >= 32)
    assert compact(case.buckets) in case.call() and len(case.buckets) >= 32


@pytest.mark.parametrize("family", sorted(ag.FAMILIES))
def test_the_unchanged_spec_agrees_with_the_reference(family: str) -> None:
    bites = ag.agreement(family)
    assert bites and all(b.ok for b in bites), [b for b in bites if not b.ok]
    assert all(b.description.startswith("the spec agrees with the reference on ") for b in bites)


def test_the_stage_draws_the_edges_the_issue_names() -> None:
    cases = ag.batch_cases()
    p3 = [c for c in cases if c.cp_size >= 3]
    assert p3 and all(c.ranks == tuple(range(c.cp_size)) for c in p3)  # every rank of P >= 3
    assert {c.strategy for c in cases if c.keying == "global"} == {c.strategy for c in cases if c.keying == "local"} \
        == set(strategies.STRATEGIES)
    for p in (2, 3):  # n = 2P-1 and 2P, a request of 2P-1 and of 2P, a short one mixed into long ones
        s = 2 * p
        drawn = {(c.lengths, c.num_tokens) for c in cases if c.cp_size == p and c.keying == "global"}
        assert {((s - 1,), s - 1), ((s,), s), ((s - 1, 4 * s), 5 * s - 1), ((s, 4 * s), 5 * s)} <= drawn
    assert max(len(c.buckets) for c in cases) >= 32
    for factor in (2, 1.5):  # the window: a bucket at n, at floor(F*n), one past it
        n = 13
        top = int(factor * n)
        lists = {c.buckets for c in ag.selection_cases() if c.num_tokens == n and c.factor == factor}
        assert {(12, 13), (12, top), (12, top + 1)} <= lists
    with pytest.raises(ValueError, match="family must be one of tables"):
        ag.agreement("nope")


def test_teeth_runs_the_stage_only_for_the_whole_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def fake(family: str) -> tuple[teeth.Bite, ...]:
        ran.append(family)
        return ()

    monkeypatch.setattr(teeth, "agreement", fake)
    monkeypatch.setattr(teeth, "VARIANTS", ())
    monkeypatch.setattr(teeth, "coverage", lambda theorem: ())
    monkeypatch.setattr(teeth, "scope_edges", lambda: ())
    teeth.teeth(["padding_window_holds_n_for_every_factor"])
    assert ran == []
    teeth.teeth(list(teeth.BY_NAME))
    assert ran == list(ag.FAMILIES)


def test_prove_exits_1_when_the_spec_disagrees_with_the_reference(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "zigzag_loads_sum_to_tokens"
    monkeypatch.setattr(teeth, "BY_NAME", {name: teeth.BY_NAME[name]})  # one theorem stands for the whole spec
    monkeypatch.setattr(teeth, "VARIANTS", ())
    monkeypatch.setattr(ag, "FAMILIES", {"selection": _long_selections})
    monkeypatch.setattr(teeth, "AGREEMENT", ag.FAMILIES)
    assert main(["prove", "--only", name, "--cp-max", "2", "--jobs", "1", "-q"]) == 0
    plant_scan_of_the_first_8_buckets(monkeypatch)
    code = main(["prove", "--only", name, "--cp-max", "2", "--jobs", "1", "-q"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"LOST {ag.THEOREM}: variant select_replay_bucket (DISAGREES: select_replay_bucket(" in out
