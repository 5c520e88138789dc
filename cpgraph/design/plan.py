"""Plan a capture list (and headroom) for a workload: minimise padded rows plus eager fallbacks.

The planned design is zigzag with capacity search, live layout, F = 2 and the headroom rule for R
requests (R defaults to the most requests any workload batch has), so the first bucket >= n always
fits a batch of at most R requests (the review proves it). That makes the cost of a capture list a
function of n alone, and choosing at most K buckets is a 1-D dynamic programme over candidate buckets
(multiples of ``grain`` tokens):

    cost = sum over CP-active batches of (B - n) if a bucket B in [n, 2n] exists, else ``eager_cost``

Under ``keying = "local"`` (vLLM: a size s holds s rows on every rank, the least size >= m is taken with no
window) the planned design is keyed by the largest rank-local rows m of the chosen strategy (default
dual_chunk_swap, vLLM's layout): every batch is keyed, each size serves every key above the one below it,
and the same DP chooses at most K sizes over the workload's keys m (multiples of ``grain``):

    cost = sum over batches of (s - m) rows per rank if a size s >= m exists, else ``eager_cost``

Exact per-batch figures come afterwards from cpgraph.design.simulate; the plan never assumes them.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from cpgraph.design.schema import Design, local_design
from cpgraph.reference import is_cp_active, rank_loads
from cpgraph.reference.keying import keying_row

DEFAULT_EAGER_COST = 512  # rows an eager fallback is worth (launch overhead of a graph-less prefill)
DEFAULT_GRAIN = 64


@dataclass(frozen=True)
class PlanResult:
    design: Design
    cost: float  # the DP objective over the workload
    batches: int
    active: int


def plan_design(
    batches: Sequence[tuple[int, ...]],
    *,
    cp_size: int,
    max_buckets: int = 23,
    max_requests: int | None = None,
    eager_cost: int = DEFAULT_EAGER_COST,
    grain: int = DEFAULT_GRAIN,
    name: str = "planned",
    keying: str = "global",
    strategy: str | None = None,
) -> PlanResult:
    """The capture list of at most ``max_buckets`` buckets minimising the objective above."""
    p = cp_size
    row = keying_row(keying)
    if not row.recorded_capacity:
        return _plan_local(batches, cp_size=p, max_buckets=max_buckets, eager_cost=eager_cost, grain=grain,
                           name=name, keying=keying, strategy=strategy or "dual_chunk_swap")
    if strategy not in (None, "zigzag"):
        raise ValueError(f"a plan under keying = {keying!r} is for strategy zigzag; got {strategy!r}")
    active = sorted(sum(b) for b in batches if is_cp_active(b, num_tokens=sum(b), cp_size=p))
    requests = max_requests or max((len(b) for b in batches), default=1)
    if not active:
        raise ValueError(f"no batch of the workload is CP-active for cp_size={p}: nothing to plan for")
    step = max(grain, 2 * p)
    buckets, total = _choose(active, step, max_buckets, eager_cost, windowed=True)
    design = Design(
        name=name,
        strategy="zigzag",
        cp_size=p,
        align_size=2 * p,
        capture_num_tokens=buckets,
        max_padding_factor=Fraction(2),
        layout_basis="live",
        selector="search",
        capacity_rule="headroom",
        max_requests=requests,
        description=f"planned: {len(buckets)} buckets, headroom for {requests} requests, eager cost {eager_cost} rows",
    )
    return PlanResult(replace(design, source="cpgraph plan"), total, len(batches), len(active))


def _plan_local(
    batches: Sequence[tuple[int, ...]], *, cp_size: int, max_buckets: int, eager_cost: int, grain: int, name: str,
    keying: str, strategy: str,
) -> PlanResult:
    """The sizes of a local-keyed design for the workload's keys m (every batch is keyed)."""
    keys = sorted(max(rank_loads(b, cp_size=cp_size, strategy=strategy)) for b in batches if sum(b))
    if not keys:
        raise ValueError("the workload has no batch with a token: nothing to plan for")
    buckets, total = _choose(keys, max(1, grain), max_buckets, eager_cost, windowed=False)
    design = local_design(
        name, strategy, cp_size, buckets, keying=keying, source="cpgraph plan",
        description=f"planned: {len(buckets)} sizes of rank-local rows, eager cost {eager_cost} rows",
    )
    return PlanResult(design, total, len(batches), len(keys))


def _choose(values: list[int], step: int, max_buckets: int, eager_cost: int, *, windowed: bool) -> tuple[tuple[int, ...], float]:
    """The buckets (multiples of ``step``) minimising the cost over the sorted keys ``values``, and the cost."""
    top = -(-values[-1] // step) * step
    candidates = list(range(step, top + 1, step))
    best, back = _cheapest_lists(candidates, max_buckets, _segment_cost(values, eager_cost, windowed))
    total, chosen_k, chosen_j = _cheapest_plan(best, candidates, values, eager_cost)
    return _walk_back(back, candidates, chosen_k, chosen_j), total


def _segment_cost(active: list[int], eager_cost: int, windowed: bool = True) -> Callable[[int, int], float]:
    """The cost of one bucket over the sorted keys ``active`` (CP-active sizes n, or local keys m: no window)."""
    prefix = [0]
    for n in active:
        prefix.append(prefix[-1] + n)

    def segment(lo: int, hi: int) -> float:
        """Cost of batches with lo < n <= hi served by bucket hi (eager when hi > 2n, under a window)."""
        i, j = bisect.bisect_right(active, lo), bisect.bisect_right(active, hi)
        k = max(i, bisect.bisect_left(active, (hi + 1) // 2)) if windowed else i  # first n with 2n >= hi
        served = j - k
        return served * hi - (prefix[j] - prefix[k]) + (k - i) * eager_cost

    return segment


def _cheapest_lists(
    candidates: list[int], max_buckets: int, segment: Callable[[int, int], float]
) -> tuple[list[list[float]], list[list[int]]]:
    """best[k][j]: the least cost of the batches up to candidates[j] with k buckets, the largest
    candidates[j]; back[k][j]: the index of the bucket below it (-1: none)."""
    inf = float("inf")
    count = len(candidates)
    best = [[inf] * count for _ in range(max_buckets + 1)]
    back = [[-1] * count for _ in range(max_buckets + 1)]
    for j, c in enumerate(candidates):
        best[1][j] = segment(0, c)
    for k in range(2, max_buckets + 1):
        for j in range(count):
            for i in range(j):
                if best[k - 1][i] == inf:
                    continue
                value = best[k - 1][i] + segment(candidates[i], candidates[j])
                if value < best[k][j]:
                    best[k][j], back[k][j] = value, i
    return best, back


def _cheapest_plan(
    best: list[list[float]], candidates: list[int], active: list[int], eager_cost: int
) -> tuple[float, int, int]:
    """The total cost, bucket count and largest bucket's index of the cheapest plan, the batches above
    its largest bucket running eagerly."""
    total, chosen_k, chosen_j = float("inf"), 1, 0
    for k in range(1, len(best)):
        for j in range(len(candidates)):
            value = best[k][j] + (len(active) - bisect.bisect_right(active, candidates[j])) * eager_cost
            if value < total:
                total, chosen_k, chosen_j = value, k, j
    return total, chosen_k, chosen_j


def _walk_back(back: list[list[int]], candidates: list[int], k: int, j: int) -> tuple[int, ...]:
    """The buckets of the plan ending at candidates[j] with k buckets, ascending."""
    picked = []
    while j >= 0 and k >= 1:
        picked.append(candidates[j])
        j, k = back[k][j], k - 1
    return tuple(sorted(picked))
