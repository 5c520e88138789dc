"""The fast decision path: bucket selection by bisection over impl's own formulas (impl/formulas.py, re-exported
here), and one frozen plan per batch.

The boundary (``accept_lengths``) validates once and accepts a list, a tuple, an integer numpy array or a CPU
torch tensor; nothing inside validates again. This module lays nothing out (impl/layout.py does).

Two graph keyings (``keying``, impl/checks.py ``KEYING_IDS``):
- ``global`` (sglang's, the default): the key is the batch's n tokens; only CP-active batches (P > 1, n >= 2P,
  every length >= 2P) are keyed; the bucket is the least captured B with n <= B <= F*n whose recorded capacity
  holds align_up(max_r l_r, A) rows.
- ``local`` (vLLM 0.29 on): the key is m = the largest live rank-local rows over the ranks (no alignment, no
  gate: every batch is keyed, P = 1 included); the size is the least captured s >= m (no window; a size s holds
  s rows on every rank, the layout padded to s); above the largest size the batch runs eagerly
  (``too_many_tokens``). The plan records m as ``required_local_tokens`` and s as bucket and capacity.
``is_prefilling`` (optional, one bool per request) marks decodes, which the dual_chunk_swap rows place; the rows
the decision reads include them.
"""

from __future__ import annotations

import sys
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, cast

from cpgraph.impl.checks import (
    check_capacities,
    check_cp_size,
    check_capture_list,
    check_int,
    check_keying,
    check_num_tokens,
    check_padding_factor,
)

from cpgraph.impl.lengths import (
    Lengths,
    accept_is_prefilling as accept_is_prefilling,
    accept_lengths as accept_lengths,
    lengths_tuple,
    trusted_lengths,
)

# The vocabulary is shared with the oracle (one name per concept): the fallback reasons and the plan record.
# What impl computes (loads, alignment, capacities, selection) is its own.
from cpgraph.reference.runner import FallbackReason as FallbackReason, Plan as Plan
from cpgraph.impl.formulas import (
    FORMULAS as FORMULAS,
    StrategyFormulas as StrategyFormulas,
    align_up as align_up,
    busiest_mixed as busiest_mixed,
    busiest_rows as busiest_rows,
    capture_lengths as capture_lengths,
    capture_local_tokens as capture_local_tokens,
    default_align_size as default_align_size,
    formulas as formulas,
    headroom_local_tokens as headroom_local_tokens,
    is_cp_active as is_cp_active,
    max_rank_load as max_rank_load,
    rank_loads as rank_loads,
    required_local_tokens as required_local_tokens,
)


# -- bucket selection ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selector:
    """The sorted capture list with each bucket's recorded capacity (None: absent, never a fit).

    ``monotone`` is True when the present capacities never decrease with the bucket; then the first fitting
    bucket is found by a second bisection instead of a scan over the padding window.
    """

    capture_num_tokens: tuple[int, ...]
    capacities: tuple[int | None, ...]
    monotone: bool

    @staticmethod
    def build(capture_num_tokens: Sequence[int], bucket_local_tokens: Mapping[int, int | None]) -> Selector:
        buckets = check_capture_list("capture_num_tokens", capture_num_tokens)
        table = check_capacities("bucket_local_tokens", bucket_local_tokens)
        caps = tuple(map(table.get, buckets))
        monotone = None not in caps and all(x <= y for x, y in zip(caps, caps[1:]))  # type: ignore[operator]
        return Selector(buckets, caps, monotone)

    def window(self, num_tokens: int, max_padding_factor: int | Fraction) -> tuple[int, int]:
        """Index range [lo, hi) of the captured buckets B with n <= B <= F*n."""
        lo = bisect_left(self.capture_num_tokens, num_tokens)
        hi = bisect_right(self.capture_num_tokens, max_padding_factor * num_tokens, lo)
        return lo, hi

    def select(self, num_tokens: int, required: int, max_padding_factor: int | Fraction) -> int | None:
        """The smallest captured bucket in [n, F*n] whose capacity is >= ``required``, or None."""
        lo, hi = self.window(num_tokens, max_padding_factor)
        if lo >= hi:
            return None
        if self.monotone:  # every capacity present (build() says so) and non-decreasing
            i = bisect_left(cast("tuple[int, ...]", self.capacities), required, lo, hi)
            return self.capture_num_tokens[i] if i < hi else None
        for i in range(lo, hi):
            cap = self.capacities[i]
            if cap is not None and cap >= required:
                return self.capture_num_tokens[i]
        return None

    def capacity(self, bucket: int) -> int | None:
        i = bisect_left(self.capture_num_tokens, bucket)
        if i < len(self.capture_num_tokens) and self.capture_num_tokens[i] == bucket:
            return self.capacities[i]
        return None


