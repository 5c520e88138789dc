"""The layout strategies as one table (one row per strategy): alignment and per-rank loads of a batch.

- zigzag: per request, 2P blocks, rank r owns blocks r and 2P-1-r (spec/zigzag.py).
- contiguous: per request, rank r owns [floor(L*r/P), floor(L*(r+1)/P)).
- interleave: token t of the whole batch goes to rank t mod P; request boundaries do not matter.
- zigzag_pad: per request, padded up to a multiple of 2P, then zigzag: 2*ceil(L/2P) rows on every rank.

Row for row the mirror of reference/strategies.py (same ids, same alignment factor); an unknown id is a
ValueError, never a default.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import z3

from cpgraph.spec.arith import DivMod, ceil_div, divmod_by
from cpgraph.spec.terms import IntLike, IntTerm, Loads, all_of, indicator, int_term, literal, sub
from cpgraph.spec.zigzag import zigzag_request_loads

RequestLoads = Callable[[IntLike, int, str], Loads]


def contiguous_request_loads(length: IntLike, cp_size: int, name: str) -> Loads:
    """Per-rank loads of one sequence cut into P contiguous blocks: floor(L(r+1)/P) - floor(Lr/P)."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    n = literal(length)
    cuts = [
        divmod_by(n * r if n is not None else int_term(length) * r, cp_size, f"{name}.cut{r}")
        for r in range(1, cp_size)
    ]
    starts = [z3.IntVal(0), *(c.quotient for c in cuts), int_term(length)]
    loads = tuple(sub(starts[r + 1], starts[r]) for r in range(cp_size))
    return Loads(loads, all_of(c.holds for c in cuts))


def zigzag_pad_request_loads(length: IntLike, cp_size: int, name: str) -> Loads:
    """Rows of one sequence on each rank when it is padded up to a multiple of 2P first: 2*ceil(L/2P),
    the same on every rank (vLLM's prefill context-parallel layout)."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    block = ceil_div(length, 2 * cp_size, f"{name}.block")
    rows = literal(block.value)
    value = z3.IntVal(2 * rows) if rows is not None else 2 * block.value
    return Loads((value,) * cp_size, block.holds)


def interleave_rank_load(split: DivMod, rank: IntLike) -> IntTerm:
    """Tokens of a batch of N = P*q + m tokens on rank r under interleave: q + [r < m]."""
    return split.quotient + indicator(int_term(rank) < split.remainder)


def interleave_loads(total: IntLike, cp_size: int, name: str) -> Loads:
    """Per-rank loads when token t of the batch goes to rank t mod P: floor(N/P) + [r < N mod P]."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    split = divmod_by(total, cp_size, name)
    q, m = literal(split.quotient), literal(split.remainder)
    if q is not None and m is not None:
        return Loads(tuple(z3.IntVal(q + (1 if m > r else 0)) for r in range(cp_size)), split.holds)
    return Loads(tuple(interleave_rank_load(split, r) for r in range(cp_size)), split.holds)


@dataclass(frozen=True)
class Strategy:
    """One row of the strategy table."""

    name: str
    align_factor: int  # A = align_factor * P (upstream's default alignment)
    request_loads: RequestLoads | None  # per-request loads; None when loads depend only on the total

    def align_size(self, cp_size: int) -> int:
        """Upstream's default alignment for this strategy."""
        return self.align_factor * cp_size

    def batch_loads(self, lengths: Sequence[IntLike], cp_size: int, name: str) -> Loads:
        """Per-rank loads of the whole batch (the sum over requests, or the interleave of the total)."""
        if not lengths:
            raise ValueError(f"lengths must hold at least one request, got {lengths!r}")
        if self.request_loads is None:
            values = [literal(x) for x in lengths]
            total = sum(v for v in values if v is not None) if all(v is not None for v in values) else None
            return interleave_loads(total if total is not None else z3.Sum([int_term(x) for x in lengths]), cp_size, name)
        loads = self.request_loads(lengths[0], cp_size, f"{name}.req0")
        for i, length in enumerate(lengths[1:], start=1):
            loads = loads.plus(self.request_loads(length, cp_size, f"{name}.req{i}"))
        return loads


STRATEGIES: dict[str, Strategy] = {
    "zigzag": Strategy("zigzag", 2, zigzag_request_loads),
    "interleave": Strategy("interleave", 1, None),
    "contiguous": Strategy("contiguous", 1, contiguous_request_loads),
    "zigzag_pad": Strategy("zigzag_pad", 2, zigzag_pad_request_loads),
}


def strategy(name: str) -> Strategy:
    """The table row for ``name``; ValueError names the allowed strategies."""
    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {name!r}")
    return STRATEGIES[name]


def rank_loads(lengths: Sequence[IntLike], cp_size: int, name: str, kind: str = "zigzag") -> Loads:
    """Per-rank loads of a batch under strategy ``kind`` (the spec's counterpart of reference.rank_loads)."""
    return strategy(kind).batch_loads(lengths, cp_size, name)
