"""The one violation record of every subject: a minimised finding (``Violation``) holding what every finding
shares (the invariant, why, where the code decides, when it was found, its kind, whether it is only
information) and the subject's own witness, a frozen payload that renders itself: a prefill batch with every
rank's answers (report.py ``BatchWitness``), graph-path steps with their configuration and answers
(subjects/path_violation.py ``PathWitness``), an EP step (subjects/ep_steps.py ``EpWitness``).

The record heads the finding (verdict.py's one headline), the witness gives the lines between the headline and
``why``, so a batch finding, a path finding and an EP finding read alike in text, JSON, Markdown and JUnit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from cpgraph.check.verdict import headline
from cpgraph.reference.invariants import INVARIANT_TABLE


class Witness(Protocol):
    """A subject's witness of a finding: ``where`` it broke (the subject's name in a headline), ``column``
    (its sentence column in reference/invariants.py), the text's lines, a one-line form, its JSON."""

    @property
    def where(self) -> str: ...

    @property
    def column(self) -> str: ...

    def lines(self) -> list[str]:
        """The lines between the headline and ``why``."""
        ...

    def footer(self, found_after: int) -> list[str]:
        """The lines after ``why`` and the citations (how it was found)."""
        ...

    def trailer(self) -> str:
        """Text after the bounded lines (a policy's traceback), or ''."""
        ...

    def short(self) -> str:
        """The witness on one line (a table's cell, a verdict diff's row)."""
        ...

    def to_json(self) -> dict[str, Any]: ...


MAX_LINES = 15  # a batch finding's text (its witness bounds its own rank lines)
DECIDED_SHOWN = 3  # a batch finding's text shows at most this many decided-at lines


@dataclass(frozen=True)
class Violation:
    """The minimised violation of one invariant on one subject (module docstring). A witness's own fields
    read through the record (``v.batch``, ``v.answers``, ``v.steps``, ``v.config``, ``v.mode``, ...)."""

    invariant: str
    why: str
    witness: Any  # a Witness: BatchWitness, PathWitness or EpWitness
    found_after: int  # cases checked when it was first seen
    decided_at: tuple[str, ...] = ()  # where the code decides (file:line), when the subject can say
    kind: str = ""  # a finer name inside the invariant ('token_mismatch', 'hang', 'chunk'), when the subject has one
    info: bool = False  # information, not a violation (an EP note)
    minimised: bool = True  # False: reported as found (the policy answered differently when asked again, or a note)

    def __getattr__(self, name: str) -> Any:
        # only called when the record has no such attribute: the witness's fields are the record's too
        if name.startswith("__") or name == "witness":
            raise AttributeError(name)
        try:
            return getattr(self.witness, name)
        except AttributeError:
            raise AttributeError(f"{type(self.witness).__name__} finding has no attribute {name!r}") from None

    @property
    def subject(self) -> str:
        """The invariant table's column this finding is stated in ('batch_global', 'graph_path', 'ep_step', ...)."""
        column: str = self.witness.column
        return column

    @property
    def where(self) -> str:
        where: str = self.witness.where
        return where

    @property
    def cost(self) -> str:
        """'correctness' or 'speed' (the table's ``costs``)."""
        return INVARIANT_TABLE[self.invariant].costs

    @property
    def detail(self) -> str:
        return self.why

    def headline(self) -> str:
        return headline(self.invariant, self.where, self.subject, kind=self.kind, info=self.info)

    def short(self) -> str:
        shown: str = self.witness.short()
        return shown

    def text(self) -> str:
        """The headline, the witness, why, where the code decides, how it was found."""
        w = self.witness
        bounded = getattr(w, "bounded", False)
        decided = [f"  decided at: {d}" for d in self.decided_at]
        if bounded and len(decided) > DECIDED_SHOWN:  # a batch's text stays within MAX_LINES: the JSON lists every line
            decided = [*decided[:DECIDED_SHOWN - 1], f"  decided at: ... and {len(decided) - DECIDED_SHOWN + 1} more lines "
                       "that ran (--format json lists them)"]
        lines = [self.headline(), *w.lines(), f"  why: {self.why}", *decided, *w.footer(self.found_after)]
        trailer: str = w.trailer()
        return "\n".join(lines[:MAX_LINES] if bounded else lines) + (f"\n{trailer}" if trailer else "")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "invariant": self.invariant, "subject": self.subject, "path": self.where, "cost": self.cost, "why": self.why,
            "detail": self.why, "kind": self.kind, "info": self.info, "decided_at": list(self.decided_at),
            "found_after": self.found_after, "minimised": self.minimised,
        }
        data.update(self.witness.to_json())
        return data


__all__ = ["MAX_LINES", "Violation", "Witness"]
