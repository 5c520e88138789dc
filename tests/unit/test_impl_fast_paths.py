"""impl's shortcuts run where they are meant to (issue 14's speed contract).

Every shortcut of the decision path gives the value the general path gives (the differential tests hold
that). These tests pin that the shortcut itself is taken: the general path is replaced by one that raises,
so a change that quietly sends every batch down the slower path fails here instead of only in a benchmark.
"""

from __future__ import annotations

import dataclasses
from typing import NoReturn

import numpy as np
import pytest

from cpgraph import reference
from cpgraph.impl import decision, formulas, lengths
from cpgraph.impl.checks import MAX_CP_SIZE
from cpgraph.impl.lengths import VECTOR_MIN_REQUESTS


def _boom(*args: object, **kwargs: object) -> NoReturn:
    raise AssertionError("the general path ran where the shortcut should have")


def test_lists_go_vectorised_from_vector_min_requests_on() -> None:
    assert lengths.accept_lengths([100] * VECTOR_MIN_REQUESTS)[1] is not None
    assert lengths.accept_lengths([100] * (VECTOR_MIN_REQUESTS - 1))[1] is None


def test_an_int64_array_is_taken_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lengths, "_int64_vector", _boom)
    vec = np.arange(2, 2 + 2 * VECTOR_MIN_REQUESTS, dtype=np.int64)
    got = lengths.accept_lengths(vec)
    assert got[1] is vec and got[3] == int(vec.sum())


def test_one_rank_holds_the_total_without_a_histogram(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formulas, "_zigzag_from_hist", _boom)
    batch = [5, 6, 7]
    assert decision.max_rank_load(batch, cp_size=1) == sum(batch)


def test_one_request_from_a_list_is_decided_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formulas, "accept_lengths", _boom)
    monkeypatch.setattr(formulas, "busiest_rows", _boom)
    for p in (1, 2, 3, 4, 64):
        for length in (0, 1, 40, 2 * p + 1, 10_000):
            assert formulas.required_local_tokens([length], cp_size=p, align_size=8) == reference.required_local_tokens(
                (length,), cp_size=p, align_size=8)


def test_cp_sizes_and_align_sizes_at_their_ends_need_no_second_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formulas, "check_cp_size", _boom)
    monkeypatch.setattr(formulas, "check_int", _boom)
    assert formulas.required_local_tokens([7, 9], cp_size=1, align_size=1) == 16
    assert formulas.max_rank_load([7, 9], cp_size=1) == 16
    assert formulas.required_local_tokens([3 * MAX_CP_SIZE], cp_size=MAX_CP_SIZE, align_size=1) == 3
    assert formulas.max_rank_load([2 * MAX_CP_SIZE], cp_size=MAX_CP_SIZE) == 2


def test_the_decider_takes_one_request_without_the_histogram(monkeypatch: pytest.MonkeyPatch) -> None:
    real = decision.formulas

    def no_general_path(strategy: object) -> formulas.StrategyFormulas:
        return dataclasses.replace(real(strategy), scalar=_boom, vector=_boom)

    monkeypatch.setattr(decision, "formulas", no_general_path)
    selector = decision.Selector.build((64, 128), {64: 16, 128: 32})
    decide = decision.decider(cp_size=4, align_size=8, selector=selector, max_padding_factor=2)
    _, n, (required, bucket, _, reason) = decide([60])
    assert (n, required, bucket, reason) == (60, 16, 64, None)


def test_num_tokens_equal_to_the_sum_needs_no_second_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decision, "check_num_tokens", _boom)
    selector = decision.Selector.build((64, 128), {64: 16, 128: 32})
    for lengths, n in (([20, 40], 60), ([20, 40], 61), ([1], 1)):
        _, got, _ = decision.decide_lengths(lengths, n, cp_size=4, align_size=8, selector=selector, max_padding_factor=2)
        assert got == n


def test_selector_capacity_is_none_for_a_bucket_not_listed() -> None:
    selector = decision.Selector.build((64, 128), {64: 16, 128: 32})
    assert (selector.capacity(64), selector.capacity(128)) == (16, 32)
    assert selector.capacity(100) is None and selector.capacity(200) is None and selector.capacity(1) is None


def test_make_plan_is_the_constructors_frozen_plan() -> None:
    """decision.make_plan (the dispatcher's fast constructor) sets every field of Plan and nothing else."""
    import dataclasses

    from cpgraph.impl.decision import FallbackReason, Plan, make_plan

    for fields in (((300, 200), 500, 256, 512, 260, None), ((3,), 3, 4, None, None, FallbackReason.SHORT_REQUEST)):
        made, built = make_plan(*fields), Plan(*fields)
        assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
        assert set(vars(made)) == {f.name for f in dataclasses.fields(Plan)}
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.bucket = 1  # type: ignore[misc]


def test_the_protocol_batch_alone_does_not_look_for_impl_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from cpgraph.impl import policy

    monkeypatch.setattr(policy, "_options", _boom)
    batch = dict(cp_rank=0, cp_size=4, align_size=8, num_tokens=2048, extend_seq_lens=[1534, 161, 353],
                 capture_num_tokens=(2048, 2304, 2560), bucket_local_tokens={2048: 512, 2304: 576, 2560: 640},
                 max_padding_factor=2)
    assert policy.admit(**batch) is True  # type: ignore[arg-type]
    assert policy.replay_bucket(**batch) == 2304  # type: ignore[arg-type]


def test_local_keying_with_every_size_captured_bisects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decision, "pick_local", _boom)
    sizes = (8, 16, 32, 64, 128)
    selector = decision.Selector.build(sizes, {s: s for s in sizes})
    decide = decision.decider(cp_size=4, align_size=1, selector=selector, max_padding_factor=2,
                              strategy="dual_chunk_swap", keying="local")
    assert decide([170, 161, 153])[2] == (126, 128, 128, None)
    assert decide([300, 1, 1], None, (True, False, False))[2] == (77, 128, 128, None)
