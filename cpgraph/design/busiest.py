"""The busiest-rank rows a CP-active batch of n tokens can have, over any number of requests, exactly.

For every n up to ``top``:
- lo(n): the least busiest load: a single request of n tokens (the busiest rank of any batch holds at least
  the mean n/P, and one request attains ceil(n/P); zigzag_pad rows at least 2*ceil(n/2P), attained too);
- hi(n): the largest, by dynamic programming over request lengths in [2P, 4P): a longer request
  L = 2P + L' (L' >= 2P) puts exactly the loads of the two requests 2P and L' on every rank (the strategy
  row's per-request loads are c*q + e[m]: splitting off one quotient moves c rows per rank), so such
  lengths reach every per-rank load vector, and hi(n) = max over ranks r of the knapsack
  F_r(n) = max_L F_r(n - L) + load_r(L).
- Between them: moving one token from one request to another changes each rank's zigzag load by at most
  one (zigzag_pad: the rows by 2), and every batch of R requests reaches the batch (n - 2P(R-1), 2P, ...)
  whose busiest rank holds lo(n) by such moves, so every value lo(n), lo(n) + step, ..., hi(n) is the
  busiest load of some batch (step 2 for zigzag_pad, 1 else). Contiguous loads can move by 2 under one
  such move: for contiguous the values between lo and hi are the hull (an over-approximation, stated in
  the report); lo and hi themselves are exact for every strategy.
Loads per request come from the reference's strategy table (reference/strategies.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from cpgraph.reference import rank_loads, strategy_row

NONE = -1  # no CP-active batch has this many tokens


@dataclass(frozen=True)
class BusiestRange:
    """lo[n], hi[n] for n in 0..top (NONE below 2P); ``step`` between achievable values; ``exact_between``
    is False where only the hull [lo, hi] is known (contiguous)."""

    strategy: str
    cp_size: int
    top: int
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    step: int
    exact_between: bool
    table: np.ndarray  # F[n][r], the DP (for witnesses)
    monotone: bool = False  # rows never drop as a request grows (leftover tokens absorbed)


def _request_loads(strategy: str, cp_size: int, length: int) -> tuple[int, ...]:
    return rank_loads((length,), cp_size=cp_size, strategy=strategy)


def _growth(strategy: str, cp_size: int) -> tuple[int, bool]:
    """(step, exact_between) from one period of the strategy row's per-request loads: when every single
    token added to a request raises exactly one rank by 1 (zigzag), or every rank by the same 0 or s
    (zigzag_pad: s = 2), moving one token between two requests moves the busiest load by at most the step,
    so every value between lo(n) and hi(n) in steps of it is reached; otherwise (contiguous, where a rank
    can also drop) only the hull is known."""
    p = cp_size
    rows = [_request_loads(strategy, p, x) for x in range(2 * p, 6 * p + 1)]
    deltas = [tuple(b - a for a, b in zip(before, after)) for before, after in zip(rows, rows[1:])]
    if all(sorted(d) == [0] * (p - 1) + [1] for d in deltas):
        return 1, True
    rises = {d[0] for d in deltas if len(set(d)) == 1}
    if len(rises) == len({d[0] for d in deltas}) and all(len(set(d)) == 1 for d in deltas) and len(rises - {0}) == 1:
        return max(rises), True
    return 1, False


def _monotone(strategy: str, cp_size: int) -> bool:
    """Does adding a token to a request never lower a rank's rows? (Checked over one period of the class
    table: loads(L + S) = loads(L) + c, so a period decides it for every length.)"""
    period = 4 * cp_size
    rows = [_request_loads(strategy, cp_size, x) for x in range(2 * cp_size, 2 * cp_size + period + 1)]
    return all(a <= b for before, after in zip(rows, rows[1:]) for a, b in zip(before, after))


@functools.lru_cache(maxsize=16)
def busiest_range(strategy: str, cp_size: int, top: int) -> BusiestRange:
    """lo and hi of the busiest rank's rows for every n <= top (see the module docstring)."""
    p = cp_size
    row = strategy_row(strategy)
    ns = np.arange(top + 1)
    lengths = np.arange(2 * p, 4 * p)
    loads = np.array([_request_loads(strategy, p, int(x)) for x in lengths], dtype=np.int64)  # (2P, P)
    lo_arr = np.full(top + 1, NONE, dtype=np.int64)
    if top >= 2 * p:
        # one request of n tokens: loads(n) = loads(2P + (n - 2P) mod 2P) + ((n - 2P) div 2P) * step2P
        step2p = np.array(_request_loads(strategy, p, 4 * p), dtype=np.int64) - loads[0]
        k, j = np.divmod(ns[2 * p :] - 2 * p, 2 * p)
        lo_arr[2 * p :] = (loads[j] + k[:, None] * step2p[None, :]).max(axis=1)
    lo = tuple(int(x) for x in lo_arr)
    if row.request_excess is None:  # loads of the total only: one value per n
        return BusiestRange(strategy, p, top, lo, lo, 1, True, np.zeros((0, p), dtype=np.int64))
    # items per rank: every length in [2P, 4P), or (rows never drop as a request grows) only the lightest
    # length for each distinct rows value: a heavier one with the same rows is never better
    if _monotone(strategy, p):  # (with leftover tokens absorbed, see the table below)
        per_rank: list[list[tuple[int, int]]] = []
        for r in range(p):
            lightest: dict[int, int] = {}
            for i, length in enumerate(lengths):
                lightest.setdefault(int(loads[i, r]), int(length))
            per_rank.append(sorted((w, v) for v, w in lightest.items()))
        k_items = max(len(x) for x in per_rank)
        weights = np.array([[x[min(j, len(x) - 1)][0] for x in per_rank] for j in range(k_items)], dtype=np.int64)
        values = np.array([[x[min(j, len(x) - 1)][1] for x in per_rank] for j in range(k_items)], dtype=np.int64)
    else:
        weights = np.repeat(lengths[:, None], p, axis=1)
        values = loads
    low = -(1 << 40)
    table = np.full((top + 1, p), low, dtype=np.int64)
    table[0] = 0
    monotone = _monotone(strategy, p)
    if monotone:  # fewer than 2P tokens left over are added to a request already there: rows never drop
        table[: 2 * p] = 0
    ranks = np.arange(p)[None, None, :]
    block = 2 * p  # every weight is >= 2P: a block depends only on earlier blocks
    for start in range(block, top + 1, block):
        ns_block = np.arange(start, min(start + block, top + 1))
        before = ns_block[:, None, None] - weights[None, :, :]  # (b, k, P)
        valid = before >= 0
        cand = table[np.where(valid, before, 0), ranks] + values[None, :, :]
        table[ns_block] = np.where(valid, cand, low).max(axis=1)
    if monotone:
        table[1 : 2 * p] = low
    best = table.max(axis=1)
    hi = tuple(int(best[n]) if n >= 2 * p else NONE for n in range(top + 1))
    step, exact = _growth(strategy, p)
    return BusiestRange(strategy, p, top, lo, hi, step, exact, table, monotone)


