"""The batch record every rank is asked about, and the capacity tables it carries (docs/semantics.md names)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from cpgraph.reference import capture_local_tokens, default_align_size, headroom_local_tokens
from cpgraph.reference.judge import capture_loads
from cpgraph.reference.lists import compact
from cpgraph.reference.strategies import STRATEGY_TABLE
from cpgraph.reference.validate import (
    MAX_CP_SIZE,
    check_capacities,
    check_capture_list,
    check_int,
    check_is_prefilling,
    check_lengths,
    check_num_tokens,
    check_strategy,
)

TABLE_KINDS = ("captured", "headroom", "arbitrary", "sizes")  # sizes: every size s holds s rows (local keying)

Factor = int | Fraction  # a padding factor: an int, or an exact rational (Fraction(3, 2))


def factor_text(factor: Factor) -> str:
    """'2' or '3/2': how a factor is written in reports, JSON and on the command line."""
    return str(factor)


@dataclass(frozen=True)
class Batch:
    """One live batch and the capture state it meets: exactly the protocol's keyword arguments, less
    ``cp_rank``. ``bucket_local_tokens`` is a tuple of (bucket, rows) pairs so the record is hashable;
    a bucket missing from it has no recorded capacity. ``num_tokens`` may exceed sum(extend_seq_lens)
    (upstream's n is the padded len(input_ids)). ``max_padding_factor`` is an int or an exact rational.
    ``table`` says how the capacities were made ('captured', 'headroom:R' or 'arbitrary') and
    ``context_len`` the context length a 'captured' table was recorded with; both are labels, never
    passed to the policy. ``is_prefilling`` (None: every request is a prefill) marks decodes, one bool
    per request; it is passed to the policy only when set (only to a policy that takes it)."""

    cp_size: int
    align_size: int
    num_tokens: int
    extend_seq_lens: tuple[int, ...]
    capture_num_tokens: tuple[int, ...]
    bucket_local_tokens: tuple[tuple[int, int], ...]
    max_padding_factor: Factor = 2
    table: str = "arbitrary"
    context_len: int | None = None
    is_prefilling: tuple[bool, ...] | None = None

    @property
    def decodes(self) -> int:
        """How many requests are decodes (not prefilling)."""
        return 0 if self.is_prefilling is None else self.is_prefilling.count(False)

    @property
    def pad(self) -> int:
        """Tokens of num_tokens beyond the live lengths (0 for a live batch)."""
        return self.num_tokens - sum(self.extend_seq_lens)

    @property
    def capacities(self) -> dict[int, int]:
        return dict(self.bucket_local_tokens)

    def kwargs(self) -> dict[str, Any]:
        """The protocol's keyword arguments (without ``cp_rank``); the capacity mapping is a fresh dict;
        ``is_prefilling`` only when the batch has decodes."""
        return self._kwargs(dict(self.bucket_local_tokens))

    def kwargs_less_table(self) -> dict[str, Any]:
        """``kwargs()`` without ``bucket_local_tokens`` (the same keys, in the same order)."""
        return self._kwargs(None)

    def _kwargs(self, table: dict[int, int] | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cp_size": self.cp_size,
            "align_size": self.align_size,
            "num_tokens": self.num_tokens,
            "extend_seq_lens": self.extend_seq_lens,
            "capture_num_tokens": self.capture_num_tokens,
        }
        if table is not None:
            out["bucket_local_tokens"] = table
        out["max_padding_factor"] = self.max_padding_factor
        if self.is_prefilling is not None:
            out["is_prefilling"] = self.is_prefilling
        return out

    def to_json(self) -> dict[str, Any]:
        """The counterexample as JSON: the protocol's keywords (capacity keys become strings in JSON)."""
        return {
            "cp_size": self.cp_size,
            "align_size": self.align_size,
            "num_tokens": self.num_tokens,
            "extend_seq_lens": list(self.extend_seq_lens),
            "capture_num_tokens": list(self.capture_num_tokens),
            "bucket_local_tokens": {str(b): rows for b, rows in self.bucket_local_tokens},
            "max_padding_factor": self.max_padding_factor if isinstance(self.max_padding_factor, int) else factor_text(self.max_padding_factor),
            **({} if self.is_prefilling is None else {"is_prefilling": list(self.is_prefilling)}),
        }

    def literal(self) -> str:
        """The batch as Python keyword arguments (for emitted tests and reports)."""
        table = "{" + ", ".join(f"{b}: {rows}" for b, rows in self.bucket_local_tokens) + "}"
        return (
            f"cp_size={self.cp_size}, align_size={self.align_size}, num_tokens={self.num_tokens}, "
            f"extend_seq_lens={compact(self.extend_seq_lens)}, capture_num_tokens={compact(self.capture_num_tokens)}, "
            f"bucket_local_tokens={table}, max_padding_factor={self.max_padding_factor!r}"
            + ("" if self.is_prefilling is None else f", is_prefilling={self.is_prefilling!r}")
        )


def parse_table(spec: str) -> tuple[str, int]:
    """'captured' -> ('captured', 1); 'headroom:R' -> ('headroom', R); 'arbitrary' -> ('arbitrary', 1)."""
    known = _PARSED.get(spec) if isinstance(spec, str) else None
    if known is not None:
        return known
    parsed = _parse_table(spec)
    _PARSED[spec] = parsed
    return parsed


_PARSED: dict[str, tuple[str, int]] = {}  # the few table specs of a run, parsed once


def _parse_table(spec: str) -> tuple[str, int]:
    if not isinstance(spec, str):
        raise TypeError(f"capacities must be a str (captured, headroom:R, arbitrary or sizes), got {spec!r}")
    kind, _, arg = spec.partition(":")
    if kind in ("captured", "arbitrary", "sizes") and not arg:
        return kind, 1
    if kind == "headroom":
        if not arg:
            return kind, 2
        if arg.isdigit() and int(arg) >= 1:
            return kind, int(arg)
    raise ValueError(f"capacities entry must be captured, headroom:R (R an int >= 1), arbitrary or sizes; got {spec!r}")


@lru_cache(maxsize=65536)
def captured_rows(bucket: int, cp_size: int, align_size: int, strategy: str, context_len: int | None = None) -> int:
    """Upstream's recorded capacity of ``bucket`` (one request of B tokens, or context-length requests
    above ``context_len``), memoised: reference.capture_local_tokens, i.e. align_up(max rank load, A) of
    the capture lengths, with the loads from the judge's memo (reference.judge.capture_loads: rank_loads
    of each request, shared with the judge, and B / context_len requests of one length summed without
    building them); arguments it would refuse go to it, for its error. Tests hold the two equal."""
    if (
        type(bucket) is int and bucket >= 1 and type(cp_size) is int and 1 <= cp_size <= MAX_CP_SIZE
        and type(align_size) is int and align_size >= 1 and strategy in STRATEGY_TABLE
        and (context_len is None or type(context_len) is int and context_len >= 1)
    ):
        top = max(capture_loads(bucket, context_len, cp_size, strategy))
        return -(-top // align_size) * align_size
    return capture_local_tokens(bucket, cp_size=cp_size, align_size=align_size, strategy=strategy, context_len=context_len)


@lru_cache(maxsize=65536)
def _headroom(bucket: int, cp_size: int, align_size: int, max_requests: int, strategy: str) -> int:
    """A capacity with headroom for ``max_requests`` requests, memoised."""
    return headroom_local_tokens(bucket, cp_size=cp_size, align_size=align_size, max_requests=max_requests, strategy=strategy)


class _Rows(dict[int, int]):
    """bucket -> recorded rows under one rule and configuration, filled on first use (a plain dict
    lookup afterwards: the generator reads several buckets' rows for every batch)."""

    def __init__(self, rows: Callable[[int], int]) -> None:
        super().__init__()
        self.rows = rows

    def __missing__(self, bucket: int) -> int:
        if len(self) >= 65536:  # bounded, like the lru caches behind it
            self.clear()
        value = self[bucket] = self.rows(bucket)
        return value


_ROWS: dict[tuple[str, int, int, str, int | None], _Rows] = {}


def rows_table(table: str, *, cp_size: int, align_size: int, strategy: str, context_len: int | None = None) -> dict[int, int]:
    """bucket -> capacity under a 'captured' (at ``context_len``) or 'headroom:R' rule (captured_rows /
    headroom_local_tokens), one memo per configuration."""
    key = (table, cp_size, align_size, strategy, context_len)
    known = _ROWS.get(key)
    if known is not None:
        return known
    kind, r = parse_table(table)
    if kind == "headroom":
        made = _Rows(lambda b: _headroom(b, cp_size, align_size, r, strategy))
    else:
        made = _Rows(lambda b: captured_rows(b, cp_size, align_size, strategy, context_len))
    _ROWS[key] = made
    return made


def recorded(
    table: str, buckets: tuple[int, ...], *, cp_size: int, align_size: int, strategy: str, context_len: int | None = None
) -> tuple[tuple[int, int], ...]:
    """Capacities of ``buckets`` under a 'captured' (at ``context_len``) or 'headroom:R' rule."""
    if table == "sizes":  # local keying: a size s holds s rows on every rank
        return tuple(zip(buckets, buckets))
    rows = rows_table(table, cp_size=cp_size, align_size=align_size, strategy=strategy, context_len=context_len)
    return tuple(zip(buckets, map(rows.__getitem__, buckets)))


def record(
    cp_size: int, align_size: int, num_tokens: int, lengths: tuple[int, ...], buckets: tuple[int, ...],
    capacities: tuple[tuple[int, int], ...], factor: Factor, table: str, context_len: int | None,
    is_prefilling: tuple[bool, ...] | None = None,
) -> Batch:
    """``Batch(...)`` without the frozen dataclass's per-field ``object.__setattr__`` (the generator makes
    one per batch): the same frozen record, fields as given (no checks), its ``__dict__`` set in one call."""
    batch = _new(Batch)
    _set(batch, "__dict__", {
        "cp_size": cp_size, "align_size": align_size, "num_tokens": num_tokens, "extend_seq_lens": lengths,
        "capture_num_tokens": buckets, "bucket_local_tokens": capacities, "max_padding_factor": factor, "table": table,
        "context_len": context_len, "is_prefilling": is_prefilling,
    })
    return batch


_new, _set = object.__new__, object.__setattr__


def build(
    lengths: tuple[int, ...],
    buckets: tuple[int, ...] | list[int] | set[int],
    table: str,
    *,
    cp_size: int,
    strategy: str,
    factor: Factor,
    rows: dict[int, int] | None = None,
    pad: int = 0,
    align_size: int | None = None,
    context_len: int | None = None,
    is_prefilling: tuple[bool, ...] | None = None,
) -> Batch:
    """A batch of ``lengths`` (num_tokens = their sum + ``pad``) meeting ``buckets`` with capacities by
    ``table`` (captured at ``context_len``; 'sizes': each size holds itself), or the explicit ``rows``
    for an 'arbitrary' table (buckets missing from ``rows`` are absent). ``align_size`` defaults to the
    strategy's (2P for zigzag). ``is_prefilling``: one bool per request (None, or all True: no decodes)."""
    align = default_align_size(cp_size=cp_size, strategy=strategy) if align_size is None else align_size
    clean = tuple(sorted({b for b in buckets if b >= 1}))
    if rows is not None:
        caps = tuple((b, rows[b]) for b in clean if b in rows)
        table = "arbitrary"
    else:
        caps = recorded(table, clean, cp_size=cp_size, align_size=align, strategy=strategy, context_len=context_len)
    ctx = context_len if table == "captured" else None
    flags = None if is_prefilling is None or all(is_prefilling) else is_prefilling
    return record(cp_size, align, sum(lengths) + pad, lengths, clean, caps, factor, table, ctx, flags)


def parse_factor(name: str, value: object) -> Factor:
    """A padding factor F >= 1 as an exact number: an int, a Fraction, a float or a string ('2', '1.5',
    '5/4'; a float or decimal string is read as the decimal it shows, 1.1 -> 11/10). Integral values
    come back as int. TypeError/ValueError name ``name``, the value and what is allowed."""
    allowed = "an int >= 1 or an exact rational >= 1 (e.g. 2, 1.5, 5/4)"
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Fraction)):
        raise TypeError(f"{name} must be {allowed}, got {value!r} ({type(value).__name__})")
    try:
        exact = Fraction(repr(value)) if isinstance(value, float) else Fraction(value.strip() if isinstance(value, str) else value)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{name} must be {allowed}, got {value!r}") from None
    if exact < 1:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return exact.numerator if exact.denominator == 1 else exact


