"""The one-case harness on the edges drawn on purpose (proofs/conformance/cases.py ``edge_cases``), each case
compared whole (``plan``: the runner's gates, selection and replay against the spec's admission and replay at
every rank) as well as function by function; and the harness catches planted runners that differ only there.

Cost: about 6 s of CPU (measured at a load average of 10; P = 3 every rank and every strategy row, P = 2
zigzag, a 40-bucket list); the whole ``edge_cases()`` (about 1,100 cases) is for a longer run: about 40 s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cpgraph import reference
from cpgraph.proofs.teeth.agreement.stage import gate_batches
from cpgraph.proofs.conformance.harness import WHOLE_BATCH, Case, ConformanceError, Mode, check_conformance, edge_cases
from cpgraph.reference.runner import Plan, ReferenceRunner


def test_the_edges_cover_the_gate_the_window_the_list_ends_every_rank_and_both_keyings() -> None:
    cases = list(edge_cases())
    assert {c.strategy for c in cases} == set(reference.STRATEGIES)
    assert {c.keying for c in cases} == {"global", "local"}
    assert all("plan" in c.functions for c in cases)
    for p in (2, 3, 4):
        s = 2 * p
        gates = {(c.extend_seq_lens, c.num_tokens) for c in cases if c.cp_size == p and c.source == "edge: gate"}
        assert {((s - 1,), s - 1), ((s,), s), ((s - 1, 4 * s), 5 * s - 1), ((4 * s, s - 1, 4 * s), 9 * s - 1)} <= gates
    window = [c for c in cases if c.source == "edge: window" and c.cp_size == 3]
    for c in window:
        top = (c.max_padding_factor * c.num_tokens).__floor__()
        assert c.capture_num_tokens in {(c.num_tokens - 1, c.num_tokens), (c.num_tokens - 1, top),
                                        (c.num_tokens - 1, top + 1)}
    ends = [c for c in cases if c.source == "edge: capture list ends"]
    assert ends and min(len(c.capture_num_tokens) for c in ends) >= 32
    assert {c.num_tokens for c in ends} >= {ends[0].capture_num_tokens[0], ends[0].capture_num_tokens[-1],
                                             ends[0].capture_num_tokens[-1] + 1}


def _every_row_at(p: int) -> list[Case]:
    """zigzag's every edge; every other row's ranks, padded batch and the gate's mixed batches (a short request
    first, in the middle, last); dual_chunk_swap's local keying."""
    mixed = {(l, n) for l, n in gate_batches(p)[5:9]}
    return [c for c in edge_cases((p,), long_cp_sizes=()) if c.strategy == "zigzag"
            or c.source in ("edge: ranks", "edge: padded") or (c.extend_seq_lens, c.num_tokens) in mixed
            and c.source == "edge: gate" or c.keying == "local" and c.strategy == "dual_chunk_swap"]


def test_the_reference_conforms_whole_at_p3_on_every_row() -> None:
    cases = _every_row_at(3)
    assert {c.strategy for c in cases} == set(reference.STRATEGIES)
    assert check_conformance(reference, cases) == len(cases) > 80


def test_the_reference_conforms_whole_at_p2() -> None:
    cases = list(edge_cases((2,), strategies=("zigzag",), long_cp_sizes=()))
    assert check_conformance(reference, cases) == len(cases) > 30


class _Planted:
    """The reference with its runner's plan replaced."""

    def __init__(self, runner: type[ReferenceRunner]) -> None:
        self.ReferenceRunner = runner

    def __getattr__(self, name: str) -> Any:
        return getattr(reference, name)


class _NoShortRequestGate(ReferenceRunner):
    """A runner whose CP-active gate forgets the short-request condition."""

    def plan(self, extend_seq_lens: Sequence[int], num_tokens: int | None = None,
             is_prefilling: Sequence[bool] | None = None) -> Plan:
        n = sum(extend_seq_lens) if num_tokens is None else num_tokens
        long = tuple(max(x, 2 * self.cp_size) for x in extend_seq_lens)  # the gate sees no short request
        plan = super().plan(long, max(n, sum(long)), is_prefilling)
        return plan


class _FirstEightBuckets(ReferenceRunner):
    """A runner whose scan stops after the first 8 buckets."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.capture_num_tokens = self.capture_num_tokens[:8]


def test_a_runner_without_the_short_request_gate_is_caught_with_the_runner_call() -> None:
    cases = [c for c in edge_cases((3,), strategies=("zigzag",), long_cp_sizes=()) if c.source == "edge: gate"]
    with pytest.raises(ConformanceError) as caught:
        check_conformance(_Planted(_NoShortRequestGate), cases)
    plans = [m for m in caught.value.mismatches if m.function == "plan"]
    assert plans and all(m.expected is None and m.actual is not None for m in plans)
    assert plans[0].call.startswith("ReferenceRunner(cp_size=3") and "against the spec's admission at rank" in plans[0].call
    assert {m.call.rsplit(" ", 1)[1] for m in plans} == {"0", "1", "2"}  # every rank


def test_a_runner_that_scans_8_buckets_is_caught_on_the_long_list() -> None:
    ends = [c for c in edge_cases((3,), strategies=("zigzag",)) if c.source == "edge: capture list ends"]
    cases = [c for c in ends if c.num_tokens in (9 * 6 - 1, c.capture_num_tokens[-1])]  # at the 9th bucket (twice), the last
    assert len(cases) == 3 and check_conformance(reference, cases) == 3
    with pytest.raises(ConformanceError, match="plan: bucket differs"):
        check_conformance(_Planted(_FirstEightBuckets), cases)


def test_safe_mode_lets_a_runner_fall_back_where_exact_mode_does_not() -> None:
    class Eager(ReferenceRunner):
        def plan(self, extend_seq_lens: Sequence[int], num_tokens: int | None = None,
                 is_prefilling: Sequence[bool] | None = None) -> Plan:
            planned = super().plan(extend_seq_lens, num_tokens, is_prefilling)
            return Plan(planned.extend_seq_lens, planned.num_tokens, planned.required_local_tokens, None, None, None)

    cases = [c for c in edge_cases((2,), strategies=("zigzag",), long_cp_sizes=()) if c.source == "edge: gate"]
    assert check_conformance(_Planted(Eager), cases, mode=Mode.SAFE) == len(cases)
    with pytest.raises(ConformanceError):
        check_conformance(_Planted(Eager), cases, mode=Mode.EXACT)
    assert WHOLE_BATCH[-1] == "plan"
