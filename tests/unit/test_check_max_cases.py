"""max_cases / --max-cases: a check bounded by a count of batches instead of seconds, so what a test
asserts about the work done holds on a fast machine and a busy one alike."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from cpgraph import check_policy
from cpgraph.check import make_options
from cpgraph.cli import main
from cpgraph.testing import assert_policy_sound

NO_BOUNDARY = dict(cp_sizes=(2, 4), boundary=False)


def test_a_count_leaves_every_time_unbounded_unless_one_is_given() -> None:
    counted = make_options(max_cases=100)
    assert counted.max_cases == 100
    assert counted.budget_s == counted.grace_s == counted.minimize_s == math.inf
    capped = make_options(max_cases=100, budget_s=5, grace_s=0.5)
    assert (capped.budget_s, capped.grace_s, capped.minimize_s) == (5.0, 0.5, math.inf)
    timed = make_options()
    assert (timed.max_cases, timed.budget_s, timed.grace_s, timed.minimize_s) == (None, 30.0, 1.0, 1.0)


@pytest.mark.parametrize("cases, shards, shares", [(7, 1, [7]), (7, 2, [4, 3]), (1, 2, [1, 0]), (None, 2, [None, None])])
def test_the_count_is_split_between_the_search_processes(cases: int | None, shards: int, shares: list[int | None]) -> None:
    opts = make_options(max_cases=cases)
    assert [opts.share(i, shards) for i in range(shards)] == shares


@pytest.mark.parametrize(
    "value, error, message",
    [
        (0, ValueError, "max_cases must be an int >= 1, got 0"),
        (-5, ValueError, "max_cases must be an int >= 1, got -5"),
        (2.5, TypeError, "max_cases must be an int >= 1, got 2.5 (float)"),
        (True, TypeError, "max_cases must be an int >= 1, got True (bool)"),
    ],
)
def test_a_bad_count_names_the_argument_the_value_and_what_is_allowed(value: Any, error: type, message: str) -> None:
    with pytest.raises(error) as info:
        make_options(max_cases=value)
    assert str(info.value) == message


@pytest.mark.parametrize("workers", [1, 2])
def test_a_sound_policy_is_checked_on_exactly_the_counted_batches(workers: int) -> None:
    report = check_policy("cpgraph.reference.policy", max_cases=300, workers=workers, **NO_BOUNDARY)
    assert report.ok, report.text()
    assert report.cases == 300 and report.stopped == "cases" and sum(dict(report.phases).values()) == 300


def test_the_same_count_finds_the_same_violations_whatever_the_speed() -> None:
    # one search process and no boundary solver: batch for batch the same run, so the same findings
    runs = [check_policy("cpgraph.proofs.mutants.stale_cache", max_cases=1500, workers=1, **NO_BOUNDARY) for _ in range(2)]
    first, again = ([(v.invariant, v.batch, v.found_after) for v in r.violations] for r in runs)
    assert first == again and len(first) >= 3  # every violation among the 1500 batches, not only the first few
    assert all(r.stopped == "cases" and r.cases == 1500 for r in runs)


def test_the_pytest_helper_takes_a_count() -> None:
    report = assert_policy_sound("cpgraph.reference.policy", max_cases=200, **NO_BOUNDARY)
    assert report.cases == 200 and report.stopped == "cases"


def test_the_cli_flag_checks_that_many_batches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "cpgraph.reference.policy", "--max-cases", "250", "--cp-sizes", "2,4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["cases"] == 250 and data["stopped"] == "cases"
    assert main(["check", "cpgraph.reference.policy", "--max-cases", "0"]) == 2
    assert "argument --max-cases: must be an int in 1..1000000000000, got 0" in capsys.readouterr().err
