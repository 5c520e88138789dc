"""The reference against the spec through the one conformance harness: Z3 boundary cases, exhaustive small
domains and Hypothesis, in exact mode; and the harness catches a planted bug with every input shown."""

import types
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given

from cpgraph import reference
from cpgraph.proofs.conformance.harness import (
    Case,
    ConformanceError,
    Mode,
    boundary_conformance_cases,
    case_strategy,
    check_conformance,
    exhaustive_dual_chunk_swap_cases,
    exhaustive_layout_cases,
    exhaustive_selection_cases,
)


def test_reference_conforms_on_every_boundary_case() -> None:
    assert check_conformance(reference, boundary_conformance_cases([1, 2, 3, 8])) > 100


def test_reference_conforms_on_exhaustive_small_layouts() -> None:
    assert check_conformance(reference, exhaustive_layout_cases(max_cp_size=3)) > 200


def test_reference_dual_chunk_swap_rows_conform_at_every_quotient_up_to_p8() -> None:
    # The three DualChunkSwap rows, spec against reference, loads included (the dcp row's short-prefill rule:
    # every prefill up to 2P(2P-2)+1 it copies, and the first lengths it splits), at P = 1..8.
    cases = list(exhaustive_dual_chunk_swap_cases(max_cp_size=8))
    assert {c.strategy for c in cases} == {"dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp"}
    assert {c.cp_size for c in cases} == set(range(1, 9))
    assert check_conformance(reference, cases) == len(cases) > 2500


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


def _dcp_copying_below_2p(extend_seq_lens: Sequence[int], *, cp_size: int, strategy: str = "zigzag") -> tuple[int, ...]:
    # The dcp row copying the prefills shorter than 2P (the CP gate's notion) instead of those that do not fill
    # all 2P chunks: L = 2P .. 2P(2P-2)+1 are laid out where vLLM copies them.
    if strategy != "dual_chunk_swap_dcp":
        return reference.rank_loads(extend_seq_lens, cp_size=cp_size, strategy=strategy)
    loads = [0] * cp_size
    for length in extend_seq_lens:
        one = ((length,) * cp_size if length < 2 * cp_size
               else reference.rank_loads((length,), cp_size=cp_size, strategy="dual_chunk_swap"))
        loads = [a + b for a, b in zip(loads, one)]
    return tuple(loads)


def test_a_dcp_rule_copying_only_prefills_below_2p_is_caught() -> None:
    with pytest.raises(ConformanceError, match="rank_loads") as caught:
        check_conformance(_planted(rank_loads=_dcp_copying_below_2p), exhaustive_dual_chunk_swap_cases(max_cp_size=2))
    assert all(m.case.strategy == "dual_chunk_swap_dcp" for m in caught.value.mismatches)
