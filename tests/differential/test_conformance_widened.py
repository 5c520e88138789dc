"""The bulk conformance harness: the reference's and impl's decision paths against the spec's mirror on a
million cases (P up to 64, capture lists of 32-48 buckets, n up to 10^6 and values past 2^53, the CP-active
gates, the runner's plan and fallback reasons, replay and layout rows, the fitting set), and proof that the
harness catches planted bugs (small wrapped variants of the reference, never edits of reference/).

CPGRAPH_BULK_SCALE scales the bulk run against the harness's full plan of a million cases: the suite runs a
quarter of it (0.25, about 265 000 cases, a quarter of the time); `CPGRAPH_BULK_SCALE=1 pytest
tests/differential/test_conformance_widened.py -k bulk_plan` is the million-case run, and the mutation harness
runs it at 0.1.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from typing import Any

import pytest

from cpgraph import reference
from cpgraph.proofs.conformance import harness as conformance
from cpgraph.proofs.conformance.harness import (
    BulkConformanceError,
    BulkPlan,
    DecisionPath,
    MirrorError,
    Planner,
    Replayer,
    RunnerArgs,
    check_bulk,
    impl_path,
    reference_path,
    run_bulk,
    validate_mirror,
)

SCALE = float(os.environ.get("CPGRAPH_BULK_SCALE", "0.25"))
SMALL = dataclasses.replace(BulkPlan().scaled(0.03), runner_configs=40)  # about 35 000 cases: every planted bug below


def test_ci_reference_and_impl_conform_on_the_bulk_plan() -> None:
    report = check_bulk([reference_path(), impl_path()], plan=BulkPlan().scaled(SCALE))
    print("\n" + report.summary())  # a full run's throughput (cases/s) comes from this line (at scale 1)
    assert report.cases >= 1_000_000 * SCALE  # 1 058 584 at scale 1
    assert all(f.cases > 0 and f.comparisons >= f.cases for f in report.families)
    assert report.mirror_checks > 0


def _planted(**functions: Any) -> DecisionPath:
    return dataclasses.replace(reference_path(), name="planted", **functions)


_RUNNER = ("runner_configs", "plans_per_config", "replays_per_config")
_FIELDS = {  # the BulkPlan counts behind each family
    "align_up": ("align_up",), "cp_active": ("cp_active",), "required_local_tokens": ("required_local_tokens",),
    "capture_local_tokens": ("capture_local_tokens",), "headroom_local_tokens": ("headroom_local_tokens",),
    "select_replay_bucket": ("select_replay_bucket",), "invalid inputs": ("invalid_inputs",),
    "runner plan": _RUNNER, "replay and layout rows": _RUNNER,
}


def _only(family: str, base: BulkPlan = SMALL) -> BulkPlan:
    """``base``'s cases for ``family`` and one for every other family (and ``base``'s mirror checks): the same
    cases of ``family`` as ``base``, since each family draws from a seed of its own name; for SMALL, about a
    tenth of its work."""
    keep = (*_FIELDS[family], "mirror_checks")
    return BulkPlan(**{f.name: getattr(base, f.name) if f.name in keep else 1 for f in dataclasses.fields(BulkPlan)})


def test_a_focused_plan_draws_the_same_cases_of_its_family() -> None:
    def counts(plan: BulkPlan, family: str) -> tuple[int, int]:
        report = run_bulk([reference_path()], plan=plan, validate=False)
        return next((f.cases, f.comparisons) for f in report.families if f.family == family)

    base = BulkPlan().scaled(0.003)
    for family in ("cp_active", "runner plan"):
        assert counts(_only(family, base), family) == counts(base, family)
    assert set(_FIELDS) == {f.family for f in run_bulk([reference_path()], plan=base, validate=False).families}


def _expect_caught(path: DecisionPath, family: str, function: str) -> None:
    with pytest.raises(BulkConformanceError) as caught:
        check_bulk([path], plan=_only(family))
    report = caught.value.report
    hit = [f for f in report.families if f.mismatches]
    assert family in {f.family for f in hit}, report.summary()
    example = next(m for f in hit if f.family == family for m in f.examples)
    assert example.function == function and example.expected != example.actual
    assert "inputs:" in str(caught.value) and "expected (spec)" in str(caught.value)


def test_the_unplanted_reference_passes_the_same_small_run() -> None:
    assert run_bulk([reference_path()], plan=SMALL).mismatches == 0


def test_a_reference_that_looks_only_at_the_first_8_buckets_is_caught() -> None:
    def first_eight(*, capture_num_tokens: Sequence[int], **kwargs: Any) -> int | None:
        return reference.select_replay_bucket(capture_num_tokens=capture_num_tokens[:8], **kwargs)

    _expect_caught(_planted(select_replay_bucket=first_eight), "select_replay_bucket", "select_replay_bucket")


def test_an_align_up_through_float_division_is_caught_above_2_to_the_53() -> None:
    def float_align_up(value: int, align_size: int) -> int:
        return math.ceil(value / align_size) * align_size

    _expect_caught(_planted(align_up=float_align_up), "align_up", "align_up")


def test_required_rows_through_float_division_are_caught() -> None:
    def float_rows(lengths: Sequence[int], *, cp_size: int, align_size: int, strategy: str = "zigzag") -> int:
        busiest = max(reference.rank_loads(lengths, cp_size=cp_size, strategy=strategy))
        return math.ceil(busiest / align_size) * align_size

    _expect_caught(_planted(required_local_tokens=float_rows), "required_local_tokens", "required_local_tokens")


def test_a_gate_with_greater_than_instead_of_at_least_is_caught() -> None:
    def strict_gate(lengths: Sequence[int], *, num_tokens: int, cp_size: int) -> bool:
        return cp_size > 1 and num_tokens > 2 * cp_size and min(lengths) >= 2 * cp_size

    _expect_caught(_planted(is_cp_active=strict_gate), "cp_active", "is_cp_active")


def test_a_fitting_set_that_excludes_f_times_n_is_caught() -> None:
    def strict_window(**kwargs: Any) -> tuple[int, ...]:
        n, f = kwargs["num_tokens"], kwargs["max_padding_factor"]
        return tuple(b for b in reference.fitting_buckets(**kwargs) if b < f * n)

    _expect_caught(_planted(fitting_buckets=strict_window), "select_replay_bucket", "fitting_buckets")


def test_capture_rows_without_alignment_are_caught() -> None:
    def unaligned(num_tokens: int, *, cp_size: int, align_size: int, strategy: str = "zigzag") -> int:
        return max(reference.rank_loads((num_tokens,), cp_size=cp_size, strategy=strategy))

    _expect_caught(_planted(capture_local_tokens=unaligned), "capture_local_tokens", "capture_local_tokens")


def test_a_plan_that_checks_short_requests_before_too_few_tokens_is_caught() -> None:
    def swapped_order(config: RunnerArgs) -> Planner:
        plan = conformance._reference_planner(config)

        def planned(lengths: tuple[int, ...], n: int) -> conformance.PlanTuple:
            required, bucket, capacity, reason = plan(lengths, n)
            if reason == "too_few_tokens" and min(lengths) < 2 * config.cp_size:
                reason = "short_request"
            return required, bucket, capacity, reason

        return planned

    _expect_caught(_planted(planner=swapped_order), "runner plan", "plan")


def test_a_plan_that_admits_above_the_largest_bucket_boundary_wrongly_is_caught() -> None:
    def too_many_at_the_top(config: RunnerArgs) -> Planner:
        plan = conformance._reference_planner(config)

        def planned(lengths: tuple[int, ...], n: int) -> conformance.PlanTuple:
            result = plan(lengths, n)
            if n == config.started[-1] and result[3] is None:  # >= instead of > at the largest bucket
                return result[0], None, None, "too_many_tokens"
            return result

        return planned

    _expect_caught(_planted(planner=too_many_at_the_top), "runner plan", "plan")


def test_a_replay_padded_to_required_rows_instead_of_the_capacity_is_caught() -> None:
    def padded_to_required(config: RunnerArgs) -> Replayer:
        def replay(lengths: tuple[int, ...], n: int) -> int:
            return reference.required_local_tokens(lengths, cp_size=config.cp_size, align_size=config.align_size,
                                                   strategy=config.strategy)

        return replay

    _expect_caught(_planted(replayer=padded_to_required), "replay and layout rows", "replay rows = admitted capacity")


def test_a_crash_is_a_mismatch_with_the_exception_not_a_skip() -> None:
    def crashes(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("boom")

    report = run_bulk([_planted(capture_local_tokens=crashes)], plan=BulkPlan().scaled(0.001), validate=False)
    hit = {f.family: f for f in report.families if f.mismatches}
    assert set(hit) == {"capture_local_tokens", "invalid inputs"}
    assert isinstance(hit["capture_local_tokens"].examples[0].actual, RuntimeError)
    assert hit["invalid inputs"].examples[0].actual == "RuntimeError"  # not the contract's ValueError


def test_a_wrong_mirror_is_caught_by_its_check_against_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    right = conformance.mirror_rank_loads

    def remainder_to_the_last_blocks(lengths: Sequence[int], cp_size: int, strategy: str) -> list[int]:
        loads = right(lengths, cp_size, strategy)
        return loads[::-1] if strategy == "zigzag" and cp_size > 1 else loads

    monkeypatch.setattr(conformance, "mirror_rank_loads", remainder_to_the_last_blocks)
    with pytest.raises(MirrorError, match="zigzag loads"):
        validate_mirror(200)


def test_the_same_seed_draws_the_same_cases() -> None:
    plan = BulkPlan().scaled(0.002)
    first, again = run_bulk([reference_path()], plan=plan, validate=False), run_bulk([reference_path()], plan=plan,
                                                                                     validate=False)
    assert [(f.family, f.cases, f.comparisons) for f in first.families] == [
        (f.family, f.cases, f.comparisons) for f in again.families
    ]


def test_a_path_that_accepts_a_bad_argument_is_caught() -> None:
    def no_validation(num_tokens: int, *, cp_size: int, align_size: int, strategy: str = "zigzag") -> int:
        return -(-max(num_tokens, 0) // max(cp_size, 1) // max(align_size, 1)) * max(align_size, 1)

    report = run_bulk([_planted(capture_local_tokens=no_validation)], plan=BulkPlan().scaled(0.01), validate=False)
    hit = {f.family for f in report.families if f.mismatches}
    assert "invalid inputs" in hit


def test_a_headroom_capacity_that_does_not_cap_requests_at_tokens_is_caught() -> None:
    def uncapped(num_tokens: int, *, cp_size: int, align_size: int, max_requests: int, strategy: str = "zigzag") -> int:
        if strategy != "zigzag":
            return reference.headroom_local_tokens(num_tokens, cp_size=cp_size, align_size=align_size,
                                                   max_requests=max_requests, strategy=strategy)
        return reference.align_up((num_tokens + max_requests * (cp_size - 1)) // cp_size, align_size)

    _expect_caught(_planted(headroom_local_tokens=uncapped), "headroom_local_tokens", "headroom_local_tokens")


def test_the_reference_dual_chunk_swap_headroom_at_one_rank_is_exact() -> None:
    # Was a reported reference bug (the excess 2P-1 at P = 1 too, where it is 0), fixed in reference/strategies.py.
    from cpgraph.proofs.conformance.mirror import mirror_headroom

    for kind in ("dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp"):
        got = reference.headroom_local_tokens(100, cp_size=1, align_size=1, max_requests=3, strategy=kind)
        assert got == mirror_headroom(100, 1, 1, 3, kind) == 100


def test_a_dual_chunk_swap_laid_out_as_zigzag_is_caught() -> None:
    def zigzag_rows(extend_seq_lens: Sequence[int], *, cp_size: int, align_size: int, strategy: str = "zigzag") -> int:
        kind = "zigzag" if strategy.startswith("dual_chunk_swap") else strategy
        return reference.required_local_tokens(extend_seq_lens, cp_size=cp_size, align_size=align_size, strategy=kind)

    _expect_caught(_planted(required_local_tokens=zigzag_rows), "required_local_tokens", "required_local_tokens")


def test_a_plan_that_forgets_a_short_request_among_long_ones_is_caught() -> None:
    # The short-request gate only where it alone decides: n >= 2P and at least one long request beside the
    # short one (the plan family draws such batches on purpose).
    def short_among_long_admitted(config: RunnerArgs) -> Planner:
        plan = conformance._reference_planner(config)
        s = 2 * config.cp_size

        def planned(lengths: tuple[int, ...], n: int) -> conformance.PlanTuple:
            if lengths and max(lengths) >= s and 0 <= min(lengths) < s and n >= max(s, sum(lengths)):
                widened = tuple(max(x, s) for x in lengths)
                return plan(widened, max(n, sum(widened)))
            return plan(lengths, n)

        return planned

    _expect_caught(_planted(planner=short_among_long_admitted), "runner plan", "plan")


def test_a_mirror_plan_without_the_short_request_gate_is_caught_by_its_check_against_the_spec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # validate_mirror compares the mirror's whole-batch plan with the spec's admission and replay at every rank
    right = conformance.mirror_plan

    def ungated(config: RunnerArgs, lengths: Sequence[int], n: int) -> conformance.PlanTuple:
        s = 2 * config.cp_size
        widened = tuple(max(x, s) for x in lengths)
        return right(config, widened, max(n, sum(widened)))

    monkeypatch.setattr(conformance, "mirror_plan", ungated)
    with pytest.raises(MirrorError, match="spec \\(admitted, replayed\\) at ranks"):
        validate_mirror(200)