def select_replay_bucket(
    *,
    num_tokens: int,
    required_local_tokens: int,
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int | Fraction,
) -> int | None:
    """The smallest captured bucket B with n <= B <= F*n whose recorded capacity is >= required, else None."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    required = check_int("required_local_tokens", required_local_tokens, minimum=0)
    selector = Selector.build(capture_num_tokens, bucket_local_tokens)
    factor = check_padding_factor("max_padding_factor", max_padding_factor)
    return selector.select(n, required, factor)


# -- the plan ---------------------------------------------------------------------------------------------------


def fallback_before_selection(
    lengths: Lengths, n: int, p: int, largest_bucket: int, row: StrategyFormulas | None = None
) -> FallbackReason | None:
    """The reasons decided before any bucket is looked at, in the reference's order: the strategy's
    CP-activity gate (``row``, default zigzag's), then a batch above the largest bucket."""
    inactive = (row or FORMULAS["zigzag"]).inactive(lengths, n, p)
    if inactive is not None:
        return inactive
    if n > largest_bucket:
        return FallbackReason.TOO_MANY_TOKENS
    return None


# (required rows, bucket or None, its capacity or None, fallback reason or None): what a dispatcher needs from
# one batch. A plain tuple, like ``Lengths``: built once a batch on the hot path.
Decision = tuple[int, int | None, int | None, FallbackReason | None]


def choose(
    lengths: Lengths, n: int, p: int, align_size: int, selector: Selector, factor: int | Fraction, row: StrategyFormulas,
    keying: str = "global", prefilling: tuple[bool, ...] | None = None,
) -> Decision:
    """The decision for accepted lengths (and accepted ``prefilling``); every other argument trusted (a
    dispatcher's own configuration)."""
    rows = busiest_rows(lengths, p, row) if prefilling is None else busiest_mixed(lengths, p, row, prefilling)
    buckets = selector.capture_num_tokens
    if keying == "local":
        return pick_local(buckets, selector.capacities, rows)
    required = -(-rows // align_size) * align_size
    reason = fallback_before_selection(lengths, n, p, buckets[-1], row)
    if reason is not None:
        return required, None, None, reason
    return pick(buckets, selector.capacities, selector.monotone, n, required, factor)


def pick_local(sizes: tuple[int, ...], caps: tuple[int | None, ...], rows: int) -> Decision:
    """Local keying: the least captured size s >= ``rows`` (the key m), holding s rows on every rank; a listed size
    with no capacity (not captured) is skipped. Above the largest size: too_many_tokens; only uncaptured sizes at
    or above m: no_capacity_within_padding_limit."""
    i = bisect_left(sizes, rows)
    for j in range(i, len(sizes)):
        if caps[j] is not None:
            return rows, sizes[j], sizes[j], None
    return rows, None, None, (FallbackReason.TOO_MANY_TOKENS if i == len(sizes)
                              else FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT)


def pick(
    buckets: tuple[int, ...], caps: tuple[int | None, ...], monotone: bool, n: int, required: int,
    factor: int | Fraction,
) -> Decision:
    """The smallest captured bucket in [n, F*n] whose capacity is >= ``required``, or the reason there is none
    (the batch already passed the reasons decided before selection)."""
    lo = bisect_left(buckets, n)
    hi = bisect_right(buckets, factor * n, lo)
    if lo >= hi:
        return required, None, None, FallbackReason.NO_BUCKET_WITHIN_PADDING_LIMIT
    if monotone:
        i = bisect_left(caps, required, lo, hi)  # type: ignore[type-var]  # monotone: no None
        if i < hi:
            return required, buckets[i], caps[i], None
    else:
        for i in range(lo, hi):
            rows = caps[i]
            if rows is not None and rows >= required:
                return required, buckets[i], rows, None
    return required, None, None, FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT


class Decide(Protocol):
    """A dispatcher's bound decision: ``decide(extend_seq_lens, num_tokens=None, is_prefilling=None)`` ->
    (accepted lengths, n, decision)."""

    def __call__(
        self, extend_seq_lens: object, num_tokens: int | None = None, is_prefilling: object = None
    ) -> tuple[Lengths, int, Decision]: ...


def decider(
    *, cp_size: int, align_size: int, selector: Selector, max_padding_factor: int | Fraction, strategy: str = "zigzag",
    keying: str = "global",
) -> Decide:
    """``decide_lengths`` with the dispatcher's configuration bound once: ``decide(extend_seq_lens, num_tokens)``.

    The configuration is the dispatcher's own, validated when it was built (``cp_size`` and ``align_size`` ints
    >= 1, ``strategy`` and ``keying`` ids; checked here once). The batch is validated on every call, exactly as
    ``decide_lengths`` does, and the decision is the same; only the per-call lookups of the configuration go.
    """
    p = check_cp_size("cp_size", cp_size)
    a = check_int("align_size", align_size, minimum=1)
    local = check_keying(keying) == "local"
    factor = max_padding_factor
    row = formulas(strategy)
    one_request, scalar_rows, vector_rows = row.one_request, row.scalar, row.vector
    buckets, caps, monotone = selector.capture_num_tokens, selector.capacities, selector.monotone
    two_p, largest = 2 * p, buckets[-1]
    tokens_gate = row.cp_active == "tokens"  # the strategy's CP-activity gate (StrategyFormulas.inactive)
    modules = sys.modules

    def decide(
        extend_seq_lens: object, num_tokens: int | None = None, is_prefilling: object = None
    ) -> tuple[Lengths, int, Decision]:
        lengths = accept_lengths(extend_seq_lens)
        values, vector, count, total, low = lengths
        if num_tokens is None:
            n = total
        elif type(num_tokens) is int and num_tokens >= total and num_tokens >= 1:
            n = num_tokens
        else:
            n = check_num_tokens(num_tokens, (total,))
        prefilling = None if is_prefilling is None else accept_is_prefilling(is_prefilling, count)
        if prefilling is not None:
            rows = busiest_mixed(lengths, p, row, prefilling)
        elif count == 1:
            rows = one_request(total, p)
        elif vector is not None and vector_rows is not None:
            rows = vector_rows(modules["numpy"], vector, total, p)  # an array implies numpy is imported
        else:
            rows = scalar_rows(() if values is None else values, total, p)
        if local:
            if monotone:  # every size captured: the least s >= m by bisection
                i = bisect_left(buckets, rows)
                if i < len(buckets):
                    return lengths, n, (rows, buckets[i], buckets[i], None)
            return lengths, n, pick_local(buckets, caps, rows)
        required = -(-rows // a) * a
        if (p == 1 or (total < p if tokens_gate else n < two_p or low < two_p)) or n > largest:
            return lengths, n, (required, None, None, fallback_before_selection(lengths, n, p, largest, row))
        if monotone:  # pick(), inline for the common table
            lo = bisect_left(buckets, n)
            hi = bisect_right(buckets, factor * n, lo)
            i = bisect_left(caps, required, lo, hi)  # type: ignore[type-var]  # monotone: no None
            if i < hi:
                return lengths, n, (required, buckets[i], caps[i], None)
        return lengths, n, pick(buckets, caps, monotone, n, required, factor)

    return decide


def decide_lengths(
    extend_seq_lens: object,
    num_tokens: int | None = None,
    *,
    cp_size: int,
    align_size: int,
    selector: Selector,
    max_padding_factor: int | Fraction,
    strategy: str = "zigzag",
    keying: str = "global",
    is_prefilling: object = None,
) -> tuple[Lengths, int, Decision]:
    """The boundary of a dispatcher: validate the batch once (a list, tuple, integer numpy array or CPU tensor;
    ``num_tokens`` defaults to the sum and may exceed it, never fall short; ``is_prefilling`` None or one bool per
    request), then decide. The configuration arguments are the dispatcher's own, validated when it was built,
    except ``keying``, checked here (an unknown id is a ValueError naming the allowed ones). Returns (accepted
    lengths, n, decision)."""
    kind = keying if keying == "global" or keying == "local" else check_keying(keying)
    lengths = accept_lengths(extend_seq_lens)
    total = lengths[3]
    if num_tokens is None:
        n = total
    elif type(num_tokens) is int and num_tokens >= total and num_tokens >= 1:
        n = num_tokens
    else:
        n = check_num_tokens(num_tokens, (total,))
    row = FORMULAS.get(strategy) if type(strategy) is str else None
    if row is None:
        row = formulas(strategy)
    prefilling = None if is_prefilling is None else accept_is_prefilling(is_prefilling, lengths[2])
    return lengths, n, choose(lengths, n, cp_size, align_size, selector, max_padding_factor, row, kind, prefilling)


def plan_lengths(
    extend_seq_lens: object,
    num_tokens: int | None = None,
    *,
    cp_size: int,
    align_size: int,
    selector: Selector,
    max_padding_factor: int | Fraction,
    strategy: str = "zigzag",
    keying: str = "global",
    is_prefilling: object = None,
) -> Plan:
    """``decide_lengths`` as the frozen ``Plan`` record (which holds the lengths as a tuple of ints)."""
    lengths, n, (required, bucket, capacity, reason) = decide_lengths(
        extend_seq_lens,
        num_tokens,
        cp_size=cp_size,
        align_size=align_size,
        selector=selector,
        max_padding_factor=max_padding_factor,
        strategy=strategy,
        keying=keying,
        is_prefilling=is_prefilling,
    )
    return make_plan(lengths_tuple(lengths), n, required, bucket, capacity, reason)


def make_plan(
    lengths: tuple[int, ...], num_tokens: int, required: int, bucket: int | None, capacity: int | None,
    fallback: FallbackReason | None,
) -> Plan:
    """``Plan(...)`` without the frozen dataclass's per-field ``object.__setattr__`` (the dispatcher makes one per
    batch): the same frozen record, fields as given, its ``__dict__`` set in one call (about 0.3 us less)."""
    plan = _new(Plan)
    _set(plan, "__dict__", {
        "extend_seq_lens": lengths, "num_tokens": num_tokens, "required_local_tokens": required, "bucket": bucket,
        "bucket_local_tokens": capacity, "fallback": fallback, "is_prefilling": None, "key": None,
    })
    return plan


_new, _set = object.__new__, object.__setattr__


def plan_batch(
    lengths: tuple[int, ...],
    *,
    num_tokens: int,
    cp_size: int,
    align_size: int,
    selector: Selector,
    max_padding_factor: int | Fraction,
    strategy: str = "zigzag",
    keying: str = "global",
    is_prefilling: tuple[bool, ...] | None = None,
) -> Plan:
    """Decide once from rank-invariant inputs only (the max over ranks, never a rank's own load).

    Arguments are trusted (callers validate; ``plan_lengths`` is the validating boundary); ``num_tokens`` is not
    checked against sum(lengths) here; ``is_prefilling`` is None or holds a False (as ``accept_is_prefilling``
    returns it).
    """
    accepted = trusted_lengths(lengths)
    required, bucket, capacity, reason = choose(
        accepted, num_tokens, cp_size, align_size, selector, max_padding_factor, formulas(strategy),
        check_keying(keying), is_prefilling,
    )
    return make_plan(lengths, num_tokens, required, bucket, capacity, reason)
