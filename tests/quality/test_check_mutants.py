"""cpgraph check has teeth: every mutant in proofs/mutants is caught with its invariant id, every
correct-but-differently-written policy passes, and an emitted regression test fails on the bug and
passes once it is fixed."""

import importlib
import os

import pytest

from cpgraph import check_policy
from cpgraph.check.emit import regression_test
from cpgraph.proofs.mutants import CORRECT, MUTANTS

# A count, not a time: every mutant is caught within its first 2500 batches with one search process or two
# (one_request and wrong_partner need the most), and the minimiser runs to its fixed point, so the verdicts
# and the minimised counterexamples are the same on a fast machine and a busy one.
SMALL = dict(boundary=False, max_cases=4000)


def test_the_corpus_has_at_least_twelve_mutants_each_annotated_with_its_id() -> None:
    assert len(MUTANTS) >= 12
    for name, invariant in MUTANTS.items():
        assert importlib.import_module(f"cpgraph.proofs.mutants.{name}").CAUGHT_AS == invariant


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught_with_its_invariant_id(name: str) -> None:
    report = check_policy(f"cpgraph.proofs.mutants.{name}", **SMALL)
    assert not report.ok
    assert MUTANTS[name] in report.invariants, report.text()
    violation = report.violation(MUTANTS[name])
    assert violation is not None
    assert len(violation.text().splitlines()) <= 15
    # minimised: a handful of requests and a few hundred tokens at most
    assert len(violation.batch.extend_seq_lens) <= 3
    assert violation.batch.num_tokens <= 300, violation.text()


@pytest.mark.parametrize("name", CORRECT)
def test_correct_policy_passes(name: str) -> None:
    report = check_policy(f"cpgraph.proofs.mutants.correct:{name}", max_cases=1000, boundary=False)
    assert report.ok, report.text()
    assert report.cases == 1000 and report.stopped == "cases"


def test_prefix_bug_is_found_on_upstream_captured_tables_with_a_small_batch() -> None:
    report = check_policy("cpgraph.proofs.mutants.ignore_capacity", capacities="captured", **SMALL)
    v = report.violation("capacity_fit")
    assert v is not None and v.batch.table == "captured"
    assert len(v.batch.extend_seq_lens) <= 3 and v.batch.num_tokens <= 64 and v.batch.cp_size <= 4
    assert v.spec.required > v.batch.capacities[v.batch.capture_num_tokens[0]]


def _run_emitted(source: str) -> list[str]:
    """Run every test function of an emitted module; return the failures' messages."""
    namespace: dict[str, object] = {"__file__": os.path.abspath("test_regression.py")}  # where it would be written
    exec(compile(source, "<emitted>", "exec"), namespace)
    failures = []
    for name, fn in namespace.items():
        if name.startswith("test_") and callable(fn):
            try:
                fn()
            except AssertionError as exc:
                failures.append(str(exc))
    return failures


@pytest.mark.parametrize("name", ["ignore_capacity", "padded_layout", "local_load", "absent_fits", "split_selectors"])
def test_emitted_test_fails_on_the_buggy_policy_and_passes_on_a_fixed_one(name: str) -> None:
    report = check_policy(f"cpgraph.proofs.mutants.{name}", **SMALL)
    buggy = regression_test(f"cpgraph.proofs.mutants.{name}", report.violations)
    failures = _run_emitted(buggy)
    assert len(failures) == len(report.violations) >= 1
    assert any(MUTANTS[name] in f for f in failures)
    fixed = regression_test("cpgraph.proofs.mutants.correct:with_rows", report.violations)
    assert _run_emitted(fixed) == []
