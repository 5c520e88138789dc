"""The decision path's boundary for every form a serving stack holds (issue 14): a list, a tuple, an integer
numpy array, a CPU tensor; strided views, other integer widths, the P = 1 shortcut, the float64 sum's exact
limit; every refusal names the argument, the value or dtype, and what is allowed; and the dispatcher validates
a batch exactly once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from cpgraph import reference
from cpgraph.impl import decision, lengths as boundary
from cpgraph.impl.dispatch import Dispatcher
from cpgraph.impl.lengths import VECTOR_MIN_REQUESTS, accept_lengths, lengths_tuple

LONG = VECTOR_MIN_REQUESTS + 5
STRATEGIES = ("zigzag", "interleave", "contiguous", "dual_chunk_swap", "dual_chunk_swap_replicated",
              "dual_chunk_swap_dcp")


def _lengths(count: int, p: int = 4) -> list[int]:
    return [(i * 7919) % 3000 + 2 * p for i in range(count)]


def _strided_forms(lengths: list[int]) -> list[Any]:
    """The same lengths as non-contiguous views: every other item of a longer array / tensor, and a column."""
    doubled = [x for length in lengths for x in (length, 10**6)]
    column = np.stack([lengths, lengths], axis=1).astype(np.int64)[:, 0]
    return [np.array(doubled, dtype=np.int64)[::2], torch.tensor(doubled)[::2], column,
            torch.stack([torch.tensor(lengths)] * 2, dim=1)[:, 1], np.array(lengths[::-1], dtype=np.int64)[::-1]]


@pytest.mark.parametrize("count", [1, 3, VECTOR_MIN_REQUESTS, 300])
def test_strided_arrays_and_tensors_decide_like_the_list(count: int) -> None:
    lengths = _lengths(count)
    for form in _strided_forms(lengths):
        assert not (form.flags["C_CONTIGUOUS"] if isinstance(form, np.ndarray) else form.is_contiguous()) or count == 1
        facts = accept_lengths(form)
        assert lengths_tuple(facts) == tuple(lengths)
        assert facts[2:] == (count, sum(lengths), min(lengths))
        for strategy in STRATEGIES:
            for p in (1, 2, 3, 4, 8, 16, 32, 64):
                assert decision.required_local_tokens(form, cp_size=p, align_size=2 * p, strategy=strategy) == (
                    reference.required_local_tokens(lengths, cp_size=p, align_size=2 * p, strategy=strategy))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                   np.dtype(">i8"), np.dtype(">i4")])
def test_every_integer_width_numpy_holds_exactly_is_accepted_alike(dtype: Any) -> None:
    lengths = [x % 120 + 8 for x in _lengths(LONG)]
    facts = accept_lengths(np.array(lengths, dtype=dtype))
    assert lengths_tuple(facts) == tuple(lengths) and facts[2:] == (LONG, sum(lengths), min(lengths))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8])
def test_every_integer_tensor_dtype_is_accepted_alike(dtype: torch.dtype) -> None:
    lengths = [x % 120 + 8 for x in _lengths(LONG)]
    facts = accept_lengths(torch.tensor(lengths, dtype=dtype))
    assert lengths_tuple(facts) == tuple(lengths) and facts[2:] == (LONG, sum(lengths), min(lengths))


@pytest.mark.parametrize("count", [1, 2, LONG])
def test_one_rank_holds_every_token(count: int) -> None:
    lengths = _lengths(count)
    for form in (lengths, tuple(lengths), np.array(lengths), torch.tensor(lengths)):
        for a in (1, 2, 7):
            assert decision.required_local_tokens(form, cp_size=1, align_size=a) == -(-sum(lengths) // a) * a
            assert decision.max_rank_load(form, cp_size=1) == sum(lengths)


def test_the_float64_sum_is_exact_up_to_its_limit_and_exact_past_it() -> None:
    for total in (2**53 - 1, 2**53, 2**53 + 1, 2**62 + 3):
        lengths = [8] * (LONG - 1) + [total - 8 * (LONG - 1)]
        facts = accept_lengths(np.array(lengths, dtype=np.int64))
        assert facts[3] == total and type(facts[3]) is int
        assert decision.required_local_tokens(np.array(lengths), cp_size=4, align_size=8) == (
            reference.required_local_tokens(lengths, cp_size=4, align_size=8))


REFUSED: list[tuple[Any, type[Exception], str]] = [
    (torch.tensor([], dtype=torch.int64), ValueError,
     r"extend_seq_lens must be a non-empty sequence of ints >= 0, got an empty batch tensor\(\[\], dtype=torch.int64\)"),
    (np.zeros(0, dtype=np.int32), ValueError, r"must be a non-empty sequence of ints >= 0, got an empty batch"),
    (torch.tensor([[8, 9], [10, 11]]), ValueError,
     r"extend_seq_lens must be a 1-d integer numpy array or CPU torch tensor .*; got shape \(2, 2\)"),
    (np.array(5), ValueError, r"got shape \(\)"),
    (torch.tensor([8, 9], dtype=torch.float16), TypeError, r"got dtype torch.float16"),
    (torch.tensor([True] * LONG), TypeError, r"got dtype torch.bool"),
    (np.array([True] * LONG), TypeError, r"got dtype bool"),
    (np.array([8, 9], dtype=np.uint64), TypeError, r"\(int64, int32, int16, int8, uint32, uint16, uint8\); got dtype uint64"),
    (np.array(["8", "9"]), TypeError, r"got dtype <U1"),
    (np.array([8, 9], dtype=object), TypeError, r"got dtype object"),
    (torch.tensor([8] * LONG + [-3, 9]), ValueError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got -3"),
    (torch.tensor([8, -3, 9], dtype=torch.int8), ValueError, r"extend_seq_lens\[1\] must be an int >= 0, got -3"),
    (np.array([8] * LONG + [-(2**63)]), ValueError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got -{2**63}"),
    (np.array([8] * LONG + [-1]), ValueError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got -1"),
    (np.array([8, -1, 9]), ValueError, r"extend_seq_lens\[1\] must be an int >= 0, got -1"),
    (torch.empty(3, dtype=torch.int64, device="meta"), ValueError,
     r"got a tensor on meta \(copy it to the CPU once, outside the decision"),
]


@pytest.mark.parametrize(("lengths", "error", "message"), REFUSED)
def test_refusals_name_the_argument_the_value_and_what_is_allowed(lengths: Any, error: type[Exception],
                                                                   message: str) -> None:
    with pytest.raises(error, match=message):
        accept_lengths(lengths)
    with pytest.raises(error, match=message):
        decision.required_local_tokens(lengths, cp_size=4, align_size=8)
    selector = decision.Selector.build((64, 128), {64: 16, 128: 32})
    with pytest.raises(error, match=message):
        decision.plan_lengths(lengths, cp_size=4, align_size=8, selector=selector, max_padding_factor=2)


def test_a_length_past_int64_in_a_long_list_is_exact_and_a_huge_one_in_an_array_too() -> None:
    lengths = [9] * LONG + [2**63 + 5]
    assert decision.required_local_tokens(lengths, cp_size=4, align_size=8) == reference.required_local_tokens(
        lengths, cp_size=4, align_size=8)
    big = [9] * LONG + [2**63 - 1]
    assert decision.required_local_tokens(np.array(big), cp_size=4, align_size=8) == reference.required_local_tokens(
        big, cp_size=4, align_size=8)


@pytest.mark.parametrize("form", ["list", "tuple", "array", "tensor"])
@pytest.mark.parametrize("count", [1, 5, LONG])
def test_the_dispatcher_validates_a_batch_once(form: str, count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    lengths = _lengths(count, p=4)
    given: Any = {"list": lengths, "tuple": tuple(lengths), "array": np.array(lengths),
                  "tensor": torch.tensor(lengths)}[form]
    n = sum(lengths)
    buckets = (n, 2 * n)
    dispatcher = Dispatcher(cp_size=4, align_size=8, strategy="zigzag", max_padding_factor=2,
                            capture_num_tokens=buckets, captured={b: reference.capture_local_tokens(
                                b, cp_size=4, align_size=8) for b in buckets})
    calls: list[object] = []
    accept = boundary.accept_lengths

    def counted(value: object, name: str = "extend_seq_lens") -> Any:
        calls.append(value)
        return accept(value, name)

    def never(*args: object, **kwargs: object) -> Any:
        raise AssertionError("a valid batch was validated again by the reference's item-by-item check")

    monkeypatch.setattr(decision, "accept_lengths", counted)
    monkeypatch.setattr(boundary, "check_lengths", never)
    plan = dispatcher.plan(given)
    assert len(calls) == 1 and calls[0] is given
    want = reference.ReferenceRunner(cp_size=4, capture_num_tokens=buckets).plan(lengths)
    assert (plan.extend_seq_lens, plan.num_tokens, plan.required_local_tokens, plan.bucket, plan.fallback) == (
        tuple(lengths), n, want.required_local_tokens, want.bucket, want.fallback)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_bound_decider_decides_like_decide_lengths(strategy: str) -> None:
    for p in (1, 2, 3, 4, 8, 16, 32, 64):
        for count in (1, 7, LONG, 300):
            lengths = [(i * 7919) % 900 + (i % 3) * p + 1 for i in range(count)]
            n = sum(lengths)
            buckets = tuple(sorted({max(1, n // 2), n, n + 5, 2 * n}))
            caps = {b: reference.capture_local_tokens(b, cp_size=p, align_size=2 * p, strategy=strategy)
                    for b in buckets[1:]}
            selector = decision.Selector.build(buckets, caps)
            config = dict(cp_size=p, align_size=2 * p, selector=selector, max_padding_factor=2, strategy=strategy)
            decide = decision.decider(**config)  # type: ignore[arg-type]
            for form in (lengths, tuple(lengths), np.array(lengths), torch.tensor(lengths)):
                for num_tokens in (None, n, n + 3):
                    got = decide(form, num_tokens)
                    want = decision.decide_lengths(form, num_tokens, **config)  # type: ignore[arg-type]
                    assert got[1:] == want[1:] and lengths_tuple(got[0]) == tuple(lengths)
            if n > 1:
                with pytest.raises(ValueError, match=r"num_tokens must be >= sum\(extend_seq_lens\) = \d+, got \d+"):
                    decide(lengths, n - 1)


def test_the_bound_decider_checks_its_configuration_once() -> None:
    selector = decision.Selector.build((64,), {64: 16})
    with pytest.raises(ValueError, match=r"cp_size must be an int >= 1, got 0"):
        decision.decider(cp_size=0, align_size=8, selector=selector, max_padding_factor=2)
    with pytest.raises(TypeError, match=r"align_size must be an int >= 1, got 8.0 \(float\)"):
        decision.decider(cp_size=4, align_size=8.0, selector=selector, max_padding_factor=2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"strategy must be one of zigzag, interleave, contiguous, dual_chunk_swap, "
                       r"dual_chunk_swap_replicated, dual_chunk_swap_dcp; got 'ring'"):
        decision.decider(cp_size=4, align_size=8, selector=selector, max_padding_factor=2, strategy="ring")


@pytest.mark.parametrize("count", [3, LONG])
def test_the_first_negative_is_named_like_the_reference_names_it(count: int) -> None:
    lengths = [9] * (count - 3) + [7, -1, -5]
    with pytest.raises(ValueError) as want:
        reference.required_local_tokens(lengths, cp_size=4, align_size=8)
    assert f"extend_seq_lens[{count - 2}] must be an int >= 0, got -1 in" in str(want.value)
    for form in (lengths, np.array(lengths), torch.tensor(lengths), np.array(lengths, dtype=np.int32)):
        with pytest.raises(ValueError, match=rf"extend_seq_lens\[{count - 2}\] must be an int >= 0, got -1 in "):
            decision.required_local_tokens(form, cp_size=4, align_size=8)


def test_an_int64_sum_that_would_wrap_is_exact() -> None:
    for top in (2**62, 2**63 - 1, (2**63 - 1) // LONG, (2**63 - 1) // LONG + 1):
        lengths = [8] * (LONG - 1) + [top]
        for form in (np.array(lengths, dtype=np.int64), torch.tensor(lengths)):
            assert accept_lengths(form)[3] == sum(lengths)
            assert decision.required_local_tokens(form, cp_size=4, align_size=8) == reference.required_local_tokens(
                lengths, cp_size=4, align_size=8)


def test_an_int64_sum_of_exactly_two_to_the_63_is_exact() -> None:
    # Every length at the bound: 64 lengths of 2**57 sum to 2**63, one past int64; 2**57 - 1 stays inside.
    for top in (2**57 - 1, 2**57):
        lengths = [top] * 64
        for form in (np.array(lengths, dtype=np.int64), torch.tensor(lengths)):
            assert accept_lengths(form)[3] == sum(lengths)
            assert decision.required_local_tokens(form, cp_size=4, align_size=8) == reference.required_local_tokens(
                lengths, cp_size=4, align_size=8)


def _zigzag_busiest_by_hand(lengths: Any, p: int) -> int:
    """docs/semantics.md's per-rank zigzag loads, vectorised over requests (one pass per rank)."""
    q, m = np.divmod(np.asarray(lengths, dtype=np.int64), 2 * p)
    return max(int((2 * q + (r < m) + (2 * p - 1 - r < m)).sum()) for r in range(p))


