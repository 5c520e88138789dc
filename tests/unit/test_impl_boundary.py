"""The decision path's boundary (impl/lengths.py) and the policy's remembered capture table (impl/policy.py).

Every accepted form gives the same answer; every refused input names the argument, the value and what is
allowed; the remembered capture table never answers for inputs that changed.
"""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import torch

from cpgraph import reference
from cpgraph.impl import decision, policy
from cpgraph.impl.checks import STRATEGY_IDS
from cpgraph.impl.lengths import VECTOR_MIN_REQUESTS, accept_lengths, lengths_tuple

from helpers import seed_batch

LONG = VECTOR_MIN_REQUESTS + 5


@pytest.mark.parametrize("count", [1, 2, VECTOR_MIN_REQUESTS - 1, VECTOR_MIN_REQUESTS, 300])
def test_every_form_gives_the_same_facts(count: int) -> None:
    lengths = tuple((i * 37) % 500 + 2 for i in range(count))
    forms = [lengths, list(lengths), np.array(lengths), np.array(lengths, dtype=np.int32),
             np.array(lengths, dtype=np.uint16), torch.tensor(lengths), torch.tensor(lengths, dtype=torch.int32)]
    for given in forms:
        facts = accept_lengths(given)
        assert lengths_tuple(facts) == lengths
        assert facts[2:] == (count, sum(lengths), min(lengths)), type(given)


