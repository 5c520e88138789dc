"""The judge on hand-built batches (docs/semantics.md's worked example first), the minimiser, the options'
errors, the adapter's captured exceptions and the exported strategies."""

import math
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given

from cpgraph.check import Batch, as_policy, ask, judge, load_policy, make_batch, make_options
from cpgraph.check.minimize import minimize
from cpgraph.check.run import breaks
from cpgraph.strategies import batches
from cpgraph.testing import assert_batch_sound

from helpers import PickedPolicy

SEED = make_batch((1534, 161, 353), (2048, 2304, 2560), cp_size=4)  # capacities 512, 576, 640


def _ids(policy: object, batch: Batch) -> set[str]:
    return {f.invariant for f in judge(batch, ask(as_policy(policy), batch))}


def _const(bucket: int | None, rows: tuple[int, ...] | None = None) -> Any:
    def select(**_: Any) -> int:
        if bucket is None:
            raise LookupError("eager")
        return bucket

    ns = SimpleNamespace(admit=lambda **_: bucket is not None, replay_bucket=select)
    if rows is not None:
        ns.local_rows = lambda **_: rows
    return ns


def test_seed_example_spec_is_bucket_2304_and_the_reference_keeps_every_invariant() -> None:
    assert SEED.capacities == {2048: 512, 2304: 576, 2560: 640}
    assert _ids(load_policy("cpgraph.reference.policy"), SEED) == set()


def test_replaying_2048_on_the_seed_example_breaks_capacity_fit_only() -> None:
    assert _ids(_const(2048), SEED) == {"capacity_fit"}


def test_the_padded_layout_of_the_seed_example_needs_584_rows_and_breaks_capacity_fit() -> None:
    found = judge(SEED, ask(as_policy(_const(2304, (584,) * 4)), SEED))
    assert [f.invariant for f in found] == ["capacity_fit"]
    assert "584" in found[0].why and "576" in found[0].why


def test_each_wrong_answer_maps_to_its_invariant() -> None:
    assert _ids(_const(2560), SEED) == {"minimal_bucket"}
    assert _ids(_const(None), SEED) == {"no_needless_fallback"}
    # 3000 is not captured, and the smaller 2304 fits: minimal_bucket reads as spec.invariants.minimal_bucket
    assert _ids(_const(3000), SEED) == {"captured_bucket", "minimal_bucket"}
    absent = make_batch((1534, 161, 353), (2048, 2304), cp_size=4, capacities={2048: 512})
    assert _ids(_const(2304), absent) == {"captured_bucket"}
    over = make_batch((1534, 161, 353), (4097,), cp_size=4, capacities={4097: 2000})
    assert _ids(_const(4097), over) == {"padding_limit"}


def test_admit_and_replay_disagreeing_breaks_admission_replay() -> None:
    policy = SimpleNamespace(admit=lambda **_: False, replay_bucket=lambda **_: 2304)
    # protocol v2: replay is not asked of a rank that did not admit; --ask-replay always asks it
    assert _ids(policy, SEED) == {"no_needless_fallback"}
    strict = ask(as_policy(policy), SEED, ask_replay="always")
    assert "admission_replay" in {f.invariant for f in judge(SEED, strict, replay_always=True)}
    admitted_refused = SimpleNamespace(admit=lambda **_: True, replay_bucket=lambda **_: None)
    assert "admission_replay" in _ids(admitted_refused, SEED)
    raising = SimpleNamespace(admit=lambda **_: 1 / 0, replay_bucket=lambda **_: 2304)
    answers = ask(as_policy(raising), SEED)
    assert answers[0].admit is None and "ZeroDivisionError" in (answers[0].admit_error or "")
    assert "admission_replay" in {f.invariant for f in judge(SEED, answers)}


def test_a_rank_dependent_answer_breaks_rank_consensus() -> None:
    policy = SimpleNamespace(admit=lambda **_: True, replay_bucket=lambda *, cp_rank, **_: 2304 if cp_rank else 2560)
    found = judge(SEED, ask(as_policy(policy), SEED))
    assert found[0].invariant == "rank_consensus"


