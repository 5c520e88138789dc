"""The batch record every rank is asked about, and the capacity tables it carries (SEMANTICS.md names)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cpgraph.reference import capture_local_tokens, default_align_size, headroom_local_tokens
from cpgraph.reference.validate import check_capacities, check_capture_list, check_int, check_lengths, check_strategy

TABLE_KINDS = ("captured", "headroom", "arbitrary")


@dataclass(frozen=True)
class Batch:
    """One live batch and the capture state it meets: exactly the protocol's keyword arguments, less
    ``cp_rank``. ``bucket_local_tokens`` is a tuple of (bucket, rows) pairs so the record is hashable;
    a bucket missing from it has no recorded capacity. ``table`` says how the capacities were made
    ('captured', 'headroom:R' or 'arbitrary'); it is a label, never passed to the policy."""

    cp_size: int
    align_size: int
    num_tokens: int
    extend_seq_lens: tuple[int, ...]
    capture_num_tokens: tuple[int, ...]
    bucket_local_tokens: tuple[tuple[int, int], ...]
    max_padding_factor: int = 2
    table: str = "arbitrary"

    @property
    def capacities(self) -> dict[int, int]:
        return dict(self.bucket_local_tokens)

    def kwargs(self) -> dict[str, Any]:
        """The protocol's keyword arguments (without ``cp_rank``); the capacity mapping is a fresh dict."""
        return {
            "cp_size": self.cp_size,
            "align_size": self.align_size,
            "num_tokens": self.num_tokens,
            "extend_seq_lens": self.extend_seq_lens,
            "capture_num_tokens": self.capture_num_tokens,
            "bucket_local_tokens": dict(self.bucket_local_tokens),
            "max_padding_factor": self.max_padding_factor,
        }

    def to_json(self) -> dict[str, Any]:
        """The counterexample as JSON: the protocol's keywords (capacity keys become strings in JSON)."""
        return {
            "cp_size": self.cp_size,
            "align_size": self.align_size,
            "num_tokens": self.num_tokens,
            "extend_seq_lens": list(self.extend_seq_lens),
            "capture_num_tokens": list(self.capture_num_tokens),
            "bucket_local_tokens": {str(b): rows for b, rows in self.bucket_local_tokens},
            "max_padding_factor": self.max_padding_factor,
        }

    def literal(self) -> str:
        """The batch as Python keyword arguments (for emitted tests and reports)."""
        table = "{" + ", ".join(f"{b}: {rows}" for b, rows in self.bucket_local_tokens) + "}"
        return (
            f"cp_size={self.cp_size}, align_size={self.align_size}, num_tokens={self.num_tokens}, "
            f"extend_seq_lens={self.extend_seq_lens!r}, capture_num_tokens={self.capture_num_tokens!r}, "
            f"bucket_local_tokens={table}, max_padding_factor={self.max_padding_factor}"
        )


def parse_table(spec: str) -> tuple[str, int]:
    """'captured' -> ('captured', 1); 'headroom:R' -> ('headroom', R); 'arbitrary' -> ('arbitrary', 1)."""
    if not isinstance(spec, str):
        raise TypeError(f"capacities must be a str (captured, headroom:R or arbitrary), got {spec!r}")
    kind, _, arg = spec.partition(":")
    if kind in ("captured", "arbitrary") and not arg:
        return kind, 1
    if kind == "headroom":
        if not arg:
            return kind, 2
        if arg.isdigit() and int(arg) >= 1:
            return kind, int(arg)
    raise ValueError(f"capacities entry must be captured, headroom:R (R an int >= 1) or arbitrary; got {spec!r}")


@lru_cache(maxsize=65536)
def captured_rows(bucket: int, cp_size: int, align_size: int, strategy: str) -> int:
    """Upstream's recorded capacity of ``bucket`` (one request of B tokens), memoised."""
    return capture_local_tokens(bucket, cp_size=cp_size, align_size=align_size, strategy=strategy)


@lru_cache(maxsize=65536)
def _headroom(bucket: int, cp_size: int, align_size: int, max_requests: int) -> int:
    """A capacity with headroom for ``max_requests`` requests, memoised."""
    return headroom_local_tokens(bucket, cp_size=cp_size, align_size=align_size, max_requests=max_requests)


def recorded(
    table: str, buckets: tuple[int, ...], *, cp_size: int, align_size: int, strategy: str
) -> tuple[tuple[int, int], ...]:
    """Capacities of ``buckets`` under a 'captured' or 'headroom:R' rule."""
    kind, r = parse_table(table)
    if kind == "headroom":
        return tuple((b, _headroom(b, cp_size, align_size, r)) for b in buckets)
    return tuple((b, captured_rows(b, cp_size, align_size, strategy)) for b in buckets)


def build(
    lengths: tuple[int, ...],
    buckets: tuple[int, ...] | list[int] | set[int],
    table: str,
    *,
    cp_size: int,
    strategy: str,
    factor: int,
    rows: dict[int, int] | None = None,
) -> Batch:
    """A batch of ``lengths`` (num_tokens = their sum) meeting ``buckets`` with capacities by ``table``,
    or the explicit ``rows`` for an 'arbitrary' table (buckets missing from ``rows`` are absent)."""
    align = default_align_size(cp_size=cp_size, strategy=strategy)
    clean = tuple(sorted({b for b in buckets if b >= 1}))
    if rows is not None:
        caps = tuple((b, rows[b]) for b in clean if b in rows)
        table = "arbitrary"
    else:
        caps = recorded(table, clean, cp_size=cp_size, align_size=align, strategy=strategy)
    return Batch(cp_size, align, sum(lengths), lengths, clean, caps, factor, table)


def make_batch(
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    *,
    cp_size: int,
    table: str = "captured",
    capacities: Mapping[int, int] | None = None,
    strategy: str = "zigzag",
    max_padding_factor: int = 2,
) -> Batch:
    """A batch with num_tokens = sum(lengths), buckets sorted and deduplicated, and capacities made by
    ``table`` ('captured', 'headroom:R') or given explicitly (``capacities``; missing buckets are absent)."""
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    buckets = check_capture_list("capture_num_tokens", sorted(set(check_lengths("capture_num_tokens", capture_num_tokens))))
    p = check_int("cp_size", cp_size, minimum=1)
    factor = check_int("max_padding_factor", max_padding_factor, minimum=1)
    check_strategy(strategy)
    rows = None if capacities is None else check_capacities("capacities", capacities)
    if rows is None:
        parse_table(table)
    return build(lengths, buckets, table, cp_size=p, strategy=strategy, factor=factor, rows=rows)
