"""proofs/teeth/bite.py: a variant that must be refuted checks the queries it changed first, and still gets the verdict
the queries in their own order get."""

import dataclasses

import pytest
import z3

from cpgraph.proofs import registry
from cpgraph.proofs.engine.obligation import Query
from cpgraph.spec.logic import And

from cpgraph.proofs.teeth.bite import bite, changed_first, split
from cpgraph.proofs.engine.check import Status, check
from cpgraph.proofs.registry import BY_NAME
from cpgraph.proofs.run import run_queries
from cpgraph.proofs.teeth.variants.catalogue import VARIANTS, Variant

WHOLE = "admission_and_replay_read_the_whole_list"


def _variant(name: str) -> Variant:
    return next(v for v in VARIANTS if v.name == name and v.theorem == WHOLE)


def test_the_theorems_own_queries_keep_their_order() -> None:
    own = BY_NAME[WHOLE].build(4)
    assert [q.part for q in changed_first(WHOLE, 4, own)] == [q.part for q in own]


def test_the_changed_queries_come_first_and_refute() -> None:
    variant = _variant("middle_rank_admission_of_the_first_8_buckets_from_p_4")
    queries = variant.build(variant.parameter)
    changed, shared = split(WHOLE, variant.parameter, queries)
    assert changed and shared and len(changed) + len(shared) == len(queries)
    assert changed_first(WHOLE, variant.parameter, queries) == (*changed, *shared)
    # Only a middle rank's admission changed: its every-rank queries, none of rank 0's own checks.
    assert all("rank" in q.part for q in changed), [q.part for q in changed]
    assert any(not check(q.claim, hypotheses=q.hypotheses, rlimit=q.rlimit).proved for q in changed)
    assert all(check(q.claim, hypotheses=q.hypotheses, rlimit=q.rlimit).proved for q in shared[:6])


SAMPLE = ("middle_rank_replay_of_the_first_8_buckets_from_p_4", "dcp_admission_of_the_first_8_sizes_from_p_3",
          "replay_aligned_twice_on_long_lists_from_p_4", "prefix_admission_on_long_lists")


@pytest.mark.parametrize("variant", [_variant(name) for name in SAMPLE], ids=lambda v: v.name)
def test_a_bite_gets_the_verdict_of_the_queries_in_their_own_order(variant: Variant) -> None:
    queries = variant.build(variant.parameter)
    result = run_queries(variant.theorem, variant.parameter, queries, "variant", verdict_only=True)
    in_order = Status.PROVED if result.failure is None else result.failure.verdict.status
    assert bite(variant).got is in_order is variant.expected


def test_a_replaced_theorem_is_built_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cache follows the registered obligation, not its name: a replaced entry's queries are the ones compared.
    real = BY_NAME["scan_selects_minimal_bucket"]
    own = real.build(3)
    assert split(real.name, 3, own) == ((), own)

    def restated(parameter: int) -> tuple[Query, ...]:
        return tuple(dataclasses.replace(q, claim=And(q.claim, z3.BoolVal(True))) for q in real.build(parameter))

    monkeypatch.setitem(registry.BY_NAME, real.name, dataclasses.replace(real, build=restated))
    assert split(real.name, 3, own) == (own, ())
