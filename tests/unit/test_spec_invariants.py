"""spec/invariants.py states each invariant with the invariant table's own sentence (spec/ may not import
the reference, so this test keeps the two in step)."""

from __future__ import annotations

import inspect

import pytest

from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.spec import invariants as spec_invariants


@pytest.mark.parametrize("invariant", sorted(INVARIANT_TABLE))
def test_each_spec_invariant_opens_with_the_table_sentence(invariant: str) -> None:
    doc = " ".join((inspect.getdoc(getattr(spec_invariants, invariant)) or "").split())
    sentence = INVARIANT_TABLE[invariant].sentence
    assert doc.lower().startswith(sentence.lower()), (doc, sentence)


def test_spec_imports_neither_the_reference_nor_a_solver_helper() -> None:
    from pathlib import Path

    spec = Path(spec_invariants.__file__).resolve().parent
    for path in spec.glob("*.py"):
        text = path.read_text()
        assert "cpgraph.reference" not in text and "from reference" not in text, path.name
        assert ".check(" not in text and "z3.Solver" not in text and "z3.Optimize" not in text, path.name
