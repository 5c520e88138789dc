"""The count encoding's abstraction lemmas (proofs/design_lemmas.py) are proved, and wrong class tables refuted."""

import pytest

from cpgraph.proofs.check import Status
from cpgraph.proofs.design_lemmas import VARIANTS, WrongClassRow, check_lemma, design_lemmas, request_lemma, variant_verdict
from cpgraph.spec.design_counts import CLASS_TABLE, class_row

SCOPE = tuple(range(1, 17)) + (32, 64)  # proofs/README.md states this scope


@pytest.mark.parametrize("strategy", list(CLASS_TABLE))
def test_lemmas_hold_for_every_strategy_over_the_scope(strategy: str) -> None:
    for p in SCOPE:
        for name, _, verdict in design_lemmas(strategy, p):
            assert verdict.status is Status.PROVED, (strategy, p, name, verdict)


def test_the_request_lemma_holds_for_a_shared_modulus() -> None:
    # a diff of P=2 and P=3 designs reads one batch with classes mod lcm(4, 6) = 12
    assert check_lemma(request_lemma("zigzag", 2, 12)).status is Status.PROVED
    assert check_lemma(request_lemma("zigzag", 3, 12)).status is Status.PROVED


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v.strategy}-{v.name}")
def test_wrong_class_tables_are_refuted(variant: WrongClassRow) -> None:
    for p in (2, 3, 8):
        assert variant_verdict(variant, p) is Status.REFUTED, (variant.description, p)


def test_unknown_strategy_is_an_error_naming_the_ids() -> None:
    with pytest.raises(ValueError, match="strategy must be one of zigzag, contiguous, zigzag_pad, interleave"):
        class_row("ring")