def make_batch(
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    *,
    cp_size: int,
    table: str = "captured",
    capacities: Mapping[int, int] | None = None,
    strategy: str = "zigzag",
    max_padding_factor: Factor | float | str = 2,
    num_tokens: int | None = None,
    align_size: int | None = None,
    context_len: int | None = None,
    is_prefilling: Sequence[bool] | None = None,
) -> Batch:
    """A batch with buckets sorted and deduplicated, and capacities made by ``table`` ('captured' at
    ``context_len``, 'headroom:R') or given explicitly (``capacities``; missing buckets are absent).
    ``num_tokens`` defaults to sum(lengths) and may exceed it (a padded n); ``align_size`` to the
    strategy's; ``max_padding_factor`` may be rational (1.5, '5/4')."""
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    buckets = check_capture_list("capture_num_tokens", sorted(set(check_lengths("capture_num_tokens", capture_num_tokens))))
    p = check_int("cp_size", cp_size, minimum=1)
    factor = parse_factor("max_padding_factor", max_padding_factor)
    check_strategy(strategy)
    n = sum(lengths) if num_tokens is None else check_num_tokens(num_tokens, lengths)
    align = None if align_size is None else check_int("align_size", align_size, minimum=1)
    ctx = None if context_len is None else check_int("context_len", context_len, minimum=1)
    rows = None if capacities is None else check_capacities("capacities", capacities)
    if rows is None:
        parse_table(table)
    flags = check_is_prefilling("is_prefilling", is_prefilling, requests=len(lengths))
    if flags is not None and STRATEGY_TABLE[strategy].decodes is None:
        placed = ", ".join(s for s, row in STRATEGY_TABLE.items() if row.decodes is not None)
        raise ValueError(
            f"is_prefilling={list(flags)!r} marks decodes, but strategy {strategy!r} lays out prefills only; "
            f"a batch with decodes needs one of {placed}"
        )
    return build(
        lengths, buckets, table, cp_size=p, strategy=strategy, factor=factor, rows=rows,
        pad=n - sum(lengths), align_size=align, context_len=ctx, is_prefilling=flags,
    )
