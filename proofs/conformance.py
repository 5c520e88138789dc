"""The one conformance harness: an implementation against the spec on concrete inputs.

Inputs come from three sources: the spec's clause edges drawn by Z3 (proofs.boundaries), exhaustive small
domains, and Hypothesis (``case_strategy``). For every case the harness runs both sides, the spec
evaluated concretely (proofs.evaluate) and the implementation (any object with the reference's function
API: rank_loads, required_local_tokens, capture_local_tokens, select_replay_bucket), compares them under
an explicit ``Mode``, and fails with a message that carries every input, the expected and the actual value.

Selection is compared on identical inputs: both sides get the spec's required rows, so a layout bug and a
selection bug are reported separately.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import hypothesis.strategies as st

from cpgraph import reference
from cpgraph.proofs.boundaries import boundary_cases
from cpgraph.proofs.evaluate import (
    spec_capture_local_tokens,
    spec_rank_loads,
    spec_required_local_tokens,
    spec_select_replay_bucket,
)


class Implementation(Protocol):
    """What the harness calls: the reference's public function API (a module or an object)."""

    def rank_loads(self, extend_seq_lens: Any, *, cp_size: Any, strategy: Any = ...) -> tuple[int, ...]: ...

    def required_local_tokens(
        self, extend_seq_lens: Any, *, cp_size: Any, align_size: Any, strategy: Any = ...
    ) -> int: ...

    def capture_local_tokens(self, num_tokens: Any, *, cp_size: Any, align_size: Any, strategy: Any = ...) -> int: ...

    def select_replay_bucket(
        self,
        *,
        num_tokens: int,
        required_local_tokens: int,
        capture_num_tokens: Sequence[int],
        bucket_local_tokens: Mapping[int, int | None],
        max_padding_factor: int,
    ) -> int | None: ...


FUNCTIONS = ("rank_loads", "required_local_tokens", "capture_local_tokens", "select_replay_bucket")


class Mode(str, enum.Enum):
    """How actual values are judged against the spec's.

    EXACT: every value equals the spec's (a drop-in replacement of the reference).
    SAFE: loads equal; rows and capacities may be larger (conservative); a selected bucket must be
    captured, within the padding limit and have a recorded capacity >= the spec's required rows, and a
    fallback is allowed (efficiency is not judged).
    """

    EXACT = "exact"
    SAFE = "safe"


@dataclass(frozen=True)
class Case:
    """One concrete input to every function under test."""

    source: str  # where it came from: "boundary: <clause>", "exhaustive", "hypothesis", ...
    cp_size: int
    align_size: int
    strategy: str
    max_padding_factor: int
    num_tokens: int
    extend_seq_lens: tuple[int, ...]
    capture_num_tokens: tuple[int, ...]
    bucket_local_tokens: Mapping[int, int] = field(default_factory=dict)
    functions: tuple[str, ...] = FUNCTIONS  # which functions this case exercises

    def describe(self) -> str:
        return (
            f"[{self.source}] cp_size={self.cp_size}, align_size={self.align_size}, strategy={self.strategy!r}, "
            f"max_padding_factor={self.max_padding_factor}, num_tokens={self.num_tokens}, "
            f"extend_seq_lens={self.extend_seq_lens}, capture_num_tokens={self.capture_num_tokens}, "
            f"bucket_local_tokens={dict(self.bucket_local_tokens)}"
        )


@dataclass(frozen=True)
class Mismatch:
    """One function whose actual value the mode rejects."""

    case: Case
    function: str
    call: str
    expected: object
    actual: object
    why: str

    def describe(self) -> str:
        return (
            f"{self.function}: {self.why}\n  inputs: {self.case.describe()}\n  call: {self.call}\n"
            f"  expected (spec): {self.expected!r}\n  actual: {self.actual!r}"
        )


class ConformanceError(AssertionError):
    """The implementation disagrees with the spec; the message lists every mismatch (inputs, expected,
    actual)."""

    def __init__(self, mismatches: Sequence[Mismatch], checked: int, mode: Mode) -> None:
        self.mismatches = tuple(mismatches)
        shown = "\n".join(m.describe() for m in mismatches[:10])
        more = f"\n... and {len(mismatches) - 10} more" if len(mismatches) > 10 else ""
        super().__init__(f"{len(mismatches)} mismatch(es) in {checked} cases (mode {mode.value}):\n{shown}{more}")


