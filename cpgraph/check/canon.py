"""The last step of minimising: the least bucket values, then the least recorded rows, that still fail.

Greedy shrinking (minimize.py) ends in a local minimum that depends on where it started, and where it
starts depends on which batch the timed search met first: the same seed gave {4: 0} on one run and
{4: 3} on another. Scanning each bucket value and each recorded row count upward from its floor and
keeping the first value that still fails gives the same answer from any start that agrees on the
lengths, cp_size and capture-list shape, so reruns report the same counterexample.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from cpgraph.check.batch import Batch, build

SCAN = 256  # values tried from each end of a long range (a bucket far above its floor)
MAX_TRIES = 3000


def _values(low: int, high: int) -> Iterator[int]:
    """low..high-1 ascending; for a long range the first and the last SCAN values only."""
    if high - low <= 2 * SCAN:
        yield from range(low, high)
    else:
        yield from range(low, low + SCAN)
        yield from range(high - SCAN, high)


def _with_buckets(batch: Batch, buckets: tuple[int, ...], strategy: str) -> Batch:
    old = batch.capture_num_tokens
    if batch.table.partition(":")[0] in ("captured", "headroom", "sizes"):  # the rule records the new bucket's rows
        return build(
            batch.extend_seq_lens, buckets, batch.table, cp_size=batch.cp_size, strategy=strategy,
            factor=batch.max_padding_factor, pad=batch.pad, align_size=batch.align_size, context_len=batch.context_len,
            is_prefilling=batch.is_prefilling,
        )
    moved = dict(zip(old, buckets))
    rows = tuple((moved[b], r) for b, r in batch.bucket_local_tokens)
    return replace(batch, capture_num_tokens=buckets, bucket_local_tokens=rows)


def canonical(batch: Batch, fails: Callable[[Batch], bool], *, strategy: str, max_tries: int = MAX_TRIES) -> tuple[Batch, int]:
    """``batch`` with each bucket (in order) and then each recorded row count lowered to the least value
    that keeps ``fails``; and the number of candidates tried."""
    tries = 0
    best = batch
    floor = 2 * best.cp_size if best.cp_size > 1 and best.table != "sizes" else 1  # sizes: local keying, no gate
    for i in range(len(best.capture_num_tokens)):
        current = best.capture_num_tokens
        low = max(floor, current[i - 1] + 1 if i else floor)
        for value in _values(low, current[i]):
            if tries >= max_tries:
                return best, tries
            candidate = _with_buckets(best, current[:i] + (value,) + current[i + 1 :], strategy)
            tries += 1
            if fails(candidate):
                best = candidate
                break
    if best.table.partition(":")[0] in ("captured", "headroom", "sizes"):
        return best, tries
    for index in range(len(best.bucket_local_tokens)):
        table = best.bucket_local_tokens
        bucket, rows = table[index]
        for value in _values(0, rows):
            if tries >= max_tries:
                return best, tries
            candidate = replace(best, bucket_local_tokens=table[:index] + ((bucket, value),) + table[index + 1 :])
            tries += 1
            if fails(candidate):
                best = candidate
                break
    return best, tries
