"""impl's decision path, as a module and as the runner, passes the same checker any policy faces."""

from __future__ import annotations

import pytest

testing = pytest.importorskip("cpgraph.testing", reason="needs cpgraph.testing (the checker)")


def test_impl_policy_module_is_sound() -> None:
    from cpgraph.impl import policy

    assert testing.assert_policy_sound(policy, max_cases=1000, workers=1).cases == 1000


def test_impl_runner_is_sound_as_a_policy() -> None:
    from cpgraph.impl.checkable import runner

    assert testing.assert_policy_sound(runner, max_cases=1000, workers=1).cases == 1000