def test_lengths_past_int64_are_exact() -> None:
    lengths = [2**70, 3] * (LONG // 2 + 1)
    facts = accept_lengths(lengths)
    assert facts[3] == sum(lengths) and facts[1] is None  # the scalar path on Python ints
    assert decision.required_local_tokens(lengths, cp_size=4, align_size=8) == reference.required_local_tokens(
        lengths, cp_size=4, align_size=8)


def test_an_int64_array_whose_sum_would_wrap_is_summed_exactly() -> None:
    big = np.full(LONG, 2**62, dtype=np.int64)
    assert accept_lengths(big)[3] == LONG * 2**62


def test_zero_and_one_lengths_are_accepted_in_long_lists() -> None:
    lengths = [0, 1, 9] * (LONG // 3 + 1)
    assert decision.required_local_tokens(lengths, cp_size=2, align_size=4) == reference.required_local_tokens(
        lengths, cp_size=2, align_size=4)


LIST_ERRORS: list[tuple[Any, type[Exception], str]] = [
    ([5] * LONG + [True], TypeError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got True \(bool\)"),
    ([5] * LONG + [2.0], TypeError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got 2.0 \(float\)"),
    ([5] * LONG + [-3], ValueError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got -3"),
    ([5] * LONG + ["7"], TypeError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got '7' \(str\)"),
    ([5] * LONG + [None], TypeError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got None"),
    ([5, np.int64(4)], TypeError, r"extend_seq_lens\[1\] must be an int >= 0, got np.int64\(4\) \(int64\)"),
    ([5] * LONG + [np.int64(4)], TypeError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got np.int64\(4\)"),
    ([5, Fraction(7)], TypeError, r"extend_seq_lens\[1\] must be an int >= 0, got Fraction\(7, 1\)"),
    ([True], TypeError, r"extend_seq_lens\[0\] must be an int >= 0, got True \(bool\)"),
    ([-1], ValueError, r"extend_seq_lens\[0\] must be an int >= 0, got -1"),
]


@pytest.mark.parametrize(("lengths", "error", "message"), LIST_ERRORS)
def test_lists_are_refused_with_the_reference_error(lengths: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as got:
        decision.required_local_tokens(lengths, cp_size=4, align_size=8)
    with pytest.raises(error) as want:
        reference.required_local_tokens(lengths, cp_size=4, align_size=8)
    assert str(got.value) == str(want.value)


ARRAY_ERRORS: list[tuple[Any, type[Exception], str]] = [
    (np.array([1.0, 2.0]), TypeError, r"extend_seq_lens must be a 1-d integer numpy array .*; got dtype float64"),
    (np.array([True, False]), TypeError, r"got dtype bool"),
    (np.array([1, 2], dtype=np.uint64), TypeError, r"got dtype uint64"),
    (np.array([[1, 2]]), ValueError, r"extend_seq_lens must be a 1-d integer numpy array .*; got shape \(1, 2\)"),
    (np.array([], dtype=np.int64), ValueError, r"must be a non-empty sequence of ints >= 0, got an empty batch"),
    (np.array([3, -1, 4]), ValueError, r"extend_seq_lens\[1\] must be an int >= 0, got -1"),
    (np.array([3] * LONG + [-2]), ValueError, rf"extend_seq_lens\[{LONG}\] must be an int >= 0, got -2"),
    (torch.tensor([1.5]), TypeError, r"got dtype torch.float32"),
    (torch.tensor([True]), TypeError, r"got dtype torch.bool"),
    (torch.empty(3, dtype=torch.int64, device="meta"), ValueError, r"got a tensor on meta .*copy it to the CPU once"),
]


@pytest.mark.parametrize(("lengths", "error", "message"), ARRAY_ERRORS)
def test_arrays_and_tensors_are_refused_naming_what_is_allowed(lengths: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        decision.required_local_tokens(lengths, cp_size=4, align_size=8)


def test_the_decision_path_imports_without_torch() -> None:
    code = ("import sys; import cpgraph.impl.policy, cpgraph.impl.decision; "
            "cpgraph.impl.policy.admit(cp_rank=0, cp_size=2, align_size=4, num_tokens=400, extend_seq_lens=[8] * 50, "
            "capture_num_tokens=(400,), bucket_local_tokens={400: 400}, max_padding_factor=2); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the remembered capture table --------------------------------------------------------------------------------


def test_a_mapping_changed_in_place_is_decided_on_its_new_values() -> None:
    caps = {2048: 512, 2304: 576, 2560: 640}
    batch = seed_batch(bucket_local_tokens=caps)
    assert policy.replay_bucket(**batch) == 2304
    caps[2304] = 519  # now too small: the next bucket fits
    assert policy.replay_bucket(**batch) == 2560
    caps[2560] = 100
    assert not policy.admit(**batch)
    caps[2304] = 520
    assert policy.replay_bucket(**batch) == 2304
    caps[2304] = 520.0  # type: ignore[assignment]  # read by this decision: checked as it is read
    with pytest.raises(TypeError, match=r"bucket_local_tokens\[2304\] must be an int >= 0, got 520.0 \(float\)"):
        policy.admit(**batch)


def test_a_capture_list_changed_in_place_is_decided_on_its_new_values() -> None:
    buckets = [2048, 2304, 2560]
    batch = seed_batch(capture_num_tokens=buckets)
    assert policy.replay_bucket(**batch) == 2304
    buckets[1] = 2300  # not captured: no capacity recorded for it
    assert policy.replay_bucket(**batch) == 2560
    buckets[1] = 2304
    assert policy.replay_bucket(**batch) == 2304
    buckets[1] = 2304.0  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"capture_num_tokens\[1\] must be a positive int, got 2304.0 \(float\)"):
        policy.admit(**batch)


def test_equal_looking_tables_with_other_types_are_refused_not_remembered() -> None:
    assert policy.admit(**seed_batch())
    with pytest.raises(TypeError, match=r"capture_num_tokens\[0\] must be a positive int, got 2048.0"):
        policy.admit(**seed_batch(capture_num_tokens=(2048.0, 2304, 2560)))
    with pytest.raises(TypeError, match=r"bucket_local_tokens\[2048\] must be an int >= 0, got 512.0"):
        policy.admit(**seed_batch(bucket_local_tokens={2048: 512.0, 2304: 576, 2560: 640}))
    with pytest.raises(TypeError, match=r"keys must be int buckets, got 2048.0"):
        policy.admit(**seed_batch(bucket_local_tokens={2048.0: 512, 2304: 576, 2560: 640}))
    # tables holding 0 or 1 (which a bool equals) are never taken on equality
    small: dict[str, Any] = dict(cp_rank=0, cp_size=1, align_size=1, num_tokens=1, extend_seq_lens=[1], capture_num_tokens=(1, 2),
                 bucket_local_tokens={1: 1, 2: 2}, max_padding_factor=2)
    assert not policy.admit(**small)
    with pytest.raises(TypeError, match=r"bucket_local_tokens\[1\] must be an int >= 0, got True \(bool\)"):
        policy.admit(**dict(small, bucket_local_tokens={1: True, 2: 2}))
    with pytest.raises(TypeError, match=r"capture_num_tokens\[0\] must be a positive int, got True \(bool\)"):
        policy.admit(**dict(small, capture_num_tokens=(True, 2)))


def test_alternating_tables_each_get_their_own_answer() -> None:
    tight = seed_batch(bucket_local_tokens={2048: 512, 2304: 519, 2560: 640})
    roomy = seed_batch(bucket_local_tokens={2048: 520, 2304: 576, 2560: 640})
    for _ in range(3):
        assert policy.replay_bucket(**tight) == 2560
        assert policy.replay_bucket(**roomy) == 2048
        assert policy.replay_bucket(**dict(roomy, bucket_local_tokens=dict(roomy["bucket_local_tokens"]))) == 2048
        assert not policy.admit(**dict(tight, capture_num_tokens=[2048, 2304]))  # neither listed bucket fits


def test_policy_takes_arrays_tensors_and_fractional_factors() -> None:
    for lengths in ([1534, 161, 353], np.array([1534, 161, 353]), torch.tensor([1534, 161, 353])):
        assert policy.replay_bucket(**seed_batch(extend_seq_lens=lengths)) == 2304
        assert policy.local_rows(bucket=2304, **seed_batch(extend_seq_lens=lengths)) == (520,) * 4
    assert policy.replay_bucket(**seed_batch(max_padding_factor=Fraction(9, 8))) == 2304  # 2304 = 9/8 * 2048
    with pytest.raises(LookupError, match="no_bucket_within_padding_limit"):  # [2049, 2177.06]: no bucket
        policy.replay_bucket(**seed_batch(num_tokens=2049, max_padding_factor=Fraction(17, 16)))


def test_policy_refuses_missing_or_extra_keywords() -> None:
    batch = seed_batch()
    del batch["cp_rank"]
    with pytest.raises(TypeError, match=r"missing \['cp_rank'\], unexpected \[\]"):
        policy.admit(**batch)
    with pytest.raises(TypeError, match=r"missing \['cp_rank'\], unexpected \['rank'\]"):
        policy.admit(**dict(batch, rank=0))
    with pytest.raises(TypeError, match=r"missing \[\], unexpected \['extra'\]"):
        policy.admit(**seed_batch(extra=1))


def test_without_numpy_every_list_takes_the_scalar_path_with_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from cpgraph.impl import lengths as boundary

    boundary.numpy_module()
    monkeypatch.setattr(boundary, "_NUMPY", [None])
    for strategy in STRATEGY_IDS:
        for p in (1, 3, 4, 64):
            lengths = [(i * 7919) % 3000 for i in range(3 * LONG)]
            facts = accept_lengths(lengths)
            assert facts[1] is None  # no array without numpy
            assert decision.required_local_tokens(lengths, cp_size=p, align_size=2 * p, strategy=strategy) == (
                reference.required_local_tokens(lengths, cp_size=p, align_size=2 * p, strategy=strategy))
