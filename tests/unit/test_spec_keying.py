"""spec/keying.py mirrors reference/keying.py row for row; admission, replay and the invariants read it; the
issue's worked example ([170, 161, 153] at P = 4 on vLLM's default sizes) evaluated through the spec: 0.29's
local keying admits and replays 128, 0.28's split dispatches 496 and replays under 126, never captured."""

from __future__ import annotations

from fractions import Fraction

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from cpgraph import reference
from cpgraph.proofs.engine.check import check
from cpgraph.proofs.engine.evaluate import value_of
from cpgraph.proofs.teeth.variants.local import vllm_0_28_admit, vllm_0_28_replay
from cpgraph.reference.keying import KEYING_TABLE
from cpgraph.spec import invariants
from cpgraph.spec.admission import RankSetup, admit
from cpgraph.spec.batch import RequestsBatch
from cpgraph.spec.capacity import busiest_load
from cpgraph.spec.keying import KEYINGS, keying
from cpgraph.spec.replay import replay
from cpgraph.spec.selection import Selection, concrete_capture_list, padding_window
from cpgraph.spec.terms import Loads

VLLM_SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))  # cudagraph_capture_sizes, max 512


def test_the_keying_table_mirrors_the_reference_row_for_row() -> None:
    assert tuple(KEYINGS) == tuple(KEYING_TABLE) == ("global", "local")
    for kid, row in KEYINGS.items():
        ref = KEYING_TABLE[kid]
        assert (row.id, row.key_name, row.windowed, row.recorded_capacity, row.gated) == (
            ref.id, ref.key_name, ref.windowed, ref.recorded_capacity, ref.gated
        )
    with pytest.raises(ValueError, match="keying must be one of global, local"):
        keying("vllm")


@settings(max_examples=60)
@given(st.sampled_from(tuple(KEYINGS)), st.lists(st.integers(0, 10**6), min_size=1, max_size=8), st.integers(1, 10**7))
def test_each_key_term_folds_to_the_reference_key(kid: str, loads: list[int], n: int) -> None:
    terms = Loads(tuple(z3.IntVal(x) for x in loads), z3.BoolVal(True))
    key = keying(kid).key(n, busiest_load(terms, "k"))  # the key column reads the busiest load, built once
    assert value_of(key.value, key.holds) == KEYING_TABLE[kid].key(n, loads)


def test_capacities_are_recorded_under_global_and_the_size_itself_under_local() -> None:
    sizes, recorded = (8, 16, 24), {8: 3, 24: 40}
    capture = concrete_capture_list(sizes, recorded)
    for kid in KEYINGS:
        keyed = keying(kid).capacities(capture)
        want = KEYING_TABLE[kid].capacities(sizes, recorded)
        got = {b: value_of(c, z3.BoolVal(True)) for b, c, rec in zip(sizes, keyed.capacities, keyed.recorded)
               if value_of(rec, z3.BoolVal(True))}
        assert got == dict(want)


def test_the_invariants_read_the_window_and_capacities_from_the_keying() -> None:
    capture = concrete_capture_list((8, 16, 64), {16: 2})  # 8 and 64 have no recorded capacity
    window = padding_window(8, Fraction(2))  # [8, 16] over the key 8
    chosen = Selection(z3.BoolVal(True), z3.IntVal(64))
    # global: 64 is past F*key and unrecorded; local: a listed size at or above the key, holding 64 rows
    assert not check(invariants.padding_limit(chosen, window)).proved
    assert check(invariants.padding_limit(chosen, window, "local")).proved
    assert not check(invariants.captured_bucket(chosen, capture)).proved
    assert check(invariants.captured_bucket(chosen, capture, "local")).proved
    assert check(invariants.capacity_fit(chosen, capture, 64, "local")).proved
    assert not check(invariants.capacity_fit(chosen, capture, 65, "local")).proved
    smaller = Selection(z3.BoolVal(True), z3.IntVal(16))
    assert not check(invariants.minimal_bucket(chosen, capture, window, 10, "local")).proved  # 16 fits too
    assert check(invariants.minimal_bucket(smaller, capture, window, 10, "local")).proved
    eager = Selection(z3.BoolVal(False), z3.IntVal(0))
    assert not check(invariants.no_needless_fallback(eager, capture, window, 10, "local")).proved
    assert check(invariants.no_needless_fallback(eager, capture, window, 65, "local")).proved
    with pytest.raises(ValueError, match="keying must be one of"):
        invariants.rank_consensus((chosen, chosen), "vllm")


def _decisions(lengths: tuple[int, ...], sizes: tuple[int, ...], admit_fn: object, replay_fn: object) -> tuple[object, ...]:
    p = 4
    batch = RequestsBatch(p, tuple(z3.IntVal(x) for x in lengths), z3.BoolVal(True))  # literal lengths: terms fold
    setup = RankSetup("dual_chunk_swap", p, 1, Fraction(2), concrete_capture_list(sizes, {}), "local")
    n = sum(lengths)
    a = admit_fn(batch, z3.IntVal(n), setup, 0, "admit")  # type: ignore[operator]
    r = replay_fn(batch, z3.IntVal(n), setup, 0, "replay")  # type: ignore[operator]
    facts = z3.And(batch.holds, a.holds, r.holds)
    return tuple(value_of(t, facts) for t in (a.selection.admitted, a.selection.bucket, r.succeeded, r.selection.bucket))


def test_the_issues_worked_example_through_the_spec() -> None:
    lengths = (170, 161, 153)
    assert reference.rank_loads(lengths, cp_size=4, strategy="dual_chunk_swap") == (106, 126, 126, 126)
    # vLLM 0.29 on: key m = 126, the least size >= 126 is 128, admitted and replayed.
    assert _decisions(lengths, VLLM_SIZES, admit, replay) == (True, 128, True, 128)
    # vLLM 0.26-0.28: dispatched 496 (the least size >= n = 484), replayed under 126, never captured.
    assert 126 not in VLLM_SIZES
    admitted, dispatched, replayed_ok, replay_key = _decisions(lengths, VLLM_SIZES, vllm_0_28_admit, vllm_0_28_replay)
    assert (admitted, dispatched, replayed_ok, replay_key) == (True, 496, False, 126)
    # [64] * 7: dispatched 448, replayed under 112, a captured size: still not the admitted one.
    assert _decisions((64,) * 7, VLLM_SIZES, vllm_0_28_admit, vllm_0_28_replay) == (True, 448, True, 112)
