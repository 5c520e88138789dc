"""Bucket selection, stated declaratively (least fitting bucket, or none) and as upstream's scan.

Bucket selection, stated twice: declaratively (the least element of the fitting set, or none) and as
upstream's operational scan of the sorted capture list (skip below n, stop at the first above F*n, skip a
bucket with no recorded capacity). proofs/theorems/selection.py shows the two agree.

A bucket B fits when n <= B <= F*n (both ends inclusive), its capacity is recorded and is >= required.
The padding window [n, F*n] is a record of its own so proofs can quantify over every F at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import z3

from cpgraph.spec.logic import And, If, Implies, Or
from cpgraph.spec.arith import floor_div
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, all_of, any_of, check_index, int_term


@dataclass(frozen=True)
class CaptureList:
    """Captured buckets in list order with their capacities; ``recorded[i]`` false = missing capacity."""

    buckets: tuple[IntTerm, ...]
    capacities: tuple[IntTerm, ...]
    recorded: tuple[BoolTerm, ...]

    def __post_init__(self) -> None:
        if not len(self.buckets) == len(self.capacities) == len(self.recorded):
            raise ValueError(
                f"buckets, capacities and recorded must have one entry per bucket, got lengths "
                f"{len(self.buckets)}, {len(self.capacities)}, {len(self.recorded)}"
            )

    def __len__(self) -> int:
        return len(self.buckets)


def symbolic_capture_list(length: int, name: str) -> CaptureList:
    """``length`` buckets ``{name}.b{i}`` with capacities ``{name}.c{i}`` and flags ``{name}.rec{i}``."""
    if length < 0:
        raise ValueError(f"length must be an int >= 0, got {length}")
    return CaptureList(
        tuple(z3.Int(f"{name}.b{i}") for i in range(length)),
        tuple(z3.Int(f"{name}.c{i}") for i in range(length)),
        tuple(z3.Bool(f"{name}.rec{i}") for i in range(length)),
    )


# Values no reader may observe are free, unconstrained variables rather than a constant: the capacity written
# for a bucket with no recorded capacity (every reader conjoins the recorded flag, or membership for a
# CaptureSet), and the bucket of a decision that is not admitted (every reader guards it by admitted). A proof
# then holds for every value they could take, so "never read" is proved, not argued.
UNRECORDED_CAPACITY = z3.Int("unrecorded.capacity")
UNADMITTED_BUCKET = z3.Int("unadmitted.bucket")


def concrete_capture_list(
    capture_num_tokens: Sequence[int], bucket_local_tokens: Mapping[int, int | None]
) -> CaptureList:
    """A concrete capture list; a bucket absent from ``bucket_local_tokens`` (or None) has no capacity."""
    caps = [bucket_local_tokens.get(b) for b in capture_num_tokens]
    return CaptureList(
        tuple(z3.IntVal(b) for b in capture_num_tokens),
        tuple(UNRECORDED_CAPACITY if c is None else z3.IntVal(c) for c in caps),
        tuple(z3.BoolVal(c is not None) for c in caps),
    )


def capture_list_is_sorted(capture: CaptureList) -> BoolTerm:
    """Positive and strictly increasing: the order the scan relies on."""
    b = capture.buckets
    return all_of(([b[0] >= 1] if b else []) + [b[i] < b[i + 1] for i in range(len(b) - 1)])


def capture_list_is_well_formed(capture: CaptureList) -> BoolTerm:
    """Sorted, and every recorded capacity is >= 0."""
    return And(capture_list_is_sorted(capture), all_of(c >= 0 for c in capture.capacities))


@dataclass(frozen=True)
class Window:
    """The padding window: buckets B with low <= B <= high are within the padding limit; ``high`` None is no
    upper end (the local keying has no padding factor: every size at or above the key is in it)."""

    low: IntTerm
    high: IntTerm | None
    holds: BoolTerm = z3.BoolVal(True)  # facts defining ``high`` (a rational factor's floor)


def unbounded_window(low: IntLike) -> Window:
    """[low, infinity): every bucket at or above ``low``."""
    return Window(int_term(low), None)


def at_or_below_top(bucket: IntLike, window: Window) -> BoolTerm:
    """B <= high (true when the window has no upper end)."""
    return z3.BoolVal(True) if window.high is None else int_term(bucket) <= window.high


def above_top(bucket: IntLike, window: Window) -> BoolTerm:
    """B > high (false when the window has no upper end): where the scan stops."""
    return z3.BoolVal(False) if window.high is None else int_term(bucket) > window.high


def padding_window(num_tokens: IntLike, max_padding_factor: IntLike | Fraction, name: str = "window") -> Window:
    """[n, F*n], both ends inclusive (F = ``max_padding_factor``). A rational F = a/b (a Fraction, b > 1)
    gives the integer bound floor(a*n/b) (a bucket is an integer, so B <= F*n iff B <= floor(F*n)) with
    an explicit quotient ``{name}.high.q``; an int or a z3 term gives the product F*n."""
    n = int_term(num_tokens)
    if isinstance(max_padding_factor, Fraction):
        if max_padding_factor < 1:
            raise ValueError(f"max_padding_factor must be >= 1, got {max_padding_factor}")
        if max_padding_factor.denominator == 1:
            return Window(n, max_padding_factor.numerator * n)
        high = floor_div(max_padding_factor.numerator * n, max_padding_factor.denominator, f"{name}.high")
        return Window(n, high.value, high.holds)
    return Window(n, int_term(max_padding_factor) * n)


@dataclass(frozen=True)
class Selection:
    """A decision: replay ``bucket`` when ``admitted``, else run eagerly (``bucket`` is then meaningless)."""

    admitted: BoolTerm
    bucket: IntTerm


def within_padding_limit(bucket: IntLike, window: Window) -> BoolTerm:
    """n <= B <= F*n (low <= B alone for a window with no upper end)."""
    b = int_term(bucket)
    return And(window.low <= b, at_or_below_top(b, window))


def has_room(capture: CaptureList, index: int, required: IntLike) -> BoolTerm:
    """Bucket ``index`` has a recorded capacity >= required (a missing capacity is never room)."""
    check_index("index", index, len(capture), f"a bucket of a {len(capture)}-bucket capture list")
    return And(capture.recorded[index], capture.capacities[index] >= required)


def fits(capture: CaptureList, index: int, window: Window, required: IntLike) -> BoolTerm:
    """Bucket ``index`` is in the fitting set: within the padding limit and with room (``has_room`` checks
    the index)."""
    room = has_room(capture, index, required)
    return And(within_padding_limit(capture.buckets[index], window), room)


def some_bucket_fits(capture: CaptureList, window: Window, required: IntLike) -> BoolTerm:
    """The fitting set is non-empty."""
    return any_of(fits(capture, i, window, required) for i in range(len(capture)))


def is_least_fitting(selection: Selection, capture: CaptureList, window: Window, required: IntLike) -> BoolTerm:
    """The declarative relation: admitted iff the fitting set is non-empty, and then the bucket is its least
    element (a member that is <= every member)."""
    members = [fits(capture, i, window, required) for i in range(len(capture))]
    b = capture.buckets
    chosen_is_member = any_of(And(f, selection.bucket == b[i]) for i, f in enumerate(members))
    chosen_is_least = all_of(Implies(f, selection.bucket <= b[i]) for i, f in enumerate(members))
    return And(
        selection.admitted == any_of(members),
        Implies(selection.admitted, And(chosen_is_member, chosen_is_least)),
    )


def scan_step(capture: CaptureList, index: int, window: Window, required: IntLike, rest: Selection) -> Selection:
    """One step of the scan at bucket ``index``, given the decision ``rest`` of scanning the buckets after
    it: below n, defer to the rest; above F*n, stop with none; with room, take it; else defer (``has_room``
    checks the index)."""
    room = has_room(capture, index, required)
    b = capture.buckets[index]
    below, above = b < window.low, above_top(b, window)
    admitted = If(below, rest.admitted, If(above, z3.BoolVal(False), Or(room, rest.admitted)))
    bucket = If(below, rest.bucket, If(above, UNADMITTED_BUCKET, If(room, b, rest.bucket)))
    return Selection(admitted, bucket)


NO_SELECTION = Selection(z3.BoolVal(False), UNADMITTED_BUCKET)  # the scan of an empty list: run eagerly


def scan_select(capture: CaptureList, window: Window, required: IntLike) -> Selection:
    """Upstream's scan of the sorted list: skip a bucket below n, stop (none) at the first above F*n, take
    the first with room, skip one without (including a missing capacity). Built as a fold of scan_step
    from the last bucket back to the first."""
    chosen = NO_SELECTION
    for i in reversed(range(len(capture))):
        chosen = scan_step(capture, i, window, required, chosen)
    return chosen


@dataclass(frozen=True)
class CaptureSet:
    """A capture list of any length, as functions of the bucket value (buckets are distinct, so a value
    names its entry): ``member(b)``, ``capacity(b)``, ``recorded(b)``. Quantified claims over a CaptureSet
    speak of every list length at once."""

    member: Callable[[IntTerm], BoolTerm]
    capacity: Callable[[IntTerm], IntTerm]
    recorded: Callable[[IntTerm], BoolTerm]


def symbolic_capture_set(name: str) -> CaptureSet:
    """Uninterpreted ``{name}.member``, ``{name}.capacity`` and ``{name}.recorded``: any set of buckets."""
    ints, bools = z3.IntSort(), z3.BoolSort()
    return CaptureSet(
        z3.Function(f"{name}.member", ints, bools),
        z3.Function(f"{name}.capacity", ints, ints),
        z3.Function(f"{name}.recorded", ints, bools),
    )


EMPTY_CAPTURE_SET = CaptureSet(lambda b: z3.BoolVal(False), lambda b: UNRECORDED_CAPACITY, lambda b: z3.BoolVal(False))


def with_head(capture: CaptureSet, bucket: IntTerm, capacity: IntTerm, recorded: BoolTerm) -> CaptureSet:
    """The set with one more bucket in front (its own capacity and recorded flag)."""
    return CaptureSet(
        lambda b: Or(b == bucket, capture.member(b)),
        lambda b: If(b == bucket, capacity, capture.capacity(b)),
        lambda b: If(b == bucket, recorded, capture.recorded(b)),
    )


def below_every_member(bucket: IntTerm, capture: CaptureSet) -> BoolTerm:
    """``bucket`` is smaller than every bucket of the set (the head of a sorted list)."""
    x = z3.Int("x")
    return z3.ForAll([x], Implies(capture.member(x), x > bucket))


def fits_in_set(capture: CaptureSet, bucket: IntTerm, window: Window, required: IntLike) -> BoolTerm:
    """``bucket`` is in the set's fitting set: a member, within the padding limit, with recorded room."""
    return And(
        capture.member(bucket),
        within_padding_limit(bucket, window),
        capture.recorded(bucket),
        capture.capacity(bucket) >= required,
    )


def is_least_fitting_in_set(selection: Selection, capture: CaptureSet, window: Window, required: IntLike) -> BoolTerm:
    """The declarative relation over a set of any size: admitted iff some bucket fits, and then the bucket
    fits and is <= every fitting bucket."""
    x = z3.Int("x")
    return And(
        selection.admitted == z3.Exists([x], fits_in_set(capture, x, window, required)),
        Implies(
            selection.admitted,
            And(
                fits_in_set(capture, selection.bucket, window, required),
                z3.ForAll([x], Implies(fits_in_set(capture, x, window, required), selection.bucket <= x)),
            ),
        ),
    )


def same_selection(first: Selection, second: Selection) -> BoolTerm:
    """Same admit verdict, and the same bucket when admitted."""
    return And(first.admitted == second.admitted, Implies(first.admitted, first.bucket == second.bucket))
