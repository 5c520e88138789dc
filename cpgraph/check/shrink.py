"""The minimise stage, one for every subject: a case shrunk by the subject's "smaller" moves while it stays broken.

A subject gives its moves in tiers (``Moves``): the first tier's candidates are tried in order and the first
one that still breaks the invariant is taken, from which the search starts again at the first tier; only when
no candidate of a tier breaks it is the next tier tried (a graph-path step's second tier moves the step and
the capture list together, for a violation that sits at a graph's edge). The result is a fixed point of every
tier: deterministic, since the moves and the judge are.

A subject may skip candidates (``keep``: the prefill batch subject skips one seen before, one no smaller, one
with no capture list) and bound the work (``Bound``: a count of candidates tried and a clock; the batch
subject's minimiser, minimize.py, also runs canon.py's least values between rounds).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

C = TypeVar("C")
Moves = Sequence[Callable[[C], Iterable[C]]]  # tiers of "one move smaller" candidates, cheapest first


@dataclass
class Bound:
    """How much shrinking may cost: ``max_tries`` candidates judged and a ``deadline`` (time.perf_counter());
    ``tries`` counts the candidates judged so far (shared across calls, so rounds share one bound)."""

    max_tries: float = float("inf")
    deadline: float = float("inf")
    tries: int = 0

    def spent(self) -> bool:
        return self.tries >= self.max_tries or time.perf_counter() >= self.deadline


def shrink(case: C, tiers: Moves[C], broken: Callable[[C], bool], *, keep: Callable[[C, C], bool] | None = None,
           bound: Bound | None = None) -> C:
    """``case`` shrunk while ``broken`` holds: the first candidate of the lowest tier that stays broken, again,
    to a fixed point of every tier or until ``bound`` is spent (module docstring). ``keep(candidate, case)``
    False skips a candidate without judging it."""
    if not tiers:
        raise ValueError("shrink needs at least one tier of moves; got none")
    changed = True
    while changed and not (bound is not None and bound.spent()):
        changed = False
        for tier in tiers:
            for candidate in tier(case):
                if keep is not None and not keep(candidate, case):
                    continue
                if bound is not None:
                    bound.tries += 1
                if broken(candidate):
                    case, changed = candidate, True
                    break
                if bound is not None and bound.spent():
                    break
            if changed or (bound is not None and bound.spent()):
                break
    return case
