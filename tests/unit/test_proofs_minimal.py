"""Minimal counterexamples as a teeth check (proofs/teeth/minimal.py): the pinned variants shrink to their known
minimal counterexamples; a size measure that no longer puts fewest requests first is caught."""

from __future__ import annotations

import pytest

from cpgraph.proofs.theorems import setting
from cpgraph.proofs.teeth.minimal import PINNED, Pinned, minimal_bite
from cpgraph.proofs.teeth.run import teeth_task as _task


def test_the_pinned_variants_shrink_to_their_minimal_counterexamples() -> None:
    bites = [minimal_bite(p) for p in PINNED]
    assert bites and all(b.ok for b in bites), [b.description for b in bites]
    assert _task(("minimal", 0, "")) == (bites[0],)  # a teeth task of its own


def test_a_size_that_prefers_more_requests_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = setting.Setting.__init__

    def planted(self: setting.Setting, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        self.size = self.n - 4096 * self.batch.requests  # requests weighted down, not up

    monkeypatch.setattr(setting.Setting, "__init__", planted)
    lost = [b for b in (minimal_bite(p) for p in PINNED) if not b.ok]
    assert lost and all("not the minimal" in b.description and "requests=1" in b.description for b in lost)


def test_a_pin_naming_no_variant_fails_saying_so() -> None:
    bite = minimal_bite(Pinned("no_such_variant", "admitted_batches_fit_every_rank", (("n", "1"),)))
    assert not bite.ok and "no such variant" in bite.description


def test_a_chain_that_replays_its_batches_as_the_wrong_form_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain's replay builder picked for the wrong batch form (a class batch replayed as a load vector): every
    verdict is the same, but no counterexample replays as a batch; the pinned replays' first words tell."""
    real = setting.Setting.chain

    def as_any_layout(self: setting.Setting, *args: object, **kwargs: object) -> object:
        if self.form != "any":
            object.__setattr__(self, "form", "any")  # the setting is frozen: the planted builder picks the wrong form
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(setting.Setting, "chain", as_any_layout)
    lost = [b for b in (minimal_bite(p) for p in PINNED) if not b.ok]
    assert lost and all("replayed as" in b.description for b in lost)
