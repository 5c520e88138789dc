"""The count encoding's abstraction lemmas (proofs/theorems/design_lemmas.py) are proved, and wrong class tables refuted."""

import pytest
import z3

from cpgraph.proofs.engine.check import Status, check
from cpgraph.proofs.theorems.design_lemmas import VARIANTS, WrongClassRow, check_lemma, design_lemmas, request_lemma, variant_verdict
from cpgraph.reference.strategies import STRATEGY_TABLE, dual_chunk_swap_request_loads
from cpgraph.spec import design_dcs
from cpgraph.spec.design_counts import CLASS_TABLE, Counts, class_row, counts_loads

SCOPE = tuple(range(1, 17)) + (32, 64)  # the lemmas' tested scope; a review proves its own P when it runs
DCS = tuple(s for s, row in CLASS_TABLE.items() if row.definition is not None)
DCS_SCOPE = tuple(range(1, 9)) + (12,)  # every P the review takes is proved when it runs; these here


@pytest.mark.parametrize("strategy", [s for s in CLASS_TABLE if s not in DCS])
def test_lemmas_hold_for_every_strategy_over_the_scope(strategy: str) -> None:
    for p in SCOPE:
        for name, _, verdict in design_lemmas(strategy, p):
            assert verdict.status is Status.PROVED, (strategy, p, name, verdict)


@pytest.mark.parametrize("strategy", DCS)
def test_lemmas_hold_for_the_dual_chunk_swap_rows(strategy: str) -> None:
    for p in DCS_SCOPE:
        for name, _, verdict in design_lemmas(strategy, p):
            assert verdict.status is Status.PROVED, (strategy, p, name, verdict)


def test_the_request_lemma_holds_for_a_shared_modulus() -> None:
    # a diff of P=2 and P=3 designs reads one batch with classes mod lcm(4, 6) = 12
    assert check_lemma(request_lemma("zigzag", 2, 12)).status is Status.PROVED
    assert check_lemma(request_lemma("zigzag", 3, 12)).status is Status.PROVED
    assert check_lemma(request_lemma("dual_chunk_swap", 2, 12)).status is Status.PROVED


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v.strategy}-{v.name}")
def test_wrong_class_tables_are_refuted(variant: WrongClassRow) -> None:
    for p in (2, 3, 8):
        assert variant_verdict(variant, p) is Status.REFUTED, (variant.description, p)


def test_unknown_strategy_is_an_error_naming_the_ids() -> None:
    with pytest.raises(
        ValueError,
        match="strategy must be one of zigzag, contiguous, dual_chunk_swap, dual_chunk_swap_replicated, "
        "dual_chunk_swap_dcp, interleave",
    ):
        class_row("ring")
    with pytest.raises(ValueError, match="strategy must be one of"):
        class_row("zigzag_pad")  # removed: no stack lays out that way


def test_the_issue_example_breaks_the_period_split() -> None:
    # L = 9, P = 4: (2, 2, 2, 3), not loads(8) + loads(1) = (3, 2, 2, 2): why short lengths are their own classes
    assert design_dcs.request_loads(9, 4) == (2, 2, 2, 3) == dual_chunk_swap_request_loads(9, cp_size=4)
    assert design_dcs.request_loads(300, 4) == (72, 76, 76, 76)
    assert design_dcs.regular_from(4) == 42 and design_dcs.dcp_regular_from(4) == 50


@pytest.mark.parametrize("strategy", DCS)
def test_the_definition_and_its_closed_form_equal_the_reference(strategy: str) -> None:
    # the spec's definition (spec/design_dcs.py, folded at literal lengths), the class table's closed form from
    # regular_from on, and the reference's rows (reference/strategies.py) agree at every length tried
    row = CLASS_TABLE[strategy]
    reference = STRATEGY_TABLE[strategy]
    assert row.definition is not None and row.short_loads is not None
    for p in range(1, 7):
        table = row.table(p)
        for length in range(0, 3 * row.regular_from(p) + 4 * p + 2):
            want = reference.batch_loads((length,), p)
            got = tuple(int(x.as_long()) for x in row.definition(z3.IntVal(length), p, "d").loads)
            assert got == want, (strategy, p, length)
            if length >= row.regular_from(p):
                q, m = divmod(length, 2 * p)
                assert tuple(2 * q + table[m][r] for r in range(p)) == want, (strategy, p, length)
            else:
                assert row.short_loads(length, p) == want, (strategy, p, length)


def test_the_symbolic_definition_agrees_with_the_reference_at_points() -> None:
    length = z3.Int("L")
    for p, value in ((4, 9), (4, 300), (3, 17), (2, 5)):
        terms = design_dcs.request_load_terms(length, p, "d")
        want = dual_chunk_swap_request_loads(value, cp_size=p)
        claim = z3.And([x == w for x, w in zip(terms.loads, want)])
        assert check(claim, hypotheses=[terms.holds, length == value]).status is Status.PROVED


def test_long_counts_below_the_exact_range_are_refused() -> None:
    counts = Counts(8, tuple(z3.IntVal(0) for _ in range(8)), z3.IntVal(1), z3.IntVal(1), z3.IntVal(8), 8, z3.BoolVal(True))
    with pytest.raises(ValueError, match="exact from length 42"):
        counts_loads("dual_chunk_swap", 4, counts, "x")
