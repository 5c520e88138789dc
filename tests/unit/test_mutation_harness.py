"""benchmarks/mutation.py: each operator makes the exact text edit it names, mutants always parse, docstrings,
annotations, f-strings and raise statements are never mutated, and a run on a copy finds killed and surviving
mutants without touching the working tree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_harness", ROOT / "benchmarks" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mutation = _harness()

SOURCE = '''"""Docstring with 12 and a < b."""
import z3


def f(x: int, y: int = 3) -> bool:
    """Inner docstring 7."""
    if x <= y and not x == 0:
        raise ValueError(f"bad {x + 1}")
    return x + 2 * y > 1


def g(a, b, c) -> "BoolTerm":
    return z3.And(a >= b, b != c, z3.If(a, b, c) == 0)
'''


def _edits(source: str) -> set[tuple[int, str, str]]:
    return {(m.line, m.operator, m.description) for m in mutation.mutants_of("x.py", source)}


def test_every_operator_makes_the_edit_it_names() -> None:
    mutants = {m.description: m for m in mutation.mutants_of("x.py", SOURCE) if m.line == 7}
    assert mutants["<= -> <"].apply(SOURCE).splitlines()[6] == "    if x < y and not x == 0:"
    assert mutants["and -> or"].apply(SOURCE).splitlines()[6] == "    if x <= y or not x == 0:"
    assert mutants["not x -> x"].apply(SOURCE).splitlines()[6] == "    if x <= y and (x == 0):"
    edits = _edits(SOURCE)
    assert (9, "arithmetic", "+ -> -") in edits and (9, "arithmetic", "* -> //") in edits
    assert (9, "constant", "2 -> 3") in edits and (9, "comparison", "> -> >=") in edits
    assert (9, "return", "return True") in edits and (9, "return", "return False") in edits
    assert (13, "drop-argument", "drop argument 2 of And") in edits
    assert (13, "if-swap", "z3.If(c, a, b) -> z3.If(c, b, a)") in edits
    assert (13, "return", "return z3.BoolVal(True)") in edits
    dropped = next(m for m in mutation.mutants_of("x.py", SOURCE) if m.description == "drop argument 3 of And")
    assert dropped.apply(SOURCE).splitlines()[12] == "    return z3.And(a >= b, b != c)"


def test_docstrings_annotations_fstrings_and_raise_are_never_mutated() -> None:
    lines = {line for line, _, _ in _edits(SOURCE)}
    assert not lines & {1, 6, 8}  # module docstring, inner docstring, the raise with its f-string
    assert all(op != "constant" or "12" not in d for _, op, d in _edits(SOURCE))


def test_every_mutant_parses_and_differs_from_the_original() -> None:
    for path in ("spec/arith.py", "reference/selection.py", "impl/decision.py"):
        source = (ROOT / path).read_text()
        for m in mutation.mutants_of(path, source):
            mutated = m.apply(source)
            assert mutated != source
            compile(mutated, path, "exec")


def test_a_pragma_line_is_skipped() -> None:
    assert not mutation.mutants_of("x.py", "y = 1 + 2  # pragma: no mutate\n")
    assert mutation.mutants_of("x.py", "y = 1 + 2\n")


SCOPE_SOURCE = """import z3
SIZES = (1, 2, 8)
FORMS = ("a", "b")
EMPTY = (0, 0, 0)
small = (1, 2)


def f(p, n, rank, q, s):
    hypotheses = (p >= 1, n >= 0, rank >= 0, rank < p, q == 2 * n, s.n >= 0)
    out = [Query("x", z3.BoolVal(True), (n >= 1,))]
    for j in range(3):
        out.append(j)
    return all_of(r >= 0 for r in range(2 * p)), out, [r for r in range(p)]