def busiest_batch(rng: BusiestRange, n: int) -> tuple[int, ...]:
    """A batch of n tokens whose busiest rank holds hi(n) rows (backtracking the DP)."""
    p = rng.cp_size
    if rng.table.shape[0] == 0:
        return (n,)
    rank = int(np.argmax(rng.table[n]))

    def reached(x: int) -> int:
        if x == 0 or (rng.monotone and x < 2 * p):
            return 0
        return int(rng.table[x][rank]) if x >= 2 * p else -(1 << 40)

    out: list[int] = []
    left = n
    while left > 0:
        for length in range(2 * p, min(4 * p - 1, left) + 1):
            rest = left - length
            if reached(rest) + _request_loads(rng.strategy, p, length)[rank] >= int(rng.table[left][rank]):
                if 0 < rest < 2 * p:  # leftover tokens join this request (its rows do not drop)
                    length, rest = left, 0
                out.append(length)
                left = rest
                break
        else:  # pragma: no cover - the DP table is consistent by construction
            raise AssertionError(f"no DP step from {left} tokens on rank {rank}")
    return tuple(sorted(out, reverse=True))


def batch_with_busiest(rng: BusiestRange, n: int, low: int, high: int) -> tuple[int, ...] | None:
    """A batch of n tokens whose busiest rank holds between ``low`` and ``high`` rows, with few requests
    where one is easy to find: one long request plus k copies of one short length (k = 0, 1, ...); else
    walk from the hi(n) batch towards one long request, one token at a time (None if the walk skips the
    range). Illustrative: not the fewest requests (the review's witnesses are)."""
    p, strategy = rng.cp_size, rng.strategy
    shorts = [np.array(_request_loads(strategy, p, x), dtype=np.int64) for x in range(2 * p, 4 * p)]
    for k in range(0, min(n // (2 * p), 64)):
        for index, short in enumerate(shorts):
            first = n - k * (2 * p + index)
            if first < 2 * p:
                continue
            busiest = int((np.array(_request_loads(strategy, p, first), dtype=np.int64) + k * short).max())
            if low <= busiest <= high:
                return (first,) + (2 * p + index,) * k

    def loads_of(length: int) -> np.ndarray:
        return np.array(_request_loads(strategy, p, length), dtype=np.int64)

    lengths = list(busiest_batch(rng, n))
    loads = sum((loads_of(x) for x in lengths), np.zeros(p, dtype=np.int64))
    if low <= int(loads.max()) <= high:
        return tuple(lengths)
    for j in range(1, len(lengths)):
        while lengths[j] > 2 * p:
            loads = loads - loads_of(lengths[j]) - loads_of(lengths[0])
            lengths[j] -= 1
            lengths[0] += 1
            loads = loads + loads_of(lengths[j]) + loads_of(lengths[0])
            current = int(loads.max())
            if low <= current <= high:
                return tuple(lengths)
            if current < low:
                return None
    return None
