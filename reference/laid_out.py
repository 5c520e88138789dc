"""What a rank shows of the layout it built for a step (``LaidOut``), and whether that is its strategy's
layout of the live lengths (``layout_mismatch``).

A stack that lays a batch out itself (vLLM's PCPManager builds a gather index that places every rank's rows
and a restore index that reads each token's hidden state back) can get the row counts right and still move
the wrong tokens: a rank's rows shifted by one, a token read back from a row that holds another, a gather
index left from the previous step. Row counts cannot see that; the rows themselves can. Both are written as
runs, so a batch of thousands of tokens costs a few tuples per request:

- ``rows``: per rank, the runs its rows hold, ``(request, first token, stop, first row)``: the request's
  tokens [first, stop) in rows [first row, first row + stop - first), in any order;
- ``restored``: where each of the batch's tokens is read back from after the step, runs ``(request, first
  token, stop, rank, first row)``; None where the stack reads nothing back (its ranks keep their rows);
- ``order``: the batch's requests in the order the stack laid them out (None: as given). A strategy that deals
  requests to ranks by their place in the batch (``round_robin`` decodes) deals them in the stack's order: vLLM
  sorts a batch before it lays it out. Requests are still named by their index in the batch as given.

The layout is the live one when every rank's runs tile its rows [0, n) from row 0 with no gap and no
row twice, n is within the graph's capacity, the tokens they hold are exactly the ones the strategy's
layout of the live lengths puts on that rank (reference/strategies.py ``rank_spans``), and every token of
the batch is read back once, from a row that holds it. ``capacity_fit`` judges it (reference/judge.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from cpgraph.reference.strategies import Span, strategy_row

RowRun = tuple[int, int, int, int]  # (request, first token, stop, first row)
ReadBack = tuple[int, int, int, int, int]  # (request, first token, stop, rank, first row)


@dataclass(frozen=True)
class LaidOut:
    """The layout a rank built for one step: ``rows`` (per rank, its runs) and ``restored`` (the read-back
    runs, or None). See the module docstring."""

    rows: tuple[tuple[RowRun, ...], ...]
    restored: tuple[ReadBack, ...] | None = None
    order: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.rows, tuple) or not all(isinstance(r, tuple) for r in self.rows):
            raise TypeError(f"rows must be a tuple of per-rank tuples of runs, got {self.rows!r}")
        for rank, runs in enumerate(self.rows):
            for run in runs:
                _check_run(f"rows[{rank}]", run, 4)
        if self.restored is not None:
            if not isinstance(self.restored, tuple):
                raise TypeError(f"restored must be a tuple of runs or None, got {self.restored!r}")
            for back in self.restored:
                _check_run("restored", back, 5)
        if self.order is not None and (
            not isinstance(self.order, tuple) or not all(type(i) is int for i in self.order)
            or sorted(self.order) != list(range(len(self.order)))
        ):
            raise ValueError(f"order must be None or a permutation of 0..R-1 as a tuple of ints, got {self.order!r}")


def _check_run(name: str, run: object, width: int) -> None:
    if not isinstance(run, tuple) or len(run) != width or not all(type(v) is int for v in run):
        raise TypeError(f"{name} holds {run!r}; each run must be a tuple of {width} ints")
    if run[1] < 0 or run[2] <= run[1]:
        raise ValueError(f"{name} holds {run!r}; a run's tokens [first, stop) must be non-empty and start at 0 or later")


def merged(spans: Sequence[Span]) -> tuple[Span, ...]:
    """Spans sorted by (request, first token), touching ones of a request joined: one form per token set,
    so two sets compare as tuples. Overlapping spans are kept apart (a token held twice shows)."""
    out: list[Span] = []
    for request, first, stop in sorted(spans):
        if out and out[-1][0] == request and out[-1][2] == first:
            out[-1] = (request, out[-1][1], stop)
        else:
            out.append((request, first, stop))
    return tuple(out)


@lru_cache(maxsize=4096)
def strategy_spans(
    lengths: tuple[int, ...], cp_size: int, strategy: str, is_prefilling: tuple[bool, ...] | None
) -> tuple[tuple[Span, ...], ...]:
    """Each rank's tokens under ``strategy``'s layout of the live lengths, as ``merged`` spans (not validated:
    the judge's batch is)."""
    row = strategy_row(strategy)
    if is_prefilling is None or all(is_prefilling):
        ranks = row.rank_spans(lengths, cp_size)
    else:
        if row.mixed_spans is None:
            raise ValueError(f"strategy {strategy!r} lays out prefills only; this batch carries decodes")
        ranks = row.mixed_spans(lengths, is_prefilling, cp_size)
    return tuple(merged(spans) for spans in ranks)


def _expected(lengths: tuple[int, ...], cp_size: int, strategy: str, is_prefilling: tuple[bool, ...] | None,
              order: tuple[int, ...] | None) -> tuple[tuple[Span, ...], ...]:
    """``strategy_spans`` of the batch laid out in ``order`` (None: as given), its requests named as given."""
    if order is None or order == tuple(range(len(lengths))):
        return strategy_spans(lengths, cp_size, strategy, is_prefilling)
    if len(order) != len(lengths):
        raise ValueError(f"the layout's order names {len(order)} requests; the batch has {len(lengths)}")
    flags = None if is_prefilling is None else tuple(is_prefilling[i] for i in order)
    laid = strategy_spans(tuple(lengths[i] for i in order), cp_size, strategy, flags)
    return tuple(merged([(order[j], a, b) for j, a, b in spans]) for spans in laid)


def _text(spans: Sequence[Span]) -> str:
    shown = ", ".join(f"request {i} [{a}, {b})" for i, a, b in spans[:3])
    return shown + (f" and {len(spans) - 3} more" if len(spans) > 3 else "") if spans else "nothing"


def _rows_of(rank: int, runs: tuple[RowRun, ...], capacity: int | None) -> str | None:
    """Why ``runs`` do not tile rank ``rank``'s rows [0, n) from row 0 within ``capacity`` (None: they do)."""
    row = 0
    for request, first, stop, at in sorted(runs, key=lambda run: run[3]):
        if at != row:
            what = "left empty" if at > row else "written twice"
            return f"rank {rank}'s layout puts request {request} [{first}, {stop}) at row {at}: row {min(at, row)} is {what}"
        row = at + stop - first
    if capacity is not None and row > capacity:
        return f"rank {rank}'s layout fills rows [0, {row}); the graph holds {capacity} rows per rank"
    return None


def _read_back(laid: LaidOut, lengths: tuple[int, ...]) -> str | None:
    """Why ``laid.restored`` does not read every token back once from a row that holds it (None: it does)."""
    assert laid.restored is not None
    by_request: dict[int, list[tuple[int, int]]] = {}
    for request, first, stop, rank, at in laid.restored:
        if not 0 <= request < len(lengths) or stop > lengths[request]:
            return f"the layout reads request {request} [{first}, {stop}) back; the batch has no such tokens"
        if not 0 <= rank < len(laid.rows) or not any(
            r == request and a <= first and stop <= b and at - row0 == first - a for r, a, b, row0 in laid.rows[rank]
        ):
            return (f"the layout reads request {request} [{first}, {stop}) back from rank {rank} rows "
                    f"[{at}, {at + stop - first}), which do not hold those tokens")
        by_request.setdefault(request, []).append((first, stop))
    for request, length in enumerate(lengths):
        covered = 0
        for first, stop in sorted(by_request.get(request, ())):
            if first != covered:
                token = min(first, covered)
                twice = first < covered
                return f"the layout reads token {token} of request {request} back {'twice' if twice else 'from no row'}"
            covered = stop
        if covered != length:
            return f"the layout reads token {covered} of request {request} back from no row"
    return None


def layout_mismatch(
    laid: LaidOut,
    *,
    lengths: tuple[int, ...],
    cp_size: int,
    strategy: str,
    is_prefilling: tuple[bool, ...] | None = None,
    capacity: int | None = None,
) -> str | None:
    """Why ``laid`` is not ``strategy``'s layout of the live ``lengths`` on ``cp_size`` ranks within
    ``capacity`` rows per rank (see the module docstring), or None when it is. Memoised: the ranks of one step
    show one layout, and the judge and its fast path both ask."""
    flags = None if is_prefilling is None else tuple(is_prefilling)
    return _mismatch(laid, tuple(lengths), cp_size, strategy, flags, capacity)


@lru_cache(maxsize=1024)
def _mismatch(laid: LaidOut, lengths: tuple[int, ...], cp_size: int, strategy: str, is_prefilling: tuple[bool, ...] | None,
              capacity: int | None) -> str | None:
    if len(laid.rows) != cp_size:
        return f"the layout shows {len(laid.rows)} ranks' rows, not {cp_size}"
    expected = _expected(lengths, cp_size, strategy, is_prefilling, laid.order)
    for rank, runs in enumerate(laid.rows):
        why = _rows_of(rank, runs, capacity)
        if why is not None:
            return why
        held = merged([(request, first, stop) for request, first, stop, _ in runs])
        if held != expected[rank]:
            extra = [s for s in held if s not in expected[rank]]
            missing = [s for s in expected[rank] if s not in held]
            return (f"rank {rank}'s rows hold {_text(extra)} where the {strategy} layout of the live lengths puts "
                    f"{_text(missing)}")
    if laid.restored is not None:
        return _read_back(laid, lengths)
    return None
