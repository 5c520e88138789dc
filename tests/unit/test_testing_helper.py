"""cpgraph.testing in a user's pytest suite: the failure message is the counterexample, cpgraph's own
frames are hidden, and a hung policy fails the test instead of hanging it."""

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cpgraph.check import Policy
from cpgraph.reference import policy as reference
from cpgraph.testing import assert_policy_sound


def test_a_buggy_policy_fails_with_the_counterexample_and_no_cpgraph_frames(tmp_path: Path) -> None:
    test_file = tmp_path / "test_user_suite.py"
    test_file.write_text(
        "from cpgraph.testing import assert_policy_sound\n"
        "from cpgraph.proofs.mutants import ignore_capacity\n\n"
        "def test_our_selector_is_sound():\n"
        "    assert_policy_sound(ignore_capacity, max_cases=2000, cp_sizes=(2, 4), capacities=('captured',))\n"
    )
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert "capacity_fit violated" in result.stdout and "extend_seq_lens=" in result.stdout
    assert "cpgraph/testing.py" not in result.stdout and "cpgraph/check/" not in result.stdout
    assert "test_user_suite.py:5" in result.stdout  # the failure points at the user's line


def test_a_sound_policy_returns_the_report() -> None:
    report = assert_policy_sound(reference, max_cases=200, cp_sizes=(2,))  # a count: a time once met no batch in a loaded CI run
    assert report.ok and report.cases == 200


def test_a_hung_policy_fails_the_test_instead_of_hanging_it() -> None:
    def admit(**batch: Any) -> bool:
        time.sleep(3600)
        return True

    with pytest.raises(AssertionError, match="did not return within 0.5 s"):
        assert_policy_sound(Policy("sleeper", admit, reference.replay_bucket, None), call_timeout_s=0.5, cp_sizes=(2,))