@pytest.mark.parametrize("p", [3, 5, 6, 12, 48])
def test_long_batches_on_a_non_power_of_two_p_agree(p: int) -> None:
    lengths = [(i * 7919) % 5000 + 2 * p for i in range(2100)]
    for strategy in STRATEGIES:
        want = reference.required_local_tokens(lengths, cp_size=p, align_size=1, strategy=strategy)
        for form in (lengths, np.array(lengths), torch.tensor(lengths)):
            assert decision.required_local_tokens(form, cp_size=p, align_size=1, strategy=strategy) == want


@pytest.mark.parametrize("p", [16, 64])
def test_the_histogram_tail_is_exact_on_both_sides_of_float32s_limit(p: int) -> None:
    limit = -(-(2**24) // (2 * p + 2))  # requests at which (2P + 2) * R reaches 2**24: float64 from there on
    for count in (limit - 1, limit, limit + 1):
        lengths = (np.arange(count, dtype=np.int64) * 7919) % 9000 + 2 * p
        assert decision.max_rank_load(lengths, cp_size=p) == _zigzag_busiest_by_hand(lengths, p)
    skewed = np.full(limit + 5, 4 * p + 1, dtype=np.int64)  # every request leaves remainder 1: rank 0 busiest
    assert decision.max_rank_load(skewed, cp_size=p) == _zigzag_busiest_by_hand(skewed, p)


@pytest.mark.parametrize("form", ["list", "array", "tensor"])
def test_a_plan_keeps_its_own_tuple_of_the_lengths(form: str) -> None:
    """The Plan records the lengths as a tuple of ints made at the boundary (for a long list, the one copy
    the packing makes): changing the caller's list, array or tensor afterwards does not change the plan."""
    lengths = _lengths(LONG, p=4)
    given: Any = {"list": list(lengths), "array": np.array(lengths), "tensor": torch.tensor(lengths)}[form]
    n = sum(lengths)
    dispatcher = Dispatcher(cp_size=4, align_size=8, strategy="zigzag", max_padding_factor=2,
                            capture_num_tokens=(n, 2 * n), captured={b: reference.capture_local_tokens(
                                b, cp_size=4, align_size=8) for b in (n, 2 * n)})
    plan = dispatcher.plan(given)
    given[0] = 1
    assert type(plan.extend_seq_lens) is tuple and plan.extend_seq_lens == tuple(lengths)
    assert all(type(x) is int for x in plan.extend_seq_lens)
