"""Per-rank terms at concrete ranks and capture lists past 3 buckets (issue 21, items 3 and 5): the
consensus theorems compare every rank with rank 0, and the scan the admission calls is the step folded
over the whole list. Cheap: builds, and a few solver calls at P = 4 and K <= 9."""

from fractions import Fraction

import pytest

from cpgraph.proofs.theorems import end_to_end, end_to_end_local, selection
from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.run import run_queries
from cpgraph.proofs.theorems.setting import EVERY_RANK_MAX_P, Setting, every_rank_alike, ranks_at
from cpgraph.proofs.teeth.variants.catalogue import scan_of_the_first_8_buckets, tripwire_of_the_first_8_buckets
from cpgraph.proofs.teeth.variants.end_to_end import middle_ranks_own_load_admit


def test_ranks_at_is_every_rank_up_to_8_then_first_middle_last() -> None:
    assert ranks_at(1) == (0,)
    assert ranks_at(3) == (0, 1, 2)
    assert ranks_at(EVERY_RANK_MAX_P) == tuple(range(EVERY_RANK_MAX_P))
    assert ranks_at(12) == (0, 6, 11)
    assert ranks_at(64) == (0, 32, 63)
    with pytest.raises(ValueError, match="cp_size"):
        ranks_at(0)


@pytest.mark.parametrize(
    ("theorem", "label"),
    [(end_to_end.ranks_sharing_their_capture_state_agree, "(any layout, global, F=2)"),
     (end_to_end_local.local_ranks_sharing_their_sizes_agree, "(any layout, local)")],
)
def test_the_consensus_theorems_compare_every_rank_with_rank_0(theorem: object, label: str) -> None:
    for p, ranks in ((4, (1, 2, 3)), (16, (8, 15))):
        parts = {q.part for q in theorem(p)}  # type: ignore[operator]
        for rank in ranks:
            assert f"rank_consensus, rank {rank} {label}" in parts
            assert f"rows agree, rank {rank} {label}" in parts
        assert not any(f", rank {r} " in part for part in parts for r in set(range(p)) - set(ranks_at(p)))


def test_every_rank_alike_needs_an_any_layout_setting() -> None:
    from cpgraph.spec.admission import admit
    from cpgraph.spec.replay import replay

    with pytest.raises(ValueError, match="any-layout"):
        every_rank_alike("t", Setting(4, "zigzag", Fraction(2)), admit, replay)


def test_a_middle_rank_deciding_from_its_own_load_is_refuted_at_a_middle_rank() -> None:
    # Neither end rank sees it (the class-batch chains compare rank 0 with rank P-1); a middle one does.
    queries = end_to_end.ranks_sharing_their_capture_state_agree(4, admit_fn=middle_ranks_own_load_admit)
    result = run_queries("consensus", 4, queries, "P=4", shrink=False)
    assert result.failure is not None and result.failure.verdict.status is Status.REFUTED
    assert "rank 1 (any layout, global, F=2)" in result.failure.label or "rank 2 (any layout, global, F=2)" in result.failure.label


@pytest.mark.parametrize("cut, part", [
    ({"select": scan_of_the_first_8_buckets}, "fold"),
    # replay refusing every bucket past the 8th: the end-to-end chains' 3-bucket lists cannot see it
    ({"tripwire": tripwire_of_the_first_8_buckets}, "replay's tripwire"),
])
def test_a_list_read_to_its_8th_bucket_only_is_refuted_only_past_8_buckets(cut: dict[str, object], part: str) -> None:
    theorem = selection.scan_select_is_the_step_folded_over_the_whole_list
    at_8 = run_queries("fold", 8, theorem(8, **cut), "K=8", shrink=False)  # type: ignore[arg-type]
    at_9 = run_queries("fold", 9, theorem(9, **cut), "K=9", shrink=False)  # type: ignore[arg-type]
    assert at_8.failure is None
    assert at_9.failure is not None and at_9.failure.verdict.status is Status.REFUTED
    assert at_9.failure.label.startswith(f"K=9 {part}")
    assert run_queries("fold", 32, theorem(32), "K=32", shrink=False).failure is None
