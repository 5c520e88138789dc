"""The decode dispatcher under pytest: the correct one keeps every invariant on every path, the planted one is
caught (cpgraph.testing's assertion carries the minimised steps in its message)."""

from __future__ import annotations

import os

import pytest

from cpgraph.testing import assert_policy_sound

HERE = os.path.dirname(os.path.abspath(__file__))


def test_the_dispatcher_keeps_every_invariant_on_every_graph_path() -> None:
    assert_policy_sound(os.path.join(HERE, "dispatcher.py") + ":policy", path_cases=100)


def test_the_dispatcher_without_dp_agreement_breaks_rank_consensus() -> None:
    with pytest.raises(AssertionError, match="rank_consensus violated"):
        assert_policy_sound(os.path.join(HERE, "wrong_dispatcher.py") + ":policy", path_cases=100)
