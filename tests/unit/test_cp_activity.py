"""CP-activity is each strategy's gate: one column of the strategy table, read alike by the reference, its runner,
impl's decision and policy, and the spec (zigzag's rule, and sglang's interleave gate for interleave)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph import impl
from cpgraph.impl.decision import Selector, decide_lengths
from cpgraph.impl.formulas import FORMULAS
from cpgraph.reference import STRATEGIES, is_cp_active
from cpgraph.reference.runner import FallbackReason, ReferenceRunner
from cpgraph.reference.strategies import STRATEGY_TABLE
from cpgraph.spec.strategies import STRATEGIES as SPEC_STRATEGIES


def test_the_gate_column_is_the_same_in_every_table() -> None:
    gates = {sid: row.cp_active for sid, row in STRATEGY_TABLE.items()}
    assert gates == {sid: row.cp_active for sid, row in SPEC_STRATEGIES.items()}
    assert gates == {sid: row.cp_active for sid, row in FORMULAS.items()}
    assert gates["zigzag"] == "blocks" and gates["interleave"] == "tokens"


@pytest.mark.parametrize(
    "lengths, n, p, zigzag, interleave",
    [
        ((4,), 4, 2, True, True),
        ((3,), 3, 2, False, True),  # interleave spreads 3 tokens over 2 ranks; zigzag has an empty block
        ((1,), 1, 2, False, False),  # a sum below P: eager under both
        ((3, 100), 103, 2, False, True),  # one short request
        ((2, 2), 4, 4, False, True),
        ((1, 1), 2, 4, False, False),
        ((50,), 50, 1, False, False),  # P = 1: no CP
    ],
)
def test_hand_computed_gates(lengths: tuple[int, ...], n: int, p: int, zigzag: bool, interleave: bool) -> None:
    assert is_cp_active(lengths, num_tokens=n, cp_size=p) is zigzag
    assert is_cp_active(lengths, num_tokens=n, cp_size=p, strategy="interleave") is interleave
    assert impl.is_cp_active(lengths, num_tokens=n, cp_size=p, strategy="interleave") is interleave
    assert is_cp_active(lengths, num_tokens=n, cp_size=p, strategy="contiguous") is zigzag


@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=4),
    st.integers(0, 6),
    st.integers(1, 6),
    st.sampled_from(STRATEGIES),
)
def test_reference_runner_and_impl_gate_alike(lengths: list[int], pad: int, p: int, strategy: str) -> None:
    n = sum(lengths) + pad
    active = is_cp_active(lengths, num_tokens=n, cp_size=p, strategy=strategy)
    assert impl.is_cp_active(lengths, num_tokens=n, cp_size=p, strategy=strategy) is active
    buckets = (8 * p, 64 * p, 512 * p)
    runner = ReferenceRunner(capture_num_tokens=buckets, cp_size=p, strategy=strategy)
    reference = runner.plan(lengths, num_tokens=n)
    selector = Selector.build(runner.capture_num_tokens, runner.bucket_local_tokens)
    _, _, (_, bucket, _, reason) = decide_lengths(
        lengths, n, cp_size=p, align_size=runner.align_size, selector=selector, max_padding_factor=2, strategy=strategy
    )
    gate = {FallbackReason.CP_DISABLED, FallbackReason.TOO_FEW_TOKENS, FallbackReason.SHORT_REQUEST}
    assert (reference.fallback in gate) is (not active)
    assert (reason in gate) is (not active)
    assert (reference.bucket, reference.fallback) == (bucket, reason)


def test_an_unknown_strategy_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="strategy must be one of .*got 'ring'"):
        is_cp_active((8,), num_tokens=8, cp_size=2, strategy="ring")
    with pytest.raises(ValueError, match="strategy must be one of .*got 'ring'"):
        impl.is_cp_active((8,), num_tokens=8, cp_size=2, strategy="ring")
