"""The claim-builder family of the agreement stage (proofs/teeth/agreement/claims.py): proofs/theorems/claims.py's builders,
the theorems' statements and their chains' lemmas, held to their definitions on concrete inputs. A lemma
loosened or turned false changes no verdict (the chains prove lemmas guarded), so this is where it is seen."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
import z3

from cpgraph.proofs.teeth.agreement import stage as ag
from cpgraph.proofs.teeth.agreement import claims as family
from cpgraph.proofs.theorems import claims
def _decision_without_bucket(first: Any, second: Any) -> tuple[str, z3.BoolRef]:
    return "decisions agree", z3.And(first.admitted == second.admitted)


def _one_with_room_unrecorded(capture: Any, chosen: Any, rows: Any) -> tuple[str, z3.BoolRef]:
    some = z3.Or([z3.And(chosen.bucket == b, c >= rows) for b, c in zip(capture.buckets, capture.capacities)])
    return "chosen bucket is one with room", z3.Implies(chosen.admitted, some)


def _window_one_below(bucket: Any, n: Any, factor: Fraction) -> z3.BoolRef:
    return z3.And(n - 1 <= bucket, factor.denominator * bucket <= factor.numerator * n)


_REAL_ROWS = claims.rows_needed
_REAL_ALIGN = claims.documented_align


def _rows_one_short(loads: Any, align_size: int, name: str) -> tuple[z3.ArithRef, z3.BoolRef]:
    need, facts = _REAL_ROWS(loads, align_size, name)
    return need - 1, facts


PLANTED: list[tuple[str, str, Callable[..., Any], str]] = [
    ("same_decision", "a dropped bucket equality", _decision_without_bucket, "same_decision"),
    ("within_window", "n - 1 admitted", _window_one_below, "within_window"),
    ("chosen_bucket_is_one_with_room", "the recorded flag ignored", _one_with_room_unrecorded, "chosen_bucket_is_one_with_room"),
    ("rows_needed", "rows one short", _rows_one_short, "rows_needed"),
    ("documented_align", "zigzag aligned to P", lambda s, p: p if s == "zigzag" else _REAL_ALIGN(s, p), "documented_align"),
]


@pytest.mark.parametrize(("attr", "label", "planted", "function"), PLANTED, ids=[p[1] for p in PLANTED])
def test_a_planted_claim_or_lemma_change_is_a_disagreement(
    monkeypatch: pytest.MonkeyPatch, attr: str, label: str, planted: Callable[..., Any], function: str
) -> None:
    assert not family.claim_builders().disagreements
    monkeypatch.setattr(claims, attr, planted)
    found = [d for d in family.claim_builders().disagreements if d.function == function]
    assert found, f"{label} went unseen"
    assert any(not b.ok and found[0].inputs in b.description for b in ag.bites_of(family.claim_builders()))


def test_the_family_is_a_stage_of_prove() -> None:
    assert ag.FAMILIES["claim builders"] is family.claim_builders
    checked = family.claim_builders().checked
    assert set(checked) >= {"documented_align", "rows_needed", "within_window", "bucket_fits", "is_listed_with_room",
                            "is_active", "same_rows", "same_decision", "chosen_bucket_is_one_with_room", "chosen_bucket_has_room",
                            "layout_within_rows",
                            "size_fits", "same_definitions"}
