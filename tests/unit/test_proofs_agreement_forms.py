"""The batch-form family of the agreement stage (proofs/teeth/agreement/forms.py): spec/batch.py's three forms and
spec/terms.py's folding helpers, evaluated at their edges against the batch's own counts. Unchanged, they
agree; each planted off-by-one that keeps every theorem proved (a form's facts or counts one request off at
an edge, a helper folding a literal with a term) is a disagreement, and so a failing teeth bite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import z3

from cpgraph.proofs.teeth.agreement import stage as ag
from cpgraph.proofs.teeth.agreement import forms
from cpgraph.proofs.teeth.agreement.tally import Outcome
from cpgraph.spec import batch, terms
from cpgraph.spec.terms import IntTerm


def _short_from_two(self: batch.RequestsBatch) -> tuple[IntTerm, ...]:
    p = self.cp_size
    return tuple(z3.If(z3.And(x >= 2, x < 2 * p), z3.IntVal(1), z3.IntVal(0)) for x in self.lengths)


def _requests_from_two(self: batch.RequestsBatch) -> IntTerm:
    return z3.Sum([z3.If(x >= 2, z3.IntVal(1), z3.IntVal(0)) for x in self.lengths])


def _empty_batch_allowed(cp_size: int, max_requests: int, name: str) -> batch.RequestsBatch:
    lengths = tuple(z3.Int(f"{name}.L{i}") for i in range(max_requests))
    return batch.RequestsBatch(cp_size, lengths, terms.all_of(x >= 0 for x in lengths))


def _short_may_pass_requests(cp_size: int, name: str) -> batch.AnyLayout:
    real = _REAL_ANY(cp_size, name)
    short = real.short_counts[0]
    return batch.AnyLayout(cp_size, real.loads, real.short_counts, real.requests, real.tokens,
                           z3.And(*[x >= 0 for x in real.loads], real.tokens >= 0, real.requests >= 1, short >= 0))


def _add_mixed_crashes(first: Any, second: Any) -> IntTerm:
    a, b = terms.literal(first), terms.literal(second)
    if a is not None or b is not None:
        return z3.IntVal(a + b)  # type: ignore[operator]
    return terms.int_term(first) + terms.int_term(second)


_REAL_ANY = batch.any_layout

PLANTED: list[tuple[str, Callable[[pytest.MonkeyPatch], None], Callable[[], Outcome], str]] = [
    ("a request of 1 not counted short", lambda m: m.setattr(batch.RequestsBatch, "short_counts", property(_short_from_two)),
     forms.requests_forms, "requests_batch short_requests"),
    ("a request of 1 not counted", lambda m: m.setattr(batch.RequestsBatch, "requests", property(_requests_from_two)),
     forms.requests_forms, "requests_batch requests"),
    ("the empty batch let in", lambda m: m.setattr(batch, "requests_batch", _empty_batch_allowed),
     forms.requests_forms, "requests_batch holds"),
    ("short may exceed R", lambda m: m.setattr(batch, "any_layout", _short_may_pass_requests),
     forms.any_layout_forms, "any_layout holds"),
    ("add of a literal and a term", lambda m: m.setattr(terms, "add", _add_mixed_crashes), forms.term_helpers, "terms.add"),
]


@pytest.mark.parametrize(("label", "plant", "family", "function"), PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_off_by_one_in_a_form_is_a_disagreement(
    monkeypatch: pytest.MonkeyPatch, label: str, plant: Callable[[pytest.MonkeyPatch], None],
    family: Callable[[], Outcome], function: str,
) -> None:
    assert not family().disagreements, label
    plant(monkeypatch)
    outcome = family()
    found = [d for d in outcome.disagreements if d.function == function]
    assert found, f"{label} went unseen by {function}"
    assert any(not b.ok and found[0].inputs in b.description for b in ag.bites_of(outcome))


def test_the_family_is_a_stage_of_prove_and_agrees_unchanged() -> None:
    assert ag.FAMILIES["batch forms and term helpers"] is forms.batch_forms
    outcome = forms.batch_forms()
    assert not outcome.disagreements
    for function in ("requests_batch holds", "requests_batch cp_active", "any_layout holds", "class_batch loads", "terms.mul"):
        assert outcome.checked[function] >= 15, function


def test_the_edges_include_one_request_of_one_token_and_the_empty_batch() -> None:
    for p in forms.FORM_CP_SIZES:
        drawn = forms.request_tuples(p)
        assert (0, 0, 0) in drawn and (1, 0, 0) in drawn and (0, 0, 1) in drawn
        assert any(2 * p - 1 in t and 2 * p in t for t in drawn) and any(min(t) < 0 for t in drawn)


def test_class_state_of_concrete_lengths() -> None:
    assert forms.class_state([1, 4, 9], 2) == (3, [1, 1, 0, 0], [0, 1, 0, 0])  # 4 = 4*1 + 0 and 9 = 4*2 + 1 long; 1 short


def test_a_folding_builder_taking_its_literal_path_on_a_mix_is_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    from cpgraph.spec import strategies

    assert not forms.folding_builders().disagreements
    real = strategies.dual_chunk_swap_chunk

    def chunk(length: Any, size: Any, j: int) -> Any:
        rest = length - j * size
        if isinstance(rest, int) or isinstance(size, int):  # `and` turned `or`: a mix takes the int path
            return min(size, max(0, rest))
        return real(length, size, j)

    monkeypatch.setattr(strategies, "dual_chunk_swap_chunk", chunk)
    found = forms.folding_builders().disagreements
    assert found and all(d.function == "strategies.dual_chunk_swap_chunk" for d in found)
    assert "raised" in str(found[0].actual)
