"""What the reference expects of one batch, before any rank is asked: CP-activity, the live loads, the
rows required and the fitting set (``expected``), and its bucket alone by the one scan
(``expected_bucket``, the checker's fast path). Loads are memoised per request for strategies whose
table row names its per-request loads. reference/judge.py judges the ranks' answers against it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import add

from cpgraph.reference.answers import AskedBatch, Factor
from cpgraph.reference.capacity import align_up
from cpgraph.reference.keying import keying_row
from cpgraph.reference.layout import rank_loads
from cpgraph.reference.selection import fitting_buckets, is_cp_active, iter_fitting, window_top
from cpgraph.reference.strategies import capture_lengths, strategy_row
from cpgraph.reference.validate import MAX_CP_SIZE

__all__ = ["Expectation", "capture_loads", "expected", "expected_bucket", "fitting_set", "memo_loads"]


@dataclass(frozen=True)
class Expectation:
    """What the reference says about a batch: CP-active? (under ``global`` keying; every batch is keyed
    under ``local``), the live loads, rows required, the fitting set, and the keying it was computed
    under with its key (reference/keying.py: n under global, the largest rank-local rows under local)."""

    active: bool
    loads: tuple[int, ...]
    required: int
    fitting: tuple[int, ...]
    keying: str = "global"
    key: int = 0
    strategy: str = "zigzag"

    @property
    def bucket(self) -> int | None:
        """The reference's choice: the least fitting bucket of a CP-active batch, else None (run eagerly)."""
        return self.fitting[0] if self.active and self.fitting else None

    def describe(self, batch: AskedBatch) -> str:
        choice = f"replay bucket {self.bucket}" if self.bucket is not None else "run eagerly (admit False, replay refuses)"
        if not self.active:
            rule = strategy_row(self.strategy).cp_active_rule()
            choice = f"not CP-active under {self.strategy} ({rule}): run eagerly, no rank may admit it to the CP graph"
        if self.keying == "local":
            return (
                f"spec (keyed by rank-local rows): loads {self.loads} -> key {self.key}, required {self.required} rows; "
                f"fitting sizes {self.fitting[:8]}{' ...' if len(self.fitting) > 8 else ''} -> {choice}"
            )
        return f"spec: loads {self.loads} -> required {self.required} rows; fitting buckets {self.fitting} -> {choice}"


def fitting_set(
    *, num_tokens: int, required: int, capture_num_tokens: Sequence[int], capacities: Mapping[int, int], factor: Factor
) -> tuple[int, ...]:
    """reference.fitting_buckets (an int or exact rational F)."""
    return fitting_buckets(
        num_tokens=num_tokens, required_local_tokens=required, capture_num_tokens=capture_num_tokens,
        bucket_local_tokens=capacities, max_padding_factor=factor,
    )


@lru_cache(maxsize=65536)
def _loads(lengths: tuple[int, ...], cp_size: int, strategy: str) -> tuple[int, ...]:
    """reference.rank_loads, memoised; for a strategy whose batch loads are the sum of its per-request
    loads (a table row with ``request_loads``) the memoised loads of each request (the
    reference's own per-request loads, rank_loads of the one-request batch: ``_request_loads``), summed
    rank by rank as the row sums them. Arguments rank_loads would refuse go to it, for its error."""
    if type(cp_size) is int and cp_size >= 1 and lengths and all(type(x) is int and x >= 0 for x in lengths):
        memo = _request_loads(strategy, cp_size)
        if memo is not None:
            return _summed(memo, lengths)
    return rank_loads(lengths, cp_size=cp_size, strategy=strategy)


def _summed(memo: _RequestLoads, lengths: Sequence[int]) -> tuple[int, ...]:
    """The batch's loads: each request's memoised loads, summed rank by rank (one and two requests, the
    common batches, without the general zip)."""
    if len(lengths) == 1:
        return memo[lengths[0]]
    if len(lengths) == 2:
        return tuple(map(add, memo[lengths[0]], memo[lengths[1]]))
    return tuple(map(sum, zip(*map(memo.__getitem__, lengths))))


memo_loads = _loads  # reference.rank_loads(lengths, cp_size=, strategy=), memoised (positional arguments)


