"""spec/admission.py's Decision record: the key each selector call compared (n under the global keying, the
busiest rank's rows m under the local one), carried by Admission and Replay (the consensus chains prove the
keys of two ranks agree before their decisions)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import z3

from cpgraph.proofs.engine.check import check
from cpgraph.spec import admission, replay
from cpgraph.spec.batch import requests_batch
from cpgraph.spec.logic import And
from cpgraph.spec.selection import concrete_capture_list
from cpgraph.spec.terms import Loads


def _setup(keying: str, p: int = 4) -> admission.RankSetup:
    return admission.RankSetup("zigzag", p, 1, Fraction(2), concrete_capture_list((16, 32), {16: 4, 32: 8}), keying)


def _busiest(loads: tuple[z3.ArithRef, ...]) -> z3.ArithRef:
    top = loads[0]
    for x in loads[1:]:
        top = z3.If(x > top, x, top)
    return top


@pytest.mark.parametrize("keying", ["global", "local"])
def test_the_decision_key_is_n_or_the_busiest_load(keying: str) -> None:
    loads = tuple(z3.Int(f"l{r}") for r in range(4))
    n = z3.Int("n")
    decided = admission.rank_decision(Loads(loads, z3.BoolVal(True)), 0, _setup(keying), n, "a")
    expected = n if keying == "global" else _busiest(loads)
    assert check(decided.key == expected, hypotheses=(decided.holds, *(x >= 0 for x in loads))).proved
    # and not the other keying's key: the two differ on some loads and n
    other = _busiest(loads) if keying == "global" else n
    assert not check(decided.key == other, hypotheses=(decided.holds, *(x >= 0 for x in loads))).proved


@pytest.mark.parametrize("keying", ["global", "local"])
def test_admission_and_replay_carry_their_own_decisions_key(keying: str) -> None:
    batch = requests_batch(4, 2, "b")
    n = z3.Int("n")
    a = admission.admit(batch, n, _setup(keying), 1, "a")
    r = replay.replay(batch, n, _setup(keying), 2, "r")
    # each side's key is its own term (built under its own names) and the two agree on the same batch
    assert not a.key.eq(r.key) or keying == "global"
    assert check(a.key == r.key, hypotheses=(batch.holds, a.holds, r.holds, n >= 0)).proved
    assert check(And(a.key >= 0, r.key >= 0), hypotheses=(batch.holds, a.holds, r.holds, n >= 0)).proved
