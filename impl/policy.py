"""impl/'s decision path as a policy (the protocol of ``cpgraph check``): admit, replay_bucket, local_rows.

Every call validates its batch once (``impl.lengths.accept_lengths`` and the scalar checks) and decides with the
same formula table, bucket rule and reasons as the dispatcher's ``decision.choose``, so admission and replay cannot
disagree. ``cp_rank`` is validated and deliberately unused: the decision is rank-invariant. No ``Plan`` is built
except by ``decide``.

Beyond the batch keywords every function takes, optional (``PolicyOptions``; a call with the batch keywords alone
takes the zigzag, global, all-prefill path without looking for them): ``strategy`` (default zigzag),
``keying`` ('global', sglang's and the default, or 'local', vLLM 0.29's: the key is the largest live rank-local rows
m, the size the least captured s >= m, no window, no CP-active gate, and ``bucket_local_tokens`` is not read since
a size s holds s rows) and ``is_prefilling`` (one bool per request; decodes, for the dual_chunk_swap rows).

The capture table is not rebuilt on every call. A validated capture list is remembered (``_CaptureCache``,
keyed on its content: the same tuple object, or a list/tuple with equal exact-int items), and a validated
capacity mapping is remembered by object (or by equal content with exact-int keys and rows). The capacities the
decision reads are always read from the mapping passed in this call and checked as they are read, so a mapping
changed in place between calls is decided on its new values; what is memoised is only that its other entries
were valid when first seen.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from fractions import Fraction
from typing import Unpack

from cpgraph.impl.checks import (
    MAX_CP_SIZE,
    check_capacities,
    check_capture_list,
    check_cp_size,
    check_int,
    check_keying,
    check_padding_factor,
)
from cpgraph.impl.decision import (
    FORMULAS,
    FallbackReason,
    Plan,
    StrategyFormulas,
    align_up,
    busiest_mixed,
    busiest_rows,
    formulas,
)
from cpgraph.impl.lengths import Lengths, accept_is_prefilling, accept_lengths, lengths_tuple
from cpgraph.reference.policy import BATCH_KEYWORDS, PolicyBatch, check_batch_keywords

_CACHE_SIZE = 8


class _CaptureCache:
    """The last few validated capture lists and capacity mappings (most recent first).

    A capture list hits when it is the very tuple validated before, or a list/tuple with equal items whose sum
    is an exact int (so no float or numpy scalar equal to a bucket slips in; a bool can only equal 0 or 1, so
    lists holding 0 or 1 are always re-validated). A capacity mapping hits when it is the object validated
    before, or a dict equal to one with exact-int keys and rows (same argument; mappings holding 0/1 or None
    are re-validated).
    """

    def __init__(self) -> None:
        self.lists: list[tuple[object, tuple[int, ...], bool]] = []  # (as given, validated, content-reusable)
        self.maps: list[tuple[object, dict[int, int | None], bool]] = []
        # The most recent hit, checked inline by the caller: a tuple (immutable) and a mapping object.
        self.last_list: object = None
        self.last_buckets: tuple[int, ...] = ()
        self.last_map: object = None

    def buckets(self, value: object) -> tuple[int, ...]:
        found = self._buckets(value)
        if type(value) is tuple:
            self.last_list, self.last_buckets = value, found
        return found

    def _buckets(self, value: object) -> tuple[int, ...]:
        for source, buckets, reusable in self.lists:
            if source is value and type(value) is tuple:
                return buckets
        kind = type(value)
        if isinstance(value, (tuple, list)):
            for source, buckets, reusable in self.lists:
                if reusable and len(value) == len(buckets) and value == (buckets if kind is tuple else list(buckets)):
                    try:
                        exact = type(sum(value)) is int
                    except TypeError:
                        break
                    if exact:
                        return buckets
                    break
        checked = check_capture_list("capture_num_tokens", value)
        reusable = checked[0] > 1
        self.lists = [(value if kind is tuple else checked, checked, reusable), *self.lists[: _CACHE_SIZE - 1]]
        return checked

    def capacities(self, value: object) -> None:
        self._capacities(value)
        self.last_map = value

    def _capacities(self, value: object) -> None:
        for source, _, _ in self.maps:
            if source is value:
                return
        if type(value) is dict:
            for _, snapshot, reusable in self.maps:
                if reusable and len(value) == len(snapshot) and value == snapshot:
                    try:
                        exact = type(sum(value)) is int and type(sum(value.values())) is int
                    except TypeError:
                        break
                    if exact:
                        return
                    break
        table = check_capacities("bucket_local_tokens", value)
        assert isinstance(value, Mapping)
        snapshot = dict(value)
        reusable = len(table) == len(snapshot) and not ({0, 1} & (set(snapshot) | set(table.values())))
        self.maps = [(value, snapshot, reusable), *self.maps[: _CACHE_SIZE - 1]]


_CACHE = _CaptureCache()
_KEYWORD_COUNT = len(BATCH_KEYWORDS)
_ZIGZAG = FORMULAS["zigzag"]  # the protocol functions' strategy (upstream's default)
CP_DISABLED, TOO_FEW_TOKENS = FallbackReason.CP_DISABLED, FallbackReason.TOO_FEW_TOKENS
SHORT_REQUEST, TOO_MANY_TOKENS = FallbackReason.SHORT_REQUEST, FallbackReason.TOO_MANY_TOKENS


def _local(keying: object) -> bool:
    """True for local keying, False for global; ValueError naming the allowed ids otherwise."""
    if type(keying) is str:
        if keying == "global":
            return False
        if keying == "local":
            return True
    return check_keying(keying) == "local"  # raises


def _row(strategy: object) -> StrategyFormulas:
    row = FORMULAS.get(strategy) if type(strategy) is str else None
    return row if row is not None else formulas(strategy)


def _decide(
    caller: str, batch: PolicyBatch, row: StrategyFormulas, want_rows: bool = False, local: bool = False,
    is_prefilling: object = None,
) -> tuple[Lengths, int, int, int | None, int | None, FallbackReason | None]:
    """(lengths, n, required rows, bucket, its capacity, fallback reason) for one policy call. The rows are
    computed whenever a bucket is looked for; on an earlier fallback only when ``want_rows`` (else -1). Under
    local keying (``local``) the required rows are the key m and the bucket the least listed size >= m."""
    if len(batch) != _KEYWORD_COUNT:
        check_batch_keywords(caller, batch)
    try:  # exactly the batch keywords: the right count and no KeyError
        lens, rank, p, a, n = (batch["extend_seq_lens"], batch["cp_rank"], batch["cp_size"], batch["align_size"],
                               batch["num_tokens"])
        factor: int | Fraction = batch["max_padding_factor"]
        capture, caps = batch["capture_num_tokens"], batch["bucket_local_tokens"]
    except KeyError:
        check_batch_keywords(caller, batch)
        raise
    if type(lens) is list and len(lens) == 1 and type(lens[0]) is int and lens[0] >= 0:  # R = 1, inline
        lengths: Lengths = (lens, None, 1, lens[0], lens[0])
    else:
        lengths = accept_lengths(lens)
    if not (type(rank) is int and rank >= 0 and type(p) is int and 1 <= p <= MAX_CP_SIZE and type(a) is int and a >= 1
            and type(n) is int and n >= 1 and type(factor) is int and factor >= 1):
        check_int("cp_rank", rank, minimum=0)
        p = check_cp_size("cp_size", p)
        a = check_int("align_size", a, minimum=1)
        n = check_int("num_tokens", n, minimum=1)
        factor = check_padding_factor("max_padding_factor", factor)
    buckets = _CACHE.last_buckets if capture is _CACHE.last_list else _CACHE.buckets(capture)
    if caps is not _CACHE.last_map:
        _CACHE.capacities(caps)
    prefilling = None if is_prefilling is None else accept_is_prefilling(is_prefilling, lengths[2])
    if local:  # every batch keyed by its largest rank-local rows; a size s holds s rows (no table read)
        key = busiest_mixed(lengths, p, row, prefilling)
        i = bisect_left(buckets, key)
        if i < len(buckets):
            return lengths, n, key, buckets[i], buckets[i], None
        return lengths, n, key, None, None, TOO_MANY_TOKENS
    two_p = 2 * p
    if row.cp_active == "blocks":  # the common gate inline; the others through the row (StrategyFormulas.inactive)
        reason = (CP_DISABLED if p == 1 else TOO_FEW_TOKENS if n < two_p else SHORT_REQUEST if lengths[4] < two_p
                  else TOO_MANY_TOKENS if n > buckets[-1] else None)
    else:
        reason = row.inactive(lengths, n, p) or (TOO_MANY_TOKENS if n > buckets[-1] else None)
    if reason is not None and not want_rows:  # admit and replay_bucket need no rows to refuse
        return lengths, n, -1, None, None, reason
    if prefilling is not None:
        required = busiest_mixed(lengths, p, row, prefilling)
    else:
        required = row.one_request(lengths[3], p) if lengths[2] == 1 else busiest_rows(lengths, p, row)
    required = -(-required // a) * a
    if reason is not None:
        return lengths, n, required, None, None, reason
    lo = bisect_left(buckets, n)
    hi = bisect_right(buckets, factor * n, lo)
    if lo >= hi:
        return lengths, n, required, None, None, FallbackReason.NO_BUCKET_WITHIN_PADDING_LIMIT
    bucket = buckets[lo]  # the least bucket in the window first, without the loop (it fits most batches)
    rows = caps.get(bucket)
    if type(rows) is int and rows >= required:  # required >= 0, so such rows are a valid capacity
        return lengths, n, required, bucket, rows, None
    for bucket in buckets[lo:hi]:
        rows = caps.get(bucket)
        if rows is not None:
            if type(rows) is not int or rows < 0:
                check_capacities("bucket_local_tokens", {bucket: rows})  # raises, naming the bucket and value
            if rows >= required:
                return lengths, n, required, bucket, rows, None
    return lengths, n, required, None, None, FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT


class PolicyOptions(PolicyBatch, total=False):
    """The batch keywords and, optional, impl's own: the strategy id, the graph keying, which requests are prefills."""

    strategy: str
    keying: str
    is_prefilling: object


