"""The fast decision path: rows a batch needs in O(R + P), bucket selection by bisection, one frozen plan.

zigzag: write each length as L = 2P*q + m (0 <= m < 2P). Rank r holds 2q + [r < m] + [2P-1-r < m] tokens of
that request, so over the batch l_r = 2*sum(q) + G[r+1] + G[2P-r] with G[k] = #{requests with m >= k}.
One pass builds the histogram of m, one suffix sum builds G, and the max over r costs P: no per-rank loop per
request. This module does not lay anything out (impl/layout.py does) and never touches torch.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cpgraph.impl.checks import (
    check_capacities,
    check_capture_list,
    check_int,
    check_lengths,
    check_strategy,
)

# The vocabulary is shared with the oracle (one name per concept): the fallback reasons, the plan record
# and upstream's default alignment. What impl computes (loads, capacities, selection) is its own.
from cpgraph.reference.capacity import default_align_size as default_align_size
from cpgraph.reference.runner import FallbackReason as FallbackReason, Plan as Plan


def align_up(value: int, align_size: int) -> int:
    """The smallest multiple of ``align_size`` that is >= ``value`` (both already validated)."""
    return -(-value // align_size) * align_size


def _zigzag_max_load(lengths: tuple[int, ...], p: int) -> int:
    s = 2 * p
    hist = [0] * (s + 1)
    for length in lengths:
        hist[length % s] += 1
    # sum(q) from the total: sum(L) = s*sum(q) + sum(m).
    rem_total = 0
    suffix = [0] * (s + 1)  # suffix[k] = #{m >= k}; suffix[s] = 0
    running = 0
    for k in range(s - 1, -1, -1):
        running += hist[k]
        suffix[k] = running
        rem_total += k * hist[k]
    q_total = (sum(lengths) - rem_total) // s
    return 2 * q_total + max(suffix[r + 1] + suffix[s - r] for r in range(p))


def _contiguous_max_load(lengths: tuple[int, ...], p: int) -> int:
    # L = P*q + m: rank r holds q + floor(m(r+1)/P) - floor(mr/P) of it; O(R + P^2).
    hist = [0] * p
    for length in lengths:
        hist[length % p] += 1
    q_total = (sum(lengths) - sum(m * c for m, c in enumerate(hist))) // p
    return q_total + max(
        sum(c * ((m * (r + 1)) // p - (m * r) // p) for m, c in enumerate(hist) if c) for r in range(p)
    )


def max_rank_load(extend_seq_lens: object, *, cp_size: object, strategy: object = "zigzag") -> int:
    """The busiest rank's real (unpadded) tokens for this batch."""
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    p = check_int("cp_size", cp_size, minimum=1)
    kind = check_strategy(strategy)
    return _max_load(lengths, p, kind)


