"""The reference against the spec through the one conformance harness: Z3 boundary cases, exhaustive small
domains and Hypothesis, in exact mode; and the harness catches a planted bug with every input shown."""

import types
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given

from cpgraph import reference
from cpgraph.proofs.conformance import (
    Case,
    ConformanceError,
    Mode,
    boundary_conformance_cases,
    case_strategy,
    check_conformance,
    exhaustive_layout_cases,
    exhaustive_selection_cases,
)


def test_reference_conforms_on_every_boundary_case() -> None:
    assert check_conformance(reference, boundary_conformance_cases([1, 2, 3, 8])) > 100


def test_reference_conforms_on_exhaustive_small_layouts() -> None:
    assert check_conformance(reference, exhaustive_layout_cases(max_cp_size=3)) > 200


def test_reference_conforms_on_exhaustive_small_selections() -> None:
    cases = list(exhaustive_selection_cases(max_bucket=4, max_list_length=3))
    assert check_conformance(reference, cases) == len(cases) > 500


@given(case_strategy())
def test_reference_conforms_on_random_cases(case: Case) -> None:
    check_conformance(reference, [case], mode=Mode.EXACT)


def _planted(**overrides: Any) -> types.SimpleNamespace:
    """The reference with some functions replaced by wrong ones."""
    functions = {name: getattr(reference, name) for name in
                 ("rank_loads", "required_local_tokens", "capture_local_tokens", "select_replay_bucket")}
    functions.update(overrides)
    return types.SimpleNamespace(**functions)


def _rows_from_mean(extend_seq_lens: Sequence[int], *, cp_size: int, align_size: int, strategy: str = "zigzag") -> int:
    return reference.align_up(-(-sum(extend_seq_lens) // cp_size), align_size)


def test_a_planted_rows_bug_fails_with_inputs_expected_and_actual() -> None:
    with pytest.raises(ConformanceError) as caught:
        check_conformance(_planted(required_local_tokens=_rows_from_mean), boundary_conformance_cases([4]))
    message = str(caught.value)
    assert "required_local_tokens" in message and "extend_seq_lens=" in message
    assert "expected (spec):" in message and "actual:" in message
    mismatch = caught.value.mismatches[0]
    assert mismatch.expected != mismatch.actual


def _largest_fitting(**kwargs: Any) -> int | None:
    fitting = reference.fitting_buckets(**kwargs)
    return fitting[-1] if fitting else None


def test_safe_mode_accepts_a_wasteful_but_safe_selection_that_exact_mode_rejects() -> None:
    wasteful = _planted(select_replay_bucket=_largest_fitting)
    cases = list(exhaustive_selection_cases(max_bucket=4, max_list_length=2))
    assert check_conformance(wasteful, cases, mode=Mode.SAFE) == len(cases)
    with pytest.raises(ConformanceError, match="bucket differs"):
        check_conformance(wasteful, cases, mode=Mode.EXACT)


def _ignores_missing_capacity(**kwargs: Any) -> int | None:
    table = dict(kwargs.pop("bucket_local_tokens"))
    padded = {b: table.get(b, 10**9) for b in kwargs["capture_num_tokens"]}
    return reference.select_replay_bucket(bucket_local_tokens=padded, **kwargs)


def test_safe_mode_rejects_a_missing_capacity_treated_as_a_fit() -> None:
    with pytest.raises(ConformanceError, match="captured_bucket, padding_limit or capacity_fit"):
        check_conformance(_planted(select_replay_bucket=_ignores_missing_capacity), boundary_conformance_cases([4]),
                          mode=Mode.SAFE)


def test_a_crash_is_reported_as_a_mismatch_not_hidden() -> None:
    def crashes(*args: Any, **kwargs: Any) -> tuple[int, ...]:
        raise RuntimeError("boom")

    with pytest.raises(ConformanceError, match="raised RuntimeError: boom"):
        check_conformance(_planted(rank_loads=crashes), exhaustive_layout_cases(max_cp_size=1))
