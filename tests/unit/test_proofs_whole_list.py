"""proofs/theorems/whole_list.py: admission and replay read the whole capture list, at a P where no 32-bucket chain runs;
its wrong variants act where they say and are refuted exactly there."""

from __future__ import annotations

from typing import Any

import pytest

from cpgraph.proofs.engine.check import Status, check, one_context
from cpgraph.proofs.theorems.end_to_end_local import INSTANCES
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.theorems.setting import LONG_LIST_CP_SIZES, LONG_LIST_LENGTH, shared_settings
from cpgraph.proofs.teeth.variants.end_to_end import of_the_first_8_buckets
from cpgraph.proofs.theorems.whole_list import admission_and_replay_read_the_whole_list, whole_list_settings
from cpgraph.spec.admission import admit
from cpgraph.spec.replay import replay


def _verdicts(queries: tuple[Query, ...]) -> dict[str, Status]:
    return {q.part: check(q.claim, hypotheses=q.hypotheses, rlimit=q.rlimit, pipeline_first=True).status for q in queries}


def _planted(side: str, below: int, at: int, **plant: Any) -> tuple[dict[str, Status], set[str]]:
    """The whole-list theorem with ``side`` ("admission" or "replay") handed only the first 8 buckets where
    ``plant`` says (``of_the_first_8_buckets``'s keywords): the verdicts at P = ``below`` and the parts refuted at
    P = ``at``."""
    how = ({"admit_fn": of_the_first_8_buckets(admit, **plant)} if side == "admission"
           else {"replay_fn": of_the_first_8_buckets(replay, **plant)})
    with one_context(), shared_settings():
        before = _verdicts(admission_and_replay_read_the_whole_list(below, **how))
        after = _verdicts(admission_and_replay_read_the_whole_list(at, **how))
    return before, {part for part, status in after.items() if status is Status.REFUTED}


def test_every_setting_is_on_a_long_list_and_both_keyings_run() -> None:
    settings = whole_list_settings(4)
    assert {s.keying for s in settings} == {"global", "local"}
    assert {s.list_length for s in settings} == {LONG_LIST_LENGTH}
    assert 4 not in LONG_LIST_CP_SIZES  # the P these tests use is one the 32-bucket chains skip


def test_the_spec_reads_the_whole_list_at_a_p_without_long_chains() -> None:
    with one_context(), shared_settings():
        verdicts = _verdicts(admission_and_replay_read_the_whole_list(4))
    # 4 checks x 4 settings (3 class strategies, any layout) and 3 x 2 DualChunkSwap instances at rank 0; 3 steps x
    # ranks 1..3 x 2 keyings
    assert len(verdicts) == 16 + 2 * 3 + 2 * 3 * 3
    assert set(verdicts.values()) == {Status.PROVED}


@pytest.mark.parametrize("side", ["admission", "replay"])
def test_a_side_that_stops_early_from_p_4_is_refuted_at_4_and_proved_at_3(side: str) -> None:
    below, refuted = _planted(side, 3, 4, from_p=4)
    assert set(below.values()) == {Status.PROVED}
    assert refuted and all(side in part for part in refuted), refuted


def test_a_local_only_early_stop_is_refuted_in_the_local_queries_only() -> None:
    with one_context(), shared_settings():
        verdicts = _verdicts(admission_and_replay_read_the_whole_list(4, admit_fn=of_the_first_8_buckets(admit, from_p=4, keying="local")))
    refuted = {part for part, status in verdicts.items() if status is Status.REFUTED}
    assert refuted == {f"admission's decision ({layout}, local, K=32)"
                       for layout in ("any layout", "dual_chunk_swap", "dual_chunk_swap_dcp")}


def test_the_dual_chunk_swap_instances_run_up_to_p_8_only() -> None:
    assert {s.strategy for s in whole_list_settings(8) if s.form == "requests"} == set(INSTANCES)
    assert not [s for s in whole_list_settings(12) if s.form == "requests"]


@pytest.mark.parametrize("side", ["admission", "replay"])
def test_an_early_stop_under_one_layout_name_is_refuted_in_its_own_queries_only(side: str) -> None:
    """A side that stops early only for the DualChunkSwap dcp layout, from P = 3 on (where no 32-bucket chain
    runs): refuted at P = 3 in that instance's decision and nowhere else; at P = 2 the plant does not act."""
    below, refuted = _planted(side, 2, 3, from_p=3, strategy="dual_chunk_swap_dcp")
    assert set(below.values()) == {Status.PROVED}
    assert refuted and all(side in part and "(dual_chunk_swap_dcp, local, K=32)" in part for part in refuted), refuted


@pytest.mark.parametrize("side", ["admission", "replay"])
def test_a_middle_rank_that_stops_early_is_refuted_in_its_own_rank_consensus_only(side: str) -> None:
    """Rank 0 reads the whole list, ranks 0 < r < P-1 the first 8 buckets, from P = 4 on: every rank-0 check
    proves, and only the middle ranks' consensus steps are refuted (at P = 3 the plant does not act)."""
    below, refuted = _planted(side, 3, 4, from_p=4, middle_ranks=True)
    assert set(below.values()) == {Status.PROVED}
    assert refuted == {f"rank_consensus, rank {r} (any layout, {k}, {'F=2, ' if k == 'global' else ''}K=32)"
                       for r in (1, 2) for k in ("global", "local")}
