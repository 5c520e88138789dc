"""One design key's value checked: integers within the review's limits, a choice among allowed strings, no
unknown key, the capacity table, and the exact padding factor. Every fault is a DesignError naming the key,
the value and what is allowed."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Final

from cpgraph.design.record import DesignError

MAX_CP_SIZE: Final = 64
MAX_BUCKETS: Final = 256
MAX_TOKENS: Final = 1 << 18  # 262144: buckets, align_size, context_len, table rows, max_requests
MAX_FACTOR_TERMS: Final = 10**6  # numerator and denominator of max_padding_factor


def key_error(key: str, value: object, allowed: str) -> DesignError:
    """The error for ``key``: the value got and what is allowed."""
    return DesignError(f"design key {key!r}: got {value!r}; allowed: {allowed}")


def labels(data: dict[str, object], name: str) -> tuple[str, str]:
    """A design's ``name`` (default ``name``) and ``description`` (default empty), each checked."""
    label = data.get("name", name)
    description = data.get("description", "")
    if not isinstance(label, str) or not label:
        raise key_error("name", label, "a non-empty string")
    if not isinstance(description, str):
        raise key_error("description", description, "a string")
    return label, description


def int_value(
    data: dict[str, object],
    key: str,
    *,
    minimum: int,
    default: int | None = None,
    prefix: str = "",
    maximum: int | None = None,
) -> int:
    """``data[key]``: an int >= ``minimum`` (and <= ``maximum``: the review's limit), or ``default`` when absent."""
    name = prefix + key
    allowed = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
    if key not in data:
        if default is None:
            raise DesignError(f"design key {name!r} is missing; allowed: {allowed}")
        return default
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise key_error(name, value, allowed)
    if maximum is not None and value > maximum:
        raise key_error(name, value, f"{allowed} (the limit of the review's encoding)")
    return value


_DECIMAL = re.compile(r"^\d+(\.\d+)?$")
_RATIO = re.compile(r"^(\d+)\s*/\s*(\d+)$")


def parse_factor(value: object, key: str = "max_padding_factor") -> Fraction:
    """An exact padding factor >= 1 from an int, a float written in decimal (1.5), or a string "5/4" or
    "1.25"; numerator and denominator at most MAX_FACTOR_TERMS."""
    allowed = f'a number >= 1, exact: an integer, a decimal (1.5) or a ratio string ("5/4"), terms <= {MAX_FACTOR_TERMS}'
    factor: Fraction | None = None
    if isinstance(value, bool):
        factor = None
    elif isinstance(value, int):
        factor = Fraction(value)
    elif isinstance(value, float):
        text = repr(value)
        factor = Fraction(text) if _DECIMAL.match(text) else None
    elif isinstance(value, str):
        text = value.strip()
        ratio = _RATIO.match(text)
        if ratio and int(ratio.group(2)) > 0:
            factor = Fraction(int(ratio.group(1)), int(ratio.group(2)))
        elif _DECIMAL.match(text):
            factor = Fraction(text)
    if factor is None or factor < 1 or max(factor.numerator, factor.denominator) > MAX_FACTOR_TERMS:
        raise key_error(key, value, allowed)
    return factor


def factor_toml(factor: Fraction) -> str:
    """TOML for a factor: an integer, or a ratio string."""
    return str(factor.numerator) if factor.denominator == 1 else f'"{factor.numerator}/{factor.denominator}"'


def choice(data: dict[str, object], key: str, allowed: tuple[str, ...], default: str, *, prefix: str = "") -> str:
    """``data[key]``: one of ``allowed`` (``default`` when absent)."""
    value = data.get(key, default)
    if not isinstance(value, str) or value not in allowed:
        raise key_error(prefix + key, value, " | ".join(allowed))
    return value


def reject_unknown(data: dict[str, object], known: tuple[str, ...], prefix: str = "") -> None:
    """Every key of ``data`` is one of ``known``."""
    for key in data:
        if key not in known:
            raise DesignError(f"design key {prefix + key!r} is not a design knob; allowed keys: {', '.join(known)}")


def capacity_table(raw: object, cp_size: int) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """capacity.table: bucket -> rows (one count for every rank, or one per rank), sorted by bucket."""
    if not isinstance(raw, dict) or not raw:
        raise key_error("capacity.table", raw, 'a non-empty table of bucket = rows, e.g. { "512" = 128 }')
    out: list[tuple[int, tuple[int, ...]]] = []
    for key, rows in raw.items():
        try:
            bucket = int(key)
        except ValueError:
            raise key_error(f"capacity.table.{key}", key, "bucket keys that are integers, e.g. \"512\"") from None
        if bucket > MAX_TOKENS or bucket < 1:
            raise key_error(f"capacity.table.{key}", bucket, f"a bucket of 1..{MAX_TOKENS} tokens")
        if isinstance(rows, int) and not isinstance(rows, bool) and 0 <= rows <= MAX_TOKENS:
            out.append((bucket, (rows,) * cp_size))
        elif (
            isinstance(rows, list)
            and len(rows) == cp_size
            and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_TOKENS for x in rows)
        ):
            out.append((bucket, tuple(rows)))
        else:
            raise key_error(
                f"capacity.table.{key}", rows, f"an integer in 0..{MAX_TOKENS}, or a list of {cp_size} integers in 0..{MAX_TOKENS} (one per rank)"
            )
    return tuple(sorted(out))
