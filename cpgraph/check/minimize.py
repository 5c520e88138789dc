"""Shrink a counterexample greedily: a captured table when one reproduces it, then fewest requests, then
fewest tokens (the pad of a padded n too; one request at a time, and every request at once to a few rounds
of 2P with its own residue), then smallest cp_size: the batch subject's "smaller" moves, walked by shrink.py (the
minimiser every subject shares), with canon.py's least values between rounds.

A candidate is kept only if it still breaks the same invariant. When lengths shrink, the capture list
moves with n (n-1, n, F*n, F*n+1 stay at their edges) and an arbitrary table's rows move with the
required rows, so the edge that exposed the bug survives the shrink.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from cpgraph.check.batch import Batch, Factor, build
from cpgraph.check.canon import canonical
from cpgraph.check.judging import spec_for
from cpgraph.check.options import CheckOptions
from cpgraph.check.shrink import Bound, shrink
from cpgraph.reference import default_align_size
from cpgraph.reference.judge import window_top

DEFAULT_FACTOR = 2  # docs/semantics.md's F; a counterexample at another F is shown at F = 2 when it still fails
_TABLE_RANK = {"captured": 0, "sizes": 0, "headroom": 1}


def size(batch: Batch) -> tuple[int, ...]:
    """Smaller is simpler: a captured table first (it reads as upstream records it), then requests,
    tokens, cp_size, buckets, bucket values, the default factor, then the rows of the table."""
    return (
        _TABLE_RANK.get(batch.table.partition(":")[0], 2),
        len(batch.extend_seq_lens),
        batch.decodes,
        batch.num_tokens,
        batch.cp_size,
        len(batch.capture_num_tokens),
        sum(batch.capture_num_tokens),
        0 if batch.max_padding_factor == DEFAULT_FACTOR else 1,
        sum(rows for _, rows in batch.bucket_local_tokens),
    )


@dataclass(frozen=True)
class Knobs:
    """What a shrink may change: the run's strategy, allowed factors (None: any, preferring F = 2),
    alignments per cp_size (None: the strategy's), the least pad (1 when only padded n are checked)
    and the context length of captured tables."""

    strategy: str = "zigzag"
    factors: tuple[Factor, ...] | None = None
    align_sizes: tuple[str, ...] | None = None
    min_pad: int = 0
    context_len: int | None = None
    keying: str = "global"

    @classmethod
    def of(cls, options: CheckOptions) -> Knobs:
        return cls(
            options.strategy, options.padding_factors, options.align_sizes,
            1 if options.num_tokens == "padded" else 0, options.context_len, options.keying,
        )

    def align(self, batch: Batch, cp_size: int) -> int:
        """The batch's alignment carried to ``cp_size``: the same multiple of P, or the same int."""
        if cp_size == batch.cp_size:
            return batch.align_size
        if batch.align_size % batch.cp_size == 0:
            multiple = batch.align_size // batch.cp_size
            if self.align_sizes is None or f"{multiple}P" in self.align_sizes or (multiple == 1 and "P" in self.align_sizes):
                return multiple * cp_size
        if self.align_sizes is None:
            return default_align_size(cp_size=cp_size, strategy=self.strategy)
        return batch.align_size


def _rule_based(batch: Batch) -> bool:
    return batch.table in ("captured", "sizes") or batch.table.startswith("headroom")


_SAME: tuple[bool, ...] = ()  # _rebuild's flags: keep the batch's is_prefilling where the request count is unchanged


def _rebuild(
    batch: Batch,
    lengths: tuple[int, ...],
    cp_size: int,
    knobs: Knobs,
    *,
    shift_buckets: bool,
    shift_rows: bool,
    pad: int | None = None,
    flags: tuple[bool, ...] | None = _SAME,
) -> Batch:
    """``batch`` with new lengths / cp_size / pad (and ``flags``: its is_prefilling, by default the batch's
    where the request count is unchanged, else none); buckets and rows optionally moved with n and
    required rows."""
    f, n_old = batch.max_padding_factor, batch.num_tokens
    pad = batch.pad if pad is None else pad
    n_new = sum(lengths) + pad
    top_old, top_new = window_top(n_old, f), window_top(n_new, f)
    align = knobs.align(batch, cp_size)
    if flags is _SAME:
        flags = batch.is_prefilling if len(lengths) == len(batch.extend_seq_lens) else None
    kw = dict(
        cp_size=cp_size, strategy=knobs.strategy, factor=f, pad=pad, align_size=align, context_len=batch.context_len,
        is_prefilling=flags,
    )

    def move(b: int) -> int:
        if not shift_buckets:
            return b
        for d in (-1, 0, 1):
            if b == top_old + d:
                return top_new + d
        return b - (n_old - n_new)

    buckets = {b: move(b) for b in batch.capture_num_tokens}
    if _rule_based(batch):
        return build(lengths, set(buckets.values()), batch.table, **kw)  # type: ignore[arg-type]
    delta = 0
    if shift_rows:
        probe = build(lengths, (n_new,), "captured", **kw)  # type: ignore[arg-type]
        delta = spec_for(batch, knobs.strategy, knobs.keying).required - spec_for(probe, knobs.strategy, knobs.keying).required
    caps = batch.capacities
    rows = {buckets[b]: max(0, caps[b] - delta) for b in batch.capture_num_tokens if b in caps}
    return build(lengths, set(buckets.values()), "", rows=rows, **kw)  # type: ignore[arg-type]


def _variants(
    batch: Batch, lengths: tuple[int, ...], cp_size: int, knobs: Knobs, pad: int | None = None,
    flags: tuple[bool, ...] | None = _SAME,
) -> Iterator[Batch]:
    for shift_buckets in (True, False):
        for shift_rows in (True, False) if not _rule_based(batch) else (False,):
            yield _rebuild(
                batch, lengths, cp_size, knobs, shift_buckets=shift_buckets, shift_rows=shift_rows, pad=pad, flags=flags
            )


def _as_captured(batch: Batch, knobs: Knobs) -> Batch:
    return build(
        batch.extend_seq_lens, batch.capture_num_tokens, "sizes" if knobs.keying == "local" else "captured",
        cp_size=batch.cp_size, strategy=knobs.strategy, factor=batch.max_padding_factor, pad=batch.pad,
        align_size=batch.align_size, context_len=knobs.context_len, is_prefilling=batch.is_prefilling,
    )


def candidates(batch: Batch, cp_sizes: tuple[int, ...], strategy: str | Knobs) -> Iterator[Batch]:
    """Simpler neighbours of ``batch``, most valuable shrink first (a captured table before anything)."""
    knobs = strategy if isinstance(strategy, Knobs) else Knobs(strategy)
    lengths, p = batch.extend_seq_lens, batch.cp_size
    if not _rule_based(batch):
        yield _as_captured(batch, knobs)
    flags = batch.is_prefilling
    for i in range(len(lengths)):
        if len(lengths) > 1:
            kept = None if flags is None or all(flags[:i] + flags[i + 1 :]) else flags[:i] + flags[i + 1 :]
            yield from _variants(batch, lengths[:i] + lengths[i + 1 :], p, knobs, flags=kept)
    if flags is not None:  # every decode a prefill of the same length: simpler when it still fails
        yield from _variants(batch, lengths, p, knobs, flags=None)
    for pad in sorted({knobs.min_pad, max(knobs.min_pad, 1), batch.pad // 2}):
        if pad < batch.pad:
            yield from _variants(batch, lengths, p, knobs, pad=pad)
    gated = knobs.keying == "global" and p > 1 and min(lengths) >= 2 * p
    active_floor = 2 * p if gated else 1
    s = 2 * p
    # Residues mod 2P decide which rank is busiest, so shrink by whole rounds of 2P first (all at once,
    # then one by one), and only then by single tokens.
    same_residue = tuple(max(active_floor, length % s + s) if length % s + s <= length else length for length in lengths)
    if same_residue != lengths:
        yield from _variants(batch, same_residue, p, knobs)
    yield from _few_rounds(batch, lengths, p, knobs, active_floor)
    for i, length in enumerate(lengths):
        q, m = divmod(length, s)
        steps = {q // 2, q - 1} | {1 << k for k in range(max(q, 1).bit_length())}
        rounds = {m + s * j for j in steps if 0 < j < q and m + s * j >= active_floor}
        for target in sorted(rounds | {active_floor, length // 2, length - p, length - 1}):
            if active_floor <= target < length:
                yield from _variants(batch, lengths[:i] + (target,) + lengths[i + 1 :], p, knobs)
    for q in cp_sizes:
        if q < p and (q > 1 or p == 1):
            yield from _variants(batch, lengths, q, knobs)
            # the same residues mod 2q, one round each: a smaller P usually needs shorter requests too
            if q > 1 and min(lengths) >= 2 * p:
                yield from _variants(batch, tuple(length % (2 * q) + 2 * q for length in lengths), q, knobs)
    kw = dict(
        cp_size=p, strategy=knobs.strategy, factor=batch.max_padding_factor, pad=batch.pad, align_size=batch.align_size,
        is_prefilling=flags,
    )
    for b in batch.capture_num_tokens:
        if len(batch.capture_num_tokens) > 1:
            others = {c for c in batch.capture_num_tokens if c != b}
            if _rule_based(batch):
                yield build(lengths, others, batch.table, context_len=batch.context_len, **kw)  # type: ignore[arg-type]
            else:
                rows = {c: r for c, r in batch.bucket_local_tokens if c != b}
                yield build(lengths, others, "", rows=rows, **kw)  # type: ignore[arg-type]
    preferred = DEFAULT_FACTOR if knobs.factors is None else knobs.factors[0]
    if batch.max_padding_factor != preferred and (knobs.factors is None or preferred in knobs.factors):
        yield replace(batch, max_padding_factor=preferred)


_FEW_ROUNDS_MAX_REQUESTS = 4  # up to 4**4 = 256 joint candidates
_FEW_ROUNDS = 4


@functools.lru_cache(maxsize=_FEW_ROUNDS_MAX_REQUESTS)
def _round_picks(requests: int) -> tuple[tuple[int, ...], ...]:
    """Every choice of 1..4 rounds per request, fewest rounds in all first (built once per request count)."""
    return tuple(sorted(itertools.product(range(1, _FEW_ROUNDS + 1), repeat=requests), key=sum))


def _few_rounds(batch: Batch, lengths: tuple[int, ...], p: int, knobs: Knobs, active_floor: int) -> Iterator[Batch]:
    """Every request shrunk at once to 1..4 whole rounds of 2P plus its own residue, smallest total first.
    An overflow that needs the residues together (rank P-1 one row past an alignment edge) is lost by any
    one-request shrink on the way down; the joint jump keeps every residue, so it keeps the busiest rank."""
    s = 2 * p
    if p < 2 or len(lengths) > _FEW_ROUNDS_MAX_REQUESTS or active_floor != s:
        return
    residues = [length % s for length in lengths]
    for rounds in _round_picks(len(lengths)):
        shrunk = tuple(m + s * q for m, q in zip(residues, rounds))
        if sum(shrunk) < sum(lengths):
            yield from _variants(batch, shrunk, p, knobs)


def minimize(
    batch: Batch,
    fails: Callable[[Batch], bool],
    *,
    cp_sizes: tuple[int, ...],
    strategy: str | Knobs = "zigzag",
    budget_s: float = 1.0,
    max_tries: int = 5000,
) -> tuple[Batch, int]:
    """The simplest batch reachable from ``batch`` by greedy shrinking on which ``fails`` still holds,
    and how many candidates were tried. ``strategy`` is the run's strategy, or its ``Knobs`` (a shrink
    never leaves the fixed factors and alignments). Bounded by ``max_tries`` and ``budget_s``; the walk
    is deterministic, so a run that converges within them gives the same batch for the same input."""
    knobs = strategy if isinstance(strategy, Knobs) else Knobs(strategy)
    bound = Bound(max_tries, time.perf_counter() + budget_s)
    seen = {batch}

    def keep(candidate: Batch, best: Batch) -> bool:
        if candidate in seen or size(candidate) >= size(best) or not candidate.capture_num_tokens:
            return False
        seen.add(candidate)
        return True

    best = batch
    for _ in range(3):  # greedy shrinking (shrink.py, the batch's moves), then the least bucket values and rows (canon.py), until stable
        best = shrink(best, (lambda b: candidates(b, cp_sizes, knobs),), fails, keep=keep, bound=bound)
        settled, more = canonical(best, fails, strategy=knobs.strategy)
        bound.tries += more
        if settled == best:
            break
        best = settled
    return best, bound.tries
