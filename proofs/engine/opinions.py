"""Second opinions on a proof: the settings (``Opinions``: a second solver, extra z3 seeds) and what they find
about one query (``Note``): a disagreement (cvc5 refutes what z3 proved), a query cvc5 could not decide ("not
cross-checked", with its reason), or an unstable query (a seed changes z3's verdict)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cpgraph.proofs.engine.check import DEFAULT_CVC5_RLIMIT


CROSS_CHECKERS = ("cvc5",)


@dataclass(frozen=True)
class Opinions:
    """Second opinions on every query: a second solver (``cross_check``: None or "cvc5", with its rlimit)
    and ``seeds`` extra z3 runs under random seeds 1..seeds (0 = off)."""

    cross_check: str | None = None
    seeds: int = 0
    cvc5_rlimit: int = DEFAULT_CVC5_RLIMIT

    def __post_init__(self) -> None:
        if self.cross_check is not None and self.cross_check not in CROSS_CHECKERS:
            raise ValueError(f"cross_check must be None or one of {', '.join(CROSS_CHECKERS)}; got {self.cross_check!r}")
        if not isinstance(self.seeds, int) or isinstance(self.seeds, bool) or self.seeds < 0:
            raise ValueError(f"seeds must be an int >= 0, got {self.seeds!r}")
        if not isinstance(self.cvc5_rlimit, int) or isinstance(self.cvc5_rlimit, bool) or self.cvc5_rlimit < 1:
            raise ValueError(f"cvc5_rlimit must be an int >= 1, got {self.cvc5_rlimit!r}")

    @property
    def active(self) -> bool:
        return self.cross_check is not None or self.seeds > 0


NO_OPINIONS = Opinions()


class NoteKind(str, enum.Enum):
    DISAGREEMENT = "disagreement"  # the second solver refutes a query z3 proved: a failure
    NOT_CROSS_CHECKED = "not_cross_checked"  # the second solver gave up (its reason): reported, not a failure
    UNSTABLE = "unstable"  # some z3 seed gives another verdict than seed 0: a failure


@dataclass(frozen=True)
class Note:
    """One second-opinion finding about one query (``label`` as in a Failure)."""

    label: str
    kind: NoteKind
    detail: str

    @property
    def fails(self) -> bool:
        return self.kind is not NoteKind.NOT_CROSS_CHECKED