def _call(impl: Implementation, function: str, **kwargs: Any) -> object:
    try:
        return getattr(impl, function)(*kwargs.pop("_args", ()), **kwargs)
    except Exception as exc:  # the harness reports a crash as an actual value, never hides it
        return exc


def compare(impl: Implementation, case: Case, *, mode: Mode = Mode.EXACT) -> list[Mismatch]:
    """Run the spec and ``impl`` on ``case``; the mismatches under ``mode`` (empty when they conform)."""
    p, a, kind, lengths = case.cp_size, case.align_size, case.strategy, case.extend_seq_lens
    out: list[Mismatch] = []

    def judge(function: str, call: str, expected: object, actual: object, ok: bool, why: str) -> None:
        if isinstance(actual, Exception) or not ok:
            reason = f"raised {type(actual).__name__}: {actual}" if isinstance(actual, Exception) else why
            out.append(Mismatch(case, function, call, expected, actual, reason))

    if "rank_loads" in case.functions:
        loads = spec_rank_loads(lengths, cp_size=p, strategy=kind)
        got = _call(impl, "rank_loads", _args=(lengths,), cp_size=p, strategy=kind)
        judge("rank_loads", f"rank_loads({lengths}, cp_size={p}, strategy={kind!r})", loads, got,
              tuple(got) == loads if isinstance(got, (tuple, list)) else False, "loads differ")

    rows = spec_required_local_tokens(lengths, cp_size=p, align_size=a, strategy=kind)
    if "required_local_tokens" in case.functions:
        got = _call(impl, "required_local_tokens", _args=(lengths,), cp_size=p, align_size=a, strategy=kind)
        judge("required_local_tokens",
              f"required_local_tokens({lengths}, cp_size={p}, align_size={a}, strategy={kind!r})",
              rows, got, _rows_ok(got, rows, mode), "rows differ" if mode is Mode.EXACT else "rows below the spec's")

    for bucket in case.capture_num_tokens if "capture_local_tokens" in case.functions else ():
        capacity = spec_capture_local_tokens(bucket, cp_size=p, align_size=a, strategy=kind)
        got = _call(impl, "capture_local_tokens", _args=(bucket,), cp_size=p, align_size=a, strategy=kind)
        judge("capture_local_tokens", f"capture_local_tokens({bucket}, cp_size={p}, align_size={a}, strategy={kind!r})",
              capacity, got, _rows_ok(got, capacity, mode),
              "capacity differs" if mode is Mode.EXACT else "capacity below the spec's")

    if "select_replay_bucket" not in case.functions:
        return out
    chosen = spec_select_replay_bucket(
        num_tokens=case.num_tokens,
        required_local_tokens=rows,
        capture_num_tokens=case.capture_num_tokens,
        bucket_local_tokens=case.bucket_local_tokens,
        max_padding_factor=case.max_padding_factor,
    )
    got = _call(
        impl,
        "select_replay_bucket",
        num_tokens=case.num_tokens,
        required_local_tokens=rows,
        capture_num_tokens=case.capture_num_tokens,
        bucket_local_tokens=dict(case.bucket_local_tokens),
        max_padding_factor=case.max_padding_factor,
    )
    call = (
        f"select_replay_bucket(num_tokens={case.num_tokens}, required_local_tokens={rows}, "
        f"capture_num_tokens={case.capture_num_tokens}, bucket_local_tokens={dict(case.bucket_local_tokens)}, "
        f"max_padding_factor={case.max_padding_factor})"
    )
    if mode is Mode.EXACT:
        judge("select_replay_bucket", call, chosen, got, got == chosen and type(got) is type(chosen), "bucket differs")
    else:
        judge("select_replay_bucket", call, chosen, got, _selection_safe(got, case, rows),
              "bucket breaks captured_bucket, padding_limit or capacity_fit")
    return out


def _rows_ok(actual: object, expected: int, mode: Mode) -> bool:
    if not isinstance(actual, int) or isinstance(actual, bool):
        return False
    return actual == expected if mode is Mode.EXACT else actual >= expected


def _selection_safe(actual: object, case: Case, required: int) -> bool:
    if actual is None:
        return True
    if not isinstance(actual, int) or isinstance(actual, bool):
        return False
    n, f = case.num_tokens, case.max_padding_factor
    capacity = case.bucket_local_tokens.get(actual)
    return actual in case.capture_num_tokens and n <= actual <= f * n and capacity is not None and capacity >= required