def capture_loads(bucket: int, context_len: int | None, cp_size: int, strategy: str) -> tuple[int, ...]:
    """reference.rank_loads(capture_lengths(bucket, context_len=context_len), cp_size=, strategy=), memoised,
    without building the capture lengths when B is many context lengths (B / context_len requests: a
    tuple of a million ones for B = 10**6 at context_len 1). Where a batch's loads are the rank-wise sum
    of its requests' (a table row with request_loads), ``full`` requests of context_len tokens and one
    of the rest load each rank with full * loads(context_len) + loads(rest); where they depend on the
    total only (request_excess None), they are the loads of one request of B tokens. Arguments
    rank_loads would refuse go to it, for its error."""
    if (
        context_len is None or type(bucket) is not int or type(context_len) is not int or context_len < 1
        or bucket <= context_len
    ):
        return _loads(capture_lengths(bucket, context_len=context_len), cp_size, strategy)
    full, rest = divmod(bucket, context_len)
    memo = _request_loads(strategy, cp_size)
    if memo is not None:
        one = memo[context_len]
        return tuple(full * x for x in one) if not rest else tuple(full * x + y for x, y in zip(one, memo[rest]))
    if _total_only(strategy) and type(cp_size) is int and 1 <= cp_size <= MAX_CP_SIZE:
        return _loads((bucket,), cp_size, strategy)
    return _loads(capture_lengths(bucket, context_len=context_len), cp_size, strategy)


@lru_cache(maxsize=16)
def _total_only(strategy: str) -> bool:
    """Do ``strategy``'s loads depend on a batch's total only (its table row's request_excess is None)?"""
    try:
        return strategy_row(strategy).request_excess is None
    except ValueError:
        return False


@lru_cache(maxsize=16)
def _per_request(strategy: str) -> bool:
    """Are ``strategy``'s batch loads the sum of its per-request loads (its table row names them)? False
    for loads that depend on the whole batch (interleave's) and for a strategy not in the table
    (rank_loads then says why)."""
    try:
        return strategy_row(strategy).request_loads is not None
    except ValueError:
        return False


class _RequestLoads(dict[int, tuple[int, ...]]):
    """length -> the reference's loads of the one-request batch (length,) at one (strategy, P), filled on
    first use: ``expected_bucket`` reads one entry per request of every batch, and a dict lookup costs a
    fraction of an lru_cache call with three arguments. A length rank_loads accepts (an int >= 0) is
    filled by the strategy row's ``request_loads``, which is what rank_loads sums for a one-request batch
    (without its argument checks: P was checked when the memo was made); any other key goes to rank_loads
    for its error."""

    def __init__(self, strategy: str, cp_size: int, request_loads: Callable[..., tuple[int, ...]]) -> None:
        super().__init__()
        self.strategy, self.cp_size, self.request_loads = strategy, cp_size, request_loads

    def __missing__(self, length: int) -> tuple[int, ...]:
        if len(self) >= 65536:  # bounded, like the lru caches beside it
            self.clear()
        if type(length) is int and length >= 0:
            loads = self[length] = tuple(self.request_loads(length, cp_size=self.cp_size))
        else:
            loads = self[length] = rank_loads((length,), cp_size=self.cp_size, strategy=self.strategy)
        return loads


_REQUEST_MEMOS: dict[str, dict[int, _RequestLoads]] = {}  # strategy -> P -> its per-request memo


def _request_loads(strategy: str, cp_size: int) -> _RequestLoads | None:
    """The per-request memo of (strategy, P) (made on first use); None for a strategy whose batch loads
    are not the sum of its per-request loads (``_per_request``) or a P rank_loads would refuse (the
    caller then goes to rank_loads, for its error)."""
    memo = _REQUEST_MEMOS.get(strategy, {}).get(cp_size)
    if memo is not None:
        return memo
    if not (_per_request(strategy) and type(cp_size) is int and 1 <= cp_size <= MAX_CP_SIZE):
        return None
    request_loads = strategy_row(strategy).request_loads
    assert request_loads is not None  # _per_request
    memos = _REQUEST_MEMOS.setdefault(strategy, {})
    if len(memos) >= 64:
        memos.clear()
    made = memos[cp_size] = _RequestLoads(strategy, cp_size, request_loads)
    return made


@lru_cache(maxsize=65536)
def _required(lengths: tuple[int, ...], cp_size: int, align_size: int, strategy: str) -> int:
    """reference.required_local_tokens: align_up(max rank load, A), from the memoised loads."""
    return align_up(max(_loads(lengths, cp_size, strategy)), align_size)


def prefilling_of(batch: AskedBatch) -> tuple[bool, ...] | None:
    """The batch's ``is_prefilling`` (None: every request is a prefill), for batches that carry one."""
    flags: tuple[bool, ...] | None = getattr(batch, "is_prefilling", None)
    return flags


