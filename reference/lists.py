"""Long integer lists written short for people: ``[9] * 107 + [8]`` instead of 108 numbers.

``compact(values)`` is a Python expression that evaluates to ``values`` again (a list, or a tuple when
``values`` is one), so a printed counterexample still pastes into a test; a short list is written as
it is. Every text and Markdown printer of a batch uses it (check, review, plan, simulate, prove); JSON
keeps the full list. It lives in the reference because the proofs print batches too, and the reference
is the one part every printer may import (ARCHITECTURE.md).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import SupportsIndex

SHORT = 60  # a list whose plain form has at most this many characters is written as it is
MIN_RUN = 4  # the fewest equal neighbours written as one repeat, ``[v] * k``


def compact(values: Sequence[int | None], *, short: int = SHORT) -> str:
    """``values`` as a Python expression: runs of ``MIN_RUN`` or more equal ints as ``[v] * k``, the
    rest as literals joined by ``+`` (``[25] + [9] * 62``); the plain form when it has at most ``short``
    characters or the compact one is no shorter. A tuple gives a tuple expression (``(9,) * 107 + (8,)``).
    An item may be None (a rank that answered no bucket). ``eval(compact(values)) == values`` for every
    list or tuple of ints and Nones."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"values must be a list or tuple of ints (or None), got {values!r} ({type(values).__name__})")
    if isinstance(short, bool) or not isinstance(short, int):
        raise TypeError(f"short must be an int >= 0 (characters of a list written as it is), got {short!r} ({type(short).__name__})")
    if short < 0:
        raise ValueError(f"short must be an int >= 0 (characters of a list written as it is), got {short}")
    ints = [_int(i, v) for i, v in enumerate(values)]
    as_tuple = isinstance(values, tuple)
    plain = _literal(ints, as_tuple)
    if len(plain) <= short or not ints:
        return plain
    parts: list[str] = []
    pending: list[int | None] = []
    i = 0
    while i < len(ints):
        j = i
        while j < len(ints) and ints[j] == ints[i]:
            j += 1
        if j - i >= MIN_RUN:
            if pending:
                parts.append(_literal(pending, as_tuple))
                pending = []
            parts.append(f"{_literal([ints[i]], as_tuple)} * {j - i}")
        else:
            pending.extend(ints[i:j])
        i = j
    if pending:
        parts.append(_literal(pending, as_tuple))
    short_form = " + ".join(parts)
    return short_form if len(short_form) < len(plain) else plain


def _int(i: int, value: object) -> int | None:
    """An int, None, or an integer-like value (numpy's) as an int; a bool or anything else is a TypeError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        raise TypeError(f"values[{i}] must be an int or None, got {value!r} ({type(value).__name__})")
    return operator.index(value)


def _literal(values: list[int | None], as_tuple: bool) -> str:
    body = ", ".join(str(v) for v in values)
    if not as_tuple:
        return f"[{body}]"
    return f"({body},)" if len(values) == 1 else f"({body})"