"""


def _scope_edits() -> dict[tuple[int, str], str]:
    """(line, description) -> the mutated line, for the two scope operators."""
    out = {}
    for m in mutation.mutants_of("x.py", SCOPE_SOURCE):
        if m.operator in ("narrow-range", "bounding-hypothesis"):
            out[(m.line, m.description)] = m.apply(SCOPE_SOURCE).splitlines()[m.line - 1]
    return out


def test_narrow_range_drops_an_end_of_a_declared_range_and_lowers_a_quantified_range() -> None:
    edits = _scope_edits()
    assert edits[(2, "drop 1 from the declared range")] == "SIZES = (2, 8)"
    assert edits[(2, "drop 8 from the declared range")] == "SIZES = (1, 2)"
    assert edits[(3, 'drop "a" from the declared range')] == 'FORMS = ("b",)'  # still a tuple
    assert edits[(13, "range stop -> stop - 1")].endswith("for r in range((2 * p) - 1)), out, [r for r in range(p)]")
    # Not a declared range: a record with repeated values, a lower-case name, the middle element; not a
    # quantified range: a constant stop (the constant operator moves it), a list comprehension outside a conjunction.
    assert not {line for line, _ in edits} & {4, 5, 11}
    assert sum(line == 13 for line, _ in edits) == 1 and len([k for k in edits if k[0] == 2]) == 2


def test_bounding_hypothesis_bounds_only_variables_open_above() -> None:
    edits = _scope_edits()
    line = "    hypotheses = (p >= 1, n >= 0, rank >= 0, rank < p, q == 2 * n, s.n >= 0{})"
    assert edits[(9, "add hypothesis p <= 4")] == line.format(", p <= 4")
    assert edits[(9, "add hypothesis n <= 4096")] == line.format(", n <= 4096")
    assert edits[(9, "add hypothesis s.n <= 4096")] == line.format(", s.n <= 4096")
    assert edits[(10, "add hypothesis n <= 4096")] == '    out = [Query("x", z3.BoolVal(True), (n >= 1, n <= 4096,))]'
    # rank is bounded above (rank < p), q is fixed by an equation: neither gets a bound.
    assert {d for line_no, d in edits if line_no == 9} == {
        "add hypothesis p <= 4", "add hypothesis n <= 4096", "add hypothesis s.n <= 4096"}


def test_the_scope_operators_find_the_repositorys_declared_scopes() -> None:
    """On the sites alone (no mutant is parsed): cheap."""
    import ast

    statements = ast.parse((ROOT / "proofs" / "theorems" / "zigzag.py").read_text())
    assert any(mutation._bounded_below_only(h) for h in mutation._hypotheses_literals(statements))  # step_facts
    assert any(True for _ in mutation._scope_ranges(ast.parse((ROOT / "spec" / "selection.py").read_text())))  # the scan
    assert any(True for _ in mutation._declared_ranges(ast.parse((ROOT / "spec" / "strategies.py").read_text())))


@pytest.mark.slow
def test_a_run_on_a_copy_kills_and_survives_and_leaves_the_tree_alone(tmp_path: Path) -> None:
    target = mutation.Target(
        "toy", lambda root: ["reference/capacity.py"],
        (mutation.Stage("vectors", ("-c", "from cpgraph.reference import align_up as a; "
                                          "assert a(5, 4) == 8 and a(8, 4) == 8 and a(0, 3) == 0")),),
        "a three-assertion kill command",
    )
    before = (ROOT / "reference" / "capacity.py").read_text()
    # Every mutant of the file (a sample of it may miss align_up altogether as the file grows).
    total = len(mutation.mutants_of("reference/capacity.py", before))
    result = mutation.run_target(target, limit=None, jobs=1, rev=None, sample_seed=3, timeout_factor=10.0,
                                 files=["reference/capacity.py"])
    assert (ROOT / "reference" / "capacity.py").read_text() == before
    assert result["mutants"] == total and result["killed"] + result["survived"] + result["timed_out"] == total
    assert result["killed"] >= 1 and result["survived"] >= 1  # the kill command is weak on purpose
    md, js = mutation.write_reports(result, tmp_path)
    text = md.read_text()
    assert "| toy |" in text and f"Survivors ({result['survived']}, of which" in text and js.exists()


def test_operators_keeps_only_the_named_operators(capsys: pytest.CaptureFixture[str]) -> None:
    assert mutation.main(["--target", "spec", "--files", "spec/strategies.py", "--operators", "narrow-range", "--list"]) == 0
    keys = capsys.readouterr().out.splitlines()
    assert keys and all(": narrow-range: " in k for k in keys)  # DECODE_PLACEMENTS' two ends
    with pytest.raises(SystemExit):
        mutation.main(["--target", "spec", "--operators", "no-such-operator", "--list"])


def _rescore() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))  # mutation_rescore imports the harness beside it
    try:
        spec = importlib.util.spec_from_file_location("mutation_rescore", ROOT / "benchmarks" / "mutation_rescore.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_a_rescore_tells_two_alike_mutants_on_one_line_apart_by_their_order() -> None:
    # two 1s on one line, each turned 0: the same operator, edit and line text; only their order differs
    rescore = _rescore()
    source = "def h(p, n):\n    return p * n <= n + (p - 1) * (n >= 1)\n"
    mutants = rescore.mutation.mutants_of("m.py", source)
    alike = [m for m in mutants if m.description == "1 -> 0"]
    assert len(alike) == 2
    for m in alike:
        found = rescore._alike(mutants, m)
        assert found == alike and found[[x.start for x in found].index(m.start)] is m
    first, second = (m.apply(source) for m in alike)
    assert "(p - 0)" in first and "(n >= 1)" in first and "(p - 1)" in second and "(n >= 0)" in second
