"""impl/distributed.py without processes: plan digests and the spawn helper's argument checks."""

from __future__ import annotations

import dataclasses

import pytest

from cpgraph.impl.decision import FallbackReason, Plan
from cpgraph.impl.distributed import plan_digest, spawn, prefill_worker

PLAN = Plan((1534, 161, 353), 2048, 520, 2304, 576, None)


def test_digest_is_equal_for_equal_plans_and_differs_for_any_field() -> None:
    assert plan_digest(PLAN) == plan_digest(dataclasses.replace(PLAN))
    variants = [
        dataclasses.replace(PLAN, extend_seq_lens=(1534, 161, 354)),
        dataclasses.replace(PLAN, num_tokens=2049),
        dataclasses.replace(PLAN, required_local_tokens=528),
        dataclasses.replace(PLAN, bucket=2560, bucket_local_tokens=640),
        dataclasses.replace(PLAN, bucket=None, bucket_local_tokens=None,
                            fallback=FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT),
    ]
    digests = {plan_digest(p) for p in variants}
    assert len(digests) == len(variants) and plan_digest(PLAN) not in digests
    assert all(-(2**63) <= d < 2**63 for d in digests)  # fits an int64 tensor


def test_spawn_rejects_unknown_backend_and_start_method() -> None:
    with pytest.raises(ValueError, match="backend must be gloo or nccl, got 'mpi'"):
        spawn(prefill_worker, 2, backend="mpi")
    with pytest.raises(ValueError, match="start_method must be one of .* got 'thread'"):
        spawn(prefill_worker, 2, start_method="thread")
