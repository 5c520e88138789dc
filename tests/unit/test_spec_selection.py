"""cpgraph.spec.selection on concrete inputs: the scan, the declarative relation, the hazards."""

import z3
from hypothesis import given
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.proofs.engine.evaluate import spec_select_replay_bucket, value_of
from cpgraph.spec.selection import concrete_capture_list, is_least_fitting, padding_window, scan_select

SEED = dict(capture_num_tokens=(2048, 2304, 2560), bucket_local_tokens={2048: 512, 2304: 576, 2560: 640})


def test_seed_example_selects_2304() -> None:
    assert spec_select_replay_bucket(num_tokens=2048, required_local_tokens=520, max_padding_factor=2, **SEED) == 2304


def test_a_missing_capacity_is_skipped_not_a_fit() -> None:
    chosen = spec_select_replay_bucket(
        num_tokens=2048, required_local_tokens=520, max_padding_factor=2,
        capture_num_tokens=(2048, 2304, 2560), bucket_local_tokens={2048: 512, 2560: 640},
    )
    assert chosen == 2560


def test_both_window_ends_are_inclusive_and_f_times_n_plus_one_is_out() -> None:
    common = dict(num_tokens=10, required_local_tokens=1, max_padding_factor=2)
    assert spec_select_replay_bucket(capture_num_tokens=(10,), bucket_local_tokens={10: 1}, **common) == 10
    assert spec_select_replay_bucket(capture_num_tokens=(20,), bucket_local_tokens={20: 1}, **common) == 20
    assert spec_select_replay_bucket(capture_num_tokens=(21,), bucket_local_tokens={21: 1}, **common) is None


def test_an_unsorted_list_breaks_the_scan_but_not_the_relation() -> None:
    # The scan stops at 40 (> F*n) before reaching 12; the least fitting bucket is 12.
    capture = concrete_capture_list((8, 40, 12), {8: 9, 40: 9, 12: 9})
    window = padding_window(10, 2)
    chosen = scan_select(capture, window, 1)
    assert value_of(chosen.admitted, z3.BoolVal(True)) is False
    least = type(chosen)(z3.BoolVal(True), z3.IntVal(12))
    assert value_of(is_least_fitting(least, capture, window, 1), z3.BoolVal(True)) is True


@given(
    st.integers(1, 40),
    st.integers(0, 12),
    st.integers(1, 3),
    st.lists(st.tuples(st.integers(1, 120), st.one_of(st.none(), st.integers(0, 14))), min_size=1, max_size=8),
)
def test_spec_scan_equals_the_reference_selection(
    n: int, required: int, factor: int, entries: list[tuple[int, int | None]]
) -> None:
    table = dict(entries)
    buckets = tuple(sorted(table))
    capacities = {b: c for b, c in table.items() if c is not None}
    kwargs = dict(
        num_tokens=n, required_local_tokens=required, capture_num_tokens=buckets,
        bucket_local_tokens=capacities, max_padding_factor=factor,
    )
    assert spec_select_replay_bucket(**kwargs) == reference.select_replay_bucket(**kwargs)


def test_an_empty_symbolic_capture_list_is_allowed_and_a_negative_length_is_not() -> None:
    from cpgraph.spec.selection import symbolic_capture_list

    assert len(symbolic_capture_list(0, "cap")) == 0
    assert len(symbolic_capture_list(3, "cap")) == 3
    import pytest

    with pytest.raises(ValueError, match="length must be an int >= 0, got -1"):
        symbolic_capture_list(-1, "cap")
