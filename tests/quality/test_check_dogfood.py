"""Dogfooding: the reference and impl/'s policy are checked through the same path users take."""

import pytest

from cpgraph import check_policy
from cpgraph.testing import assert_policy_sound


@pytest.mark.parametrize("target", ["cpgraph.reference.policy", "cpgraph.impl.policy"])
def test_policy_keeps_every_invariant(target: str) -> None:
    report = check_policy(target, max_cases=1000, boundary=False)
    assert report.ok, report.text()
    assert report.cases == 1000 and report.stopped == "cases"
    assert dict(report.phases).get("exhaustive", 0) > 0


def test_reference_passes_with_the_z3_boundary_models_first() -> None:
    from cpgraph.check.boundary import boundary
    from cpgraph.check.options import make_options

    options = make_options(cp_sizes=(2, 4))
    models = list(boundary(options))  # solved here, in this process; the check below reuses them at once
    assert models and all(phase.startswith("boundary:") for phase, _ in models)
    report = assert_policy_sound("cpgraph.reference.policy", max_cases=500, cp_sizes=(2, 4))
    assert dict(report.phases).get("boundary", 0) > 0, report.phases  # drawn models come before the first batch


def test_boundary_models_arrive_from_the_solver_child_process() -> None:
    import time

    from cpgraph.check.boundary import BoundaryFeed
    from cpgraph.check.options import make_options

    feed = BoundaryFeed(make_options(cp_sizes=(2,), max_tokens=97, max_requests=2))
    try:
        arrived: list[object] = []
        # Until the (niced) child has answered and ended, however long a busy machine makes that; the
        # deadline only keeps a hung solver from hanging the suite.
        deadline = time.monotonic() + 900
        while not arrived and feed._proc is not None and time.monotonic() < deadline:
            arrived.extend(feed.ready())
            time.sleep(0.05)
        arrived.extend(feed.ready())
        assert arrived, "the solver child ended without a boundary model" if feed._proc is None else "the solver child hung"
    finally:
        feed.close()


def test_impl_policy_passes_the_pytest_helper_on_every_strategy_table() -> None:
    import cpgraph.impl.policy

    report = assert_policy_sound(cpgraph.impl.policy, max_cases=500, boundary=False, capacities=("captured", "headroom:3", "arbitrary"))
    assert report.cases == 500
