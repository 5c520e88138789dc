"""impl's own load formulas, one row per strategy id in ``FORMULAS``: the rows a batch needs, alignment,
capture and headroom capacities. The selection and the plan are in impl/decision.py.

impl keeps its OWN formulas (no ``else``: an unknown id is a ValueError naming the ids). They are independent
of reference/strategies.py on purpose: that independence is what tests/differential measures.

zigzag: write each length as L = 2P*q + m (0 <= m < 2P). Rank r holds 2q + [r < m] + [2P-1-r < m] tokens of
that request, so with c[k] = #{requests with m <= k} the busiest rank holds
2*sum(q) + 2R - min_r (c[r] + c[2P-1-r]): one histogram of m, one prefix sum, a min over P. No per-rank loop
per request (at P = 1 the one rank holds the total: no histogram).

dual_chunk_swap (vLLM's DualChunkSwap; three rows that differ in where copied requests go): a prefill of L tokens
is cut into 2P chunks of c = ceil(L/2P), the first f = L // c full, chunk f holding the rest e = L - f*c, the
later ones empty; rank r holds chunks r and 2P-1-r. Summed over the batch with A[k] = sum of c and E[k] = sum of e
over the requests with f = k (0 <= k <= 2P), rank r holds S[r+1] + S[2P-r] + E[r] + E[2P-1-r], S the suffix sums
of A: two weighted histograms over f, no per-rank loop per request. A copied request (a decode, or under
dual_chunk_swap_dcp also a prefill too short to fill 2P chunks, (2P-1)c >= L) adds its L tokens to every rank
(``replicated``, ``dcp``) or, dealt round-robin, to rank k mod P for the k-th non-empty copied request
(``round_robin``). ``is_prefilling`` (one bool per request, None: all prefills) marks decodes; a strategy whose
``decodes`` is None lays out prefills only and a decode is a ValueError.

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

from cpgraph.reference.runner import FallbackReason
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
    accept_is_prefilling,
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


def _zigzag_loads(lengths: Lengths, p: int) -> tuple[int, ...]:
    # Rank r holds 2q + [r < m] + [2P-1-r < m] of each request: 2*sum(q) + (R - c[r]) + (R - c[2P-1-r]).
    values, total, count = _values(lengths), lengths[3], lengths[2]
    s = 2 * p
    hist = [0] * s
    for m in map(s.__rmod__, values):
        hist[m] += 1
    c = list(accumulate(hist))
    twice_q = (total - s * count + sum(c)) // p  # 2*sum(q) = 2(N - sum(m))/2P, sum(m) = 2P*R - sum(c)
    return tuple(twice_q + 2 * count - c[r] - c[s - 1 - r] for r in range(p))


def _contiguous_loads(lengths: Lengths, p: int) -> tuple[int, ...]:
    values, total = _values(lengths), lengths[3]
    hist: dict[int, int] = {}
    for m in map(p.__rmod__, values):
        hist[m] = hist.get(m, 0) + 1
    table = _contiguous_table(p)
    q_total = (total - sum(m * c for m, c in hist.items())) // p
    loads = [q_total] * p
    for m, c in hist.items():
        if m:
            loads = [x + c * t for x, t in zip(loads, table[m])]
    return tuple(loads)


def _interleave_loads(lengths: Lengths, p: int) -> tuple[int, ...]:
    q, m = divmod(lengths[3], p)
    return tuple(q + (r < m) for r in range(p))


def _values(lengths: Lengths) -> Sequence[int]:
    values, vector = lengths[0], lengths[1]
    if values is not None:
        return values
    assert vector is not None
    return vector.tolist()  # type: ignore[no-any-return]


# -- dual_chunk_swap (vLLM's DualChunkSwap) ---------------------------------------------------------------------


def _dcs_one(length: int, p: int) -> int:
    """The busiest rank's rows for one prefill: chunk P-1 (full, c) plus chunk P (min(c, max(0, L - P*c)))
    when the second half is reached, else one full early chunk."""
    c = -(-length // (2 * p))
    return c + min(c, max(0, length - p * c))


def _dcs_dcp_one(length: int, p: int) -> int:
    return length if length and _short(length, p) else _dcs_one(length, p)


def _short(length: int, p: int) -> bool:
    """dual_chunk_swap_dcp copies a prefill whose last chunk is empty: (2P-1) * ceil(L/2P) >= L."""
    s = 2 * p
    return (s - 1) * -(-length // s) >= length


def _dcs_from(full: Sequence[int], rest: Sequence[int], p: int) -> list[int]:
    """Per-rank rows from A (``full``: sum of c) and E (``rest``: sum of e) indexed by f = L // c, 0..2P."""
    s = 2 * p
    suffix = [0] * (s + 2)
    for k in range(s, -1, -1):
        suffix[k] = suffix[k + 1] + full[k]
    return [suffix[r + 1] + suffix[s - r] + rest[r] + rest[s - 1 - r] for r in range(p)]


