"""Argument checks shared by every public function: clear errors naming argument, value and what is allowed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Final

from cpgraph.reference.strategies import STRATEGY_TABLE, strategy_row

STRATEGIES: Final = tuple(STRATEGY_TABLE)  # the strategy ids, in table order


def is_int(value: object) -> bool:
    # bool is an int subclass; a length of True is a bug upstream, never one token.
    return isinstance(value, int) and not isinstance(value, bool)


def check_int(name: str, value: object, *, minimum: int, wanted: str = "", where: str = "") -> int:
    """Return ``value`` if it is an int (not bool) >= ``minimum``; raise TypeError/ValueError otherwise, saying
    ``name`` must be ``wanted`` (default: an int >= minimum), the value, then ``where`` (e.g. the whole list)."""
    wanted = wanted or f"an int >= {minimum}"
    if not is_int(value):
        raise TypeError(f"{name} must be {wanted}, got {value!r} ({type(value).__name__}){where}")
    assert isinstance(value, int)
    if value < minimum:
        raise ValueError(f"{name} must be {wanted}, got {value}{where}")
    return value


MAX_CP_SIZE: Final = 1 << 16  # 65536 ranks: every layout is a P-tuple, far above any deployment


def check_cp_size(name: str, value: object) -> int:
    """An int P with 1 <= P <= MAX_CP_SIZE (a layout holds one entry per rank; a P of 10**9 would be built,
    not refused, without the bound)."""
    p = check_int(name, value, minimum=1)
    if p > MAX_CP_SIZE:
        raise ValueError(f"{name} must be an int in 1..{MAX_CP_SIZE} (one layout entry per rank), got {p}")
    return p


def check_lengths(name: str, value: object) -> tuple[int, ...]:
    """A non-empty sequence of non-negative ints (request lengths), returned as a tuple."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a non-empty sequence of ints >= 0, got {value!r}")
    items = tuple(value)
    if items and all(type(x) is int and x >= 0 for x in items):  # the common case, checked at C speed
        return items
    if not items:
        raise ValueError(f"{name} must be a non-empty sequence of ints >= 0, got an empty batch {value!r}")
    for i, item in enumerate(items):
        check_int(f"{name}[{i}]", item, minimum=0, where=f" in {name}={value!r}")
    return items


def check_is_prefilling(name: str, value: object, *, requests: int) -> tuple[bool, ...] | None:
    """None (every request is a prefill) or a sequence of exactly ``requests`` bools, one per request,
    returned as a tuple; an all-True sequence is returned as None, the same batch."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be None or a sequence of {requests} bools (one per request), got {value!r}")
    items = tuple(value)
    for i, item in enumerate(items):
        if type(item) is not bool:
            raise TypeError(f"{name}[{i}] must be a bool (True: the request is a prefill), got {item!r} in {name}={value!r}")
    if len(items) != requests:
        raise ValueError(f"{name} must hold one bool per request ({requests}), got {len(items)}: {value!r}")
    return None if all(items) else items


def check_strategy(strategy: object) -> str:
    """``strategy`` if it is a strategy id of the table; ValueError naming the allowed ids otherwise."""
    return strategy_row(strategy).id


def check_capture_list(name: str, value: object) -> tuple[int, ...]:
    """A non-empty, strictly increasing sequence of positive ints (the scan relies on the order)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a sorted sequence of positive ints, got {value!r}")
    items = tuple(value)
    if items and all(type(x) is int for x in items) and items[0] >= 1 and all(a < b for a, b in zip(items, items[1:])):
        return items
    if not items:
        raise ValueError(f"{name} must be a non-empty sorted sequence of positive ints, got {value!r}")
    for i, item in enumerate(items):
        if not is_int(item):
            raise TypeError(f"{name}[{i}] must be a positive int, got {item!r} ({type(item).__name__})")
        assert isinstance(item, int)
        if item < 1:
            raise ValueError(f"{name}[{i}] must be a positive int, got {item} in {name}={value!r}")
    for i in range(1, len(items)):
        if items[i] == items[i - 1]:
            raise ValueError(f"{name} must not repeat a bucket; {items[i]} appears twice in {name}={value!r}")
        if items[i] < items[i - 1]:
            raise ValueError(
                f"{name} must be sorted ascending; {items[i - 1]} comes before {items[i]} in {name}={value!r}"
            )
    return items


def check_capacities(name: str, value: object) -> dict[int, int]:
    """A mapping bucket -> rows with int keys and int rows >= 0. A ``None`` row means absent (dropped)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping bucket -> rows, got {value!r} ({type(value).__name__})")
    if all(type(b) is int and type(r) is int and r >= 0 for b, r in value.items()):
        return dict(value)
    out: dict[int, int] = {}
    for bucket, rows in value.items():
        if not is_int(bucket):
            raise TypeError(f"{name} keys must be int buckets, got {bucket!r} ({type(bucket).__name__})")
        if rows is None:
            continue
        if not is_int(rows):
            raise TypeError(f"{name}[{bucket}] must be an int >= 0, got {rows!r} ({type(rows).__name__})")
        if rows < 0:
            raise ValueError(f"{name}[{bucket}] must be an int >= 0, got {rows}")
        out[bucket] = rows
    return out


def check_num_tokens(num_tokens: object, lengths: tuple[int, ...]) -> int:
    """``num_tokens`` defaults to the batch's tokens and may exceed them (pre-padded), never fall short."""
    n = check_int("num_tokens", num_tokens, minimum=1)
    total = sum(lengths)
    if n < total:
        raise ValueError(
            f"num_tokens must be >= sum(extend_seq_lens) = {total}, got {n}; "
            "a smaller count would truncate the batch"
        )
    return n


def check_padding_factor(name: str, value: object) -> int | Fraction:
    """A padding factor F >= 1: an int, or an exact rational (a Fraction, e.g. Fraction(3, 2)); a float is
    refused (1.1 is not exactly 11/10 in binary), write Fraction("1.1") instead. A Fraction with denominator
    1 comes back as an int."""
    if type(value) is int and value >= 1:  # the common case, one check
        return value
    if isinstance(value, Fraction):
        if value < 1:
            raise ValueError(f"{name} must be an int >= 1 or a fractions.Fraction >= 1, got {value}")
        return value.numerator if value.denominator == 1 else value
    return check_int(name, value, minimum=1, wanted="an int >= 1 or a fractions.Fraction >= 1")