def test_efficiency_invariants_do_not_apply_to_batches_that_are_not_cp_active() -> None:
    short = make_batch((3, 100), (103, 206), cp_size=2)  # a length below 2P
    assert _ids(_const(None), short) == set()


def test_admitting_a_batch_that_is_not_cp_active_breaks_admission_replay_and_nothing_else() -> None:
    short = make_batch((3, 100), (103, 206), cp_size=2)  # a length below 2P: zigzag runs it eagerly
    assert _ids(_const(206), short) == {"admission_replay"}
    (finding,) = judge(short, ask(as_policy(_const(206)), short))
    assert "not CP-active under zigzag (P > 1, n >= 2P and every length >= 2P)" in finding.why
    few = make_batch((3,), (4, 6), cp_size=2)  # n = 3 < 2P
    assert _ids(_const(4), few) == {"admission_replay"}


def test_cp_activity_is_the_strategy_s_gate() -> None:
    # interleave spreads tokens, not blocks: [3] on 2 ranks is CP-active there (sglang's interleave gate:
    # the lengths' sum >= P), so admitting it is fine and declining it with a bucket that fits is a fallback.
    short = make_batch((3,), (4, 6), cp_size=2, strategy="interleave")
    assert {f.invariant for f in judge(short, ask(as_policy(_const(4)), short), strategy="interleave")} == set()
    assert {f.invariant for f in judge(short, ask(as_policy(_const(None)), short), strategy="interleave")} == {
        "no_needless_fallback"
    }
    assert {f.invariant for f in judge(short, ask(as_policy(_const(4)), short), strategy="zigzag")} == {"admission_replay"}
    one = make_batch((1,), (1, 2), cp_size=2, strategy="interleave")  # a sum below P: eager under interleave too
    assert {f.invariant for f in judge(one, ask(as_policy(_const(2)), one), strategy="interleave")} == {
        "admission_replay"
    }


def test_minimiser_shrinks_the_seed_overflow_to_a_small_batch() -> None:
    policy = load_policy("cpgraph.proofs.mutants.ignore_capacity")
    assert breaks(policy, SEED, "capacity_fit")
    small, tries = minimize(SEED, lambda b: breaks(policy, b, "capacity_fit"), cp_sizes=(2, 4), budget_s=math.inf)
    assert tries > 0 and breaks(policy, small, "capacity_fit")
    assert small.num_tokens < 100 and small.cp_size <= 4 and len(small.extend_seq_lens) <= 3


def test_minimiser_jumps_every_request_to_a_few_rounds_at_once() -> None:
    # A local minimum of one-request shrinks: rank 3's one row past the alignment edge needs all three
    # residues (4, 5, 5) together, so each single shrink loses it; the joint jump to few rounds keeps them.
    policy = load_policy("cpgraph.proofs.mutants.one_request")
    stuck = make_batch((348, 21, 13), (382,), cp_size=4, align_size=8)
    assert breaks(policy, stuck, "capacity_fit")
    small, _ = minimize(stuck, lambda b: breaks(policy, b, "capacity_fit"), cp_sizes=(4,), budget_s=math.inf)
    assert breaks(policy, small, "capacity_fit")
    assert small.num_tokens <= 64 and len(small.extend_seq_lens) == 3
    assert sorted(x % 8 for x in small.extend_seq_lens) == [4, 5, 5]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"cp_sizes": "2,4"}, TypeError, "cp_sizes must be a sequence of ints"),
        ({"cp_sizes": ()}, ValueError, "cp_sizes must name at least one"),
        ({"cp_sizes": (2, 0)}, ValueError, "cp_sizes[] must be an int >= 1, got 0"),
        ({"strategy": "spiral"}, ValueError, "strategy must be one of"),
        ({"capacities": ()}, ValueError, "capacities must name at least one"),
        ({"capacities": ("headroom:x",)}, ValueError, "got 'headroom:x'"),
        ({"budget_s": -1}, ValueError, "budget_s must be a number of seconds > 0, got -1"),
        ({"budget_s": "3"}, TypeError, "budget_s must be a number of seconds"),
        ({"invariants": ("capacity",)}, ValueError, "invariants must be among rank_consensus"),
        ({"max_tokens": True}, TypeError, "max_tokens must be an int >= 2, got True"),
        ({"safety_only": True, "invariants": ("minimal_bucket",)}, ValueError, "safety_only leaves nothing"),
    ],
)
def test_bad_options_name_the_argument_the_value_and_what_is_allowed(kwargs: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error) as info:
        make_options(**kwargs)
    assert message in str(info.value)


