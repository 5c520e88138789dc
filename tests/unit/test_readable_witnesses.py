"""Every printed batch is readable: a long repetitive list in a compact form that is still Python
(``[9] * 107 + [8]``), short lists as they are, every witness line of the default review within a
terminal's 100 columns; JSON keeps the full list."""

from __future__ import annotations

import json
import re

import pytest

from cpgraph.check import Policy, ask, load_policy, make_batch, spec_for
from cpgraph.check.report import batch_violation
from cpgraph.check.calls import PolicyStop, bound, session
from cpgraph.check.emit import regression_test
from cpgraph.cli import main
from cpgraph.design.report import Review
from cpgraph.formats import WIDTH, wrap
from cpgraph.reference import policy as reference

REVIEWED = pytest.mark.usefixtures("default_review_served")  # `cpgraph review` answers from the session's review
BATCH = re.compile(r"extend_seq_lens=(.+?)(?: \(n=\d+|$|`)")


def _cli(capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    """``cpgraph review FLAGS`` as printed: the default review (upstream against the pre-fix design)."""
    assert main(["review", "-q", *flags]) == 0
    return capsys.readouterr().out


@REVIEWED
def test_every_witness_line_of_the_default_review_fits_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _cli(capsys).splitlines()
    shown = [line for line in lines if "extend_seq_lens=" in line]
    assert len(shown) >= 7  # the two refuted invariants of the old design and five decision changes of the diff
    too_wide = [line for line in lines if len(line) > WIDTH]  # witnesses, their replays, and every other line
    assert not too_wide, "\n".join(too_wide)


@REVIEWED
def test_a_known_long_witness_prints_compactly_and_evaluates_to_its_lengths(
    default_review: Review, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _cli(capsys)
    assert "extend_seq_lens=[9] * 43 (n=387)" in text  # 43 requests of 9 tokens: the least n the fix rescues
    assert "extend_seq_lens=[25] + [9] * 62 (n=583)" in text
    assert "extend_seq_lens=[489, 9, 9] (n=507, 3 requests)" in text  # a short list as it is
    assert default_review.diff is not None
    changes = [ch for c in default_review.diff.classes for ch in c.changes]
    printed = [eval(x, {"__builtins__": {}}) for x in BATCH.findall(text)]  # pastes as Python
    assert [list(ch.extend_seq_lens) for ch in changes] == printed[-len(changes):]
    assert any(len(ch.extend_seq_lens) > 40 for ch in changes)  # so the compact form was needed


@REVIEWED
def test_markdown_is_compact_and_json_keeps_the_full_lists(capsys: pytest.CaptureFixture[str]) -> None:
    md = _cli(capsys, "--format", "md")
    assert "extend_seq_lens=[25] + [9] * 62 (n=583)" in md and "9, 9, 9, 9" not in md
    data = json.loads(_cli(capsys, "--format", "json"))
    assert [25] + [9] * 62 in [ch["extend_seq_lens"] for c in data["diff"]["classes"] for ch in c["changes"]]


def test_a_check_counterexample_prints_compactly_and_its_emitted_test_rebuilds_the_batch() -> None:
    lengths = (9,) * 107 + (8,)
    batch = make_batch(lengths, (1024, 2048), cp_size=4)
    policy = load_policy("cpgraph.reference.policy")
    violation = batch_violation("capacity_fit", batch, ask(policy, batch), spec_for(batch, "zigzag"), "planted", "random", 1, batch)
    assert "extend_seq_lens=[9] * 107 + [8] " in violation.text() and "9, 9, 9, 9" not in violation.text()
    assert "extend_seq_lens=(9,) * 107 + (8,)," in batch.literal()
    source = regression_test("cpgraph.reference.policy", (violation,))
    assert "extend_seq_lens=(9,) * 107 + (8,)," in source
    namespace: dict[str, object] = {"__file__": "test_regression.py"}
    exec(compile(source, "<emitted>", "exec"), namespace)  # valid Python; the reference keeps the invariant
    test = next(fn for name, fn in namespace.items() if name.startswith("test_") and callable(fn))
    test()


def test_a_stopped_call_names_its_batch_compactly() -> None:
    batch = make_batch((9,) * 107 + (8,), (1024, 2048), cp_size=4)

    def admit(**_: object) -> bool:
        raise SystemExit(3)

    with session(5.0), pytest.raises(PolicyStop) as stopped:
        ask(bound(Policy("exits", admit, reference.replay_bucket, None)), batch)
    assert "extend_seq_lens=(9,) * 107 + (8,), capture_num_tokens=(1024, 2048)" in stopped.value.stop.line()


def test_wrapping_never_splits_a_batch_or_a_list_of_numbers() -> None:
    batch = "extend_seq_lens=[25] + [9] * 62"
    lines = wrap(f"CRASH 768 (admission_replay, capacity_fit) -> graph 1024, with loads (129, 126, 126, 126): {batch}", 60, keep=(batch,))
    assert all(len(line) <= 60 for line in lines) and lines[-1].strip() == batch
    assert any("(129, 126, 126, 126)" in line for line in lines)