def _max_load(lengths: tuple[int, ...], p: int, kind: str) -> int:
    if len(lengths) == 1:  # one sequence: under every strategy its busiest rank holds ceil(L/P)
        return -(-lengths[0] // p)
    if kind == "zigzag":
        return _zigzag_max_load(lengths, p)
    if kind == "interleave":
        return -(-sum(lengths) // p)
    return _contiguous_max_load(lengths, p)


def required_local_tokens(
    extend_seq_lens: object, *, cp_size: object, align_size: object, strategy: object = "zigzag"
) -> int:
    """Physical rows every rank pads to for this live batch: align_up(max_r l_r, A), in O(R + P).

    Same contract and errors as ``cpgraph.reference.required_local_tokens``. Built from the live lengths, never from a
    padded token count (that folds the pad into the last request and changes the loads).
    """
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    p = check_int("cp_size", cp_size, minimum=1)
    a = check_int("align_size", align_size, minimum=1)
    return align_up(_max_load(lengths, p, check_strategy(strategy)), a)


def capture_local_tokens(num_tokens: int, *, cp_size: int, align_size: int, strategy: str = "zigzag") -> int:
    """Rows of one request of ``num_tokens`` tokens: upstream's ``bucket_local_tokens[B]`` at capture."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    return required_local_tokens((n,), cp_size=cp_size, align_size=align_size, strategy=strategy)


def headroom_local_tokens(num_tokens: int, *, cp_size: int, align_size: int, max_requests: int) -> int:
    """Rows that fit every zigzag batch of <= ``max_requests`` requests and <= ``num_tokens`` tokens:
    align_up(floor((N + R(P-1)) / P), A), with R capped at N (SEMANTICS.md, "Facts worth building on")."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    p = check_int("cp_size", cp_size, minimum=1)
    a = check_int("align_size", align_size, minimum=1)
    r = min(check_int("max_requests", max_requests, minimum=1), n)
    return align_up((n + r * (p - 1)) // p, a)


def is_cp_active(extend_seq_lens: object, *, num_tokens: object, cp_size: object) -> bool:
    """A batch takes the CP graph path only when P > 1, n >= 2P and every length >= 2P."""
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    n = check_int("num_tokens", num_tokens, minimum=1)
    p = check_int("cp_size", cp_size, minimum=1)
    return p > 1 and n >= 2 * p and min(lengths) >= 2 * p


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

    def window(self, num_tokens: int, max_padding_factor: int) -> tuple[int, int]:
        """Index range [lo, hi) of the captured buckets B with n <= B <= F*n."""
        lo = bisect_left(self.capture_num_tokens, num_tokens)
        hi = bisect_right(self.capture_num_tokens, max_padding_factor * num_tokens, lo)
        return lo, hi

    def select(self, num_tokens: int, required: int, max_padding_factor: int) -> int | None:
        """The smallest captured bucket in [n, F*n] whose capacity is >= ``required``, or None."""
        lo, hi = self.window(num_tokens, max_padding_factor)
        if lo >= hi:
            return None
        if self.monotone:
            caps = self.capacities
            i = bisect_left(caps, required, lo, hi, key=lambda c: -1 if c is None else c)
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
    max_padding_factor: int,
) -> int | None:
    """The smallest captured bucket B with n <= B <= F*n whose recorded capacity is >= required, else None."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    required = check_int("required_local_tokens", required_local_tokens, minimum=0)
    selector = Selector.build(capture_num_tokens, bucket_local_tokens)
    factor = check_int("max_padding_factor", max_padding_factor, minimum=1)
    return selector.select(n, required, factor)


def plan_batch(
    lengths: tuple[int, ...],
    *,
    num_tokens: int,
    cp_size: int,
    align_size: int,
    selector: Selector,
    max_padding_factor: int,
    strategy: str = "zigzag",
) -> Plan:
    """Decide once from rank-invariant inputs only (the max over ranks, never a rank's own load).

    Arguments are trusted (callers validate); ``num_tokens`` is not checked against sum(lengths) here.
    """
    p, n = cp_size, num_tokens
    required = align_up(_max_load(lengths, p, strategy), align_size)

    def fallback(reason: FallbackReason) -> Plan:
        return Plan(lengths, n, required, None, None, reason)

    if p == 1:
        return fallback(FallbackReason.CP_DISABLED)
    if n < 2 * p:
        return fallback(FallbackReason.TOO_FEW_TOKENS)
    if min(lengths) < 2 * p:
        return fallback(FallbackReason.SHORT_REQUEST)
    buckets = selector.capture_num_tokens
    if n > buckets[-1]:
        return fallback(FallbackReason.TOO_MANY_TOKENS)
    lo, hi = selector.window(n, max_padding_factor)
    if lo >= hi:
        return fallback(FallbackReason.NO_BUCKET_WITHIN_PADDING_LIMIT)
    bucket = selector.select(n, required, max_padding_factor)
    if bucket is None:
        return fallback(FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT)
    return Plan(lengths, n, required, bucket, selector.capacity(bucket), None)
