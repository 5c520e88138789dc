"""impl/distributed.py, impl/launch.py and impl/workers.py without processes: plan digests, who-disagrees
messages, the spawn helper's and the job's argument checks."""

from __future__ import annotations

import dataclasses

import pytest

from cpgraph.impl.decision import FallbackReason, Plan
from cpgraph.impl.agreement import disagreement
from cpgraph.impl.distributed import plan_digest
from cpgraph.impl.launch import spawn
from cpgraph.impl.model import ModelConfig
from cpgraph.impl.workers import Fault, PrefillJob, prefill_worker

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


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((2,), dict(backend="mpi"), ValueError, "backend must be gloo or nccl, got 'mpi'"),
        ((2,), dict(start_method="thread"), ValueError, "start_method must be one of .* got 'thread'"),
        ((2,), dict(start_method="fork"), ValueError, "start_method must be one of .* got 'fork'"),
        ((0,), {}, ValueError, "world_size must be an int >= 1, got 0"),
        ((2.0,), {}, TypeError, r"world_size must be an int >= 1, got 2.0 \(float\)"),
        ((2,), dict(timeout_s=0), ValueError, "timeout_s must be a finite number of seconds > 0, got 0"),
        ((2,), dict(pg_timeout_s=float("inf")), ValueError, "pg_timeout_s must be a finite number of seconds > 0"),
        ((2,), dict(grace_s="1"), ValueError, "grace_s must be a finite number of seconds > 0, got '1'"),
    ],
)
def test_spawn_rejects_bad_arguments_before_starting_anything(
        args: tuple[object, ...], kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        spawn(prefill_worker, *args, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fn must be a module-level callable"):
        spawn("prefill_worker", 2)  # type: ignore[arg-type]


def test_disagreement_names_a_strict_minority_and_blames_nobody_on_a_tie() -> None:
    assert disagreement("the plan", ["A", "A", "B"]) == "ranks [2] disagree with ranks [0, 1] on the plan: ranks [0, 1]: A; ranks [2]: B"
    tie = "ranks disagree on the plan (no majority, so no rank is blamed): rank 0: A; rank 1: B"
    assert disagreement("the plan", ["A", "B"]) == tie
    assert disagreement("the plan", ["A", "B", "B", "A"]).startswith("ranks disagree on the plan (no majority")
    assert disagreement("x", ["A", "B", "C", "C", "B"]).endswith("rank 3: C; rank 4: B")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(seed=-1), ValueError, "seed must be an int >= 0, got -1"),
        (dict(batches=((3, -1),)), ValueError, r"batches\[0\]\[1\] must be an int >= 0, got -1"),
        (dict(device="tpu"), ValueError, "device must be 'cpu' or 'cuda', got 'tpu'"),
        (dict(capture_rule="exact"), ValueError, "capture_rule must be one of captured, headroom; got 'exact'"),
        (dict(faults=("kill",)), TypeError, "faults must be Fault records"),
    ],
)
def test_prefill_job_validates_its_fields(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    fields: dict[str, object] = dict(config=ModelConfig(), seed=0, capture_num_tokens=(8,), batches=((8,),))
    with pytest.raises(error, match=message):
        PrefillJob(**{**fields, **kwargs})  # type: ignore[arg-type]


def test_fault_validates_its_fields() -> None:
    with pytest.raises(ValueError, match="Fault.kind must be one of capture_list, .*; got 'hang'"):
        Fault("hang", rank=0)
    with pytest.raises(ValueError, match=r"Fault 'capture_list' needs a value, got value=\(\)"):
        Fault("capture_list", rank=1)
    with pytest.raises(ValueError, match="rank must be an int >= 0, got -1"):
        Fault("kill", rank=-1)
