"""The busiest-rank rows a CP-active batch of n tokens can have, over any number of requests, exactly.

For every n up to ``top`` (global keying: CP-active batches, every length >= 2P):
- lo(n): the least busiest load over one request of n - 2Pk tokens and k requests of 2P tokens, k >= 0
  (``least_over_blocks``). For zigzag and contiguous the one request alone attains it (the busiest rank of
  any batch holds at least the mean n/P, and one request attains ceil(n/P)), so lo is exact. For the
  dual_chunk_swap rows one request does not (n = 17, P = 4: [17] puts 6 rows on rank 3, [9, 8] only 5):
  lo is the least over such batches, equal to the least over every batch wherever brute force has
  compared them (tests/differential/test_design_bruteforce.py, P <= 4), not proved; the report says so.
- hi(n): the largest, by dynamic programming over request lengths in [2P, T + 2P), T the least length
  from which the review's class table is exact (spec/design_counts.py: 2P for zigzag and contiguous,
  2P(2P-3)+2 for dual_chunk_swap): a longer request L = 2P + L' (L' >= T) puts exactly the loads of the
  two requests 2P and L' on every rank (the per-request loads are c*q + e[m] there: splitting off one
  quotient moves c rows per rank), so such lengths reach every per-rank load vector, and hi(n) = max over
  ranks r of the knapsack F_r(n) = max_L F_r(n - L) + load_r(L).
- Between them: moving one token from one request to another changes each rank's zigzag load by at most
  one, and every batch of R requests reaches the batch (n - 2P(R-1), 2P, ...) whose busiest rank holds
  lo(n) by such moves, so every value lo(n), lo(n) + 1, ..., hi(n) is the busiest load of some batch.
  Contiguous and dual_chunk_swap loads can move by more under one such move: for them the values
  between lo and hi are the hull (an over-approximation, stated in the report).
Under local keying (every batch keyed, lengths >= 1) ``local_range`` gives lo(n) = ceil(n/P) and
hi(n) = n, every value between reached, in closed form (see its docstring).
Loads per request come from the reference's strategy table (reference/strategies.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from cpgraph.reference import rank_loads, strategy_row
from cpgraph.spec.design_counts import class_row

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
    longest: int = 0  # the longest request length the DP uses (the items are [2P, longest])
    lo_exact: bool = True  # False: lo(n) is the least over one request plus 2P-token requests (not proved least)


def _request_loads(strategy: str, cp_size: int, length: int) -> tuple[int, ...]:
    return rank_loads((length,), cp_size=cp_size, strategy=strategy)


def exact_from(strategy: str, cp_size: int) -> int:
    """The least length from which one request's loads are c*q + e[m] (the review's class table is exact),
    at least 2P: items of the knapsack run up to it + 2P."""
    row = class_row(strategy)
    regular = row.regular_from(cp_size) if row.modulus is not None else 0
    return max(2 * cp_size, regular)


def least_over_blocks(single: np.ndarray, cp_size: int, block: np.ndarray, exact: int) -> np.ndarray:
    """lo(n) = min over k >= 0 of max_r(loads(n - 2Pk) + k * loads(2P)), from ``single`` = the per-rank loads
    of one request of every length (rows of -1 below 2P) and ``block`` = loads(2P), the same on every rank
    (so the k blocks add k * block[0] to the max). From the exact range on, loads(L + 2P) = loads(L) + block,
    so only the residual lengths x = n - 2Pk in [2P, exact + 2P) can lower it below the one request."""
    if len(set(int(b) for b in block)) != 1:
        raise ValueError(f"loads(2P) = {tuple(int(b) for b in block)} differ between ranks: no closed form for lo(n)")
    top = single.shape[0] - 1
    step, per_block = 2 * cp_size, int(block[0])
    best = np.where(single[:, 0] >= 0, single.max(axis=1), np.iinfo(np.int64).max)
    for x in range(step, min(exact + step, top + 1)):
        n = np.arange(x, top + 1, step)
        best[x::step] = np.minimum(best[x::step], int(single[x].max()) + (n - x) // step * per_block)
    return best


def _growth(strategy: str, cp_size: int) -> tuple[int, bool]:
    """(step, exact_between) from one period of the strategy row's per-request loads: when every single
    token added to a request raises exactly one rank by 1 (zigzag), or every rank by the same 0 or s (a
    layout padding each request to a multiple of 2P would, s = 2), moving one token between two requests
    moves the busiest load by at most the step, so every value between lo(n) and hi(n) in steps of it is
    reached; otherwise (contiguous and dual_chunk_swap, where a rank can also drop) only the hull is known."""
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
    exact = exact_from(strategy, p)
    lengths = np.arange(2 * p, exact + 2 * p)
    loads = np.array([_request_loads(strategy, p, int(x)) for x in lengths], dtype=np.int64)  # (T, P)
    lo_arr = np.full(top + 1, NONE, dtype=np.int64)
    lo_exact = True
    if top >= 2 * p:
        # one request of n tokens: loads(n) = loads(L0 + (n - L0) mod 2P) + ((n - L0) div 2P) * step2P, from
        # the first length L0 = T of the exact range (every length below it read directly)
        block = np.array(_request_loads(strategy, p, 2 * p), dtype=np.int64)
        step2p = np.array(_request_loads(strategy, p, exact + 2 * p), dtype=np.int64) - loads[exact - 2 * p]
        single = np.full((top + 1, p), -1, dtype=np.int64)
        below = min(top + 1, exact)
        single[2 * p : below] = loads[: below - 2 * p]
        if top >= exact:
            k, j = np.divmod(ns[exact:] - exact, 2 * p)
            single[exact:] = loads[exact - 2 * p + j] + k[:, None] * step2p[None, :]
        lo_arr = np.full(top + 1, NONE, dtype=np.int64)
        least = least_over_blocks(single, p, block, exact)
        lo_arr[2 * p :] = least[2 * p :]
        lo_exact = exact == 2 * p  # one request is the least (the mean bound) where the table is exact from 2P
    lo = tuple(int(x) for x in lo_arr)
    if row.request_excess is None:  # loads of the total only: one value per n
        return BusiestRange(strategy, p, top, lo, lo, 1, True, np.zeros((0, p), dtype=np.int64))
    # items per rank: every length in [2P, T + 2P), or (rows never drop as a request grows) only the lightest
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
    block_len = 2 * p  # every weight is >= 2P: a block depends only on earlier blocks
    for start in range(block_len, top + 1, block_len):
        ns_block = np.arange(start, min(start + block_len, top + 1))
        before = ns_block[:, None, None] - weights[None, :, :]  # (b, k, P)
        valid = before >= 0
        cand = table[np.where(valid, before, 0), ranks] + values[None, :, :]
        table[ns_block] = np.where(valid, cand, low).max(axis=1)
    if monotone:
        table[1 : 2 * p] = low
    best = table.max(axis=1)
    hi = tuple(int(best[n]) if n >= 2 * p else NONE for n in range(top + 1))
    step, between = _growth(strategy, p)
    longest = int(lengths[-1])
    return BusiestRange(strategy, p, top, lo, hi, step, between, table, monotone, longest, lo_exact)


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
        for length in range(2 * p, min(rng.longest or 4 * p - 1, left) + 1):
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


@dataclass(frozen=True)
class LocalRange:
    """Under local keying (every batch keyed, lengths >= 1): the busiest loads batches of n tokens can have
    are every integer from lo(n) = ceil(n/P) to hi(n) (n for per-request strategies, ceil(n/P) for
    interleave), in closed form; ``rank`` is the rank a one-token request lands on."""

    strategy: str
    cp_size: int
    per_request: bool
    rank: int

    def lo(self, n: int) -> int:
        return -(-n // self.cp_size)

    def hi(self, n: int) -> int:
        return n if self.per_request else -(-n // self.cp_size)

    def least_tokens(self, m: int) -> int:
        """The fewest tokens of a batch whose busiest rank holds m rows."""
        return m if self.per_request else self.cp_size * (m - 1) + 1

    def batch(self, n: int, m: int) -> tuple[int, ...]:
        """A batch of n tokens whose busiest rank holds m rows (lo(n) <= m <= hi(n)): one request when one
        does, else t one-token requests (on ``rank``) beside a balanced batch of the rest (k*P tokens as few
        requests with one row per P tokens on every rank, and one request of the remainder, a row on ranks
        that include ``rank``): busiest t + ceil((n - t)/P)."""
        if not self.lo(n) <= m <= self.hi(n):
            raise ValueError(f"no batch of {n} tokens has a busiest rank of {m} rows (range {self.lo(n)}..{self.hi(n)})")
        if max(_request_loads(self.strategy, self.cp_size, n)) == m:
            return (n,)
        p = self.cp_size
        t = next(t for t in range(n + 1) if t + -(-(n - t) // p) >= m)
        k, rest = divmod(n - t, p)
        out = self._balanced(k) + ((rest,) if rest else ()) + (1,) * t
        if max(rank_loads(out, cp_size=p, strategy=self.strategy)) != m:  # pragma: no cover - the closed form
            raise AssertionError(f"{out} does not have a busiest rank of {m} rows")
        return out

    def _balanced(self, k: int) -> tuple[int, ...]:
        """k*P tokens holding k rows on every rank, in as few requests as the uniform lengths allow."""
        p = self.cp_size

        def uniform(length: int) -> bool:
            return len(set(_request_loads(self.strategy, p, length))) == 1

        if k and uniform(k * p):
            return (k * p,)
        if k > 1 and uniform((k - 1) * p):
            return ((k - 1) * p, p)
        return (p,) * k


@functools.lru_cache(maxsize=16)
def local_range(strategy: str, cp_size: int) -> LocalRange:
    """The closed forms of LocalRange, checked on the strategy table: a one-token request puts its token on
    one rank r1; a request of j <= P tokens puts at most one row on a rank, on r1 among others, and one of P
    tokens one row on every rank. Then lo(n) = ceil(n/P) (the loads sum to at least n; k requests of P plus
    one of the rest attain it), hi(n) = n (n one-token requests) and t one-token requests beside that
    balanced batch give t + ceil((n - t)/P), every value between as t grows. Interleave: lo = hi = ceil(n/P).
    A strategy the check fails for (dual_chunk_swap_dcp copies short prefills) is a ValueError."""
    p = cp_size
    if strategy_row(strategy).request_excess is None:
        return LocalRange(strategy, p, False, 0)
    one = _request_loads(strategy, p, 1)
    if sorted(one) != [0] * (p - 1) + [1]:
        raise ValueError(f"{strategy} at cp_size {p}: a one-token request has loads {one}, not one row on one rank")
    rank = one.index(1)
    for j in range(1, p + 1):
        loads = _request_loads(strategy, p, j)
        if max(loads) != 1 or loads[rank] != 1 or (j == p and min(loads) != 1):
            raise ValueError(f"{strategy} at cp_size {p}: a request of {j} tokens has loads {loads}: no closed form")
    return LocalRange(strategy, p, True, rank)