def test_policy_without_the_protocol_is_a_type_error_naming_what_is_missing() -> None:
    with pytest.raises(TypeError, match="missing replay_bucket"):
        as_policy(SimpleNamespace(admit=lambda **_: True))
    with pytest.raises(ValueError, match="MODULE:ATTR"):
        load_policy("")


@given(batches(cp_size_choices=(2, 4), max_requests=3, max_tokens=512))
def test_reference_keeps_every_invariant_on_drawn_batches(batch: Batch) -> None:
    assert batch.num_tokens == sum(batch.extend_seq_lens)
    assert list(batch.capture_num_tokens) == sorted(set(batch.capture_num_tokens))
    assert_batch_sound("cpgraph.reference.policy", batch)


@given(batches(cp_size_choices=(2, 4), max_requests=3, max_tokens=512, tables=("captured",)))
def test_helper_reports_the_prefix_bug_on_drawn_captured_batches_when_it_overflows(batch: Batch) -> None:
    policy = load_policy("cpgraph.proofs.mutants.ignore_capacity")
    if breaks(policy, batch, "capacity_fit"):
        with pytest.raises(AssertionError, match="capacity_fit"):
            assert_batch_sound(policy, batch)
    else:
        assert_batch_sound(policy, batch, safety_only=True)


@given(batches(cp_size_choices=(1, 2, 3, 4, 8), max_requests=4, max_tokens=2048))
def test_the_judges_fast_spec_equals_the_reference_computed_through_its_public_functions(batch: Batch) -> None:
    from cpgraph.check.judging import spec_by_reference, spec_for

    assert spec_for(batch) == spec_by_reference(batch)


class _Strategic(PickedPolicy):
    """A correct policy for a non-zigzag strategy (the protocol does not pass the strategy)."""

    def __init__(self, strategy: str) -> None:
        self.strategy = strategy

    def _pick(self, **b: Any) -> int | None:
        from cpgraph.reference import is_cp_active, required_local_tokens, select_replay_bucket

        if not is_cp_active(b["extend_seq_lens"], num_tokens=b["num_tokens"], cp_size=b["cp_size"], strategy=self.strategy):
            return None
        need = required_local_tokens(b["extend_seq_lens"], cp_size=b["cp_size"], align_size=b["align_size"], strategy=self.strategy)
        return select_replay_bucket(
            num_tokens=b["num_tokens"], required_local_tokens=need, capture_num_tokens=b["capture_num_tokens"],
            bucket_local_tokens=b["bucket_local_tokens"], max_padding_factor=b["max_padding_factor"],
        )


@pytest.mark.parametrize("strategy", ["interleave", "contiguous", "dual_chunk_swap"])
def test_other_strategies_pass_their_own_policy_and_catch_the_zigzag_one(strategy: str) -> None:
    from cpgraph import check_policy

    options = dict(strategy=strategy, capacities=("captured", "arbitrary"), cp_sizes=(2, 4), max_cases=1000, boundary=False, workers=1)
    assert check_policy(_Strategic(strategy), **options).ok
    # zigzag rows and alignment are wrong here (interleave: minimal_bucket at batch 670): the first finding
    # decides, so no grace for more and no minimising
    assert not check_policy("cpgraph.reference.policy", **options, grace_s=0, minimize_s=0).ok


def test_integer_like_buckets_are_read_as_ints_and_bools_are_not() -> None:
    class Index:
        def __init__(self, value: int) -> None:
            self.value = value

        def __index__(self) -> int:
            return self.value

    assert _ids(SimpleNamespace(admit=lambda **_: True, replay_bucket=lambda **_: Index(2304)), SEED) == set()
    assert "captured_bucket" in _ids(SimpleNamespace(admit=lambda **_: True, replay_bucket=lambda **_: True), SEED)


