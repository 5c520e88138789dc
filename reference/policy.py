"""The reference as a policy (the protocol of ``cpgraph check``): admit, replay_bucket, local_rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict, Unpack

from cpgraph.reference.capacity import required_local_tokens
from cpgraph.reference.layout import rank_loads
from cpgraph.reference.lists import compact
from cpgraph.reference.selection import is_cp_active, select_replay_bucket
from cpgraph.reference.validate import check_capture_list, check_strategy


class PolicyBatch(TypedDict):
    """The keywords every policy call receives, by name (the protocol of ``cpgraph check``)."""

    cp_rank: int
    cp_size: int
    align_size: int
    num_tokens: int
    extend_seq_lens: Sequence[int]
    capture_num_tokens: Sequence[int]
    bucket_local_tokens: Mapping[int, int | None]
    max_padding_factor: int


BATCH_KEYWORDS = frozenset(PolicyBatch.__annotations__)


def check_batch_keywords(caller: str, batch: Mapping[str, object]) -> None:
    """A policy function takes exactly the batch keywords; anything else is a TypeError, as a signature gives."""
    if batch.keys() != BATCH_KEYWORDS:
        missing, unexpected = sorted(BATCH_KEYWORDS - batch.keys()), sorted(batch.keys() - BATCH_KEYWORDS)
        raise TypeError(
            f"{caller}() takes exactly the batch keywords {sorted(BATCH_KEYWORDS)}; "
            f"missing {missing}, unexpected {unexpected}"
        )


def _select(caller: str, batch: PolicyBatch) -> int | None:
    check_batch_keywords(caller, batch)
    lengths, n, p = batch["extend_seq_lens"], batch["num_tokens"], batch["cp_size"]
    if not is_cp_active(lengths, num_tokens=n, cp_size=p):
        return None
    return select_replay_bucket(
        num_tokens=n,
        required_local_tokens=required_local_tokens(lengths, cp_size=p, align_size=batch["align_size"]),
        capture_num_tokens=batch["capture_num_tokens"],
        bucket_local_tokens=batch["bucket_local_tokens"],
        max_padding_factor=batch["max_padding_factor"],
    )


def admit(**batch: Unpack[PolicyBatch]) -> bool:
    """Would this rank replay a graph for this batch? (Rank-invariant: ``cp_rank`` is not used.)"""
    return _select("admit", batch) is not None


def replay_bucket(**batch: Unpack[PolicyBatch]) -> int:
    """The bucket this rank pads to; raises LookupError when the batch was not admitted."""
    bucket = _select("replay_bucket", batch)
    if bucket is None:
        raise LookupError(
            f"no captured bucket fits num_tokens={batch['num_tokens']}, "
            f"extend_seq_lens={compact(tuple(batch['extend_seq_lens']))}"
        )
    return bucket


def local_rows(*, bucket: int, **batch: Unpack[PolicyBatch]) -> tuple[int, ...]:
    """Physical rows per rank when replaying at ``bucket``: every rank pads to align_up(max load, A)."""
    check_batch_keywords("local_rows", batch)
    p = batch["cp_size"]
    return (required_local_tokens(batch["extend_seq_lens"], cp_size=p, align_size=batch["align_size"]),) * p


class LocalPolicy:
    """The reference of the ``local`` keying (vLLM 0.29 on) as a policy: every rank computes the key m, the
    largest live rank-local rows of the batch over all ranks (decodes placed as ``strategy``'s row says),
    admits iff some captured size s >= m exists, and replays the least such s, which is also the size it
    admitted; the layout is padded to s rows on every rank. ``bucket_local_tokens`` and
    ``max_padding_factor`` are not read (a size s holds s rows; there is no window)."""

    keying = "local"
    align_size = 1

    def __init__(self, strategy: str = "dual_chunk_swap") -> None:
        self.strategy = check_strategy(strategy)

    def _size(self, caller: str, batch: Mapping[str, object]) -> int | None:
        extra = dict(batch)
        flags = extra.pop("is_prefilling", None)
        check_batch_keywords(caller, extra)
        p = batch["cp_size"]
        loads = rank_loads(batch["extend_seq_lens"], cp_size=p, strategy=self.strategy, is_prefilling=flags)
        key = max(loads)
        a = batch["align_size"]
        required = -(-key // a) * a if isinstance(a, int) and a >= 1 else key
        sizes = check_capture_list("capture_num_tokens", batch["capture_num_tokens"])
        return next((s for s in sizes if s >= required), None)

    def admit(self, **batch: object) -> bool:
        """Is there a captured size for this batch's key?"""
        return self._size("admit", batch) is not None

    def admitted_bucket(self, **batch: object) -> int | None:
        """The size admission chose (None: eager)."""
        return self._size("admitted_bucket", batch)

    def replay_bucket(self, **batch: object) -> int:
        """The size the layout is padded to and the graph replayed under; LookupError when none fits."""
        size = self._size("replay_bucket", batch)
        if size is None:
            raise LookupError(f"no captured size holds the key of extend_seq_lens={batch['extend_seq_lens']!r}")
        return size

    def local_rows(self, *, bucket: int, **batch: object) -> tuple[int, ...]:
        """The live rows each rank holds (the layout pads every rank to ``bucket``)."""
        extra = dict(batch)
        flags = extra.pop("is_prefilling", None)
        check_batch_keywords("local_rows", extra)
        return rank_loads(batch["extend_seq_lens"], cp_size=batch["cp_size"], strategy=self.strategy, is_prefilling=flags)


local = LocalPolicy()  # `cpgraph check cpgraph.reference.policy:local`: DualChunkSwap, keyed by rank-local rows
