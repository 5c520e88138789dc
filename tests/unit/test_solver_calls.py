"""One place runs a solver: proofs/engine/check.py (ARCHITECTURE.md). Not an import rule (every part imports z3
to build terms), so a test holds it; the import rules are import-linter's contracts in pyproject.toml."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLVER_CALLS = ("z3.Solver(", "z3.Optimize(", "z3.SolverFor(", "z3.Then(", "cvc5.Solver(", "z3.solve(", "z3.prove(")
THE_ONE = ROOT / "proofs" / "engine" / "check.py"


def _modules(part: str) -> list[Path]:
    return sorted(p for p in (ROOT / part).rglob("*.py") if "__pycache__" not in p.parts)


def test_only_proofs_engine_check_runs_a_solver() -> None:
    assert THE_ONE.exists()
    parts = ("spec", "reference", "impl", "proofs", "cpgraph/check", "cpgraph/design", "cpgraph/commands")
    for part in parts:
        for path in _modules(part):
            if path == THE_ONE:
                continue
            text = path.read_text()
            found = [call for call in SOLVER_CALLS if call in text]
            assert not found, f"{path.relative_to(ROOT)} runs a solver ({found[0]}); only proofs/engine/check.py may"


def test_no_test_runs_a_solver_of_its_own() -> None:
    # A solver built in a test shares the worker's z3 context, so its cost would depend on the tests before it.
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path == Path(__file__).resolve():
            continue
        found = [call for call in SOLVER_CALLS if call in path.read_text()]
        assert not found, f"{path.relative_to(ROOT)} runs a solver ({found[0]}); go through cpgraph.proofs.engine.check"
