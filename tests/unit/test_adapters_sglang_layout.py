"""The sglang adapter's reading of the zigzag layout from the release's CP metadata (cpgraph/adapters/sglang/
layout.py), on a batch checked by hand, without sglang.

Lengths (4, 5) on two ranks: 2P = 4 blocks per request. Request 0's blocks are 1, 1, 1, 1 tokens; request 1's
(5 = 4 + 1, the remainder to the leading block) 2, 1, 1, 1. So ``split_list`` is [1, 1, 1, 1, 2, 1, 1, 1]: blocks
0-3 are request 0's tokens 0, 1, 2, 3 (global 0-3), blocks 4-7 request 1's tokens [0, 2), 2, 3, 4 (global 4-8).
This is what sglang 0.5.23's build_metadata returns for it (printed from the driven run):

- rank 0: ``zigzag_index`` [0, 4, 3, 7] (early blocks 0 and 4, then late blocks 3 and 7): its rows hold request 0
  token 0 (row 0), request 1 tokens 0-1 (rows 1-2), request 0 token 3 (row 3), request 1 token 4 (row 4);
- rank 1: [1, 5, 2, 6]: request 0 token 1, request 1 token 2, request 0 token 2, request 1 token 3 (rows 0-3);
- both: ``reverse_split_len`` [1, 2, 1, 1, 1, 1, 1, 1] (rank 0's four pieces then rank 1's), ``cp_reverse_index``
  [0, 4, 6, 2, 1, 5, 7, 3], logical rows (5, 4). The gathered rows are rank 0's 0-4 then rank 1's 0-3; the pieces
  are g[0,1) g[1,3) g[3,4) g[4,5) | g[5,6) g[6,7) g[7,8) g[8,9), and the restore takes pieces 0, 4, 6, 2 (request 0
  tokens 0-3 from rank 0 row 0, rank 1 row 0, rank 1 row 2, rank 0 row 3), then 1, 5, 7, 3 (request 1 tokens 0-1
  from rank 0 rows 1-2, token 2 from rank 1 row 1, token 3 from rank 1 row 3, token 4 from rank 0 row 4).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cpgraph.adapters.sglang.layout import missing_fields, read_zigzag, zigzag_laid_out
from cpgraph.reference.laid_out import LaidOut, layout_mismatch

LENGTHS = (4, 5)
SPLIT = [1, 1, 1, 1, 2, 1, 1, 1]
REVERSE = [0, 4, 6, 2, 1, 5, 7, 3]
REVERSE_LEN = [1, 2, 1, 1, 1, 1, 1, 1]
ROWS = (
    ((0, 0, 1, 0), (1, 0, 2, 1), (0, 3, 4, 3), (1, 4, 5, 4)),
    ((0, 1, 2, 0), (1, 2, 3, 1), (0, 2, 3, 2), (1, 3, 4, 3)),
)
RESTORED = (
    (0, 0, 1, 0, 0), (0, 1, 2, 1, 0), (0, 2, 3, 1, 2), (0, 3, 4, 0, 3),
    (1, 0, 2, 0, 1), (1, 2, 3, 1, 1), (1, 3, 4, 1, 3), (1, 4, 5, 0, 4),
)


def metadata(rank: int, **changed: object) -> SimpleNamespace:
    """Rank ``rank``'s ZigzagContextParallelMetadata as 0.5.23 leaves it on the replayed batch (bucket 12 captured
    with 8 rows per rank: prepare overwrote per_rank_actual_token with the capacity, the live rows are logical)."""
    fields: dict[str, object] = dict(
        split_list=list(SPLIT), zigzag_index=[[0, 4, 3, 7], [1, 5, 2, 6]][rank], cp_reverse_index=list(REVERSE),
        reverse_split_len=list(REVERSE_LEN), per_rank_logical_token=[5, 4], per_rank_actual_token=[8, 8],
    )
    fields.update(changed)
    return SimpleNamespace(**fields)


def laid(gathering: int = 0, **changed: object) -> LaidOut:
    return zigzag_laid_out([read_zigzag(metadata(q, **changed)) for q in range(2)], gathering, LENGTHS)


def judged(layout: LaidOut) -> str | None:
    return layout_mismatch(layout, lengths=LENGTHS, cp_size=2, strategy="zigzag", capacity=8)


def test_the_hand_checked_batch_reads_as_the_rows_and_restore_worked_out_above() -> None:
    for gathering in (0, 1):
        layout = laid(gathering)
        assert layout.rows == ROWS and layout.restored == RESTORED
        assert judged(layout) is None  # the reference's zigzag layout of (4, 5), every token read back once


def test_each_ranks_rows_come_from_its_own_metadata_and_the_restore_from_the_gathering_ranks() -> None:
    own = [read_zigzag(metadata(0)), read_zigzag(metadata(1, cp_reverse_index=[2, 4, 6, 0, 1, 5, 7, 3]))]
    assert zigzag_laid_out(own, 0, LENGTHS).restored == RESTORED
    wrong = zigzag_laid_out(own, 1, LENGTHS)  # rank 1 restores request 0's token 0 from rank 0's row 3
    assert wrong.rows == ROWS and wrong.restored is not None and wrong.restored[0] == (0, 0, 1, 0, 3)
    assert judged(wrong) == ("the layout reads request 0 [0, 1) back from rank 0 rows [3, 4), which do not hold "
                             "those tokens")


def test_without_logical_rows_the_gather_counts_the_physical_ones() -> None:
    """_all_gather_reorganized takes per_rank_logical_token or per_rank_actual_token: with only the physical
    (8, 8), rank 1's rows start at gathered row 8, so the piece meant as its first (gathered row 5) is rank 0's
    pad row 5, read back as request 0's token 1, which the judge names."""
    layout = laid(per_rank_logical_token=None)
    assert layout.rows == ROWS
    assert judged(layout) == ("the layout reads request 0 [1, 2) back from rank 0 rows [5, 6), which do not hold "
                              "those tokens")