def _dcs_scalar_loads(values: Sequence[int], p: int, copied: Sequence[bool] | None, deal: str) -> list[int]:
    """Per-rank rows on Python ints: the split requests' histogram, then every copied request (``copied`` per
    request, None: none but dcp's short prefills) placed as ``deal`` says ('replicated' or 'round_robin';
    'dcp' copies short prefills as well and replicates)."""
    s = 2 * p
    full, rest = [0] * (s + 1), [0] * (s + 1)
    everywhere, dealt, ordinal = 0, [0] * p, 0
    dcp = deal == "dcp"
    for i, length in enumerate(values):
        if not length:
            continue
        c = -(-length // s)
        if (copied is not None and copied[i]) or (dcp and (s - 1) * c >= length):
            if deal == "round_robin":
                dealt[ordinal % p] += length
                ordinal += 1
            else:
                everywhere += length
            continue
        f = length // c
        full[f] += c
        rest[f] += length - f * c
    return [x + everywhere + y for x, y in zip(_dcs_from(full, rest, p), dealt)]


# float64 weighted histograms are exact below 2**53; past it the Python-int path.
_EXACT_FLOAT = 2**53


def _dcs_vector_loads(np: ModuleType, vec: Int64Array, total: int, p: int, copied: Any, deal: str) -> Any:
    """``_dcs_scalar_loads`` on an int64 array (``copied`` a bool array or None): per-rank rows as an int64 array."""
    s = 2 * p
    c = (vec + (s - 1)) // s
    split = vec
    everywhere = 0
    dealt = None
    if deal == "dcp":
        short = (vec > 0) & ((s - 1) * c >= vec)
        copied = short if copied is None else (copied | short)
    if copied is not None:
        copied = copied & (vec > 0)
        moved = vec[copied]
        if deal == "round_robin":
            dealt = np.bincount(np.arange(moved.shape[0]) % p, weights=moved, minlength=p).astype(np.int64)
        else:
            everywhere = int(moved.sum())
        split = np.where(copied, 0, vec)
        c = np.where(copied, 0, c)
    f = split // np.maximum(c, 1)
    full = np.bincount(f, weights=c, minlength=s + 1).astype(np.int64)
    rest = np.bincount(f, weights=split - f * c, minlength=s + 1).astype(np.int64)
    suffix = np.zeros(s + 2, dtype=np.int64)
    suffix[: s + 1] = np.cumsum(full[::-1])[::-1]
    loads = suffix[1 : p + 1] + suffix[s : p : -1] + rest[:p] + rest[s - 1 : p - 1 : -1] + everywhere
    return loads if dealt is None else loads + dealt


def _dcs_loads(deal: str) -> Callable[[Lengths, int], tuple[int, ...]]:
    def loads(lengths: Lengths, p: int) -> tuple[int, ...]:
        return _dcs_mixed(lengths, p, None, deal)

    return loads


def _dcs_mixed(lengths: Lengths, p: int, copied: tuple[bool, ...] | None, deal: str) -> tuple[int, ...]:
    vector = lengths[1]
    if vector is not None and lengths[3] < _EXACT_FLOAT:
        np = sys.modules["numpy"]  # an array implies numpy is imported
        flags = None if copied is None else np.array(copied, dtype=bool)
        return tuple(_dcs_vector_loads(np, vector, lengths[3], p, flags, deal).tolist())
    return tuple(_dcs_scalar_loads(_values(lengths), p, copied, deal))


def _dcs_scalar(deal: str) -> Callable[[Sequence[int], int, int], int]:
    def busiest(values: Sequence[int], total: int, p: int) -> int:
        return max(_dcs_scalar_loads(values, p, None, deal))

    return busiest


def _dcs_vector(deal: str) -> Callable[[ModuleType, Int64Array, int, int], int]:
    def busiest(np: ModuleType, vec: Int64Array, total: int, p: int) -> int:
        if total >= _EXACT_FLOAT:
            return max(_dcs_scalar_loads(vec.tolist(), p, None, deal))
        return int(_dcs_vector_loads(np, vec, total, p, None, deal).max())

    return busiest


def _dcs_excess(p: int) -> int:
    # A split prefill puts at most P*2c - L <= 2P-1 on a rank beyond its mean; at P = 1 the one rank holds it all.
    return 2 * p - 1 if p > 1 else 0


def _dcp_excess(p: int) -> int:
    # A copied prefill puts (P-1)L beyond its mean; the longest one copied is L = (2P-1)^2 (c = 2P-1, the last
    # chunk just empty).
    return max(_dcs_excess(p), (p - 1) * (2 * p - 1) ** 2)


@dataclass(frozen=True)
class StrategyFormulas:
    """impl's formulas for one strategy id.

    ``align_factor``: upstream's default alignment is align_factor * P. ``one_request``: the busiest rank's rows
    for one request of L tokens. ``scalar`` / ``vector``: the busiest rank's rows for a batch (lengths, their
    total, P), on Python ints or on an int64 numpy array (``vector`` None: ``total`` alone decides).
    ``request_excess``: the most one request puts on a rank beyond its mean, as P*l_r - L (None where the
    loads depend on the total only), for the headroom capacity. ``loads``: every rank's rows of a batch of
    prefills. ``decodes``: where a copied request (a decode) goes, None where the strategy lays out prefills only
    ('round_robin': the k-th on rank k mod P; 'replicated': on every rank; 'dcp': on every rank, and so is a
    prefill too short to fill 2P chunks). ``align_factor`` 0: no alignment (A = 1).
    """

    id: str
    align_factor: int
    one_request: Callable[[int, int], int]
    scalar: Callable[[Sequence[int], int, int], int]
    vector: Callable[[ModuleType, Int64Array, int, int], int] | None
    request_excess: Callable[[int], int] | None
    loads: Callable[[Lengths, int], tuple[int, ...]]
    decodes: str | None = None
    cp_active: str = "blocks"

    def inactive(self, lengths: Lengths, n: int, p: int) -> FallbackReason | None:
        """The CP-activity gate (the reference strategy table's ``cp_active``): why a batch of accepted
        ``lengths`` and ``n`` tokens on ``p`` ranks runs eagerly before any bucket is looked at, or None.
        "blocks": P > 1, n >= 2P, every length >= 2P; "tokens" (interleave): P > 1, the lengths' sum >= P."""
        if p == 1:
            return FallbackReason.CP_DISABLED
        if self.cp_active == "tokens":
            return FallbackReason.TOO_FEW_TOKENS if lengths[3] < p else None
        if n < 2 * p:
            return FallbackReason.TOO_FEW_TOKENS
        return FallbackReason.SHORT_REQUEST if lengths[4] < 2 * p else None

    def align_size(self, cp_size: int) -> int:
        """Upstream's default alignment at ``cp_size`` ranks: align_factor * P, or 1 for a factor of 0."""
        return self.align_factor * cp_size if self.align_factor else 1


def _ceil_share(length: int, p: int) -> int:
    return -(-length // p)


FORMULAS: Mapping[str, StrategyFormulas] = MappingProxyType(
    {
        "zigzag": StrategyFormulas(
            "zigzag", 2, _ceil_share, _zigzag_scalar, _zigzag_vector, lambda p: p - 1, _zigzag_loads
        ),
        "interleave": StrategyFormulas(
            "interleave", 1, _ceil_share, lambda values, total, p: _interleave(total, p), None, None, _interleave_loads,
            cp_active="tokens",
        ),
        "contiguous": StrategyFormulas(
            "contiguous", 1, _ceil_share, _contiguous_scalar, _contiguous_vector, lambda p: p - 1, _contiguous_loads
        ),
        "dual_chunk_swap": StrategyFormulas(
            "dual_chunk_swap", 0, _dcs_one, _dcs_scalar("round_robin"), _dcs_vector("round_robin"),
            _dcs_excess, _dcs_loads("round_robin"), "round_robin",
        ),
        "dual_chunk_swap_replicated": StrategyFormulas(
            "dual_chunk_swap_replicated", 0, _dcs_one, _dcs_scalar("replicated"), _dcs_vector("replicated"),
            _dcs_excess, _dcs_loads("replicated"), "replicated",
        ),
        "dual_chunk_swap_dcp": StrategyFormulas(
            "dual_chunk_swap_dcp", 0, _dcs_dcp_one, _dcs_scalar("dcp"), _dcs_vector("dcp"), _dcp_excess,
            _dcs_loads("dcp"), "dcp",
        ),
    }
)
DECODE_STRATEGIES = tuple(s for s, row in FORMULAS.items() if row.decodes is not None)
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


def decode_loads(lengths: Lengths, p: int, row: StrategyFormulas, prefilling: tuple[bool, ...]) -> tuple[int, ...]:
    """Every rank's rows for accepted lengths with decodes (``prefilling`` as ``accept_is_prefilling`` returns it,
    holding a False); ValueError when the strategy lays out prefills only."""
    if row.decodes is None:
        decode = prefilling.index(False)
        raise ValueError(
            f"is_prefilling[{decode}] is False but strategy {row.id!r} lays out prefills only; "
            f"a batch with decodes needs one of {', '.join(DECODE_STRATEGIES)}"
        )
    return _dcs_mixed(lengths, p, tuple(not x for x in prefilling), row.decodes)


def busiest_mixed(lengths: Lengths, p: int, row: StrategyFormulas, prefilling: tuple[bool, ...] | None) -> int:
    """``busiest_rows``, with decodes where ``prefilling`` (accepted; None: every request a prefill) marks some."""
    if prefilling is None:
        return busiest_rows(lengths, p, row)
    return max(decode_loads(lengths, p, row, prefilling))


def default_align_size(*, cp_size: int, strategy: str = "zigzag") -> int:
    """Upstream's alignment: the strategy's factor times P (2P for zigzag, P for interleave and contiguous), 1 for
    the dual_chunk_swap rows (factor 0: vLLM pads a rank's rows to the graph size and nothing else)."""
    return formulas(strategy).align_size(check_cp_size("cp_size", cp_size))


def rank_loads(
    extend_seq_lens: object, *, cp_size: object, strategy: object = "zigzag", is_prefilling: object = None
) -> tuple[int, ...]:
    """Rows each of the P ranks occupies for this batch (impl's own formulas; the reference's ``rank_loads``
    contract and errors). ``is_prefilling``: one bool per request (None: all prefills); a decode needs a strategy
    that places decodes."""
    lengths = accept_lengths(extend_seq_lens)
    p = cp_size if type(cp_size) is int and 1 <= cp_size <= MAX_CP_SIZE else check_cp_size("cp_size", cp_size)
    row = formulas(strategy)
    prefilling = accept_is_prefilling(is_prefilling, lengths[2])
    return row.loads(lengths, p) if prefilling is None else decode_loads(lengths, p, row, prefilling)


def max_rank_load(
    extend_seq_lens: object, *, cp_size: object, strategy: object = "zigzag", is_prefilling: object = None
) -> int:
    """The busiest rank's rows for this batch (its real tokens; a replicated request counts on every rank)."""
    lengths = accept_lengths(extend_seq_lens)
    p = cp_size if type(cp_size) is int and 1 <= cp_size <= MAX_CP_SIZE else check_cp_size("cp_size", cp_size)
    row = formulas(strategy)
    if is_prefilling is None:
        return busiest_rows(lengths, p, row)
    return busiest_mixed(lengths, p, row, accept_is_prefilling(is_prefilling, lengths[2]))


def required_local_tokens(
    extend_seq_lens: object,
    *,
    cp_size: object,
    align_size: object,
    strategy: object = "zigzag",
    is_prefilling: object = None,
) -> int:
    """Physical rows every rank pads to for this live batch: align_up(max_r l_r, A).

    Same contract and errors as ``cpgraph.reference.required_local_tokens``; also takes an int64 numpy array or
    a CPU tensor, and ``is_prefilling`` (decodes, for the strategies that place them). Built from the live
    lengths, never from a padded token count (that folds the pad into the last request and changes the loads).
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
    if is_prefilling is not None:
        rows = busiest_mixed(lengths, p, row, accept_is_prefilling(is_prefilling, lengths[2]))
    else:
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
    """Rows of the capture layout of ``num_tokens`` tokens: upstream's ``bucket_local_tokens[B]`` at capture
    (global keying; under local keying a size s holds s rows)."""
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


def is_cp_active(extend_seq_lens: object, *, num_tokens: object, cp_size: object, strategy: object = "zigzag") -> bool:
    """Does a batch take the CP graph path? By the strategy's gate (``StrategyFormulas.inactive``): P > 1,
    n >= 2P and every length >= 2P; under interleave P > 1 and the lengths' sum >= P."""
    lengths = accept_lengths(extend_seq_lens)
    n = check_int("num_tokens", num_tokens, minimum=1)
    p = check_cp_size("cp_size", cp_size)
    return formulas(strategy).inactive(lengths, n, p) is None


