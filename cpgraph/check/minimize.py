"""Shrink a counterexample greedily: fewest requests, then fewest tokens, then smallest cp_size.

A candidate is kept only if it still breaks the same invariant. When lengths shrink, the capture list
moves with n (n-1, n, F*n, F*n+1 stay at their edges) and an arbitrary table's rows move with the
required rows, so the edge that exposed the bug survives the shrink.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace

from cpgraph.check.batch import Batch
from cpgraph.check.batch import build
from cpgraph.check.invariants import spec_for

DEFAULT_FACTOR = 2  # SEMANTICS.md's F; a counterexample at another F is shown at F = 2 when it still fails


def size(batch: Batch) -> tuple[int, ...]:
    """Smaller is simpler: requests, tokens, cp_size, buckets, bucket values, then a rule-made table."""
    return (
        len(batch.extend_seq_lens),
        batch.num_tokens,
        batch.cp_size,
        len(batch.capture_num_tokens),
        sum(batch.capture_num_tokens),
        0 if batch.table in ("captured",) else 1,
        0 if batch.max_padding_factor == DEFAULT_FACTOR else 1,
        sum(rows for _, rows in batch.bucket_local_tokens),
    )


def _rule_based(batch: Batch) -> bool:
    return batch.table == "captured" or batch.table.startswith("headroom")


def _rebuild(
    batch: Batch,
    lengths: tuple[int, ...],
    cp_size: int,
    strategy: str,
    *,
    shift_buckets: bool,
    shift_rows: bool,
) -> Batch:
    """``batch`` with new lengths / cp_size; buckets and rows optionally moved with n and required rows."""
    f, n_old, n_new = batch.max_padding_factor, batch.num_tokens, sum(lengths)

    def move(b: int) -> int:
        if not shift_buckets:
            return b
        for d in (-1, 0, 1):
            if b == f * n_old + d:
                return f * n_new + d
        return b - (n_old - n_new)

    buckets = {b: move(b) for b in batch.capture_num_tokens}
    if _rule_based(batch):
        return build(lengths, set(buckets.values()), batch.table, cp_size=cp_size, strategy=strategy, factor=f)
    delta = 0
    if shift_rows:
        probe = build(lengths, (n_new,), "captured", cp_size=cp_size, strategy=strategy, factor=f)
        delta = spec_for(batch, strategy).required - spec_for(probe, strategy).required
    caps = batch.capacities
    rows = {buckets[b]: max(0, caps[b] - delta) for b in batch.capture_num_tokens if b in caps}
    return build(lengths, set(buckets.values()), "", cp_size=cp_size, strategy=strategy, factor=f, rows=rows)


def _variants(batch: Batch, lengths: tuple[int, ...], cp_size: int, strategy: str) -> Iterator[Batch]:
    for shift_buckets in (True, False):
        for shift_rows in (True, False) if not _rule_based(batch) else (False,):
            yield _rebuild(batch, lengths, cp_size, strategy, shift_buckets=shift_buckets, shift_rows=shift_rows)


def candidates(batch: Batch, cp_sizes: tuple[int, ...], strategy: str) -> Iterator[Batch]:
    """Simpler neighbours of ``batch``, most valuable shrink first."""
    lengths, p = batch.extend_seq_lens, batch.cp_size
    for i in range(len(lengths)):
        if len(lengths) > 1:
            yield from _variants(batch, lengths[:i] + lengths[i + 1 :], p, strategy)
    active_floor = 2 * p if p > 1 and min(lengths) >= 2 * p else 1
    s = 2 * p
    # Residues mod 2P decide which rank is busiest, so shrink by whole rounds of 2P first (all at once,
    # then one by one), and only then by single tokens.
    same_residue = tuple(max(active_floor, length % s + s) if length % s + s <= length else length for length in lengths)
    if same_residue != lengths:
        yield from _variants(batch, same_residue, p, strategy)
    for i, length in enumerate(lengths):
        q, m = divmod(length, s)
        steps = {q // 2, q - 1} | {1 << k for k in range(max(q, 1).bit_length())}
        rounds = {m + s * j for j in steps if 0 < j < q and m + s * j >= active_floor}
        for target in sorted(rounds | {active_floor, length // 2, length - p, length - 1}):
            if active_floor <= target < length:
                yield from _variants(batch, lengths[:i] + (target,) + lengths[i + 1 :], p, strategy)
    for q in cp_sizes:
        if q < p and (q > 1 or p == 1):
            yield from _variants(batch, lengths, q, strategy)
            # the same residues mod 2q, one round each: a smaller P usually needs shorter requests too
            if q > 1 and min(lengths) >= 2 * p:
                yield from _variants(batch, tuple(length % (2 * q) + 2 * q for length in lengths), q, strategy)
    for b in batch.capture_num_tokens:
        if len(batch.capture_num_tokens) > 1:
            kept = {c for c in batch.capture_num_tokens if c != b}
            if _rule_based(batch):
                yield build(lengths, kept, batch.table, cp_size=p, strategy=strategy, factor=batch.max_padding_factor)
            else:
                rows = {c: r for c, r in batch.bucket_local_tokens if c != b}
                yield build(lengths, kept, "", cp_size=p, strategy=strategy, factor=batch.max_padding_factor, rows=rows)
    if batch.max_padding_factor != DEFAULT_FACTOR:
        yield replace(batch, max_padding_factor=DEFAULT_FACTOR)
    if not _rule_based(batch):
        yield build(lengths, batch.capture_num_tokens, "captured", cp_size=p, strategy=strategy, factor=batch.max_padding_factor)


def minimize(
    batch: Batch,
    fails: Callable[[Batch], bool],
    *,
    cp_sizes: tuple[int, ...],
    strategy: str = "zigzag",
    budget_s: float = 1.0,
    max_tries: int = 5000,
) -> tuple[Batch, int]:
    """The simplest batch reachable from ``batch`` by greedy shrinking on which ``fails`` still holds,
    and how many candidates were tried. Bounded by ``budget_s`` and ``max_tries``."""
    deadline = time.perf_counter() + budget_s
    best, tries, seen = batch, 0, {batch}
    improved = True
    while improved and tries < max_tries and time.perf_counter() < deadline:
        improved = False
        for cand in candidates(best, cp_sizes, strategy):
            if cand in seen or size(cand) >= size(best) or not cand.capture_num_tokens:
                continue
            seen.add(cand)
            tries += 1
            if fails(cand):
                best, improved = cand, True
                break
            if tries >= max_tries or time.perf_counter() >= deadline:
                break
    return best, tries
