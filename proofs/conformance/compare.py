"""One implementation against the spec, case by case: the spec evaluated concretely through Z3 (proofs.engine.evaluate)
on one side, the implementation on the other (any object with the reference's function API: rank_loads,
required_local_tokens, capture_local_tokens, select_replay_bucket), compared under an explicit ``Mode``; a
failure carries every input, the expected and the actual value.

Selection is compared on identical inputs: both sides get the spec's required rows, so a layout bug and a
selection bug are reported separately.

A case that names ``plan`` in its functions (``WHOLE_BATCH``: the edge cases of proofs/conformance/cases.py
``edge_cases``) is also compared whole: the implementation's runner (its ``ReferenceRunner``, built on the
case's capture list with the case's capacities as a table) plans the batch, gates included, and the spec's
admission and replay decide it at every rank (proofs/engine/evaluate.py ``spec_plan``): each rank must admit the
runner's bucket (or fall back with it) and replay exactly the bucket it admitted.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from cpgraph.proofs.engine.evaluate import (
    spec_capture_local_tokens,
    spec_plan,
    spec_rank_loads,
    spec_required_local_tokens,
    spec_select_replay_bucket,
)
from cpgraph.reference.lists import compact


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
        max_padding_factor: int | Fraction,
    ) -> int | None: ...


FUNCTIONS = ("rank_loads", "required_local_tokens", "capture_local_tokens", "select_replay_bucket")
WHOLE_BATCH = (*FUNCTIONS, "plan")  # "plan": the runner's whole-batch decision against the spec's at every rank


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
    max_padding_factor: int | Fraction
    num_tokens: int
    extend_seq_lens: tuple[int, ...]
    capture_num_tokens: tuple[int, ...]
    bucket_local_tokens: Mapping[int, int] = field(default_factory=dict)
    functions: tuple[str, ...] = FUNCTIONS  # which functions this case exercises
    keying: str = "global"  # the runner's graph keying ("plan" only)

    def describe(self) -> str:
        keyed = "" if self.keying == "global" else f", keying={self.keying!r}"
        return (
            f"[{self.source}] cp_size={self.cp_size}, align_size={self.align_size}, strategy={self.strategy!r}, "
            f"max_padding_factor={self.max_padding_factor!r}, num_tokens={self.num_tokens}, "
            f"extend_seq_lens={compact(self.extend_seq_lens)}, capture_num_tokens={compact(self.capture_num_tokens)}, "
            f"bucket_local_tokens={dict(self.bucket_local_tokens)}{keyed}"
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
    rows = spec_required_local_tokens(case.extend_seq_lens, cp_size=case.cp_size, align_size=case.align_size,
                                      strategy=case.strategy)
    found = _compare_layout(impl, case, rows, mode)
    if "select_replay_bucket" in case.functions:
        found.append(_compare_selection(impl, case, rows, mode))
    if "plan" in case.functions:
        found += _compare_plan(impl, case, rows, mode)
    return [m for m in found if m is not None]


def _judged(case: Case, function: str, call: str, expected: object, actual: object, ok: bool,
            why: str) -> Mismatch | None:
    """The mismatch when ``actual`` raised or is not ``ok``, else None."""
    if isinstance(actual, Exception) or not ok:
        reason = f"raised {type(actual).__name__}: {actual}" if isinstance(actual, Exception) else why
        return Mismatch(case, function, call, expected, actual, reason)
    return None


def _compare_layout(impl: Implementation, case: Case, rows: int, mode: Mode) -> list[Mismatch | None]:
    """rank_loads, required_local_tokens and capture_local_tokens (each bucket), where the case exercises them;
    ``rows``: the spec's required rows."""
    p, a, kind, lengths = case.cp_size, case.align_size, case.strategy, case.extend_seq_lens
    out: list[Mismatch | None] = []
    if "rank_loads" in case.functions:
        loads = spec_rank_loads(lengths, cp_size=p, strategy=kind)
        got = _call(impl, "rank_loads", _args=(lengths,), cp_size=p, strategy=kind)
        out.append(_judged(case, "rank_loads", f"rank_loads({lengths}, cp_size={p}, strategy={kind!r})", loads, got,
                           tuple(got) == loads if isinstance(got, (tuple, list)) else False, "loads differ"))
    if "required_local_tokens" in case.functions:
        got = _call(impl, "required_local_tokens", _args=(lengths,), cp_size=p, align_size=a, strategy=kind)
        out.append(_judged(case, "required_local_tokens",
                           f"required_local_tokens({lengths}, cp_size={p}, align_size={a}, strategy={kind!r})",
                           rows, got, _rows_ok(got, rows, mode),
                           "rows differ" if mode is Mode.EXACT else "rows below the spec's"))
    for bucket in case.capture_num_tokens if "capture_local_tokens" in case.functions else ():
        capacity = spec_capture_local_tokens(bucket, cp_size=p, align_size=a, strategy=kind)
        got = _call(impl, "capture_local_tokens", _args=(bucket,), cp_size=p, align_size=a, strategy=kind)
        out.append(_judged(case, "capture_local_tokens",
                           f"capture_local_tokens({bucket}, cp_size={p}, align_size={a}, strategy={kind!r})",
                           capacity, got, _rows_ok(got, capacity, mode),
                           "capacity differs" if mode is Mode.EXACT else "capacity below the spec's"))
    return out


