"""impl's decision path, as a module and as the runner, passes the same checker any policy faces."""

from __future__ import annotations

import pytest

testing = pytest.importorskip("cpgraph.testing", reason="needs cpgraph.testing (the checker)")


def test_impl_policy_module_is_sound() -> None:
    from cpgraph.impl import policy

    testing.assert_policy_sound(policy, budget_s=2.0, workers=1)


def test_impl_runner_is_sound_as_a_policy() -> None:
    from cpgraph.impl.checkable import runner

    testing.assert_policy_sound(runner, budget_s=2.0, workers=1)
