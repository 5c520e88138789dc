"""spec/batch.py's batch forms on concrete batches: every class state is realised by real lengths whose
reference loads are the class formula's (the class-encodable rows), the DualChunkSwap rows are refused by the
class encoding with the rows it holds for named, a RequestsBatch's loads are the reference's for every row, and
an AnyLayout is any load vector."""

from __future__ import annotations

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.proofs.engine.check import check
from cpgraph.proofs.engine.replay_batch import realise
from cpgraph.spec.batch import ClassBatch, any_layout, class_batch, class_loads, is_reachable, requests_batch
from cpgraph.spec.strategies import CLASS_ENCODABLE, DUAL_CHUNK_SWAP, STRATEGIES


@st.composite
def class_states(draw: st.DrawFn) -> tuple[int, dict[str, int]]:
    p = draw(st.integers(1, 6))
    s = 2 * p
    longs = [draw(st.integers(0, 2)) for _ in range(s)]
    shorts = [draw(st.integers(0, 2)) for _ in range(s)]
    if sum(longs) + sum(shorts) == 0:
        shorts[draw(st.integers(0, s - 1))] = 1
    q = sum(longs) + (draw(st.integers(0, 5)) if sum(longs) else 0)
    model = {"b.Q": q, **{f"b.c{m}": c for m, c in enumerate(longs)}, **{f"b.s{m}": c for m, c in enumerate(shorts)}}
    return p, model


@settings(max_examples=60)
@given(class_states(), st.sampled_from(CLASS_ENCODABLE))
def test_every_class_state_is_realised_by_lengths_with_its_loads(state: tuple[int, dict[str, int]], strategy: str) -> None:
    p, model = state
    lengths = realise(model, p, "b")
    batch = class_batch(p, "b")
    fixed = [z3.Int(name) == value for name, value in model.items()]
    assert check(batch.holds, hypotheses=fixed).proved
    loads = class_loads(batch, strategy, "b.loads")
    want = reference.rank_loads(lengths, cp_size=p, strategy=strategy)
    claim = z3.And([x == w for x, w in zip(loads.loads, want)])
    assert check(claim, hypotheses=(*fixed, loads.holds)).proved, (lengths, want)
    assert check(batch.tokens == sum(lengths), hypotheses=fixed).proved


def test_the_empty_batch_is_reachable_and_a_negative_quotient_is_not() -> None:
    zeros = tuple(z3.IntVal(0) for _ in range(4))
    empty = ClassBatch(2, z3.IntVal(0), zeros, zeros, z3.BoolVal(True))
    assert check(is_reachable(empty)).proved
    bad = ClassBatch(2, z3.IntVal(-1), zeros, zeros, z3.BoolVal(True))
    assert not check(is_reachable(bad)).proved


def test_the_class_encodable_rows_are_the_three_and_the_dual_chunk_swap_rows_are_not() -> None:
    assert CLASS_ENCODABLE == ("zigzag", "interleave", "contiguous")
    assert set(DUAL_CHUNK_SWAP) == set(STRATEGIES) - set(CLASS_ENCODABLE)


@pytest.mark.parametrize("kind", DUAL_CHUNK_SWAP)
def test_the_class_encoding_refuses_a_dual_chunk_swap_row_naming_the_rows_it_holds_for(kind: str) -> None:
    # L = 9 at P = 4: DualChunkSwap gives (2, 2, 2, 3), the class form q*loads(8) + loads(1) would give (3, 2, 2, 2)
    # (dcp copies it: (9, 9, 9, 9), not 2 + loads(1) either).
    split = reference.rank_loads((9,), cp_size=4, strategy=kind)
    assert split != tuple(a + b for a, b in zip(reference.rank_loads((8,), cp_size=4, strategy=kind),
                                                  reference.rank_loads((1,), cp_size=4, strategy=kind)))
    with pytest.raises(ValueError, match="not class-encodable.*zigzag, interleave, contiguous"):
        class_loads(class_batch(4, "b"), kind, "b.loads")
    with pytest.raises(ValueError, match="not class-encodable"):
        class_batch(4, "b").layout_loads(kind, "b.loads")


@settings(max_examples=40)
@given(st.integers(1, 8), st.sampled_from(tuple(STRATEGIES)), st.lists(st.integers(0, 300), min_size=2, max_size=2))
def test_a_requests_batch_has_the_reference_loads_tokens_and_gate_counts(p: int, kind: str, lengths: list[int]) -> None:
    batch = requests_batch(p, 2, "b")
    fixed = [x == v for x, v in zip(batch.lengths, lengths)]
    loads = batch.layout_loads(kind, "b.loads")
    want = reference.rank_loads(tuple(lengths), cp_size=p, strategy=kind)
    present = tuple(x for x in lengths if x > 0)
    short = sum(1 for x in present if x < 2 * p)
    claim = z3.And(*[x == w for x, w in zip(loads.loads, want)], batch.tokens == sum(lengths),
                   batch.requests == len(present), batch.short_requests == short)
    if present:
        assert check(claim, hypotheses=(*fixed, loads.holds, batch.holds)).proved, (lengths, want)
    else:  # no request at all is not a batch
        assert not check(z3.BoolVal(False), hypotheses=(*fixed, batch.holds)).model


def test_any_layout_is_any_load_vector_whatever_the_strategy() -> None:
    batch = any_layout(3, "any")
    zigzag, dcs = batch.layout_loads("zigzag", "x"), batch.layout_loads("dual_chunk_swap_dcp", "y")
    assert zigzag.loads == dcs.loads == batch.loads
    witness = check(z3.BoolVal(False), hypotheses=(batch.holds, batch.loads[0] == 7, batch.loads[1] == 0, batch.tokens == 1))
    assert witness.model  # loads (7, 0, ...) with one token: nothing ties them to lengths
    assert not check(z3.BoolVal(False), hypotheses=(batch.holds, batch.loads[2] == -1)).model
    with pytest.raises(ValueError, match="cp_size"):
        any_layout(0, "any")
    with pytest.raises(ValueError, match="max_requests"):
        requests_batch(2, 0, "b")
