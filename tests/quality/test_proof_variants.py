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


PRE_FIX = ("one_request_replay", "prefix_replay", "prefix_admission", "local_load", "per_rank_capacities")


@pytest.mark.parametrize("cp_size", [2, 3, 64])
@pytest.mark.parametrize(
    "variant",
    [v for v in VARIANTS if v.name in PRE_FIX],
    ids=lambda v: f"{v.theorem}-{v.name}",
)
def test_every_invariant_theorem_refutes_the_pre_fix_side_at_small_and_large_cp_size(variant: Variant, cp_size: int) -> None:
    # The counterpart side changed to the pre-fix behaviour breaks the theorem at every cp_size, and the
    # counterexample is realised as concrete lengths and replayed through the reference.
    result = run_queries(variant.theorem, cp_size, variant.build(cp_size), "variant", shrink=False)
    assert result.failure is not None and result.failure.verdict.status is Status.REFUTED, variant.description
    assert "reference plan for" in result.failure.render() or "the reference refuses" in result.failure.render()
