"""What the ranks answered about one batch, as records the judge reads (reference/judge.py).

A checker asks every rank of a policy about a batch; each rank's answers (admit, replay_bucket, local_rows,
with errors as text) become a ``RankAnswer``; a broken invariant becomes a ``Finding``. None of this
depends on cpgraph.check: the batch is anything with the attributes of ``AskedBatch``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Protocol

REFUSED: Final = "refused"  # replay_bucket raised (or returned None): the rank runs eagerly
NOT_ASKED: Final = "not asked"  # protocol v2: replay is not asked of a rank that did not admit

Factor = int | Fraction


class AskedBatch(Protocol):
    """The batch the ranks were asked about (the protocol's keywords, less cp_rank)."""

    @property
    def cp_size(self) -> int: ...
    @property
    def align_size(self) -> int: ...
    @property
    def num_tokens(self) -> int: ...
    @property
    def extend_seq_lens(self) -> tuple[int, ...]: ...
    @property
    def capture_num_tokens(self) -> tuple[int, ...]: ...
    @property
    def capacities(self) -> Mapping[int, int]: ...
    @property
    def max_padding_factor(self) -> Factor: ...


@dataclass(frozen=True)
class RankAnswer:
    """What one rank answered. ``admit`` is None when admit raised (``admit_error`` says what);
    ``bucket`` is None when replay_bucket refused (raised or returned None) or was not asked
    (``replay_asked`` False); ``rows`` is the local_rows answer for ``bucket`` (None when not asked or
    when it raised, see ``rows_error``)."""

    rank: int
    admit: bool | None
    admit_error: str | None
    bucket: object
    replay_error: str | None
    rows: tuple[object, ...] | None
    rows_error: str | None
    replay_asked: bool = True
    admitted: object = None  # the size the rank's admission chose (admitted_bucket), when the policy says
    layout: object = None  # the layout the rank built for its bucket (a laid_out.LaidOut, local_layout), when the policy shows it

    @property
    def decision(self) -> tuple[object, object]:
        """What ranks must agree on: (admit or 'raised', bucket or 'refused' / 'not asked')."""
        if self.bucket is not None:
            replay = self.bucket
        else:
            replay = REFUSED if self.replay_asked else NOT_ASKED
        return ("raised" if self.admit is None else self.admit, replay)

    def describe(self) -> str:
        admit = f"raised {self.admit_error}" if self.admit is None else str(self.admit)
        if not self.replay_asked:
            replay = "not asked"
        elif self.replay_error is not None:
            replay = f"raised {self.replay_error}"
        else:
            replay = repr(self.bucket)
        text = f"admit={admit} replay_bucket={replay}"
        if self.admitted is not None:
            text = f"admit={admit} admitted_bucket={self.admitted!r} replay_bucket={replay}"
        if self.rows is not None:
            text += f" local_rows={list(self.rows)}"
        elif self.rows_error is not None:
            text += f" local_rows raised {self.rows_error}"
        if isinstance(self.layout, str):
            text += f" local_layout raised {self.layout}"
        return text

    def to_json(self) -> dict[str, object]:
        """This rank's answers as JSON (errors as text; a bucket that is not an int as its repr)."""
        bucket = self.bucket if self.bucket is None or type(self.bucket) is int else repr(self.bucket)
        rows = None if self.rows is None else [r if type(r) is int else repr(r) for r in self.rows]
        return {
            "cp_rank": self.rank,
            "admit": self.admit,
            "admit_error": self.admit_error,
            "replay_asked": self.replay_asked,
            "admitted_bucket": self.admitted if self.admitted is None or type(self.admitted) is int else repr(self.admitted),
            "replay_bucket": bucket,
            "replay_error": self.replay_error,
            "local_rows": rows,
            "local_rows_error": self.rows_error,
            **({} if self.layout is None else {"local_layout": _layout_json(self.layout)}),
        }




def _layout_json(layout: object) -> object:
    """A local_layout answer as JSON: its runs, or the error text it raised."""
    if isinstance(layout, str):
        return {"error": layout}
    rows, restored, order = getattr(layout, "rows", None), getattr(layout, "restored", None), getattr(layout, "order", None)
    return {"rows": [[list(run) for run in runs] for runs in rows or ()],
            "restored": None if restored is None else [list(run) for run in restored],
            "order": None if order is None else list(order)}


def rank_answer(
    rank: int, admit: bool | None, admit_error: str | None, bucket: object, replay_error: str | None,
    rows: tuple[object, ...] | None, rows_error: str | None, replay_asked: bool, admitted: object = None,
    layout: object = None,
) -> RankAnswer:
    """``RankAnswer(...)`` without the frozen dataclass's per-field ``object.__setattr__`` (a checker
    builds one per rank per batch; this is 2.5x cheaper). The record is the same frozen RankAnswer."""
    answer = object.__new__(RankAnswer)
    answer.__dict__.update(
        rank=rank, admit=admit, admit_error=admit_error, bucket=bucket, replay_error=replay_error,
        rows=rows, rows_error=rows_error, replay_asked=replay_asked, admitted=admitted, layout=layout,
    )
    return answer


@dataclass(frozen=True)
class Finding:
    """One invariant broken on one batch: which, and why (one or two lines naming ranks and values)."""

    invariant: str
    why: str
