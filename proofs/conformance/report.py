"""What the bulk harness reports: each family's counts and first mismatches (``Family`` while it runs, a frozen
``FamilyReport`` after), the whole run's ``BulkReport`` and the error that shows it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class BulkMismatch:
    family: str
    path: str
    function: str
    inputs: str
    expected: object
    actual: object

    def describe(self) -> str:
        return (f"[{self.family}] {self.path}.{self.function}: expected (spec) {self.expected!r}, actual "
                f"{self.actual!r}\n  inputs: {self.inputs}")


@dataclass(frozen=True)
class FamilyReport:
    family: str
    cases: int
    comparisons: int
    seconds: float
    mismatches: int
    examples: tuple[BulkMismatch, ...]
    not_compared: tuple[str, ...] = ()  # "path.function: why" for a side a path does not provide


@dataclass(frozen=True)
class BulkReport:
    families: tuple[FamilyReport, ...]
    mirror_checks: int  # mirror-vs-spec comparisons made first (validate_mirror)

    @property
    def cases(self) -> int:
        return sum(f.cases for f in self.families)

    @property
    def comparisons(self) -> int:
        return sum(f.comparisons for f in self.families)

    @property
    def seconds(self) -> float:
        return sum(f.seconds for f in self.families)

    @property
    def mismatches(self) -> int:
        return sum(f.mismatches for f in self.families)

    def summary(self) -> str:
        lines = [f"{self.cases} cases, {self.comparisons} comparisons in {self.seconds:.1f} s "
                 f"({self.cases / max(self.seconds, 1e-9):,.0f} cases/s); mirror checked against the spec on "
                 f"{self.mirror_checks} inputs"]
        for f in self.families:
            lines.append(f"  {f.family}: {f.cases} cases, {f.comparisons} comparisons, {f.seconds:.1f} s, "
                         f"{f.mismatches} mismatches" + (f"; not compared: {'; '.join(f.not_compared)}" if f.not_compared else ""))
        return "\n".join(lines)


class BulkConformanceError(AssertionError):
    """Some decision path disagrees with the spec's mirror; the message shows every family's first mismatches."""

    def __init__(self, report: BulkReport) -> None:
        self.report = report
        shown = [m.describe() for f in report.families for m in f.examples[:5]]
        super().__init__(f"{report.mismatches} mismatch(es) in {report.cases} cases\n{report.summary()}\n" + "\n".join(shown))


class Family:
    """Counts and the first mismatches of one family."""

    MAX_EXAMPLES = 20

    def __init__(self, name: str) -> None:
        self.name = name
        self.cases = 0
        self.comparisons = 0
        self.mismatches = 0
        self.examples: list[BulkMismatch] = []
        self.not_compared: list[str] = []

    def judge(self, path: str, function: str, expected: object, actual: object, inputs: Callable[[], str]) -> None:
        self.comparisons += 1
        if actual == expected and type(actual) is type(expected):
            return
        self.mismatches += 1
        if len(self.examples) < self.MAX_EXAMPLES:
            self.examples.append(BulkMismatch(self.name, path, function, inputs(), expected, actual))

    def report(self, seconds: float) -> FamilyReport:
        return FamilyReport(self.name, self.cases, self.comparisons, seconds, self.mismatches, tuple(self.examples),
                            tuple(self.not_compared))


def attempt(function: Callable[..., object], *args: object, **kwargs: object) -> object:
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # a crash is a value the spec never gives: reported, never hidden
        return exc

