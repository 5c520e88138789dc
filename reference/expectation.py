"""What the reference expects of one batch, before any rank is asked: CP-activity, the live loads, the
rows required and the fitting set (``expected``), and its bucket alone by the one scan
(``expected_bucket``, the checker's fast path). Loads are memoised per request for strategies whose
table row names its per-request loads. reference/judge.py judges the ranks' answers against it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from cpgraph.reference.answers import AskedBatch, Factor
from cpgraph.reference.capacity import align_up
from cpgraph.reference.layout import rank_loads
from cpgraph.reference.selection import fitting_buckets, is_cp_active, iter_fitting, window_top
from cpgraph.reference.strategies import strategy_row

__all__ = ["Expectation", "expected", "expected_bucket", "fitting_set", "memo_loads"]


@dataclass(frozen=True)
class Expectation:
    """What the reference says about a batch: CP-active?, the live loads, rows required, the fitting set."""

    active: bool
    loads: tuple[int, ...]
    required: int
    fitting: tuple[int, ...]

    @property
    def bucket(self) -> int | None:
        """The reference's choice: the least fitting bucket of a CP-active batch, else None (run eagerly)."""
        return self.fitting[0] if self.active and self.fitting else None

    def describe(self, batch: AskedBatch) -> str:
        choice = f"replay bucket {self.bucket}" if self.bucket is not None else "run eagerly (admit False, replay refuses)"
        if not self.active:
            choice = "not CP-active (P > 1, n >= 2P, every length >= 2P): any admitted bucket must still be safe"
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
    reference's own per-request loads, rank_loads of the one-request batch), summed rank by rank as
    the row sums them. Arguments rank_loads would refuse go to it, for its error."""
    if (
        _per_request(strategy) and type(cp_size) is int and cp_size >= 1 and lengths
        and all(type(x) is int and x >= 0 for x in lengths)
    ):
        if len(lengths) == 1:
            return _one_request(lengths[0], cp_size, strategy)
        return tuple(map(sum, zip(*[_one_request(x, cp_size, strategy) for x in lengths])))
    return rank_loads(lengths, cp_size=cp_size, strategy=strategy)


memo_loads = _loads  # reference.rank_loads(lengths, cp_size=, strategy=), memoised (positional arguments)


@lru_cache(maxsize=16)
def _per_request(strategy: str) -> bool:
    """Are ``strategy``'s batch loads the sum of its per-request loads (its table row names them)? False
    for loads that depend on the whole batch (interleave's) and for a strategy not in the table
    (rank_loads then says why)."""
    try:
        return strategy_row(strategy).request_loads is not None
    except ValueError:
        return False


@lru_cache(maxsize=65536)
def _one_request(length: int, cp_size: int, strategy: str) -> tuple[int, ...]:
    """reference.rank_loads of the one-request batch (length,), memoised (requests recur across batches)."""
    return rank_loads((length,), cp_size=cp_size, strategy=strategy)


@lru_cache(maxsize=65536)
def _required(lengths: tuple[int, ...], cp_size: int, align_size: int, strategy: str) -> int:
    """reference.required_local_tokens: align_up(max rank load, A), from the memoised loads."""
    return align_up(max(_loads(lengths, cp_size, strategy)), align_size)


def expected(batch: AskedBatch, strategy: str = "zigzag") -> Expectation:
    """The reference's verdict on ``batch``: loads (reference.rank_loads), rows required
    (align_up(max load, A), reference.required_local_tokens from the live lengths), the fitting set (reference.fitting_buckets
    at ``num_tokens``, which may exceed the lengths' sum) and CP-activity (reference.is_cp_active)."""
    lengths, p = tuple(batch.extend_seq_lens), batch.cp_size
    loads = _loads(lengths, p, strategy)
    required = _required(lengths, p, batch.align_size, strategy)
    fitting = fitting_set(
        num_tokens=batch.num_tokens, required=required, capture_num_tokens=batch.capture_num_tokens,
        capacities=batch.capacities, factor=batch.max_padding_factor,
    )
    active = is_cp_active(lengths, num_tokens=batch.num_tokens, cp_size=p)
    return Expectation(active, loads, required, fitting)


def expected_bucket(
    batch: AskedBatch, strategy: str = "zigzag", capacities: Mapping[int, int] | None = None
) -> tuple[int | None, tuple[int, ...], int]:
    """``expected(batch, strategy)``'s ``bucket``, its ``loads`` and that bucket's capacity (0 when the
    bucket is None), without building the fitting set or the record: the first bucket of the reference's
    scan (selection.iter_fitting), of a CP-active batch. The arguments
    are not validated: for a batch whose fields are valid (what reference.fitting_buckets and
    is_cp_active accept, as every batch the checker generates is) it equals ``expected``'s; tests hold
    the two equal. ``capacities``: ``batch.capacities`` when the caller already has it."""
    lengths, p, n = batch.extend_seq_lens, batch.cp_size, batch.num_tokens
    key = lengths if type(lengths) is tuple else tuple(lengths)
    loads = _loads(key, p, strategy)
    if p < 2 or n < 2 * p or min(lengths) < 2 * p:  # not CP-active
        return None, loads, 0
    align = batch.align_size
    required = -(-max(loads) // align) * align  # align_up(max load, A), as _required
    caps = batch.capacities if capacities is None else capacities
    top = window_top(n, batch.max_padding_factor)
    for b in iter_fitting(n, required, batch.capture_num_tokens, caps, top):
        return b, loads, caps[b]
    return None, loads, 0
