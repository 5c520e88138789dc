"""The invariants as one table: id, kind and sentence, stated once for check, review, reports and spec.

Each id is stated for both graph keyings of reference/keying.py: ``sentence`` over the global key n (a
bucket of n tokens, sglang) and ``local_sentence`` over the local key m (a size of rank-local rows,
vLLM 0.29 on). The ids, kinds and judges are the same under both.

Every checker, report, review and spec docstring takes an invariant's id and sentence from here; the
concrete judge of each id over a batch's per-rank answers is registered against the same ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, Mapping

Kind = Literal["safety", "efficiency"]


@dataclass(frozen=True)
class Invariant:
    """One invariant: its stable id, whether breaking it crashes (safety) or wastes (efficiency), and
    the one sentence that states it."""

    id: str
    kind: Kind
    sentence: str
    local_sentence: str

    def stated(self, keying: str = "global") -> str:
        """The sentence under ``keying`` ('global' or 'local')."""
        return self.local_sentence if keying == "local" else self.sentence


INVARIANT_TABLE: Final[Mapping[str, Invariant]] = MappingProxyType(
    {
        row.id: row
        for row in (
            Invariant(
                "rank_consensus", "safety", "every rank decides the same admit and bucket",
                "every rank decides the same admit and size",
            ),
            Invariant(
                "admission_replay",
                "safety",
                "admitted on a rank => replay on that rank succeeds, returns the admitted bucket and its rows fit",
                "admitted on a rank => replay on that rank succeeds under the size admission chose, and its rows fit",
            ),
            Invariant(
                "captured_bucket", "safety", "the bucket is in the capture list and has a recorded capacity",
                "the size is in the capture list (a size s holds s rows on every rank)",
            ),
            Invariant(
                "padding_limit", "safety", "the bucket B is within the padding limit: n <= B <= F*n",
                "the size holds the key: m <= s, m the largest rank-local rows (no padding window)",
            ),
            Invariant(
                "capacity_fit",
                "safety",
                "the live layout's rows on every rank fit the chosen bucket's recorded capacity",
                "the live layout's rows on every rank fit the chosen size s",
            ),
            Invariant(
                "minimal_bucket", "efficiency", "no smaller captured bucket would fit", "no smaller captured size would fit"
            ),
            Invariant(
                "no_needless_fallback", "efficiency", "if some captured bucket fits, the batch is admitted",
                "if some captured size holds the key, the batch is admitted",
            ),
        )
    }
)

SAFETY: Final = tuple(i for i, row in INVARIANT_TABLE.items() if row.kind == "safety")
EFFICIENCY: Final = tuple(i for i, row in INVARIANT_TABLE.items() if row.kind == "efficiency")
INVARIANTS: Final = SAFETY + EFFICIENCY


def sentence(invariant: str, keying: str = "global") -> str:
    """The sentence for ``invariant`` under ``keying``; ValueError names the known ids."""
    if invariant not in INVARIANT_TABLE:
        raise ValueError(f"invariant must be one of {', '.join(INVARIANT_TABLE)}; got {invariant!r}")
    return INVARIANT_TABLE[invariant].stated(keying)
