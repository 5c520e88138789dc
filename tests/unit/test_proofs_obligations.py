"""The registry: every theorem is proved at small scope, named as a sentence, documented, non-vacuous;
refuted theorems print a minimal counterexample replayed through the reference."""

import functools

import pytest
import z3

from cpgraph.proofs.engine.check import Status, check, satisfiable
from cpgraph.proofs.engine.obligation import MAX_LIST_LENGTH, obligation
from cpgraph.proofs.registry import BY_NAME, OBLIGATIONS, obligation_named
from cpgraph.proofs.run import minimise, run_queries, run_task
from cpgraph.proofs.theorems.strategies import zigzag_loads_sum_to_tokens
from cpgraph.proofs.teeth.variants.catalogue import VARIANTS, wrong_partner_request_loads

from helpers import run_printed_regression


def test_every_theorem_is_named_documented_and_scoped() -> None:
    assert len(BY_NAME) == len(OBLIGATIONS)
    for o in OBLIGATIONS:
        assert o.name.islower() and o.name.count("_") >= 2, o.name  # a claim, not a noun
        assert len(o.doc) > 40 and o.scope_for(64), o.name
        assert o.over in ("cp_size", "cp_size_sampled", "cp_size_small", "list_length", "once")


def test_parameters_cover_cp_size_1_to_cp_max_and_lists_up_to_32() -> None:
    by_kind = {o.over: o for o in OBLIGATIONS}
    assert by_kind["cp_size"].parameters(64) == tuple(range(1, 65))
    assert by_kind["list_length"].parameters(64) == tuple(range(1, MAX_LIST_LENGTH + 1))
    assert by_kind["once"].parameters(64) == (0,)
    assert by_kind["cp_size_small"].parameters(64) == (1, 2, 3, 4, 5, 6, 7, 8, 12, 16)
    assert by_kind["cp_size_small"].parameters(6) == (1, 2, 3, 4, 5, 6)


def test_an_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(KeyError, match="zigzag_loads_sum_to_tokens"):
        obligation_named("no_such_theorem")


def test_a_theorem_without_a_docstring_is_rejected() -> None:
    def undocumented(parameter: int) -> tuple[()]:
        return ()

    with pytest.raises(ValueError, match="docstring"):
        obligation(undocumented, scope="x", over="once")


# The suite proves every theorem at its scope's edges: cp_size (or list length) 1, 2 and 3, a power of two (4), a
# size that is not one (12), and the largest its scope has (64, 32 or 16). `cpgraph prove` proves every size in
# between (cp_size 1..64, lists of 1..32); in the suite that full run cost about 100 CPU s, this about 30 s.
# cp_size 1 and 2 are proved by test_prove_crosscheck's CI test (every theorem at cp_size 1 and 2, and at list
# lengths 1, 2, 3, 4, 12 and 32, each query also cross-checked by cvc5 and re-run under two seeds), not again here.
EDGES = (3, 4, 12)


@pytest.mark.parametrize("at", [*EDGES, "largest"])
def test_every_theorem_is_proved_at_the_edges_of_its_scope(at: int | str) -> None:
    chosen = 0
    failures = []
    for o in OBLIGATIONS:
        every = o.parameters(64)
        for parameter in (every[-1:] if at == "largest" else [p for p in every if p == at]):
            result = run_task(o, parameter)
            chosen += 1
            if result.failure is not None:
                failures.append((o.name, parameter, result.failure.render()))
    assert not failures
    # every theorem at "largest" ("once" theorems have no size, so only there); every sized theorem at each edge
    assert chosen == sum(1 for o in OBLIGATIONS if at == "largest" or o.over != "once")


def _sample(o_over: str) -> tuple[int, ...]:
    # The smallest sizes and the largest; the teeth pass's coverage (test_proofs_teeth) checks every query's
    # hypotheses satisfiable at a middle size (cp_size 4, 3 lists). cp_size 5 was here too: 11 of its 33 CPU s.
    return {"cp_size": (1, 2, 64), "cp_size_sampled": (1, 2, 32), "cp_size_small": (1, 2, 16),
            "list_length": (1, 2, 32), "once": (0,)}[o_over]


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_every_theorem_has_satisfiable_hypotheses(name: str) -> None:
    o = BY_NAME[name]
    for parameter in _sample(o.over):
        queries = o.build(parameter)
        # A chain's earlier claims are hypotheses of its later steps; they are valid (proved), so leaving them out
        # changes no model, and with them the solver gives up on a 32-bucket list's 32 capture rules.
        proved = {q.claim.get_id() for q in queries if isinstance(q.claim, z3.ExprRef)}
        for query in queries:
            own = [h for h in query.hypotheses if not (isinstance(h, z3.ExprRef) and h.get_id() in proved)]
            found = satisfiable(own, rlimit=query.rlimit)
            assert found == "sat", f"{name} {o.label(parameter)} {query.part}: vacuous ({found})"


def test_a_refuted_theorem_prints_a_minimal_counterexample_replayed_through_the_reference() -> None:
    queries = zigzag_loads_sum_to_tokens(4, request_loads=wrong_partner_request_loads)
    result = run_queries("zigzag_loads_sum_to_tokens", 4, queries, "P=4")
    assert result.failure is not None and result.failure.verdict.status is Status.REFUTED
    length = result.failure.model["L"]
    assert isinstance(length, int)
    # Minimal: no shorter request breaks the wrong formula.
    request = queries[0]
    assert request.size is not None
    assert check(request.claim, hypotheses=(*request.hypotheses, request.size <= length - 1)).proved
    text = result.failure.render()
    assert f"cpgraph.reference.rank_loads(({length},), cp_size=4" in text
    # The printed regression test is valid Python and passes on the (correct) reference.
    run_printed_regression(result.failure.replay, "test_regression_zigzag_loads_sum_to_tokens_p4")


def test_minimise_shrinks_a_large_counterexample() -> None:
    request = zigzag_loads_sum_to_tokens(4, request_loads=wrong_partner_request_loads)[0]
    assert request.size is not None
    big = check(request.claim, hypotheses=(*request.hypotheses, request.size >= 1000))
    assert big.status is Status.REFUTED and int(big.model["L"]) >= 1000
    small = minimise(request, big)
    assert int(small["L"]) < 1000


def test_every_theorem_has_a_variant_that_refutes_it() -> None:
    refuted = {v.theorem for v in VARIANTS if v.expected is Status.REFUTED}
    assert refuted == set(BY_NAME)
    assert all(isinstance(v.build, functools.partial) for v in VARIANTS)


def test_the_readme_lists_every_theorem_with_its_scope() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "proofs" / "README.md").read_text()
    # the generated catalogue lists exactly the registry (tests/unit/test_proofs_catalogue.py: and is current)
    section = readme.split("<!-- catalogue -->", 1)[1].split("<!-- /catalogue -->", 1)[0]
    rows = {line.split("`")[1] for line in section.splitlines() if line.startswith("| `")}
    assert rows == set(BY_NAME)
