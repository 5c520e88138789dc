"""Correct policies written differently from the reference: every one must pass ``cpgraph check``."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from cpgraph.proofs.mutants._kit import align_up, correct_select, cp_active, local_select, zigzag_loads


class _Protocol:
    """admit/replay_bucket over one ``select``; subclasses write the selection their own way."""

    def select(self, **batch: Any) -> int | None:
        raise NotImplementedError

    def admit(self, **batch: Any) -> bool:
        return self.select(**batch) is not None

    def replay_bucket(self, **batch: Any) -> int:
        bucket = self.select(**batch)
        if bucket is None:
            raise RuntimeError("batch not admitted; run eagerly")
        return bucket


class Scan(_Protocol):
    """Upstream's scan: skip below n, stop past F*n, skip a bucket with no recorded capacity."""

    def select(self, **batch: Any) -> int | None:
        return correct_select(**batch)


class FittingSet(_Protocol):
    """min() of the fitting set, built with a comprehension; no early exit."""

    def select(self, **batch: Any) -> int | None:
        lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
        if p < 2 or n < 2 * p or min(lengths) < 2 * p:
            return None
        need = align_up(max(zigzag_loads(lengths, p)), batch["align_size"])
        table: Mapping[int, int] = batch["bucket_local_tokens"]
        fits = [b for b in batch["capture_num_tokens"] if n <= b <= batch["max_padding_factor"] * n and table.get(b, -1) >= need]
        return min(fits, default=None)


class Bisected(_Protocol):
    """bisect to the first bucket >= n, then walk up to F*n."""

    def select(self, **batch: Any) -> int | None:
        lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
        if not cp_active(lengths, n, p):
            return None
        need = align_up(max(zigzag_loads(lengths, p)), batch["align_size"])
        buckets: Sequence[int] = batch["capture_num_tokens"]
        table: Mapping[int, int] = batch["bucket_local_tokens"]
        i = bisect.bisect_left(buckets, n)
        while i < len(buckets) and buckets[i] <= batch["max_padding_factor"] * n:
            if buckets[i] in table and table[buckets[i]] >= need:
                return buckets[i]
            i += 1
        return None


@lru_cache(maxsize=4096)
def _cached_select(
    lengths: tuple[int, ...], p: int, a: int, n: int, buckets: tuple[int, ...], table: tuple[tuple[int, int], ...], f: int
) -> int | None:
    return correct_select(
        extend_seq_lens=lengths, cp_size=p, align_size=a, num_tokens=n,
        capture_num_tokens=buckets, bucket_local_tokens=dict(table), max_padding_factor=f,
    )


class Cached(_Protocol):
    """Memoises the decision per batch, as a dispatcher might (the key must hold every input)."""

    def select(self, **batch: Any) -> int | None:
        return _cached_select(
            tuple(batch["extend_seq_lens"]), batch["cp_size"], batch["align_size"], batch["num_tokens"],
            tuple(batch["capture_num_tokens"]), tuple(sorted(batch["bucket_local_tokens"].items())),
            batch["max_padding_factor"],
        )


class Blockwise(_Protocol):
    """Loads summed block by block from explicit block lengths, the way the layout code would."""

    def select(self, **batch: Any) -> int | None:
        lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
        if not cp_active(lengths, n, p):
            return None
        loads = [0] * p
        for length in lengths:
            blocks = [length // (2 * p) + (1 if j < length % (2 * p) else 0) for j in range(2 * p)]
            for r in range(p):
                loads[r] += blocks[r] + blocks[2 * p - 1 - r]
        need = align_up(max(loads), batch["align_size"])
        f = batch["max_padding_factor"]
        for b in batch["capture_num_tokens"]:
            rows = batch["bucket_local_tokens"].get(b)
            if n <= b <= f * n and rows is not None and rows >= need:
                return int(b)
        return None


class WithRows(Scan):
    """Scan, plus local_rows: every rank pads to align_up(busiest live load, A), whatever the bucket."""

    def local_rows(self, *, bucket: int, **batch: Any) -> tuple[int, ...]:
        p: int = batch["cp_size"]
        rows: int = align_up(max(zigzag_loads(batch["extend_seq_lens"], p)), batch["align_size"])
        return (rows,) * p


scan = Scan()
fitting_set = FittingSet()
bisected = Bisected()
cached = Cached()
blockwise = Blockwise()
with_rows = WithRows()


class LocalKeyed:
    """vLLM 0.29 on, written plainly: one selector for admission and replay, keyed by the largest
    rank-local rows of a DualChunkSwap layout with decodes dealt round-robin."""

    keying, strategy, align_size = "local", "dual_chunk_swap", 1

    def admit(self, **batch: Any) -> bool:
        return local_select(**batch) is not None

    def admitted_bucket(self, **batch: Any) -> int | None:
        return local_select(**batch)

    def replay_bucket(self, **batch: Any) -> int:
        size = local_select(**batch)
        if size is None:
            raise RuntimeError("no captured size holds this batch; run eagerly")
        return size


local_keyed = LocalKeyed()
