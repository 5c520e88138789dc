"""Shared test settings: Hypothesis profiles (dev: quick, ci: deterministic and bounded)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from cpgraph.design.report import Review

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
