"""The zigzag layout the release built for a replayed step, read from the CP metadata its own ``build_metadata``
returned on each rank (``ZigzagContextParallelMetadata``), as a cpgraph ``LaidOut`` (reference/laid_out.py).

Nothing here computes a zigzag layout. The metadata is the one the release's ``prepare_cp_forward`` set on the
forward batch handed to the captured backend's ``replay`` (``stand_ins.backend_class`` records it), and the
conversion only follows the indices the way the release's own tensor code consumes them (sglang/srt/layers/cp/
zigzag.py, the same in 0.5.17-0.5.23):

- ``shard_hidden_states``: ``chunks = torch.split(x[:total_seq_lens], split_list)``, then
  ``torch.cat([chunks[i] for i in zigzag_index])``: rank q's rows are the blocks its own ``zigzag_index`` names,
  in that order, from row 0 (the rows past them are ``pad_local_rows``' zeros, holding no token);
- ``gather_hidden_states`` (through ``_all_gather_reorganized``): every rank's rows [0, n_q) concatenated in
  rank order, n_q being ``(per_rank_logical_token or per_rank_actual_token)[q]`` of the gathering rank's
  metadata; that split by ``reverse_split_len``, and the pieces concatenated in ``cp_reverse_index`` order: output
  position p is the batch's token p (the logits read the live tokens in the batch's order).

``x`` is the batch's tokens in the order given (the adapter never reorders requests; ForwardBatch keeps them),
so global token g is mapped to (request, token) by the live lengths; a token past the live ones (an index the
release would point past the batch) is shown as request -1, which the judge names. Python's indexing of
``chunks[i]`` is kept (a negative index wraps, one past the end raises ``IndexError``, as on the GPU).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from cpgraph.reference.laid_out import LaidOut

RowRun = tuple[int, int, int, int]
ReadBack = tuple[int, int, int, int, int]

# the fields of ZigzagContextParallelMetadata the layout is read from
FIELDS = ("split_list", "zigzag_index", "cp_reverse_index", "reverse_split_len", "per_rank_actual_token")


@dataclass(frozen=True)
class ZigzagRank:
    """What one rank's metadata says of the layout, copied as ints when the replay reached the backend:
    ``split_list`` (every request's 2P block sizes, request-major), ``zigzag_index`` (the blocks this rank's
    rows hold, in row order), ``cp_reverse_index`` and ``reverse_split_len`` (how this rank puts the gathered
    rows back in order) and ``gathered`` (the rows it takes from each rank's gathered shard)."""

    split_list: tuple[int, ...]
    zigzag_index: tuple[int, ...]
    cp_reverse_index: tuple[int, ...]
    reverse_split_len: tuple[int, ...]
    gathered: tuple[int, ...]


def missing_fields(metadata: object) -> tuple[str, ...]:
    """The ``FIELDS`` ``metadata`` lacks or leaves None."""
    return tuple(name for name in FIELDS if getattr(metadata, name, None) is None)


def read_zigzag(metadata: Any) -> ZigzagRank:
    """``metadata`` (a ZigzagContextParallelMetadata) as a ZigzagRank (see ``missing_fields`` first)."""
    logical = getattr(metadata, "per_rank_logical_token", None)
    gathered = logical or metadata.per_rank_actual_token  # as _all_gather_reorganized picks them
    return ZigzagRank(
        split_list=tuple(int(v) for v in metadata.split_list),
        zigzag_index=tuple(int(v) for v in metadata.zigzag_index),
        cp_reverse_index=tuple(int(v) for v in metadata.cp_reverse_index),
        reverse_split_len=tuple(int(v) for v in metadata.reverse_split_len),
        gathered=tuple(int(v) for v in gathered),
    )


class _Tokens:
    """Global token indices of the batch, cut into (request, token) by the live lengths."""

    def __init__(self, lengths: Sequence[int]) -> None:
        self.starts = [0, *accumulate(int(n) for n in lengths)]
        self.total = self.starts[-1]

    def runs(self, first: int, stop: int) -> list[tuple[int, int, int, int]]:
        """(request, first token, stop, offset from ``first``) for global tokens [first, stop), cut where the
        request changes; tokens at or past the live total are request -1 (token g - total)."""
        out: list[tuple[int, int, int, int]] = []
        g = first
        while g < stop:
            if g >= self.total:
                out.append((-1, g - self.total, stop - self.total, g - first))
                break
            request = bisect_right(self.starts, g) - 1
            end = min(stop, self.starts[request + 1])
            base = self.starts[request]
            out.append((request, g - base, end - base, g - first))
            g = end
        return out


def _blocks(split_list: Sequence[int]) -> list[tuple[int, int]]:
    """``torch.split(x, split_list)``'s chunks as global token ranges [first, stop)."""
    offsets = [0, *accumulate(split_list)]
    return [(offsets[k], offsets[k + 1]) for k in range(len(split_list))]


def _nth(ranges: list[tuple[int, int]], i: int, index: str, cuts: str, what: str, consumer: str) -> tuple[int, int]:
    """``ranges[i]`` as the release's Python indexing takes it (a negative index wraps), or the IndexError the
    release's ``consumer`` would raise, naming the index list and the list that cut the ranges."""
    try:
        return ranges[i]
    except IndexError:
        raise IndexError(
            f"the rank's {index} names {what} {i}, but its {cuts} cuts the {'batch' if what == 'block' else 'gathered rows'} "
            f"into {len(ranges)} {what}s (the release's {consumer} would index past them)"
        ) from None


def rank_rows(rank: ZigzagRank, lengths: Sequence[int]) -> tuple[RowRun, ...]:
    """The runs one rank's rows hold: the blocks its own ``zigzag_index`` names, in order, from row 0."""
    tokens = _Tokens(lengths)
    chunks = _blocks(rank.split_list)
    runs: list[RowRun] = []
    row = 0
    for i in rank.zigzag_index:
        first, stop = _nth(chunks, i, "zigzag_index", "split_list", "block", "shard_hidden_states")
        for request, a, b, offset in tokens.runs(first, stop):
            runs.append((request, a, b, row + offset))
        row += stop - first
    return tuple(runs)


def restored(rank: ZigzagRank, lengths: Sequence[int]) -> tuple[ReadBack, ...]:
    """Where the gathering rank reads each of the batch's tokens back from: output position p (the batch's token
    p) is row ``row`` of rank ``q`` as its ``reverse_split_len`` / ``cp_reverse_index`` and gathered row counts put
    them back; a position of the gathered rows past every rank's count is shown as rank -1."""
    tokens = _Tokens(lengths)
    shard_starts = [0, *accumulate(rank.gathered)]  # gathered row -> (rank, row)
    pieces = _blocks(rank.reverse_split_len)
    out: list[ReadBack] = []
    position = 0  # in the restored output
    for j in rank.cp_reverse_index:
        first, stop = _nth(pieces, j, "cp_reverse_index", "reverse_split_len", "piece", "gather_hidden_states")
        g = first
        while g < stop and position + (g - first) < tokens.total:
            q = bisect_right(shard_starts, g) - 1
            end = min(stop, shard_starts[q + 1]) if q + 1 < len(shard_starts) else stop
            if q >= len(rank.gathered):
                q, row = -1, g - shard_starts[-1]
            else:
                row = g - shard_starts[q]
            out_first = position + (g - first)
            out_stop = min(position + (end - first), tokens.total)
            for request, a, b, offset in tokens.runs(out_first, out_stop):
                out.append((request, a, b, q, row + offset))
            g = end
        position += stop - first
    return tuple(out)


def zigzag_laid_out(ranks: Sequence[ZigzagRank], gathering: int, lengths: Sequence[int]) -> LaidOut:
    """The step's layout as rank ``gathering`` shows it: every rank's rows from that rank's own metadata
    (``ranks[q]``), and where rank ``gathering`` reads each token back from (its own metadata)."""
    return LaidOut(tuple(rank_rows(r, lengths) for r in ranks), restored(ranks[gathering], lengths))
