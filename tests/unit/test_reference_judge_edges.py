"""Edges of the reference's records, validators and judge that a planted bug slipped past (mutation
sample of 2026-12-01): each test pins one behaviour a reader of the docstring expects."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cpgraph.check import Batch, make_batch
from cpgraph.reference import build_layout
from cpgraph.reference.judge import RankAnswer, expected, judge_answers, rank_answer
from cpgraph.reference.validate import check_capture_list, check_padding_factor

SEED = make_batch((1534, 161, 353), (2048, 2304, 2560), cp_size=4)  # needs 520 rows; 2304 holds 576


def _answer(rank: int, rows: tuple[object, ...] | None = None, rows_error: str | None = None) -> RankAnswer:
    return rank_answer(rank, True, None, 2304, None, rows, rows_error, True)


def test_describe_names_the_rows_or_why_they_are_missing() -> None:
    assert _answer(0, rows=(520, 519, 518, 517)).describe() == "admit=True replay_bucket=2304 local_rows=[520, 519, 518, 517]"
    assert _answer(0, rows_error="ValueError: no").describe() == "admit=True replay_bucket=2304 local_rows raised ValueError: no"
    refused = rank_answer(1, True, None, None, "LookupError: eager", None, None, True)
    assert refused.describe() == "admit=True replay_bucket=raised LookupError: eager"


def test_rows_that_raised_or_have_the_wrong_shape_are_judged_not_kept() -> None:
    """The one-pass fast path (keeps_everything) must hand such answers to the rules."""
    spec = expected(SEED)
    assert spec.bucket == 2304
    for bad in ([_answer(r, rows_error="RuntimeError: boom") for r in range(4)],
                [_answer(r, rows=(520, 520, 520)) for r in range(4)],
                [_answer(r, rows=("520", 520, 520, 520)) for r in range(4)],
                [_answer(r, rows=(True, 520, 520, 520)) for r in range(4)]):
        found = judge_answers(SEED, bad)
        assert [f.invariant for f in found] == ["capacity_fit"], (bad[0].describe(), found)


def test_the_reference_answers_are_kept() -> None:
    spec = expected(SEED)
    good = [_answer(r, rows=spec.loads) for r in range(4)]
    assert judge_answers(SEED, good) == []


def test_a_padding_factor_below_one_is_refused_in_every_form() -> None:
    for factor in (Fraction(1, 2), Fraction(0), 0, Fraction(99, 100)):
        with pytest.raises(ValueError, match="max_padding_factor must be"):
            check_padding_factor("max_padding_factor", factor)
    assert check_padding_factor("max_padding_factor", Fraction(4, 2)) == 2
    assert check_padding_factor("max_padding_factor", Fraction(5, 4)) == Fraction(5, 4)


def test_a_capture_list_with_a_zero_or_negative_bucket_is_refused() -> None:
    for listed in ((0, 4), (-4, 4), (0,)):
        with pytest.raises(ValueError, match=r"capture_num_tokens\[0\] must be a positive int"):
            check_capture_list("capture_num_tokens", listed)


def test_locate_refuses_a_request_one_past_the_last() -> None:
    layout = build_layout((8, 6), cp_size=2)
    assert layout.locate(1, 5) is not None
    for request in (2, -1):
        with pytest.raises(ValueError, match=r"request must be in \[0, 2\)"):
            layout.locate(request, 0)


def test_align_up_refuses_a_zero_alignment() -> None:
    from cpgraph.reference import align_up

    with pytest.raises(ValueError, match="align_size must be an int >= 1"):
        align_up(5, 0)
    assert align_up(0, 8) == 0 and align_up(9, 8) == 16


def _boundary_batches() -> list[Batch]:
    """Batches on every edge of the fast path's scan: n = 2P exactly, a length of 2P - 1, the bucket at
    floor(F*n) and one above, capacity = required and one below, a rational F, a padded n."""
    from cpgraph.reference import required_local_tokens

    out: list[Batch] = []
    for p in (2, 3, 4):
        for lengths in ((2 * p,), (2 * p, 2 * p - 1), (2 * p + 1, 3 * p), (4 * p + 3, 2 * p)):
            n = sum(lengths)
            rows = required_local_tokens(lengths, cp_size=p, align_size=p)
            for factor in (1, 2, Fraction(3, 2), Fraction(7, 4)):
                top = (factor.numerator * n) // factor.denominator if isinstance(factor, Fraction) else factor * n
                for buckets, caps in (
                    ((n,), {n: rows}), ((n,), {n: rows - 1}), ((n, top), {n: rows - 1, top: rows}),
                    ((n, top + 1), {n: rows - 1, top + 1: rows}), ((n - 1, n + 1), {n - 1: rows, n + 1: rows}),
                ):
                    if buckets[0] < 1 or len(set(buckets)) < len(buckets) or list(buckets) != sorted(buckets):
                        continue
                    for pad in (0, 1):
                        out.append(make_batch(lengths, buckets, cp_size=p, align_size=p, capacities=caps,
                                              max_padding_factor=factor, num_tokens=n + pad))
    return out


def test_the_fast_expectation_equals_the_full_one_on_every_edge() -> None:
    from cpgraph.reference.judge import expected_bucket

    batches = _boundary_batches()
    assert len(batches) > 200
    for batch in batches:
        full = expected(batch)
        want, loads, capacity = expected_bucket(batch)
        assert (want, loads) == (full.bucket, full.loads), batch
        assert capacity == (0 if want is None else batch.capacities[want]), batch


def test_align_up_refuses_a_negative_value() -> None:
    from cpgraph.reference import align_up

    with pytest.raises(ValueError, match="value must be an int >= 0"):
        align_up(-1, 8)


def test_a_zero_length_is_allowed_and_the_bad_one_is_named() -> None:
    from cpgraph.reference.validate import check_lengths

    assert check_lengths("extend_seq_lens", (0, 5)) == (0, 5)
    with pytest.raises(ValueError, match=r"extend_seq_lens\[1\]"):
        check_lengths("extend_seq_lens", (0, -1))


def test_an_unsorted_capture_list_is_named_unsorted_not_repeated() -> None:
    with pytest.raises(ValueError, match="must be sorted ascending; 8 comes before 4"):
        check_capture_list("capture_num_tokens", (8, 4, 8))
    with pytest.raises(ValueError, match="must not repeat a bucket; 4 appears twice"):
        check_capture_list("capture_num_tokens", (4, 4, 8))


def test_token_at_and_locate_refuse_one_past_the_end() -> None:
    layout = build_layout((8, 6), cp_size=2, rows=8)
    assert layout.token_at(1, 7) is None  # a padding row inside the buffer
    with pytest.raises(ValueError, match=r"row must be in \[0, 8\), got 8"):
        layout.token_at(0, 8)
    assert layout.locate(1, 5) is not None
    with pytest.raises(ValueError, match=r"token must be in \[0, 6\), got 6"):
        layout.locate(1, 6)


def test_token_at_refuses_a_rank_outside_the_ranks() -> None:
    layout = build_layout((8, 6), cp_size=2, rows=8)
    assert layout.token_at(0, 0) is not None and layout.token_at(1, 0) is not None
    for rank in (-1, 2):
        with pytest.raises(ValueError, match=rf"rank must be in \[0, 2\), got {rank}"):
            layout.token_at(rank, 0)


@pytest.mark.parametrize("value", [5, None, "128", b"128"])
def test_a_capture_list_that_is_not_a_sequence_of_ints_is_named(value: object) -> None:
    with pytest.raises(TypeError, match="capture_num_tokens must be a sorted sequence of positive ints"):
        check_capture_list("capture_num_tokens", value)


def test_runner_and_capture_rule_refuse_zero_where_one_is_the_least() -> None:
    from cpgraph.reference import CaptureRule, ReferenceRunner

    with pytest.raises(ValueError, match="max_requests must be an int >= 1"):
        CaptureRule(kind="headroom", max_requests=0)
    with pytest.raises(ValueError, match="align_size must be an int >= 1"):
        ReferenceRunner(cp_size=2, capture_num_tokens=(64,), align_size=0)


def test_an_integral_fraction_factor_comes_back_as_an_int() -> None:
    factor = check_padding_factor("max_padding_factor", Fraction(4, 2))
    assert type(factor) is int and factor == 2


def test_the_cp_size_bound_is_65536() -> None:
    from cpgraph.reference import rank_loads
    from cpgraph.reference.validate import MAX_CP_SIZE as bound

    assert bound == 65536
    with pytest.raises(ValueError, match="cp_size must be an int in 1..65536"):
        rank_loads((4,), cp_size=65537)


def test_headroom_refuses_a_negative_token_count_and_zero_requests() -> None:
    from cpgraph.reference import headroom_bound, headroom_local_tokens

    with pytest.raises(ValueError, match="num_tokens must be an int >= 0"):
        headroom_bound(-1, cp_size=2, max_requests=1)
    with pytest.raises(ValueError, match="max_requests must be an int >= 1"):
        headroom_bound(8, cp_size=2, max_requests=0)
    with pytest.raises(ValueError, match="max_requests must be an int >= 1"):
        headroom_local_tokens(8, cp_size=2, align_size=1, max_requests=0)
    assert headroom_bound(0, cp_size=2, max_requests=1) == 0


def test_an_uncaptured_bucket_is_named_as_not_in_the_list() -> None:
    found = judge_answers(SEED, [rank_answer(r, True, None, 3000, None, None, None, True) for r in range(4)])
    captured = [f for f in found if f.invariant == "captured_bucket"]
    assert captured and "replays 3000, not in capture_num_tokens" in captured[0].why


def test_answers_as_json_keep_an_int_bucket_an_int() -> None:
    data = _answer(0, rows=(520, 519, 518, 517)).to_json()
    assert data["replay_bucket"] == 2304 and type(data["replay_bucket"]) is int
    assert data["local_rows"] == [520, 519, 518, 517]


def test_a_bucket_exactly_at_the_padding_limit_is_selected() -> None:
    from cpgraph.reference import ReferenceRunner

    runner = ReferenceRunner(cp_size=2, capture_num_tokens=(64,), align_size=1, max_padding_factor=2)
    plan = runner.plan((16, 16))
    assert plan.admitted and plan.bucket == 64