def _options(batch: PolicyOptions) -> tuple[StrategyFormulas, bool, object]:
    """Take impl's optional keywords out of ``batch`` (leaving the protocol's): (formula row, local?, flags)."""
    strategy = batch.pop("strategy", "zigzag")
    keying = batch.pop("keying", "global")
    return _row(strategy), _local(keying), batch.pop("is_prefilling", None)


def decide(**batch: Unpack[PolicyOptions]) -> Plan:
    """The one plan for this batch under the given capture table."""
    row, local, flags = _options(batch)
    lengths, n, required, bucket, rows, reason = _decide("decide", batch, row, True, local, flags)
    return Plan(lengths_tuple(lengths), n, required, bucket, rows, reason)


def _refusal(batch: PolicyBatch, reason: FallbackReason | None) -> LookupError:
    assert reason is not None
    lengths = batch["extend_seq_lens"]
    shown = tuple(lengths) if isinstance(lengths, (list, tuple)) else lengths
    return LookupError(
        f"no captured bucket fits num_tokens={batch['num_tokens']}, extend_seq_lens={shown} "
        f"({reason.value}); run eagerly"
    )


def bucket_of(plan: Plan) -> int:
    """The plan's bucket; raises LookupError (naming the fallback reason) when the plan falls back."""
    if plan.bucket is None:
        assert plan.fallback is not None
        raise LookupError(
            f"no captured bucket fits num_tokens={plan.num_tokens}, extend_seq_lens={plan.extend_seq_lens} "
            f"({plan.fallback.value}); run eagerly"
        )
    return plan.bucket


