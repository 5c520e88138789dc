"""ARCHITECTURE.md's import rules, held: what each part may import, and one place that runs a solver."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# part -> module prefixes it must never import
FORBIDDEN = {
    "spec": ("cpgraph.reference", "cpgraph.impl", "cpgraph.proofs", "cpgraph.check", "cpgraph.design", "torch", "numpy"),
    "reference": ("z3", "torch", "numpy", "cpgraph.spec", "cpgraph.impl", "cpgraph.proofs", "cpgraph.check", "cpgraph.design"),
    "impl": ("z3", "cpgraph.spec", "cpgraph.proofs", "cpgraph.check", "cpgraph.design"),
    "proofs": ("torch",),
}
SOLVER_CALLS = ("z3.Solver(", "z3.Optimize(", "z3.SolverFor(", "z3.Then(", "cvc5.Solver(", "z3.solve(", "z3.prove(")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _modules(part: str) -> list[Path]:
    return sorted(p for p in (ROOT / part).rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_each_part_imports_only_what_the_architecture_allows(part: str) -> None:
    for path in _modules(part):
        for name in _imports(path):
            bad = [f for f in FORBIDDEN[part] if name == f or name.startswith(f + ".")]
            assert not bad, f"{path.relative_to(ROOT)} imports {name} ({part}/ must not import {bad[0]})"


def test_only_proofs_check_runs_a_solver() -> None:
    parts = ("spec", "reference", "impl", "proofs", "cpgraph/check", "cpgraph/design", "cpgraph/commands")
    for part in parts:
        for path in _modules(part):
            if path == ROOT / "proofs" / "check.py":
                continue
            text = path.read_text()
            found = [call for call in SOLVER_CALLS if call in text]
            assert not found, f"{path.relative_to(ROOT)} runs a solver ({found[0]}); only proofs/check.py may"


def test_no_test_runs_a_solver_of_its_own() -> None:
    # A solver built in a test shares the worker's z3 context, so its cost would depend on the tests before it.
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path == Path(__file__).resolve():
            continue
        found = [call for call in SOLVER_CALLS if call in path.read_text()]
        assert not found, f"{path.relative_to(ROOT)} runs a solver ({found[0]}); go through cpgraph.proofs.check"


def test_the_package_installs_one_top_level_name() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["cpgraph*"]
    assert not any(dep.startswith("torch") for dep in project["project"]["dependencies"])
    assert any(dep.startswith("torch") for dep in project["project"]["optional-dependencies"]["impl"])