def _keyed_loads(batch: AskedBatch, strategy: str) -> tuple[int, ...]:
    flags = prefilling_of(batch)
    if flags is None:
        lengths = batch.extend_seq_lens
        return _loads(lengths if type(lengths) is tuple else tuple(lengths), batch.cp_size, strategy)
    return rank_loads(batch.extend_seq_lens, cp_size=batch.cp_size, strategy=strategy, is_prefilling=flags)


def _local(batch: AskedBatch, strategy: str) -> Expectation:
    """``expected`` under local keying: key m = max live rank-local rows, every captured size s >= the
    rows required (align_up(m, A)) fits (a size s holds s rows on every rank), no window, no gate."""
    loads = _keyed_loads(batch, strategy)
    key = max(loads)
    required = align_up(key, batch.align_size)
    fitting = tuple(s for s in batch.capture_num_tokens if s >= required)
    return Expectation(True, loads, required, fitting, "local", key, strategy)


def expected(batch: AskedBatch, strategy: str = "zigzag", keying: str = "global") -> Expectation:
    """The reference's verdict on ``batch`` under ``keying`` (reference/keying.py). Global: loads
    (reference.rank_loads), rows required (align_up(max load, A), reference.required_local_tokens from the
    live lengths), the fitting set (reference.fitting_buckets at ``num_tokens``, which may exceed the
    lengths' sum) and CP-activity (reference.is_cp_active). Local: see ``_local``. A batch's
    ``is_prefilling`` (when it has one) places its decodes as the strategy row says."""
    if keying_row(keying).id == "local":
        return _local(batch, strategy)
    if prefilling_of(batch) is not None:
        loads = _keyed_loads(batch, strategy)
        required = align_up(max(loads), batch.align_size)
        fitting = fitting_set(
            num_tokens=batch.num_tokens, required=required, capture_num_tokens=batch.capture_num_tokens,
            capacities=batch.capacities, factor=batch.max_padding_factor,
        )
        active = is_cp_active(batch.extend_seq_lens, num_tokens=batch.num_tokens, cp_size=batch.cp_size, strategy=strategy)
        return Expectation(active, loads, required, fitting, "global", batch.num_tokens, strategy)
    lengths, p = tuple(batch.extend_seq_lens), batch.cp_size
    loads = _loads(lengths, p, strategy)
    required = _required(lengths, p, batch.align_size, strategy)
    fitting = fitting_set(
        num_tokens=batch.num_tokens, required=required, capture_num_tokens=batch.capture_num_tokens,
        capacities=batch.capacities, factor=batch.max_padding_factor,
    )
    active = is_cp_active(lengths, num_tokens=batch.num_tokens, cp_size=p, strategy=strategy)
    return Expectation(active, loads, required, fitting, "global", batch.num_tokens, strategy)


def expected_bucket(
    batch: AskedBatch, strategy: str = "zigzag", capacities: Mapping[int, int] | None = None, keying: str = "global"
) -> tuple[int | None, tuple[int, ...], int]:
    """``expected(batch, strategy)``'s ``bucket``, its ``loads`` and that bucket's capacity (0 when the
    bucket is None), without building the fitting set or the record: the first bucket of the reference's
    scan (selection.iter_fitting), of a CP-active batch. The arguments
    are not validated: for a batch whose fields are valid (what reference.fitting_buckets and
    is_cp_active accept, as every batch the checker generates is) it equals ``expected``'s; tests hold
    the two equal. ``capacities``: ``batch.capacities`` when the caller already has it.

    The loads of a batch of several requests are summed here from the memoised loads of each request
    (not memoised as a batch: a generated batch rarely recurs, and a miss in a batch-keyed cache costs
    more than the sum). Under ``local`` keying, or for a batch with decodes, it reads ``expected``."""
    if keying != "global" or prefilling_of(batch) is not None:
        made = expected(batch, strategy, keying)
        bucket = made.bucket
        return bucket, made.loads, 0 if bucket is None else (bucket if made.keying == "local" else batch.capacities[bucket])
    lengths, p, n = batch.extend_seq_lens, batch.cp_size, batch.num_tokens
    memo = _request_loads(strategy, p)
    if memo is None or type(lengths) is not tuple:
        loads = _loads(lengths if type(lengths) is tuple else tuple(lengths), p, strategy)
    else:
        loads = _summed(memo, lengths)
    if not strategy_row(strategy).is_cp_active(lengths, n, p):
        return None, loads, 0
    align = batch.align_size
    required = -(-max(loads) // align) * align  # align_up(max load, A), as _required
    caps = batch.capacities if capacities is None else capacities
    for b in iter_fitting(n, required, batch.capture_num_tokens, caps, window_top(n, batch.max_padding_factor)):
        return b, loads, caps[b]
    return None, loads, 0
