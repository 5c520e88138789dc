"""spec/batch.py's class encoding on concrete batches: every class state is realised by real lengths whose
reference loads are the class formula's, and a batch's own class state gives its loads."""

from __future__ import annotations

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.proofs.check import check
from cpgraph.proofs.replay_batch import realise
from cpgraph.spec.batch import ClassBatch, class_batch, class_loads, is_reachable
from cpgraph.spec.strategies import STRATEGIES


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
@given(class_states(), st.sampled_from(tuple(STRATEGIES)))
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
