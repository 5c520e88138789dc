"""Shared test settings: Hypothesis profiles (dev: quick, ci: deterministic and bounded), and the bundled
designs' reviews computed once per session (the solver work of a review is the suite's costliest)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from cpgraph.design.report import Review
    from cpgraph.design.schema import Design

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session")
def default_review() -> Review:
    """What ``cpgraph review`` with no arguments reviews (the bundled upstream design against the pre-fix
    prefix design, with the diff), computed once for every test that reads it."""
    from cpgraph.design.report import review
    from cpgraph.design.schema import load_design

    return review(load_design("upstream"), against=load_design("prefix"))


@pytest.fixture(scope="session")
def prefix_review() -> Review:
    """``cpgraph review prefix``: the pre-fix design alone (refuted), computed once."""
    from cpgraph.design.report import review
    from cpgraph.design.schema import load_design

    return review(load_design("prefix"))


def _serve(monkeypatch: pytest.MonkeyPatch, cached: Review) -> None:
    """``cpgraph review`` of ``cached``'s design (and old design) answers ``cached``, so the CLI's rendering,
    formats and exit codes are tested without proving the same designs again; any other design is
    reviewed as usual."""
    import cpgraph.design.report as report

    real = report.review

    def review(design: Design, *, against: Design | None = None, progress: bool = False) -> Review:
        if cached.design == design and (cached.old[0] if cached.old else None) == against:
            return cached
        return real(design, against=against, progress=progress)

    monkeypatch.setattr(report, "review", review)


@pytest.fixture()
def default_review_served(monkeypatch: pytest.MonkeyPatch, default_review: Review) -> None:
    """In this test ``cpgraph review`` (no design: upstream against prefix) answers the session's review."""
    _serve(monkeypatch, default_review)


@pytest.fixture()
def prefix_review_served(monkeypatch: pytest.MonkeyPatch, prefix_review: Review) -> None:
    """In this test ``cpgraph review prefix`` answers the session's review of the prefix design."""
    _serve(monkeypatch, prefix_review)
