"""The proofs have teeth: every deliberately wrong variant of a formula gets the verdict it must get
(refuted, with a counterexample; the equivalent rewrites stay proved)."""

import pytest

from cpgraph.proofs.check import Status
from cpgraph.proofs.run import run_queries
from cpgraph.proofs.variants import VARIANTS, Variant


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v.theorem}-{v.name}")
def test_variant_gets_its_verdict(variant: Variant) -> None:
    result = run_queries(variant.theorem, variant.parameter, variant.build(variant.parameter), "variant", shrink=False)
    got = Status.PROVED if result.failure is None else result.failure.verdict.status
    assert got is variant.expected, (variant.description, result.failure.render() if result.failure else "")
    if variant.expected is Status.REFUTED:
        assert result.failure is not None and result.failure.model, "a refutation carries its model"
