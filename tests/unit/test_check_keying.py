"""cpgraph check under the two graph keyings (reference/keying.py), with decodes and admitted sizes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph import check_policy
from cpgraph.check import make_options
from cpgraph.check.batch import make_batch
from cpgraph.check.judging import judge, spec_by_reference, spec_for
from cpgraph.check.protocol import as_policy, ask
from cpgraph.reference.judge import RankAnswer, expected, judge_answers, keeps_everything
from cpgraph.reference.keying import KEYING_TABLE, keying_row
from cpgraph.reference.policy import LocalPolicy
from cpgraph.reference.strategies import STRATEGY_TABLE

DCS = [s for s, row in STRATEGY_TABLE.items() if row.decodes is not None]
VLLM_SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))


def _answer(rank: int, bucket: int | None, admitted: object = None) -> RankAnswer:
    return RankAnswer(rank, bucket is not None, None, bucket, None, None, None, bucket is not None, admitted)


def test_the_keying_table_has_the_two_designs_and_refuses_others() -> None:
    assert tuple(KEYING_TABLE) == ("global", "local")
    assert keying_row("global").key(300, (1, 2)) == 300
    assert keying_row("local").key(300, (72, 76)) == 76
    assert keying_row("local").capacities((8, 16), {8: 1}) == {8: 8, 16: 16}
    assert keying_row("global").capacities((8, 16), {8: 1}) == {8: 1}
    with pytest.raises(ValueError, match="keying must be one of global, local; got 'rank'"):
        keying_row("rank")
    with pytest.raises(ValueError, match="keying must be one of global, local; got 'rank'"):
        make_options(keying="rank")


def test_the_worked_vllm_example_under_local_keying() -> None:
    # P = 4, [170, 161, 153]: rows [106, 126, 126, 126], key 126, the least default size >= 126 is 128.
    batch = make_batch([170, 161, 153], VLLM_SIZES, cp_size=4, table="sizes", strategy="dual_chunk_swap", align_size=1)
    spec = expected(batch, "dual_chunk_swap", "local")
    assert spec.loads == (106, 126, 126, 126) and spec.key == 126 and spec.bucket == 128 and spec.active
    # 0.28's split: admitted 496 (the least size >= 484 tokens), replayed under 126 (never captured)
    found = judge_answers(batch, [_answer(r, 126, 496) for r in range(4)], strategy="dual_chunk_swap", keying="local")
    assert [f.invariant for f in found][:2] == ["admission_replay", "captured_bucket"]
    assert "admitted for size 496 but replays under 126" in found[0].why
    # [64] * 7: dispatched 448, replayed 112, which IS captured: still admission_replay (and minimal_bucket is fine)
    seven = make_batch([64] * 7, VLLM_SIZES, cp_size=4, table="sizes", strategy="dual_chunk_swap", align_size=1)
    found = judge_answers(seven, [_answer(r, 112, 448) for r in range(4)], strategy="dual_chunk_swap", keying="local")
    assert [f.invariant for f in found] == ["admission_replay"]
    # 0.29's design: one size for both
    assert judge_answers(batch, [_answer(r, 128, 128) for r in range(4)], strategy="dual_chunk_swap", keying="local") == []


def test_local_padding_limit_is_the_key_and_no_window() -> None:
    batch = make_batch([300], (72, 76, 400), cp_size=4, table="sizes", strategy="dual_chunk_swap", align_size=1)
    low = judge_answers(batch, [_answer(r, 72) for r in range(4)], strategy="dual_chunk_swap", keying="local")
    assert "padding_limit" in {f.invariant for f in low} and "capacity_fit" in {f.invariant for f in low}
    high = judge_answers(batch, [_answer(r, 400) for r in range(4)], strategy="dual_chunk_swap", keying="local")
    assert [f.invariant for f in high] == ["minimal_bucket"]  # far above n / P, but no window under local


def test_an_admitted_size_that_differs_is_never_kept_by_the_fast_rule() -> None:
    batch = make_batch([300], VLLM_SIZES, cp_size=4, table="sizes", strategy="dual_chunk_swap", align_size=1)
    spec = expected(batch, "dual_chunk_swap", "local")
    assert spec.bucket == 80
    assert keeps_everything(batch, [_answer(r, 80, 80) for r in range(4)], spec)
    assert not keeps_everything(batch, [_answer(r, 80, 96) for r in range(4)], spec)


@given(
    st.sampled_from(DCS), st.sampled_from(["global", "local"]), st.integers(1, 8),
    st.lists(st.tuples(st.integers(1, 300), st.booleans()), min_size=1, max_size=4),
    st.lists(st.integers(1, 700), min_size=1, max_size=6),
)
def test_the_fast_expectation_equals_the_one_through_the_public_functions(
    strategy: str, keying: str, cp_size: int, requests: list[tuple[int, bool]], sizes: list[int]
) -> None:
    lengths, flags = [x for x, _ in requests], [f for _, f in requests]
    table = "sizes" if keying == "local" else "captured"
    batch = make_batch(lengths, sizes, cp_size=cp_size, table=table, strategy=strategy, is_prefilling=flags)
    assert spec_for(batch, strategy, keying) == spec_by_reference(batch, strategy, keying)


def test_batches_with_decodes_reach_a_policy_that_takes_them_and_no_other() -> None:
    seen: list[object] = []

    class Takes(LocalPolicy):
        def admit(self, **batch: Any) -> bool:
            seen.append(batch.get("is_prefilling"))
            return super().admit(**batch)

    report = check_policy(Takes(), max_cases=600, workers=1, boundary=False, cp_sizes=(2, 4))
    assert report.ok, report.text()
    assert any(flags is not None and False in flags for flags in seen)  # type: ignore[operator]

    class Plain:
        keying, strategy, align_size = "local", "dual_chunk_swap", 1

        def admit(self, *, cp_rank: int, cp_size: int, align_size: int, num_tokens: int, extend_seq_lens: Any,
                  capture_num_tokens: Any, bucket_local_tokens: Any, max_padding_factor: Any) -> bool:
            return LocalPolicy().admit(cp_rank=cp_rank, cp_size=cp_size, align_size=align_size, num_tokens=num_tokens,
                                       extend_seq_lens=extend_seq_lens, capture_num_tokens=capture_num_tokens,
                                       bucket_local_tokens=bucket_local_tokens, max_padding_factor=max_padding_factor)

        def replay_bucket(self, **batch: Any) -> int:
            return LocalPolicy().replay_bucket(**batch)

    assert not as_policy(Plain()).takes_prefilling
    assert check_policy(Plain(), max_cases=300, workers=1, cp_sizes=(2,)).ok  # never handed is_prefilling


def test_a_policy_declares_its_keying_and_a_bad_one_is_named() -> None:
    assert dict(as_policy(LocalPolicy()).knobs)["keying"] == "local"

    class Bad(LocalPolicy):
        keying = "rows"

    with pytest.raises(ValueError, match="policy Bad.keying: keying must be one of global, local; got 'rows'"):
        as_policy(Bad())

    class NotCallable(LocalPolicy):
        admitted_bucket = 3  # type: ignore[assignment]

    with pytest.raises(TypeError, match="admitted_bucket must be callable when present, got 3"):
        as_policy(NotCallable())


def test_ask_reads_the_admitted_size_on_admitting_ranks_only() -> None:
    policy = as_policy(LocalPolicy())
    fits = make_batch([300], (80,), cp_size=4, table="sizes", strategy="dual_chunk_swap", align_size=1)
    assert [a.admitted for a in ask(policy, fits)] == [80] * 4
    eager = make_batch([300], (8,), cp_size=4, table="sizes", strategy="dual_chunk_swap", align_size=1)
    answers = ask(policy, eager)
    assert [a.admitted for a in answers] == [None] * 4 and not any(a.admit for a in answers)
    assert judge(eager, answers, strategy="dual_chunk_swap", keying="local") == []


def test_checking_a_local_policy_as_global_reports_the_design_difference() -> None:
    report = check_policy(LocalPolicy(), keying="global", max_cases=2000, workers=1, boundary=False)
    assert not report.ok
    assert report.violation("padding_limit") is not None or report.violation("capacity_fit") is not None


def test_a_decode_batch_for_a_prefill_only_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match=r"is_prefilling=\[True, False\] marks decodes, but strategy 'zigzag' lays out prefills only"):
        make_batch([8, 1], (8,), cp_size=2, strategy="zigzag", is_prefilling=[True, False])
    batch = make_batch([8, 1], (8,), cp_size=2, strategy="dual_chunk_swap", is_prefilling=[True, False])
    with pytest.raises(ValueError, match="lays out prefills only"):
        expected(batch, "zigzag")  # judged under another strategy than the batch was made for


def test_docs_state_every_invariant_under_both_keyings_as_the_table_does() -> None:
    import os

    from cpgraph.reference.invariants import INVARIANT_TABLE

    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "docs", "semantics.md"), encoding="utf-8") as f:
        docs = f.read()
    for row in INVARIANT_TABLE.values():
        assert f"| `{row.id}` | {row.kind} | {row.sentence} | {row.local_sentence} |" in docs


@given(st.data())
def test_the_local_reference_policy_keeps_every_invariant_on_drawn_local_batches(data: st.DataObject) -> None:
    from cpgraph.strategies import local_batches
    from cpgraph.testing import assert_batch_sound

    batch = data.draw(local_batches())
    assert_batch_sound(LocalPolicy(), batch, strategy="dual_chunk_swap", keying="local")
