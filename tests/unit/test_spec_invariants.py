"""spec/invariants.py states each invariant with the invariant table's own sentence (spec/ may not import
the reference, so this test keeps the two in step; import-linter's contracts in pyproject.toml hold the import rules)."""

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

