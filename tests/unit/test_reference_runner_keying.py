"""The reference's admit/replay runner under local keying (vLLM 0.29 on): one plan for both, s rows a rank."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph.reference import ReferenceRunner, rank_loads
from cpgraph.reference.runner import CaptureRule, FallbackReason, ReplayError

SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))


@given(
    st.sampled_from(["dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp", "zigzag"]),
    st.integers(1, 8), st.lists(st.tuples(st.integers(1, 900), st.booleans()), min_size=1, max_size=5),
)
def test_a_local_plan_is_the_least_size_holding_the_largest_rank_rows(
    strategy: str, cp_size: int, requests: list[tuple[int, bool]]
) -> None:
    lengths = [x for x, _ in requests]
    flags = [f for _, f in requests] if strategy != "zigzag" else None
    runner = ReferenceRunner(cp_size=cp_size, capture_num_tokens=SIZES, strategy=strategy, keying="local", align_size=1)
    plan = runner.plan(lengths, is_prefilling=flags)
    key = max(rank_loads(lengths, cp_size=cp_size, strategy=strategy, is_prefilling=flags))
    assert plan.key == key
    want = next((s for s in SIZES if s >= key), None)
    assert plan.bucket == want and runner.admit(lengths, is_prefilling=flags) == (want is not None)
    if want is None:
        assert plan.fallback is FallbackReason.TOO_MANY_ROWS
        with pytest.raises(ReplayError):
            runner.replay(plan)
    else:
        layout = runner.replay(plan)
        assert layout.rows == want == plan.bucket_local_tokens and max(layout.loads) == key


def test_the_worked_example_plans_size_128_on_every_rank() -> None:
    runner = ReferenceRunner(cp_size=4, capture_num_tokens=SIZES, strategy="dual_chunk_swap", keying="local")
    plan = runner.plan([170, 161, 153])
    assert (plan.key, plan.bucket, plan.bucket_local_tokens) == (126, 128, 128)
    assert runner.replay(plan).loads == (106, 126, 126, 126)


def test_local_keying_refuses_a_capture_rule_and_global_refuses_decodes() -> None:
    with pytest.raises(ValueError, match="capture_rule=.* applies to keying 'global' only"):
        ReferenceRunner(cp_size=2, capture_num_tokens=[8], keying="local", capture_rule=CaptureRule("headroom", 2))
    with pytest.raises(ValueError, match="keying must be one of global, local; got 'rows'"):
        ReferenceRunner(cp_size=2, capture_num_tokens=[8], keying="rows")
    runner = ReferenceRunner(cp_size=2, capture_num_tokens=[8], strategy="dual_chunk_swap")
    with pytest.raises(ValueError, match="a batch with decodes is planned under keying 'local'"):
        runner.plan([8, 1], is_prefilling=[True, False])
