"""impl's own load formulas, one row per strategy id in ``FORMULAS``: the rows a batch needs, alignment,
capture and headroom capacities. The selection and the plan are in impl/decision.py.

impl keeps its OWN formulas (no ``else``: an unknown id is a ValueError naming the ids). They are independent
of reference/strategies.py on purpose: that independence is what tests/differential measures.

zigzag: write each length as L = 2P*q + m (0 <= m < 2P). Rank r holds 2q + [r < m] + [2P-1-r < m] tokens of
that request, so with c[k] = #{requests with m <= k} the busiest rank holds
2*sum(q) + 2R - min_r (c[r] + c[2P-1-r]): one histogram of m, one prefix sum, a min over P. No per-rank loop
per request (at P = 1 the one rank holds the total: no histogram). zigzag_pad: every request padded to a multiple
of 2P, so every rank holds 2*ceil(L/2P) rows of it.

Long batches take a vectorised path (numpy: remainder histogram, reductions); short ones a scalar path. numpy
is imported lazily; torch is never imported here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from operator import add
from types import MappingProxyType, ModuleType
from typing import Any

from cpgraph.impl.checks import (
    MAX_CP_SIZE,
    STRATEGY_IDS,
    check_cp_size,
    check_int,
    check_strategy,
)

from cpgraph.impl.lengths import (
    Int64Array,
    Lengths,
    accept_lengths as accept_lengths,
    numpy_module,
)



def align_up(value: int, align_size: int) -> int:
    """The smallest multiple of ``align_size`` that is >= ``value`` (both already validated)."""
    return -(-value // align_size) * align_size


# -- impl's own formulas, one row per strategy id ----------------------------------------------------------------


def _zigzag_from_hist(hist: list[int], total: int, count: int, p: int) -> int:
    c = list(accumulate(hist))  # c[k] = #{m <= k}
    low: int = min(map(add, c[:p], c[: p - 1 : -1]))  # c[r] + c[2P-1-r], r < P
    return (total - 2 * p * count + sum(c)) // p + 2 * count - low  # 2*sum(q) = (N - sum(m)) / P, sum(m) = sR - sum(c)


def _zigzag_scalar(values: Sequence[int], total: int, p: int) -> int:
    if p == 1:  # one rank holds every token
        return total
    s = 2 * p
    hist = [0] * s
    for m in map(s.__rmod__, values):
        hist[m] += 1
    return _zigzag_from_hist(hist, total, len(values), p)


def _mod(np: ModuleType, vec: Int64Array, s: int) -> Int64Array:
    """L mod s for every L >= 0: a mask for a power of two; else numpy's remainder, or for long batches L - s*(L//s)
    (floor_divide by a scalar is vectorised, remainder is not: at R = 4096 about 5.7 us against 8.5)."""
    if s & (s - 1) == 0:
        return np.bitwise_and(vec, s - 1)  # type: ignore[no-any-return]
    if vec.shape[0] < 1024:
        return np.remainder(vec, s)  # type: ignore[no-any-return]
    q = np.floor_divide(vec, s)
    np.multiply(q, s, out=q)
    return np.subtract(vec, q, out=q)  # type: ignore[no-any-return]


def _zigzag_vector(np: ModuleType, vec: Int64Array, total: int, p: int) -> int:
    if p == 1:  # one rank holds every token: no histogram
        return total
    s = 2 * p
    count: int = vec.shape[0]
    hist = np.bincount(np.bitwise_and(vec, s - 1) if s & (s - 1) == 0 else _mod(np, vec, s), minlength=s)
    if s <= 16:  # a short histogram is finished faster on Python ints than by numpy calls
        cs: list[int] = list(accumulate(hist.tolist()))  # c[k] = #{m <= k}
        low: int = min(map(add, cs[:p], cs[: p - 1 : -1]))  # c[r] + c[2P-1-r], r < P
        return (total - s * count + sum(cs)) // p + 2 * count - low
    pairs = _PAIRS.get(p) or _pair_matrix(np, p)
    # One BLAS matrix-vector product: rows r < P give c[r] + c[2P-1-r] <= 2R, row P gives sum(c) + 2R > 2R (so
    # argmin over all P + 1 rows is the busiest rank's). Small non-negative integers (<= (2P + 2)R): every
    # product and partial sum is exact in float32 below 2**24, in float64 past it.
    g = pairs[1].dot(hist.astype(np.float32)) if (s + 2) * count < 16777216 else pairs[0].dot(hist.astype(np.float64))
    return (total - (s + 2) * count + int(g.item(p))) // p + 2 * count - int(g.item(g.argmin()))


def _pair_matrix(np: ModuleType, p: int) -> tuple[Any, Any]:
    """M[r, k] = [k <= r] + [k <= 2P-1-r] for r < P, and M[P, k] = 2P + 2 - k, in float64 and float32: M @ hist
    is every rank's c[r] + c[2P-1-r] and then sum(c) + 2R, with c the histogram's prefix sums."""
    k = np.arange(2 * p)
    r = np.arange(p)[:, None]
    matrix = np.vstack(((k <= r).astype(np.float64) + (k <= 2 * p - 1 - r), (2 * p + 2 - k)[None, :]))
    if len(_PAIRS) >= 16:
        _PAIRS.clear()
    pair = _PAIRS[p] = (matrix, matrix.astype(np.float32))
    return pair


_PAIRS: dict[int, tuple[Any, Any]] = {}  # _pair_matrix(P) for each P seen


@lru_cache(maxsize=64)
def _contiguous_table(p: int) -> tuple[tuple[int, ...], ...]:
    """T[m][r]: tokens rank r holds of the last L mod P tokens' share: floor(m(r+1)/P) - floor(mr/P)."""
    return tuple(tuple((m * (r + 1)) // p - (m * r) // p for r in range(p)) for m in range(p))


def _contiguous_scalar(values: Sequence[int], total: int, p: int) -> int:
    # L = P*q + m: rank r holds q + T[m][r] of it; O(R + P * #distinct m).
    hist: dict[int, int] = {}
    for m in map(p.__rmod__, values):
        hist[m] = hist.get(m, 0) + 1
    table = _contiguous_table(p)
    q_total = (total - sum(m * c for m, c in hist.items())) // p
    loads = [0] * p
    for m, c in hist.items():
        if m:
            loads = [x + c * t for x, t in zip(loads, table[m])]
    return q_total + max(loads)


@lru_cache(maxsize=64)
def _contiguous_matrix(p: int) -> Int64Array:
    np = numpy_module()
    assert np is not None
    return np.array(_contiguous_table(p), dtype=np.int64)  # type: ignore[no-any-return]


def _contiguous_vector(np: ModuleType, vec: Int64Array, total: int, p: int) -> int:
    hist = np.bincount(_mod(np, vec, p), minlength=p)
    q_total = (total - int(np.dot(hist, np.arange(p)))) // p
    return q_total + int(np.maximum.reduce(hist @ _contiguous_matrix(p)))


def _interleave(total: int, p: int) -> int:
    return -(-total // p)


def _zigzag_pad_scalar(values: Sequence[int], total: int, p: int) -> int:
    s = 2 * p
    ms = list(map(s.__rmod__, values))  # L mod 2P for every L, at C speed
    return 2 * ((total - sum(ms)) // s + len(ms) - ms.count(0))  # sum of ceil(L/2P), doubled


def _zigzag_pad_vector(np: ModuleType, vec: Int64Array, total: int, p: int) -> int:
    s = 2 * p
    ms = _mod(np, vec, s)
    return 2 * ((total - int(np.add.reduce(ms))) // s + int(np.count_nonzero(ms)))


@dataclass(frozen=True)
class StrategyFormulas:
    """impl's formulas for one strategy id.

    ``align_factor``: upstream's default alignment is align_factor * P. ``one_request``: the busiest rank's rows
    for one request of L tokens. ``scalar`` / ``vector``: the busiest rank's rows for a batch (lengths, their
    total, P), on Python ints or on an int64 numpy array (``vector`` None: ``total`` alone decides).
    ``request_excess``: the most one request puts on a rank beyond its mean, as P*l_r - L (None where the
    loads depend on the total only), for the headroom capacity.
    """

    id: str
    align_factor: int
    one_request: Callable[[int, int], int]
    scalar: Callable[[Sequence[int], int, int], int]
    vector: Callable[[ModuleType, Int64Array, int, int], int] | None
    request_excess: Callable[[int], int] | None


def _ceil_share(length: int, p: int) -> int:
    return -(-length // p)


def _pad_share(length: int, p: int) -> int:
    return 2 * -(-length // (2 * p))


FORMULAS: Mapping[str, StrategyFormulas] = MappingProxyType(
    {
        "zigzag": StrategyFormulas("zigzag", 2, _ceil_share, _zigzag_scalar, _zigzag_vector, lambda p: p - 1),
        "interleave": StrategyFormulas(
            "interleave", 1, _ceil_share, lambda values, total, p: _interleave(total, p), None, None
        ),
        "contiguous": StrategyFormulas(
            "contiguous", 1, _ceil_share, _contiguous_scalar, _contiguous_vector, lambda p: p - 1
        ),
        "zigzag_pad": StrategyFormulas(
            "zigzag_pad", 2, _pad_share, _zigzag_pad_scalar, _zigzag_pad_vector, lambda p: 2 * p - 1
        ),
    }
)
if tuple(FORMULAS) != STRATEGY_IDS:  # pragma: no cover - an import-time guard for contributors
    raise ImportError(f"impl.decision.FORMULAS {tuple(FORMULAS)} must cover exactly {STRATEGY_IDS}")


def formulas(strategy: object) -> StrategyFormulas:
    """The formula row of ``strategy``; ValueError naming the allowed ids for an unknown one (never a default)."""
    row = FORMULAS.get(strategy) if type(strategy) is str else None
    return row if row is not None else FORMULAS[check_strategy(strategy)]


def busiest_rows(lengths: Lengths, p: int, row: StrategyFormulas) -> int:
    """The busiest rank's rows for accepted lengths on ``p`` ranks under the formula row ``row``."""
    if lengths[2] == 1:
        return row.one_request(lengths[3], p)
    vector = lengths[1]
    if vector is not None and row.vector is not None:
        return row.vector(sys.modules["numpy"], vector, lengths[3], p)  # an array implies numpy is imported
    values = lengths[0]
    return row.scalar(() if values is None else values, lengths[3], p)


def default_align_size(*, cp_size: int, strategy: str = "zigzag") -> int:
    """Upstream's alignment: the strategy's factor times P (2P for zigzag and zigzag_pad, P otherwise)."""
    return formulas(strategy).align_factor * check_cp_size("cp_size", cp_size)


def max_rank_load(extend_seq_lens: object, *, cp_size: object, strategy: object = "zigzag") -> int:
    """The busiest rank's rows for this batch (real tokens, plus zigzag_pad's in-layout padding)."""
    lengths = accept_lengths(extend_seq_lens)
    p = cp_size if type(cp_size) is int and 1 <= cp_size <= MAX_CP_SIZE else check_cp_size("cp_size", cp_size)
    return busiest_rows(lengths, p, formulas(strategy))


def required_local_tokens(
    extend_seq_lens: object, *, cp_size: object, align_size: object, strategy: object = "zigzag"
) -> int:
    """Physical rows every rank pads to for this live batch: align_up(max_r l_r, A).

    Same contract and errors as ``cpgraph.reference.required_local_tokens``; also takes an int64 numpy array or
    a CPU tensor. Built from the live lengths, never from a padded token count (that folds the pad into the
    last request and changes the loads).
    """
    x = extend_seq_lens
    if type(x) is list and len(x) == 1 and type(x[0]) is int and x[0] >= 0:  # one request from a list, inline
        lengths: Lengths = (x, None, 1, x[0], x[0])
    else:
        lengths = accept_lengths(x)
    p = cp_size if type(cp_size) is int and 1 <= cp_size <= MAX_CP_SIZE else check_cp_size("cp_size", cp_size)
    a = align_size if type(align_size) is int and align_size >= 1 else check_int("align_size", align_size, minimum=1)
    row = FORMULAS.get(strategy) if type(strategy) is str else None
    if row is None:
        row = formulas(strategy)
    rows = row.one_request(lengths[3], p) if lengths[2] == 1 else busiest_rows(lengths, p, row)
    return -(-rows // a) * a


def capture_lengths(bucket: int, context_len: int | None) -> tuple[int, ...]:
    """The requests a bucket of B tokens is captured with: one of B tokens, or (B above the context length)
    context-length requests and one with the rest (upstream's capture layout)."""
    if context_len is None or bucket <= context_len:
        return (bucket,)
    full, rest = divmod(bucket, context_len)
    return (context_len,) * full + ((rest,) if rest else ())


def capture_local_tokens(
    num_tokens: int, *, cp_size: int, align_size: int, strategy: str = "zigzag", context_len: int | None = None
) -> int:
    """Rows of the capture layout of ``num_tokens`` tokens: upstream's ``bucket_local_tokens[B]`` at capture."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    ctx = None if context_len is None else check_int("context_len", context_len, minimum=1)
    return required_local_tokens(capture_lengths(n, ctx), cp_size=cp_size, align_size=align_size, strategy=strategy)


def headroom_local_tokens(
    num_tokens: int, *, cp_size: int, align_size: int, max_requests: int, strategy: str = "zigzag"
) -> int:
    """Rows that fit every batch of <= ``max_requests`` requests and <= ``num_tokens`` tokens:
    align_up(floor((N + R*e) / P), A) with e the strategy's per-request excess and R capped at N; ceil(N/P)
    where the loads depend on the total only (interleave)."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    p = check_cp_size("cp_size", cp_size)
    a = check_int("align_size", align_size, minimum=1)
    r = min(check_int("max_requests", max_requests, minimum=1), n)
    excess = formulas(strategy).request_excess
    return align_up(-(-n // p) if excess is None else (n + r * excess(p)) // p, a)


def is_cp_active(extend_seq_lens: object, *, num_tokens: object, cp_size: object) -> bool:
    """A batch takes the CP graph path only when P > 1, n >= 2P and every length >= 2P."""
    lengths = accept_lengths(extend_seq_lens)
    n = check_int("num_tokens", num_tokens, minimum=1)
    p = check_cp_size("cp_size", cp_size)
    return p > 1 and n >= 2 * p and lengths[4] >= 2 * p