def admit(**batch: Unpack[PolicyOptions]) -> bool:
    """Would this rank replay a graph for this batch?"""
    if len(batch) == _KEYWORD_COUNT:  # the protocol's keywords alone: zigzag, global keying, every request a prefill
        return _decide("admit", batch, _ZIGZAG)[3] is not None
    row, local, flags = _options(batch)
    return _decide("admit", batch, row, False, local, flags)[3] is not None


def replay_bucket(**batch: Unpack[PolicyOptions]) -> int:
    """The bucket (global) or size (local) this rank pads to; raises LookupError (naming the fallback reason) when
    not admitted."""
    if len(batch) == _KEYWORD_COUNT:
        _, _, _, bucket, _, reason = _decide("replay_bucket", batch, _ZIGZAG)
    else:
        row, local, flags = _options(batch)
        _, _, _, bucket, _, reason = _decide("replay_bucket", batch, row, False, local, flags)
    if bucket is None:
        raise _refusal(batch, reason)
    return bucket


def local_rows(*, bucket: int, **batch: Unpack[PolicyOptions]) -> tuple[int, ...]:
    """Physical rows per rank the live layout needs at ``bucket``: every rank pads to align_up(max load, A)
    (global), or the largest live rows m with no alignment (local; the layout is then padded to the size).

    Built from the live lengths (never the padded count); ``bucket`` only selects which buffer they go into.
    """
    row, local, is_prefilling = _options(batch)
    if batch.keys() != BATCH_KEYWORDS:
        check_batch_keywords("local_rows", batch)
    if not (type(bucket) is int and bucket >= 1):
        check_int("bucket", bucket, minimum=1)
    p, a = batch["cp_size"], batch["align_size"]
    if not (type(p) is int and 1 <= p <= MAX_CP_SIZE):
        p = check_cp_size("cp_size", p)
    if not (type(a) is int and a >= 1):
        a = check_int("align_size", a, minimum=1)
    lengths = accept_lengths(batch["extend_seq_lens"])
    prefilling = None if is_prefilling is None else accept_is_prefilling(is_prefilling, lengths[2])
    rows = busiest_mixed(lengths, p, row, prefilling)
    return ((rows if local else align_up(rows, a)),) * p


__all__ = ["PolicyOptions", "admit", "bucket_of", "decide", "local_rows", "replay_bucket"]
