"""Protocol v2 and the knobs a code base fixes: replay asked only after admission, exact rational padding
factors, fixed alignments, padded n, context-length capture, policy-declared knobs, the JSON result, and
the judge registered once against the invariant table."""

import math
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import pytest

from cpgraph import check_policy
from cpgraph.check import as_policy, ask, judge, make_batch, make_options
from cpgraph.check.minimize import minimize
from cpgraph.check.run import breaks
from cpgraph.reference import capture_local_tokens
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.reference.judge import JUDGES, RankAnswer, expected, judge_answers

from helpers import PickedPolicy

FAST = dict(boundary=False, workers=1, max_cases=2000)  # a count: the same batches and findings on any machine


def _ids(policy: object, batch: Any, **kw: Any) -> set[str]:
    return {f.invariant for f in judge(batch, ask(as_policy(policy), batch, **kw), replay_always=kw.get("ask_replay") == "always")}


def test_the_judge_has_one_rule_per_row_of_the_invariant_table_and_the_new_sentence() -> None:
    assert tuple(JUDGES) == tuple(INVARIANT_TABLE)
    assert INVARIANT_TABLE["admission_replay"].sentence == (
        "admitted on a rank => the batch is CP-active, and replay on that rank succeeds, returns the admitted bucket and its rows fit"
    )


def test_the_reference_judge_needs_no_checker_record() -> None:
    batch = make_batch((1534, 161, 353), (2048, 2304, 2560), cp_size=4)
    answers = [RankAnswer(r, True, None, 2048, None, None, None) for r in range(4)]
    found = judge_answers(batch, answers)
    assert [f.invariant for f in found] == ["capacity_fit"] and "520" in found[0].why


def test_a_refused_batch_is_not_asked_to_replay_unless_replay_is_promised_total() -> None:
    # the example: P=2, lengths [1], capture [206]; admission said no, replay returned 206
    batch = make_batch((1,), (206,), cp_size=2)
    policy = SimpleNamespace(admit=lambda **_: False, replay_bucket=lambda **_: 206)
    answers = ask(as_policy(policy), batch)
    assert all(not a.replay_asked and a.bucket is None for a in answers)
    assert _ids(policy, batch) == set()
    assert _ids(policy, batch, ask_replay="always") >= {"admission_replay", "padding_limit"}


def test_a_rational_factor_bounds_the_window_exactly() -> None:
    batch = make_batch((100,), (150, 151), cp_size=2, max_padding_factor="3/2", capacities={150: 60, 151: 60})
    assert batch.max_padding_factor == Fraction(3, 2)
    assert expected(batch).fitting == (150,)
    assert _ids(SimpleNamespace(admit=lambda **_: True, replay_bucket=lambda **_: 151), batch) >= {"padding_limit"}
    assert make_batch((100,), (150,), cp_size=2, max_padding_factor=1.5).max_padding_factor == Fraction(3, 2)
    assert make_batch((100,), (150,), cp_size=2, max_padding_factor=2.0).max_padding_factor == 2


def test_a_padded_n_sets_the_window_and_the_live_lengths_set_the_rows() -> None:
    batch = make_batch((1534, 161, 353), (2048, 2304, 2560, 4608), cp_size=4, num_tokens=2304)
    spec = expected(batch)
    assert spec.required == 520 and spec.fitting == (2304, 2560, 4608)
    live_floor = SimpleNamespace(admit=lambda **_: True, replay_bucket=lambda **_: 2048)
    assert "padding_limit" in _ids(live_floor, batch)


def test_context_length_capture_records_larger_capacities() -> None:
    assert capture_local_tokens(4128, cp_size=4, align_size=8, context_len=2047) == 1040
    batch = make_batch((4000,), (4128,), cp_size=4, context_len=2047)
    assert batch.capacities == {4128: 1040} and batch.context_len == 2047


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"padding_factors": "0.5"}, ValueError, "padding_factors[] must be an int >= 1 or an exact rational >= 1"),
        ({"padding_factors": "x"}, ValueError, "got 'x'"),
        ({"padding_factors": ""}, ValueError, "padding_factors must name at least one value"),
        ({"max_padding_factor": True}, TypeError, "max_padding_factor must be an int >= 1 or an exact rational"),
        ({"align_sizes": "0P"}, ValueError, "align_sizes[] must be an int >= 1 or a multiple of cp_size"),
        ({"align_sizes": 8}, TypeError, "align_sizes must be a comma-separated string or a sequence, got 8"),
        ({"num_tokens": "some"}, ValueError, "num_tokens must be one of live, padded, both; got 'some'"),
        ({"ask_replay": "never"}, ValueError, "ask_replay must be one of admitted, always; got 'never'"),
        ({"context_len": 0}, ValueError, "context_len must be an int >= 1, got 0"),
    ],
)
def test_bad_knobs_name_the_argument_the_value_and_what_is_allowed(kwargs: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error) as info:
        make_options(**kwargs)
    assert message in str(info.value)


