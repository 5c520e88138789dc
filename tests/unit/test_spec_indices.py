"""A literal rank or bucket index outside its range is a ValueError naming it, never a Python negative index
that silently reads the last entry (spec/terms.py ``check_index``: ranks in admission, replay, zigzag loads
and a design's capture lists; bucket indices in the scan's room and fit tests)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import z3

from cpgraph.spec import admission, replay, selection
from cpgraph.spec.batch import requests_batch
from cpgraph.spec.design import DesignSpec
from cpgraph.spec.selection import NO_SELECTION, concrete_capture_list, has_room, scan_step
from cpgraph.spec.terms import Loads, check_index
from cpgraph.spec.zigzag import zigzag_rank_load, zigzag_split


def _setup(p: int = 4) -> admission.RankSetup:
    return admission.RankSetup("zigzag", p, 1, Fraction(2), concrete_capture_list((16, 32), {16: 4, 32: 8}))


@pytest.mark.parametrize("rank", [-1, 4, 7])
def test_admission_and_replay_refuse_a_rank_outside_the_ranks(rank: int) -> None:
    batch = requests_batch(4, 2, "b")
    with pytest.raises(ValueError, match=rf"rank must be an int in 0\.\.3 \(a rank of cp_size 4\), got {rank}"):
        admission.admit(batch, 16, _setup(), rank, "a")
    with pytest.raises(ValueError, match=rf"rank must be an int in 0\.\.3 .*got {rank}"):
        replay.replay(batch, 16, _setup(), rank, "r")


@pytest.mark.parametrize("ranks", [1, 3, 5])
def test_a_rank_decision_refuses_loads_of_another_number_of_ranks(ranks: int) -> None:
    loads = Loads(tuple(z3.Int(f"l{r}") for r in range(ranks)), z3.BoolVal(True))
    with pytest.raises(ValueError, match=rf"loads must hold one load per rank of cp_size 4; got {ranks} loads"):
        admission.rank_decision(loads, 0, _setup(), 16, "a")
    four = Loads(tuple(z3.Int(f"l{r}") for r in range(4)), z3.BoolVal(True))
    assert admission.rank_decision(four, 0, _setup(), 16, "a").selection is not None


def test_every_rank_and_a_symbolic_rank_are_taken() -> None:
    batch = requests_batch(4, 2, "b")
    for rank in (0, 3, z3.Int("r")):
        assert admission.admit(batch, 16, _setup(), rank, "a").selection is not None


@pytest.mark.parametrize("index", [-1, 2, 5])
def test_the_scan_refuses_a_bucket_index_outside_the_list(index: int) -> None:
    capture = concrete_capture_list((16, 32), {16: 4, 32: 8})
    window = selection.padding_window(16, Fraction(2), "w")
    with pytest.raises(ValueError, match=rf"index must be an int in 0\.\.1 \(a bucket of a 2-bucket capture list\), got {index}"):
        has_room(capture, index, 3)
    with pytest.raises(ValueError, match="index must be an int in 0..1"):
        scan_step(capture, index, window, 3, NO_SELECTION)


def test_zigzag_loads_refuse_a_rank_past_a_literal_cp_size() -> None:
    split = zigzag_split(20, 4, "z")
    assert z3.simplify(zigzag_rank_load(split, 3, 4)).as_long() == 5
    with pytest.raises(ValueError, match="rank must be an int in 0..3 .*got 4"):
        zigzag_rank_load(split, 4, 4)
    with pytest.raises(ValueError, match="got -1"):
        zigzag_rank_load(split, -1, 4)


def test_a_design_refuses_a_rank_it_has_no_capture_list_for() -> None:
    from cpgraph.design.review import spec_of
    from cpgraph.design.schema import load_design

    spec: DesignSpec = spec_of(load_design("upstream"))
    assert len(spec.capture_list(spec.cp_size - 1)) == len(spec.buckets)
    with pytest.raises(ValueError, match=f"rank must be an int in 0..{spec.cp_size - 1}"):
        spec.capture_list(-1)


def test_check_index_reads_literals_only() -> None:
    check_index("i", z3.Int("i"), 1, "anything")  # symbolic: the caller bounds it
    check_index("i", z3.IntVal(0), 1, "one entry")
    with pytest.raises(ValueError, match=r"i must be an int in 0\.\.0 \(one entry\), got 1"):
        check_index("i", z3.IntVal(1), 1, "one entry")