def test_a_padded_count_folded_into_the_last_request_is_shown_not_hidden() -> None:
    """build_metadata folds num_tokens - sum(lengths) into the last request. Built for 12 tokens of (4, 5) (what it
    would do were it handed the padded count), request 1 is cut as 8 tokens, 2 per block: the blocks past the 9
    live tokens are shown as request -1 (no token of the batch), and the judge rejects the layout."""
    split = [1, 1, 1, 1, 2, 2, 2, 2]
    layout = zigzag_laid_out(
        [read_zigzag(metadata(q, split_list=split, reverse_split_len=[1, 2, 1, 2, 1, 2, 1, 2],
                              per_rank_logical_token=[6, 6])) for q in range(2)],
        0, LENGTHS,
    )
    # rank 0's block 7 is global tokens 10-11, rank 1's block 6 global 8-9: token 8 is request 1's last, 9-11 none
    assert layout.rows[0][-1] == (-1, 1, 3, 4) and layout.rows[1][-2:] == ((1, 4, 5, 4), (-1, 0, 1, 5)), layout.rows
    assert judged(layout) == ("rank 0's rows hold request -1 [1, 3) where the zigzag layout of the live lengths puts "
                              "request 1 [4, 5)")


def test_an_index_past_the_blocks_raises_as_the_release_would() -> None:
    with pytest.raises(IndexError, match="names block 8, but its split_list cuts the batch into 8 blocks"):
        laid(zigzag_index=[0, 4, 3, 8])
    with pytest.raises(IndexError, match="names piece 9, but its reverse_split_len cuts the gathered rows into 8"):
        laid(cp_reverse_index=[0, 4, 6, 2, 1, 5, 7, 9])
    assert laid(zigzag_index=[0, 4, 3, -1]).rows[0][-1] == (1, 4, 5, 4)  # a negative index wraps, as Python's does


def test_metadata_without_the_fields_read_is_named() -> None:
    assert missing_fields(metadata(0)) == ()
    assert missing_fields(SimpleNamespace(split_list=[1], per_rank_actual_token=[1])) == (
        "zigzag_index", "cp_reverse_index", "reverse_split_len")
