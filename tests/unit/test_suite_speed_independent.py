"""The suite's verdicts do not depend on how fast the machine is: every check a test runs is bounded by a
count of batches (``max_cases`` / ``--max-cases``), never by a budget in seconds whose work a test could
then read (a 2.5 s budget once checked 138 batches on a busy machine where a test asserted more than 200)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CHECKS = {"check_policy", "assert_policy_sound"}
# --budget-s where no work is read: usage errors (a bad value) and the Ctrl-C test (it waits for a progress line)
BUDGET_FLAGS_ALLOWED = {("test_cli_exit_codes.py", "nan"), ("test_cli_exit_codes.py", "120"), ("test_check_cli.py", "0")}


def _name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _calls_and_flags() -> tuple[list[str], list[str]]:
    timed, flags = [], []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node.func) in CHECKS:
                keywords = {k.arg for k in node.keywords}
                if "budget_s" in keywords and "max_cases" not in keywords:
                    timed.append(f"{path.name}:{node.lineno}")
            if isinstance(node, (ast.List, ast.Tuple)):
                items = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
                for i, item in enumerate(items[:-1]):
                    if item == "--budget-s" and (path.name, items[i + 1]) not in BUDGET_FLAGS_ALLOWED:
                        flags.append(f"{path.name}:{node.lineno} --budget-s {items[i + 1]}")
    return timed, flags


def test_no_check_in_the_suite_is_bounded_by_seconds() -> None:
    timed, flags = _calls_and_flags()
    assert not timed, f"check_policy/assert_policy_sound with budget_s and no max_cases: {timed}"
    assert not flags, f"cpgraph check --budget-s in a test (use --max-cases): {flags}"