def _compare_selection(impl: Implementation, case: Case, rows: int, mode: Mode) -> Mismatch | None:
    """select_replay_bucket, both sides given the spec's required ``rows`` (a layout bug is reported apart)."""
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
        return _judged(case, "select_replay_bucket", call, chosen, got, got == chosen and type(got) is type(chosen),
                       "bucket differs")
    return _judged(case, "select_replay_bucket", call, chosen, got, _selection_safe(got, case, rows),
                   "bucket breaks captured_bucket, padding_limit or capacity_fit")


def _runner_call(case: Case) -> str:
    rule = "" if case.keying == "local" else f", capture_rule=CaptureRule('table', table={dict(case.bucket_local_tokens)})"
    return (
        f"ReferenceRunner(cp_size={case.cp_size}, capture_num_tokens={compact(case.capture_num_tokens)}, "
        f"align_size={case.align_size}, strategy={case.strategy!r}, max_padding_factor={case.max_padding_factor!r}, "
        f"keying={case.keying!r}{rule}).plan({compact(case.extend_seq_lens)}, num_tokens={case.num_tokens})"
    )


def _impl_plan(impl: Implementation, case: Case) -> object:
    """The implementation's runner's bucket for the case's batch (None: it falls back), or the exception."""
    try:
        runner_type = getattr(impl, "ReferenceRunner")
        rule = None
        if case.keying != "local":
            from cpgraph.reference.runner import CaptureRule

            rule = CaptureRule("table", table=dict(case.bucket_local_tokens))
        runner = runner_type(cp_size=case.cp_size, capture_num_tokens=case.capture_num_tokens, align_size=case.align_size,
                             strategy=case.strategy, max_padding_factor=case.max_padding_factor, keying=case.keying,
                             capture_rule=rule)
        return runner.plan(case.extend_seq_lens, case.num_tokens).bucket
    except Exception as exc:  # reported as the actual value, never hidden
        return exc


def _compare_plan(impl: Implementation, case: Case, rows: int, mode: Mode) -> list[Mismatch | None]:
    """The runner's whole-batch decision against the spec's admission and replay at every rank. EXACT: every
    rank admits and replays the runner's bucket (None: falls back). SAFE: the runner may fall back; a bucket
    it takes must be one the spec admits too (gate open) and safe for the spec's rows."""
    spec = spec_plan(case.extend_seq_lens, num_tokens=case.num_tokens, cp_size=case.cp_size, align_size=case.align_size,
                     strategy=case.strategy, max_padding_factor=case.max_padding_factor,
                     capture_num_tokens=case.capture_num_tokens, bucket_local_tokens=case.bucket_local_tokens,
                     keying=case.keying)
    actual = _impl_plan(impl, case)
    call = _runner_call(case)
    if isinstance(spec, str):
        return [Mismatch(case, "plan", call, spec, actual, "the spec has no decision for this batch")]
    out: list[Mismatch | None] = []
    for r in spec:
        expected = r.admitted
        if r.replayed != r.admitted:
            out.append(Mismatch(case, "plan", f"the spec's replay at rank {r.rank}", r.admitted, r.replayed,
                                "the spec's replay does not run the bucket its admission admitted"))
        if mode is Mode.EXACT or case.keying == "local":
            ok = actual == expected and type(actual) is type(expected)
        else:
            ok = actual is None or (expected is not None and _selection_safe(actual, case, rows))
        out.append(_judged(case, "plan", f"{call} against the spec's admission at rank {r.rank}", expected, actual, ok,
                           "bucket differs" if mode is Mode.EXACT else "bucket the spec would not take"))
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
