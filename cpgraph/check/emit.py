"""--emit-test: a ready pytest regression test that replays one counterexample against MODULE:ATTR."""

from __future__ import annotations

import os
import re

from cpgraph.check.invariants import CLAIMS
from cpgraph.check.report import Violation


def _name(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_").lower() or "policy"


def regression_test(target: str, violations: tuple[Violation, ...], *, strategy: str = "zigzag", root: str | None = None) -> str:
    """Source of a pytest module with one test per violation. Each imports the policy by ``target``
    (MODULE:ATTR, with ``root`` put on sys.path as the check did) and asserts the invariant on the
    minimised batch: it fails while the bug is there and passes once the policy is fixed."""
    if not violations:
        raise ValueError("regression_test needs at least one violation; the policy passed, there is nothing to pin")
    base = os.path.abspath(root if root is not None else os.getcwd())
    lines = [
        f'"""Regression tests emitted by `cpgraph check {target}`: one minimised counterexample per broken invariant."""',
        "",
        "import sys",
        "",
        f"ROOT = {base!r}  # where `cpgraph check` ran; MODULE is imported from there, as the check did",
        "if ROOT not in sys.path:",
        "    sys.path.insert(0, ROOT)",
        "",
        "from cpgraph.check import Batch, ask, judge, load_policy  # noqa: E402",
        "",
        f"POLICY = {target!r}",
        f"STRATEGY = {strategy!r}",
        "",
        "",
        "def _broken(batch: Batch, invariant: str) -> str:",
        '    """Why the policy breaks ``invariant`` on ``batch`` (every rank asked), or "" when it keeps it."""',
        "    policy = load_policy(POLICY)",
        "    answers = ask(policy, batch)",
        "    found = judge(batch, answers, strategy=STRATEGY, invariants=frozenset((invariant,)))",
        '    ranks = "\\n".join(f"  rank {a.rank}: {a.describe()}" for a in answers)',
        '    return f"{found[0].why}\\n{ranks}" if found else ""',
    ]
    for v in violations:
        b = v.batch
        table = "(" + ", ".join(f"({k}, {r})" for k, r in b.bucket_local_tokens) + ("," if len(b.bucket_local_tokens) == 1 else "") + ")"
        lines += [
            "",
            "",
            f"def test_{_name(target)}_keeps_{v.invariant}() -> None:",
            f'    """{v.invariant}: {CLAIMS[v.invariant]}."""',
            "    batch = Batch(",
            f"        cp_size={b.cp_size},",
            f"        align_size={b.align_size},",
            f"        num_tokens={b.num_tokens},",
            f"        extend_seq_lens={b.extend_seq_lens!r},",
            f"        capture_num_tokens={b.capture_num_tokens!r},",
            f"        bucket_local_tokens={table},  # (bucket, rows); a bucket not listed has no capacity",
            f"        max_padding_factor={b.max_padding_factor},",
            f"        table={b.table!r},",
            "    )",
            f"    # spec: {v.spec.describe(b).removeprefix('spec: ')}",
            f"    why = _broken(batch, {v.invariant!r})",
            f'    assert not why, f"{v.invariant} broken: {{why}}"',
        ]
    return "\n".join(lines) + "\n"


def write_regression_test(path: str, target: str, violations: tuple[Violation, ...], *, strategy: str = "zigzag") -> str:
    """Write the regression test to ``path`` (parent folders created); returns the path."""
    source = regression_test(target, violations, strategy=strategy)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    return path