def test_a_policy_writing_to_its_capacity_mapping_cannot_change_what_other_ranks_see() -> None:
    def replay(*, bucket_local_tokens: dict[int, int], **_: Any) -> int:
        bucket_local_tokens.clear()
        return 2304

    assert _ids(SimpleNamespace(admit=lambda **_: True, replay_bucket=replay), SEED) == set()


def test_one_and_two_search_processes_find_the_same_invariant() -> None:
    from cpgraph import check_policy

    for workers in (1, 2):
        report = check_policy("cpgraph.proofs.mutants.fn_exclusive", max_cases=1000, boundary=False, workers=workers)
        assert "no_needless_fallback" in report.invariants


def test_a_violation_with_every_rank_answering_differently_still_fits_15_lines() -> None:
    from cpgraph import check_policy

    wild = SimpleNamespace(admit=lambda **_: True, replay_bucket=lambda *, cp_rank, capture_num_tokens, **_: capture_num_tokens[0] + cp_rank)
    report = check_policy(wild, cp_sizes=(16,), max_cases=200, boundary=False, workers=1, invariants=("rank_consensus",))
    v = report.violation("rank_consensus")
    assert v is not None
    text = v.text()
    assert len(text.splitlines()) <= 15 and "more groups of ranks" in text and text.splitlines()[-1].startswith("  (minimised")


@pytest.mark.parametrize(
    "args, kwargs, error, message",
    [
        (((), (8,)), {"cp_size": 2}, ValueError, "extend_seq_lens must be a non-empty sequence"),
        (((8, -1), (8,)), {"cp_size": 2}, ValueError, "extend_seq_lens[1] must be an int >= 0"),
        (((8,), (0, 8)), {"cp_size": 2}, ValueError, "capture_num_tokens[0] must be a positive int"),
        (((8,), (8,)), {"cp_size": 0}, ValueError, "cp_size must be an int >= 1, got 0"),
        (((8,), (8,)), {"cp_size": 2, "capacities": {8: "x"}}, TypeError, "capacities[8] must be an int >= 0"),
        (((8,), (8,)), {"cp_size": 2, "table": "headroom:0"}, ValueError, "headroom:R (R an int >= 1)"),
    ],
)
def test_make_batch_rejects_bad_input_naming_it(args: tuple[Any, ...], kwargs: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error) as info:
        make_batch(*args, **kwargs)
    assert message in str(info.value)


def test_a_policy_crashing_on_an_absent_capacity_breaks_admission_and_falls_back_needlessly() -> None:
    def pick(*, bucket_local_tokens: dict[int, int], **_: Any) -> int:
        return 2304 if bucket_local_tokens[2048] >= 0 else 2304  # KeyError when 2048 is absent

    absent = make_batch((1534, 161, 353), (2048, 2304), cp_size=4, capacities={2304: 576})
    assert _ids(SimpleNamespace(admit=pick, replay_bucket=pick), absent) == {"admission_replay", "no_needless_fallback"}


@given(batches(cp_size_choices=(1, 2, 4), max_requests=3, max_tokens=512))
def test_the_judges_one_pass_shortcut_finds_what_the_rules_find(batch: Batch) -> None:
    from cpgraph.reference.invariants import INVARIANTS
    from cpgraph.reference.judge import JUDGES, JudgedBatch, expected, judge_answers

    for target in ("cpgraph.reference.policy", "cpgraph.proofs.mutants.ignore_capacity", "cpgraph.proofs.mutants.correct:with_rows",
                   "cpgraph.proofs.mutants.padded_layout", "cpgraph.proofs.mutants.largest_fitting"):
        answers = ask(load_policy(target), batch)
        case = JudgedBatch(batch, answers, expected(batch))
        by_rules = [inv for inv in INVARIANTS if JUDGES[inv](case) is not None]
        assert [f.invariant for f in judge_answers(batch, answers)] == by_rules, target
