"""The invariants by their docs/semantics.md ids, as claims (BoolTerms) over spec terms; proofs/ asserts them.

Safety: rank_consensus, admission_replay, captured_bucket, padding_limit, capacity_fit.
Efficiency: minimal_bucket, no_needless_fallback.

Each of the seven takes the graph keying (spec/keying.py; default ``global``) and reads its columns from
that one table: the capacity table (recorded capacities, or every listed size holding itself) and the
window (``window`` is the window over the key: [n, F*n] under global, and under local only its low end,
the key m, is read: no padding factor). rank_consensus and admission_replay say the same under both.
Layout facts: conservation, per_request_balance (busiest rank holds ceil(L/P)), stated division-free
(exact for integers), so they stay linear for a concrete P and need no fresh variables.

Each invariant's docstring opens with its sentence from the invariant table (reference/invariants.py);
spec/ does not import the reference, so tests/unit/test_spec_invariants.py holds the two equal.
"""

from __future__ import annotations

from collections.abc import Sequence

from cpgraph.spec.logic import And, Implies
from cpgraph.spec.keying import keying as keying_row
from cpgraph.spec.selection import (
    CaptureList,
    Selection,
    Window,
    fits,
    same_selection,
    some_bucket_fits,
    unbounded_window,
    within_padding_limit,
)
from cpgraph.spec.terms import BoolTerm, IntLike, Loads, all_of, any_of, int_term


def _capacities(capture: CaptureList, keying: str) -> CaptureList:
    """The capacity table the keying's selector reads (ValueError for an unknown keying)."""
    return keying_row(keying).capacities(capture)


def _window(window: Window, keying: str) -> Window:
    """The window over the key as the keying reads it: whole under global, its low end only under local."""
    return window if keying_row(keying).windowed else unbounded_window(window.low)


def rank_consensus(selections: Sequence[Selection], keying: str = "global") -> BoolTerm:
    """Every rank decides the same admit and bucket (each rank as its neighbour: the relation is transitive)."""
    keying_row(keying)
    return all_of(same_selection(first, second) for first, second in zip(selections, selections[1:]))


def admission_replay(
    admission: Selection, replay: Selection, keying: str = "global", active: BoolTerm | None = None
) -> BoolTerm:
    """Admitted on a rank => the batch is CP-active, and replay on that rank succeeds, returns the admitted
    bucket and its rows fit (the parts of it this term states: the two decisions are the same, and under a
    gated keying an admitted batch is ``active``, spec/admission.py's cp_active, when it is given)."""
    same = same_selection(admission, replay)
    if active is None or not keying_row(keying).gated:
        return same
    return And(same, Implies(admission.admitted, active))


def captured_bucket(selection: Selection, capture: CaptureList, keying: str = "global") -> BoolTerm:
    """The bucket is in the capture list and has a recorded capacity."""
    capture = _capacities(capture, keying)
    member = any_of(
        And(selection.bucket == b, rec) for b, rec in zip(capture.buckets, capture.recorded)
    )
    return Implies(selection.admitted, member)


def padding_limit(selection: Selection, window: Window, keying: str = "global") -> BoolTerm:
    """The bucket B is within the padding limit: n <= B <= F*n."""
    return Implies(selection.admitted, within_padding_limit(selection.bucket, _window(window, keying)))


def capacity_fit(selection: Selection, capture: CaptureList, rows: IntLike, keying: str = "global") -> BoolTerm:
    """The live layout's rows on every rank fit the chosen bucket's recorded capacity (and a layout a rank shows
    holds exactly its strategy's tokens from row 0, each read back from the row that holds it).

    The term states the counts. The parenthesis is judged on a concrete layout a policy shows
    (reference/laid_out.py, under this id); the spec has no term for a layout's contents."""
    capture = _capacities(capture, keying)
    room = any_of(
        And(selection.bucket == b, rec, c >= rows)
        for b, c, rec in zip(capture.buckets, capture.capacities, capture.recorded)
    )
    return Implies(selection.admitted, room)


def minimal_bucket(
    selection: Selection, capture: CaptureList, window: Window, required: IntLike, keying: str = "global"
) -> BoolTerm:
    """No smaller captured bucket would fit."""
    capture, window = _capacities(capture, keying), _window(window, keying)
    return Implies(
        selection.admitted,
        all_of(
            Implies(fits(capture, i, window, required), selection.bucket <= capture.buckets[i])
            for i in range(len(capture))
        ),
    )


def no_needless_fallback(
    selection: Selection, capture: CaptureList, window: Window, required: IntLike, keying: str = "global"
) -> BoolTerm:
    """If some captured bucket fits, the batch is admitted."""
    capture, window = _capacities(capture, keying), _window(window, keying)
    return Implies(some_bucket_fits(capture, window, required), selection.admitted)


def conservation(loads: Loads, tokens: IntLike) -> BoolTerm:
    """The loads sum to the batch's tokens."""
    return loads.total() == int_term(tokens)


def per_request_balance(loads: Loads, length: IntLike) -> BoolTerm:
    """The busiest rank holds exactly ceil(L/P): every l_r <= ceil(L/P) (P(l_r - 1) < L) and some
    l_r >= ceil(L/P) (P l_r >= L)."""
    p, n = loads.cp_size, int_term(length)
    return And(
        all_of(p * (load - 1) < n for load in loads.loads),
        any_of(p * load >= n for load in loads.loads),
    )
