"""The batch record every rank is asked about, and the capacity tables it carries (SEMANTICS.md names)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reference import capture_local_tokens, default_align_size, headroom_local_tokens

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


def table_rows(
    kind: str, max_requests: int, buckets: Sequence[int], *, cp_size: int, align_size: int, strategy: str
) -> tuple[tuple[int, int], ...]:
    """Capacities for every bucket as recorded by a 'captured' or 'headroom' rule."""
    if kind == "captured":
        return tuple(
            (b, capture_local_tokens(b, cp_size=cp_size, align_size=align_size, strategy=strategy)) for b in buckets
        )
    if kind == "headroom":
        if strategy != "zigzag":
            raise ValueError(f"capacities 'headroom:R' are defined for the zigzag strategy only, got {strategy!r}")
        return tuple(
            (b, headroom_local_tokens(b, cp_size=cp_size, align_size=align_size, max_requests=max_requests))
            for b in buckets
        )
    raise ValueError(f"table kind must be captured or headroom, got {kind!r}")


def make_batch(
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    *,
    cp_size: int,
    table: str = "captured",
    capacities: Mapping[int, int] | None = None,
    strategy: str = "zigzag",
    align_size: int | None = None,
    max_padding_factor: int = 2,
) -> Batch:
    """A batch with num_tokens = sum(lengths), buckets sorted and deduplicated, and capacities made by
    ``table`` ('captured', 'headroom:R') or given explicitly (``table='arbitrary'``, ``capacities``)."""
    a = default_align_size(cp_size=cp_size, strategy=strategy) if align_size is None else align_size
    lengths = tuple(extend_seq_lens)
    buckets = tuple(sorted(set(capture_num_tokens)))
    if table == "arbitrary" or capacities is not None:
        given = {} if capacities is None else dict(capacities)
        rows = tuple((b, given[b]) for b in buckets if b in given)
        label = "arbitrary"
    else:
        kind, r = parse_table(table)
        rows = table_rows(kind, r, buckets, cp_size=cp_size, align_size=a, strategy=strategy)
        label = table
    return Batch(cp_size, a, sum(lengths), lengths, buckets, rows, max_padding_factor, label)
