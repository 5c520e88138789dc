"""The proofs have teeth: every deliberately wrong variant of a formula gets the verdict it must get
(refuted, with a counterexample; the equivalent rewrites stay proved)."""

import pytest

from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.engine.constants import constant_names
from cpgraph.proofs.run import run_queries
from cpgraph.proofs.teeth.variants.catalogue import VARIANTS, Variant

from helpers import run_printed_regression


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v.theorem}-{v.name}")
def test_variant_gets_its_verdict(variant: Variant) -> None:
    queries = variant.build(variant.parameter)
    result = run_queries(variant.theorem, variant.parameter, queries, "variant", shrink=False)
    got = Status.PROVED if result.failure is None else result.failure.verdict.status
    assert got is variant.expected, (variant.description, result.failure.render() if result.failure else "")
    if variant.expected is Status.REFUTED:
        assert result.failure is not None
        # A refutation carries its model, unless the refuted query has no variable at all (a claim on literals,
        # such as a tightness check on literal lengths: its label is the whole counterexample).
        failed = [q for q in queries if result.failure.label == f"variant {q.part}"]
        ground = len(failed) == 1 and not constant_names((failed[0].claim, *failed[0].hypotheses))
        assert result.failure.model or ground, "a refutation carries its model"


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


VLLM_0_28 = ("vllm_0_28_split", "dispatch_by_tokens", "replay_under_unpadded_key", "own_rows_key")


@pytest.mark.parametrize("cp_size", [2, 4, 8, 64])
@pytest.mark.parametrize("variant", [v for v in VARIANTS if v.name in VLLM_0_28], ids=lambda v: f"{v.theorem}-{v.name}")
def test_the_local_theorems_refute_vllm_0_28_and_a_lost_consensus_at_small_and_large_cp_size(variant: Variant, cp_size: int) -> None:
    # Up to P = 8 the DualChunkSwap instances come first: the counterexample is a real batch, replayed through
    # the reference's layout and keying table; above, the any-layout setting refutes it (a load vector).
    result = run_queries(variant.theorem, cp_size, variant.build(cp_size), "variant", shrink=False)
    assert result.failure is not None and result.failure.verdict.status is Status.REFUTED, variant.description
    text = result.failure.render()
    assert ("(dual_chunk_swap, local)" in text and "reference at P=" in text) if cp_size <= 8 else "any layout" in text


def test_vllm_0_28_is_refuted_with_a_minimal_batch_replayed_through_the_reference() -> None:
    variant = next(v for v in VARIANTS if v.name == "vllm_0_28_split")
    assert variant.theorem == "local_admitted_batches_replay_the_admitted_size" and variant.parameter == 4
    result = run_queries(variant.theorem, 4, variant.build(4), "variant", shrink=True)
    assert result.failure is not None and result.failure.verdict.status is Status.REFUTED
    model, shown = result.failure.model, result.failure.shown
    lengths = tuple(int(model[f"batch.L{i}"]) for i in range(2) if int(model[f"batch.L{i}"]) > 0)
    # Minimal: one request (fewest requests first), of 2 tokens: DualChunkSwap puts (1, 1, 0, 0) on the ranks,
    # so the key m = 1 < n = 2: 0.28 dispatches the least size >= 2 and replays the graph keyed 1.
    assert lengths == (2,) and shown["requests"] == "1" and shown["n"] == "2"
    assert shown["admitted"] != shown["replayed"] and shown["replayed"] == "1"
    text = result.failure.render()
    assert "vLLM 0.26-0.28 would dispatch" in text and "replay the graph keyed 1" in text
    # The printed regression test is valid Python and passes on the reference (what 0.29 must do).
    run_printed_regression(result.failure.replay, "test_regression_local_admitted_batches_replay_the_admitted_size_p4")


def test_the_0_29_design_is_proved_where_0_28_is_refuted() -> None:
    from cpgraph.proofs.registry import BY_NAME

    theorem = BY_NAME["local_admitted_batches_replay_the_admitted_size"]
    for cp_size in (1, 2, 4, 8, 32):
        assert run_queries(theorem.name, cp_size, theorem.build(cp_size), "P").failure is None
