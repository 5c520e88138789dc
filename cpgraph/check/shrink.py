"""The minimise stage, one for every subject: a case shrunk by the subject's "smaller" moves while it stays broken.

A subject gives its moves in tiers (``Moves``): the first tier's candidates are tried in order and the first
one that still breaks the invariant is taken, from which the search starts again at the first tier; only when
no candidate of a tier breaks it is the next tier tried (a graph-path step's second tier moves the step and
the capture list together, for a violation that sits at a graph's edge). The result is a fixed point of every
tier: deterministic, since the moves and the judge are.

The prefill batch subject runs its own richer moves (minimize.py: a capture table, fewest requests, whole rounds
of 2P) and then canon.py's least values, under the run's clock; its witnesses are recorded in tests/data and
kept identical, so it is not re-expressed here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

C = TypeVar("C")
Moves = Sequence[Callable[[C], Iterable[C]]]  # tiers of "one move smaller" candidates, cheapest first


def shrink(case: C, tiers: Moves[C], broken: Callable[[C], bool]) -> C:
    """``case`` shrunk while ``broken`` holds: the first candidate of the lowest tier that stays broken, again,
    to a fixed point of every tier (module docstring)."""
    if not tiers:
        raise ValueError("shrink needs at least one tier of moves; got none")
    changed = True
    while changed:
        changed = False
        for tier in tiers:
            smaller = next((c for c in tier(case) if broken(c)), None)
            if smaller is not None:
                case, changed = smaller, True
                break
    return case