def check_conformance(impl: Implementation, cases: Iterable[Case], *, mode: Mode = Mode.EXACT) -> int:
    """Compare every case; raise ConformanceError with every mismatch, else return the number checked."""
    mismatches: list[Mismatch] = []
    checked = 0
    for case in cases:
        checked += 1
        mismatches.extend(compare(impl, case, mode=mode))
    if mismatches:
        raise ConformanceError(mismatches, checked, mode)
    return checked


# -- case sources ----------------------------------------------------------------------------------------------

def boundary_conformance_cases(
    cp_sizes: Iterable[int], *, strategies: Sequence[str] = reference.STRATEGIES, max_padding_factor: int = 2,
    max_requests: int = 3, max_tokens: int = 4096,
) -> Iterator[Case]:
    """The Z3-drawn clause edges (proofs.boundaries) for every cp_size and strategy."""
    for p in cp_sizes:
        for kind in strategies:
            for edge in boundary_cases(
                cp_size=p, max_padding_factor=max_padding_factor, max_requests=max_requests,
                max_tokens=max_tokens, strategy=kind,
            ):
                yield Case(
                    f"boundary: {edge.clause}", p, edge.align_size, kind, edge.max_padding_factor, edge.num_tokens,
                    edge.extend_seq_lens, edge.capture_num_tokens, edge.bucket_local_tokens,
                )


def exhaustive_layout_cases(max_cp_size: int = 4, *, strategies: Sequence[str] = reference.STRATEGIES) -> Iterator[Case]:
    """Every cp_size <= ``max_cp_size``; every single length 1..4P+1 and every pair of lengths 1..2P+1; the
    capture list [n, 2n] with upstream's captured capacities."""
    for p in range(1, max_cp_size + 1):
        for kind in strategies:
            a = reference.default_align_size(cp_size=p, strategy=kind)
            batches: list[tuple[int, ...]] = [(x,) for x in range(1, 4 * p + 2)]
            batches += [tuple(pair) for pair in itertools.product(range(1, 2 * p + 2), repeat=2)]
            for lengths in batches:
                n = sum(lengths)
                buckets = (n, 2 * n)
                caps = {b: reference.capture_local_tokens(b, cp_size=p, align_size=a, strategy=kind) for b in buckets}
                yield Case("exhaustive layout", p, a, kind, 2, n, tuple(lengths), buckets, caps)


def exhaustive_selection_cases(*, max_bucket: int = 5, max_list_length: int = 3) -> Iterator[Case]:
    """Every sorted capture list over 1..``max_bucket`` of up to ``max_list_length`` buckets, every capacity
    in {missing, 1, 2} per bucket, n in {2, 3}, F in {1, 2}, for one request (P = 1, required rows = n
    aligned to 1): the selection's every branch (below n, in the window, above F*n, missing, short)."""
    for k in range(1, max_list_length + 1):
        for buckets in itertools.combinations(range(1, max_bucket + 1), k):
            for caps in itertools.product((None, 1, 2), repeat=k):
                table = {b: c for b, c in zip(buckets, caps) if c is not None}
                for n in (2, 3):
                    for f in (1, 2):
                        yield Case(
                            "exhaustive selection", 1, 1, "zigzag", f, n, (n,), tuple(buckets), table,
                            functions=("select_replay_bucket",),
                        )


@st.composite
def case_strategy(draw: st.DrawFn, *, max_cp_size: int = 16, max_length: int = 3000) -> Case:
    """A random Case: a batch, a sorted capture list around its token count, capacities (some missing,
    some short), a padding factor."""
    p = draw(st.integers(1, max_cp_size), label="cp_size")
    kind = draw(st.sampled_from(reference.STRATEGIES), label="strategy")
    a = draw(st.sampled_from((reference.default_align_size(cp_size=p, strategy=kind), 1, 8)), label="align_size")
    lengths = tuple(draw(st.lists(st.integers(0, max_length), min_size=1, max_size=4), label="extend_seq_lens"))
    n = max(1, sum(lengths))
    f = draw(st.integers(1, 3), label="max_padding_factor")
    buckets = draw(st.lists(st.integers(1, 3 * n + 2), min_size=1, max_size=6, unique=True), label="buckets")
    table: dict[int, int] = {}
    for b in sorted(buckets):
        if draw(st.booleans(), label=f"recorded[{b}]"):
            table[b] = draw(st.integers(0, max(1, 2 * n // p + 2 * a)), label=f"capacity[{b}]")
    return Case("hypothesis", p, a, kind, f, n, lengths, tuple(sorted(buckets)), table)