def test_knob_lists_parse_rationals_and_multiples_of_p() -> None:
    opts = make_options(padding_factors="2,1.5,5/4", align_sizes="2P,16,P")
    assert opts.padding_factors == (2, Fraction(3, 2), Fraction(5, 4))
    assert opts.aligns(4) == (8, 16, 4)


class _FixedF(PickedPolicy):
    """Hard-codes F = 2 (as upstream's module constant does) and ignores the keyword."""

    def _pick(self, **b: Any) -> int | None:
        from cpgraph.proofs.mutants._kit import align_up, cp_active, scan, zigzag_loads

        if not cp_active(b["extend_seq_lens"], b["num_tokens"], b["cp_size"]):
            return None
        need = align_up(max(zigzag_loads(b["extend_seq_lens"], b["cp_size"])), b["align_size"])
        return scan(need, b["num_tokens"], b["capture_num_tokens"], b["bucket_local_tokens"], 2)


class _DeclaresF(_FixedF):
    max_padding_factor = 2


def test_a_hard_coded_factor_is_honoured_when_fixed_by_flag_or_declared() -> None:
    assert not check_policy(_FixedF(), **FAST).ok  # the search varies F
    assert check_policy(_FixedF(), padding_factors="2", **FAST).ok
    report = check_policy(_DeclaresF(), **FAST)
    assert report.ok and dict(report.knobs)["padding_factors"] == ["2"]


def test_a_rational_factor_is_checked_end_to_end() -> None:
    report = check_policy("cpgraph.reference.policy", padding_factors="1.5", **FAST)
    assert report.ok, report.text()
    assert not check_policy(_DeclaresF(), padding_factors="1.5", **FAST).ok


def test_padded_n_catches_selectors_that_read_their_window_from_the_lengths() -> None:
    for name, invariant in (("lengths_lower_bound", "padding_limit"), ("lengths_cap", "no_needless_fallback")):
        assert check_policy(f"cpgraph.proofs.mutants.{name}", num_tokens="live", **FAST).ok
        report = check_policy(f"cpgraph.proofs.mutants.{name}", **FAST)
        v = report.violation(invariant)
        assert v is not None and v.batch.pad > 0, report.text()
    assert check_policy("cpgraph.proofs.mutants.correct:scan", num_tokens="padded", **FAST).ok


def test_the_json_result_carries_seed_invariants_phases_stop_reason_and_every_ranks_answers() -> None:
    report = check_policy("cpgraph.proofs.mutants.ignore_capacity", seed=7, **FAST)
    data = report.to_json()
    assert data["seed"] == 7 and data["checked"] == list(INVARIANT_TABLE) and data["stopped"]
    assert sum(data["phases"].values()) == data["cases"] and data["knobs"]["ask_replay"] == "admitted"
    v = next(v for v in data["violations"] if v["invariant"] == "capacity_fit")
    assert len(v["answers"]) == v["counterexample"]["cp_size"]
    assert {"cp_rank", "admit", "replay_asked", "replay_bucket", "local_rows"} <= set(v["answers"][0])


def test_minimisation_prefers_a_captured_table_and_is_deterministic() -> None:
    policy = as_policy(SimpleNamespace(admit=lambda **_: True, replay_bucket=lambda *, capture_num_tokens, num_tokens, **_: min(b for b in capture_num_tokens if b >= num_tokens)))
    start = make_batch((1534, 161, 353), (2048, 2304), cp_size=4, capacities={2048: 0, 2304: 576})

    def fails(b: Any) -> bool:
        return breaks(policy, b, "capacity_fit")

    first, _ = minimize(start, fails, cp_sizes=(2, 4), budget_s=math.inf)  # to its fixed point, however slow
    again, _ = minimize(start, fails, cp_sizes=(2, 4), budget_s=math.inf)
    assert first == again and first.table == "captured"


def test_every_phase_includes_padded_n_unless_live_only() -> None:
    from itertools import islice

    from cpgraph.check.boundary import boundary
    from cpgraph.check.generate import exhaustive, random_cases

    both, live = make_options(cp_sizes=(2,), max_tokens=97, max_requests=2), make_options(cp_sizes=(2,), max_tokens=97, max_requests=2, num_tokens="live")
    for phase in (boundary, exhaustive, random_cases):
        drawn = [b for _, b in islice(phase(both), 400)]
        assert drawn and any(b.pad > 0 for b in drawn) and any(b.pad == 0 for b in drawn), phase.__name__
        assert all(b.pad == 0 for _, b in islice(phase(live), 400)), phase.__name__
    padded = make_options(cp_sizes=(2,), max_tokens=97, num_tokens="padded")
    assert all(b.pad > 0 for _, b in islice(exhaustive(padded), 400))
