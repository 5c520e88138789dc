"""The mirror: the spec's closed forms on plain ints, the expected side of the bulk harness.

Each formula restates one spec definition in integer arithmetic (exact past 2^53, where float arithmetic is
wrong), fast enough for a million cases; ``validate_mirror`` (proofs.conformance.harness) checks them against the
spec's own terms before every bulk run.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

MIRROR_STRATEGIES = ("zigzag", "interleave", "contiguous", "dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp")
_DUAL_CHUNK_SWAP = ("dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp")


@dataclass(frozen=True)
class RunnerArgs:
    """What a runner is built with: the capture list as given (buckets below 2P are dropped at start-up) and an
    explicit capacity table (absent = missing capacity)."""

    cp_size: int
    align_size: int
    strategy: str
    max_padding_factor: int | Fraction
    capture_num_tokens: tuple[int, ...]
    bucket_local_tokens: Mapping[int, int]

    @property
    def started(self) -> tuple[int, ...]:
        """The buckets the runner keeps (>= 2P)."""
        return tuple(b for b in self.capture_num_tokens if b >= 2 * self.cp_size)


# A plan as compared: (required rows, bucket or None, its capacity or None, fallback reason value or None).
PlanTuple = tuple[int, "int | None", "int | None", "str | None"]


def mirror_align_up(value: int, align_size: int) -> int:
    """spec.arith.align_up: align_size * ceil(value / align_size), exact for every int."""
    return -(-value // align_size) * align_size


def mirror_rank_loads(lengths: Sequence[int], cp_size: int, strategy: str) -> list[int]:
    """spec.strategies.rank_loads on plain ints (the spec's per-request formulas, summed over requests)."""
    p = cp_size
    if strategy == "interleave":
        q, m = divmod(sum(lengths), p)
        return [q + (r < m) for r in range(p)]
    loads = [0] * p
    if strategy == "zigzag":
        s = 2 * p
        for length in lengths:
            q, m = divmod(length, s)
            for r in range(p):
                loads[r] += 2 * q + (r < m) + (s - 1 - r < m)
    elif strategy == "contiguous":
        for length in lengths:
            for r in range(p):
                loads[r] += (length * (r + 1)) // p - (length * r) // p
    elif strategy in _DUAL_CHUNK_SWAP:
        s = 2 * p
        for length in lengths:
            c = -(-length // s)  # vLLM's chunk: ceil(L/2P); chunk j holds min(c, max(0, L - j*c))
            if strategy == "dual_chunk_swap_dcp" and (s - 1) * c >= length:
                for r in range(p):  # a prefill that does not fill all 2P chunks is copied to every rank
                    loads[r] += length
                continue
            chunks = [min(c, max(0, length - j * c)) for j in range(s)]
            for r in range(p):
                loads[r] += chunks[r] + chunks[s - 1 - r]
    else:
        raise ValueError(f"the mirror has no formula for strategy {strategy!r}; known: {', '.join(MIRROR_STRATEGIES)}")
    return loads


def mirror_required(lengths: Sequence[int], cp_size: int, align_size: int, strategy: str) -> int:
    """spec.capacity.required_local_tokens: align_up(max_r l_r, A) from the live lengths."""
    return mirror_align_up(max(mirror_rank_loads(lengths, cp_size, strategy)), align_size)


@functools.lru_cache(maxsize=1024)
def mirror_request_excess(cp_size: int, strategy: str) -> int:
    """The most one request puts on a rank beyond its mean, max over L of P*max_r l_r(L) - L: read off the
    mirror's own loads where they depend on L mod 2P only (the residues 0..2P-1 cover every length), and for
    DualChunkSwap, whose loads do not, the closed forms proofs/theorems/dual_chunk_swap.py proves exact (2P-1, and
    (P-1)(2P-1)^2 for dcp; 0 at P = 1)."""
    if strategy in _DUAL_CHUNK_SWAP:
        from cpgraph.proofs.theorems.dual_chunk_swap import dcp_excess, dcs_excess

        return dcp_excess(cp_size) if strategy == "dual_chunk_swap_dcp" else dcs_excess(cp_size)
    return max(cp_size * max(mirror_rank_loads((m,), cp_size, strategy)) - m for m in range(2 * cp_size))


def mirror_headroom(num_tokens: int, cp_size: int, align_size: int, max_requests: int, strategy: str = "zigzag") -> int:
    """spec.capacity.headroom_local_tokens for zigzag: align_up(floor((N + min(R, N)(P-1)) / P), A); for the other
    strategies the same with their own per-request excess, and ceil(N/P) for interleave (its loads depend on N
    only)."""
    if strategy == "interleave":
        return mirror_align_up(-(-num_tokens // cp_size), align_size)
    requests = min(max_requests, num_tokens)
    excess = mirror_request_excess(cp_size, strategy)
    return mirror_align_up((num_tokens + requests * excess) // cp_size, align_size)


def mirror_fitting(
    n: int, required: int, buckets: Sequence[int], table: Mapping[int, int], factor: int | Fraction
) -> tuple[int, ...]:
    """spec.selection.fits over the list: n <= B <= F*n, capacity recorded and >= required."""
    high = factor * n
    return tuple(b for b in buckets if n <= b <= high and b in table and table[b] >= required)


def mirror_select(
    n: int, required: int, buckets: Sequence[int], table: Mapping[int, int], factor: int | Fraction
) -> int | None:
    """spec.selection.is_least_fitting: the least fitting bucket, or None (the scan is proved to compute it)."""
    fitting = mirror_fitting(n, required, buckets, table, factor)
    return min(fitting) if fitting else None


def mirror_active(lengths: Sequence[int], n: int, cp_size: int, strategy: str = "zigzag") -> bool:
    """The CP-active gate: P > 1, n >= 2P and every length >= 2P (interleave: P > 1 and the lengths' sum >= P)."""
    return _inactive(lengths, n, cp_size, strategy) is None


GATED_BY_TOKENS = frozenset({"interleave"})  # the strategies whose CP-activity gate asks for tokens, not blocks


def _inactive(lengths: Sequence[int], n: int, p: int, strategy: str) -> str | None:
    if p == 1:
        return "cp_disabled"
    if strategy in GATED_BY_TOKENS:
        return "too_few_tokens" if sum(lengths) < p else None
    if n < 2 * p:
        return "too_few_tokens"
    return "short_request" if min(lengths) < 2 * p else None


def mirror_plan(config: RunnerArgs, lengths: Sequence[int], n: int) -> PlanTuple:
    """The runner's decision: the gates in the documented order, then the selection."""
    p, required = config.cp_size, mirror_required(lengths, config.cp_size, config.align_size, config.strategy)
    buckets = config.started
    reason = _inactive(lengths, n, p, config.strategy)
    if reason is not None:
        return required, None, None, reason
    if n > buckets[-1]:
        return required, None, None, "too_many_tokens"
    if not any(n <= b <= config.max_padding_factor * n for b in buckets):
        return required, None, None, "no_bucket_within_padding_limit"
    table = {b: c for b, c in config.bucket_local_tokens.items() if b in buckets}
    bucket = mirror_select(n, required, buckets, table, config.max_padding_factor)
    if bucket is None:
        return required, None, None, "no_capacity_within_padding_limit"
    return required, bucket, table[bucket], None
