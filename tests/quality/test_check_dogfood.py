"""Dogfooding: the reference and impl/'s policy are checked through the same path users take."""

import pytest

from cpgraph import check_policy
from cpgraph.testing import assert_policy_sound


@pytest.mark.parametrize("target", ["cpgraph.reference.policy", "cpgraph.impl.policy"])
def test_policy_keeps_every_invariant(target: str) -> None:
    report = check_policy(target, budget_s=1.5, boundary=False)
    assert report.ok, report.text()
    assert report.cases > 100
    assert dict(report.phases).get("exhaustive", 0) > 0


def test_reference_passes_with_the_z3_boundary_models_first() -> None:
    from cpgraph.check.boundary import boundary
    from cpgraph.check.options import make_options

    options = make_options(cp_sizes=(2, 4))
    models = list(boundary(options))  # solved here, in this process; the check below reuses them at once
    assert models and all(phase.startswith("boundary:") for phase, _ in models)
    report = assert_policy_sound("cpgraph.reference.policy", budget_s=1.5, cp_sizes=(2, 4))
    assert dict(report.phases).get("boundary", 0) > 0, report.phases


def test_boundary_models_arrive_from_the_solver_child_process() -> None:
    import time

    from cpgraph.check.boundary import BoundaryFeed
    from cpgraph.check.options import make_options

    feed = BoundaryFeed(make_options(cp_sizes=(2,), max_tokens=97, max_requests=2))
    try:
        arrived: list[object] = []
        deadline = time.monotonic() + 60
        while not arrived and time.monotonic() < deadline:
            arrived.extend(feed.ready())
            time.sleep(0.05)
        assert arrived, "no boundary model arrived from the solver child within 60 s"
    finally:
        feed.close()


def test_impl_policy_passes_the_pytest_helper_on_every_strategy_table() -> None:
    import cpgraph.impl.policy

    assert_policy_sound(cpgraph.impl.policy, budget_s=1.0, boundary=False, capacities=("captured", "headroom:3", "arbitrary"))
