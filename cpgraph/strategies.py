"""Hypothesis strategies for policy tests: batches of live lengths, capture lists and capacity tables.

Each strategy is a small ``@composite`` named for what it draws; related values are drawn next to
each other so failures shrink to few requests, few tokens and the smallest cp_size.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from cpgraph.check.batch import Batch
from cpgraph.check.batch import build
from cpgraph.reference import capture_local_tokens, default_align_size

__all__ = ["batches", "capture_lists", "capture_tables", "cp_sizes", "extend_seq_lens", "local_batches"]


@st.composite
def cp_sizes(draw: st.DrawFn, choices: Sequence[int] = (2, 4, 8)) -> int:
    """A context-parallel size from ``choices`` (shrinks towards the first)."""
    return draw(st.sampled_from(tuple(choices)))


@st.composite
def extend_seq_lens(
    draw: st.DrawFn, cp_size: int, *, max_requests: int = 3, max_tokens: int = 4096, cp_active: bool = True
) -> tuple[int, ...]:
    """Live request lengths (each >= 2P when ``cp_active``), at most ``max_tokens`` in all."""
    low = 2 * cp_size if cp_active and cp_size > 1 else 1
    count = draw(st.integers(1, max_requests))
    per = max(low, max_tokens // count)
    return tuple(draw(st.lists(st.integers(low, per), min_size=count, max_size=count)))


@st.composite
def capture_lists(draw: st.DrawFn, num_tokens: int, cp_size: int, *, max_padding_factor: int = 2) -> tuple[int, ...]:
    """A sorted capture list around ``num_tokens``: buckets below, at and above n up to F*n + 1."""
    low = 2 * cp_size
    top = max(low, max_padding_factor * num_tokens + 1)
    edges = st.sampled_from(sorted({max(low, num_tokens - 1), max(low, num_tokens), top - 1, top}))
    picks = draw(st.lists(st.one_of(edges, st.integers(low, top)), min_size=1, max_size=8))
    return tuple(sorted(set(picks)))


@st.composite
def capture_tables(
    draw: st.DrawFn, capture_num_tokens: Sequence[int], cp_size: int, *, strategy: str = "zigzag", absent: bool = True
) -> dict[int, int]:
    """bucket -> rows: upstream's single-request capacity nudged by up to one alignment step either way,
    some buckets absent when ``absent`` (a missing capacity must never count as a fit)."""
    align = default_align_size(cp_size=cp_size, strategy=strategy)
    table: dict[int, int] = {}
    for bucket in capture_num_tokens:
        if absent and draw(st.booleans()) and draw(st.booleans()):
            continue
        base = capture_local_tokens(bucket, cp_size=cp_size, align_size=align, strategy=strategy)
        table[bucket] = max(0, base + draw(st.sampled_from((0, align, -align, 1, -1))))
    return table


@st.composite
def batches(
    draw: st.DrawFn,
    *,
    cp_size_choices: Sequence[int] = (2, 4, 8),
    max_requests: int = 3,
    max_tokens: int = 4096,
    tables: Sequence[str] = ("captured", "headroom:2", "arbitrary"),
    strategy: str = "zigzag",
    max_padding_factor: int = 2,
) -> Batch:
    """A whole checker input: cp_size, live lengths, a capture list around n and its capacity table."""
    p = draw(cp_sizes(cp_size_choices))
    lengths = draw(extend_seq_lens(p, max_requests=max_requests, max_tokens=max_tokens))
    buckets = draw(capture_lists(sum(lengths), p, max_padding_factor=max_padding_factor))
    table = draw(st.sampled_from(tuple(tables)))
    if table == "arbitrary":
        rows = draw(capture_tables(buckets, p, strategy=strategy))
        return build(lengths, buckets, "", cp_size=p, strategy=strategy, factor=max_padding_factor, rows=rows)
    return build(lengths, buckets, table, cp_size=p, strategy=strategy, factor=max_padding_factor)


@st.composite
def local_batches(
    draw: st.DrawFn,
    *,
    cp_size_choices: Sequence[int] = (1, 2, 4, 8),
    max_requests: int = 4,
    max_tokens: int = 2048,
    strategy: str = "dual_chunk_swap",
    decodes: bool = True,
) -> Batch:
    """A checker input for a policy keyed by rank-local rows (vLLM's design): lengths of any size (no
    CP-active gate), one-token decodes among them when ``decodes`` (``is_prefilling``), and a sorted list
    of sizes around the batch's key m (the largest rank-local rows), each size holding itself."""
    p = draw(cp_sizes(cp_size_choices))
    count = draw(st.integers(1, max_requests))
    per = max(1, max_tokens // count)
    flags = tuple(draw(st.lists(st.booleans(), min_size=count, max_size=count))) if decodes else (True,) * count
    lengths = tuple(draw(st.integers(1, per)) if prefill else 1 for prefill in flags)
    from cpgraph.reference.layout import rank_loads

    key = max(rank_loads(lengths, cp_size=p, strategy=strategy, is_prefilling=flags))
    edges = st.sampled_from(sorted({max(1, key - 1), key, key + 1, 2 * key}))
    sizes = tuple(sorted(set(draw(st.lists(st.one_of(edges, st.integers(1, 2 * key + 2)), min_size=1, max_size=8)))))
    return build(lengths, sizes, "sizes", cp_size=p, strategy=strategy, factor=2, align_size=1, is_prefilling=flags)
