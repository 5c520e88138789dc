"""The design file: every knob of the CP graph runner, parsed from TOML and validated.

A design is what ``cpgraph review`` proves and ``cpgraph simulate`` replays. Keys (top level)::

    name = "upstream"                  # optional, defaults to the file stem
    description = "..."                # optional, one line
    strategy = "zigzag"                # zigzag | interleave | contiguous | zigzag_pad
    cp_size = 4                        # 1 <= P <= 64
    align_size = 8                     # A >= 1 (default: the strategy row's factor times P)
    capture_num_tokens = [512, ...]    # 1..256 buckets, each <= 262144 tokens; scanned in the order written
    max_padding_factor = 2             # F >= 1, exact: 2, 1.5, "5/4" or "1.25"; n <= B <= F*n is B*den <= num*n
    context_len = 4096                 # optional: buckets above it are captured as context_len-token requests
    layout_basis = "live"              # live | padded: token count the replay layout is built on
    selector = "search"                # search (smallest fitting bucket) | smallest (first bucket >= n)
    bytes_per_row = 16384              # optional: static bytes one row costs (hidden 8192 x bf16)

    [capacity]                         # how bucket_local_tokens is recorded
    rule = "captured"                  # captured | headroom | table
    max_requests = 8                   # headroom only: R, batches of at most R requests fit
    table = { "512" = 128, "768" = [192, 192, 200, 192] }
                                       # table only: rows per bucket, or one row count per rank

Sizes are bounded where the review's encoding and exact efficiency scan stop being fast: cp_size <= 64
(MAX_CP_SIZE), at most 256 buckets (MAX_BUCKETS), every bucket, align_size, context_len and table row
count <= 262144 tokens (MAX_TOKENS, 2**18: above any prefill capture list in use). A larger value is a
DesignError at load time naming the key, the value and the limit, never a long run.

Validation rejects unknown keys and wrong types with the key, the value and what is allowed. It
deliberately accepts designs that are unsafe (an unsorted capture list, a table missing a bucket,
per-rank capacities that differ): finding what goes wrong with them is the review's job.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Final

from cpgraph.reference import STRATEGIES, CaptureRule, capture_local_tokens, default_align_size

LAYOUT_BASES: Final = ("live", "padded")
SELECTORS: Final = ("search", "smallest")
CAPACITY_RULES: Final = ("captured", "headroom", "table")
DEFAULT_BYTES_PER_ROW: Final = 8192 * 2
BUNDLED: Final = ("upstream", "prefix", "headroom", "vllm_pcp")
MAX_CP_SIZE: Final = 64
MAX_BUCKETS: Final = 256
MAX_TOKENS: Final = 1 << 18  # 262144: buckets, align_size, context_len, table rows, max_requests
MAX_FACTOR_TERMS: Final = 10**6  # numerator and denominator of max_padding_factor
TOP_KEYS: Final = (
    "name",
    "description",
    "strategy",
    "cp_size",
    "align_size",
    "capture_num_tokens",
    "max_padding_factor",
    "context_len",
    "layout_basis",
    "selector",
    "bytes_per_row",
    "capacity",
)
CAPACITY_KEYS: Final = ("rule", "max_requests", "table")


class DesignError(ValueError):
    """A design file that cannot be read: the message names the key, the value and what is allowed."""


@dataclass(frozen=True)
class Design:
    """One CP graph runner configuration. ``table`` maps bucket -> rows per rank (length P)."""

    name: str
    strategy: str
    cp_size: int
    align_size: int
    capture_num_tokens: tuple[int, ...]
    max_padding_factor: Fraction
    layout_basis: str
    selector: str
    capacity_rule: str
    max_requests: int = 1
    table: tuple[tuple[int, tuple[int, ...]], ...] = ()
    bytes_per_row: int = DEFAULT_BYTES_PER_ROW
    description: str = ""
    source: str = field(default="", compare=False)
    context_len: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_padding_factor, Fraction):  # an int given in code: keep it exact
            object.__setattr__(self, "max_padding_factor", Fraction(self.max_padding_factor))

    @property
    def buckets(self) -> tuple[int, ...]:
        """Buckets the runner keeps, in scan order: those below 2P are dropped at start-up."""
        return tuple(b for b in self.capture_num_tokens if b >= 2 * self.cp_size)

    @functools.cached_property
    def is_sorted(self) -> bool:
        return list(self.buckets) == sorted(self.buckets)

    def capture_rule(self) -> CaptureRule:
        """The reference's CaptureRule for rank 0 (a per-rank table is split by ``rank_capacities``)."""
        if self.capacity_rule == "table":
            return CaptureRule(kind="table", table=dict(self.rank_capacities(0)))
        return CaptureRule(kind=self.capacity_rule, max_requests=self.max_requests)

    def rank_capacities(self, rank: int) -> dict[int, int]:
        """``bucket_local_tokens`` as rank ``rank`` recorded it; a bucket without a row count is absent."""
        if self.capacity_rule == "table":
            table = dict(self.table)
            return {b: table[b][rank] for b in self.buckets if b in table}
        if self.capacity_rule == "captured" and self.context_len is not None:
            return {
                b: capture_local_tokens(
                    b, cp_size=self.cp_size, align_size=self.align_size, strategy=self.strategy,
                    context_len=self.context_len,
                )
                for b in self.buckets
            }
        rule = CaptureRule(kind=self.capacity_rule, max_requests=self.max_requests)
        ordered = sorted(self.buckets)
        caps = rule.capacities(ordered, cp_size=self.cp_size, align_size=self.align_size, strategy=self.strategy)
        return {b: caps[b] for b in self.buckets}

    def capacities(self) -> tuple[dict[int, int], ...]:
        """Per rank, bucket -> rows (computed once per design; treat the dicts as read-only)."""
        return _capacities(self)

    @property
    def per_rank_table(self) -> bool:
        """True when some bucket's recorded rows differ between ranks."""
        return any(len(set(rows)) > 1 for _, rows in self.table)


@functools.lru_cache(maxsize=64)
def _capacities(design: Design) -> tuple[dict[int, int], ...]:
    return tuple(design.rank_capacities(r) for r in range(design.cp_size))


def _fail(key: str, value: object, allowed: str) -> DesignError:
    return DesignError(f"design key {key!r}: got {value!r}; allowed: {allowed}")


def _int(
    data: dict[str, object],
    key: str,
    *,
    minimum: int,
    default: int | None = None,
    prefix: str = "",
    maximum: int | None = None,
) -> int:
    name = prefix + key
    allowed = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
    if key not in data:
        if default is None:
            raise DesignError(f"design key {name!r} is missing; allowed: {allowed}")
        return default
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise _fail(name, value, allowed)
    if maximum is not None and value > maximum:
        raise _fail(name, value, f"{allowed} (the limit of the review's encoding)")
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
        raise _fail(key, value, allowed)
    return factor


def factor_text(factor: Fraction) -> str:
    """TOML for a factor: an integer, or a ratio string."""
    return str(factor.numerator) if factor.denominator == 1 else f'"{factor.numerator}/{factor.denominator}"'


def _choice(data: dict[str, object], key: str, allowed: tuple[str, ...], default: str, *, prefix: str = "") -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or value not in allowed:
        raise _fail(prefix + key, value, " | ".join(allowed))
    return value


def _unknown(data: dict[str, object], known: tuple[str, ...], prefix: str = "") -> None:
    for key in data:
        if key not in known:
            raise DesignError(f"design key {prefix + key!r} is not a design knob; allowed keys: {', '.join(known)}")


def _table(raw: object, cp_size: int) -> tuple[tuple[int, tuple[int, ...]], ...]:
    if not isinstance(raw, dict) or not raw:
        raise _fail("capacity.table", raw, 'a non-empty table of bucket = rows, e.g. { "512" = 128 }')
    out: list[tuple[int, tuple[int, ...]]] = []
    for key, rows in raw.items():
        try:
            bucket = int(key)
        except ValueError:
            raise _fail(f"capacity.table.{key}", key, "bucket keys that are integers, e.g. \"512\"") from None
        if bucket > MAX_TOKENS or bucket < 1:
            raise _fail(f"capacity.table.{key}", bucket, f"a bucket of 1..{MAX_TOKENS} tokens")
        if isinstance(rows, int) and not isinstance(rows, bool) and 0 <= rows <= MAX_TOKENS:
            out.append((bucket, (rows,) * cp_size))
        elif (
            isinstance(rows, list)
            and len(rows) == cp_size
            and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_TOKENS for x in rows)
        ):
            out.append((bucket, tuple(rows)))
        else:
            raise _fail(
                f"capacity.table.{key}", rows, f"an integer in 0..{MAX_TOKENS}, or a list of {cp_size} integers in 0..{MAX_TOKENS} (one per rank)"
            )
    return tuple(sorted(out))


def parse_design(data: dict[str, object], *, name: str = "design", source: str = "") -> Design:
    """Validate a parsed TOML document into a Design; raise DesignError naming the key on any fault."""
    _unknown(data, TOP_KEYS)
    strategy = _choice(data, "strategy", STRATEGIES, "zigzag")
    cp_size = _int(data, "cp_size", minimum=1, maximum=MAX_CP_SIZE)
    default_align = default_align_size(cp_size=cp_size, strategy=strategy)
    align_size = _int(data, "align_size", minimum=1, default=default_align, maximum=MAX_TOKENS)
    raw = data.get("capture_num_tokens")
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in raw)
    ):
        raise _fail("capture_num_tokens", raw, "a non-empty list of positive integers (buckets, in scan order)")
    if len(raw) > MAX_BUCKETS:
        raise DesignError(
            f"design key 'capture_num_tokens': got a list of {len(raw)} buckets; allowed: at most {MAX_BUCKETS} "
            "buckets (the limit of the review's encoding)"
        )
    if max(raw) > MAX_TOKENS:
        raise DesignError(
            f"design key 'capture_num_tokens': got a bucket of {max(raw)} tokens; allowed: buckets <= {MAX_TOKENS} "
            "tokens (the limit of the review's exact efficiency scan)"
        )
    if len(set(raw)) != len(raw):
        dup = next(b for b in raw if raw.count(b) > 1)
        raise _fail("capture_num_tokens", raw, f"each bucket once ({dup} is repeated)")
    buckets = tuple(int(b) for b in raw)
    if not any(b >= 2 * cp_size for b in buckets):
        raise _fail("capture_num_tokens", raw, f"at least one bucket >= 2*cp_size = {2 * cp_size}")
    factor = parse_factor(data.get("max_padding_factor", 2))
    context_len = None
    if "context_len" in data:
        context_len = _int(data, "context_len", minimum=1, maximum=MAX_TOKENS)
    basis = _choice(data, "layout_basis", LAYOUT_BASES, "live")
    selector = _choice(data, "selector", SELECTORS, "search")
    bytes_per_row = _int(data, "bytes_per_row", minimum=1, default=DEFAULT_BYTES_PER_ROW)
    cap = data.get("capacity", {"rule": "captured"})
    if not isinstance(cap, dict):
        raise _fail("capacity", cap, 'a table, e.g. [capacity] rule = "captured"')
    _unknown(cap, CAPACITY_KEYS, prefix="capacity.")
    rule = _choice(cap, "rule", CAPACITY_RULES, "captured", prefix="capacity.")
    max_requests = 1
    table: tuple[tuple[int, tuple[int, ...]], ...] = ()
    if rule == "headroom":
        max_requests = _int(cap, "max_requests", minimum=1, prefix="capacity.", maximum=MAX_TOKENS)
    elif "max_requests" in cap:
        raise _fail("capacity.max_requests", cap["max_requests"], 'nothing unless capacity.rule = "headroom"')
    if context_len is not None and rule != "captured":
        raise _fail("context_len", context_len, 'nothing unless capacity.rule = "captured" (it sets how buckets are captured)')
    if rule == "table":
        table = _table(cap.get("table"), cp_size)
    elif "table" in cap:
        raise _fail("capacity.table", cap["table"], 'nothing unless capacity.rule = "table"')
    label = data.get("name", name)
    description = data.get("description", "")
    if not isinstance(label, str) or not label:
        raise _fail("name", label, "a non-empty string")
    if not isinstance(description, str):
        raise _fail("description", description, "a string")
    return Design(
        name=label,
        strategy=strategy,
        cp_size=cp_size,
        align_size=align_size,
        capture_num_tokens=buckets,
        max_padding_factor=factor,
        layout_basis=basis,
        selector=selector,
        capacity_rule=rule,
        max_requests=max_requests,
        table=table,
        bytes_per_row=bytes_per_row,
        description=description,
        source=source,
        context_len=context_len,
    )


def loads_design(text: str, *, name: str = "design", source: str = "") -> Design:
    """Parse TOML text into a Design."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DesignError(f"{source or name}: not valid TOML: {exc}") from None
    return parse_design(data, name=name, source=source)


def load_design(ref: str) -> Design:
    """A design by path (``designs/upstream.toml``) or bundled name (``upstream``)."""
    path = Path(ref)
    if path.is_file():
        return loads_design(path.read_text(encoding="utf-8"), name=path.stem, source=str(path))
    bundled = resources.files("cpgraph.designs").joinpath(f"{ref}.toml")
    if bundled.is_file():
        return loads_design(bundled.read_text(encoding="utf-8"), name=ref, source=f"bundled:{ref}")
    raise DesignError(f"design {ref!r}: no such file and no bundled design; bundled: {', '.join(BUNDLED)}")


def dumps_design(design: Design) -> str:
    """TOML text for a design (used by ``cpgraph plan`` to write the chosen design)."""
    lines = [f'name = "{design.name}"']
    if design.description:
        lines.append(f'description = "{design.description}"')
    lines += [
        f'strategy = "{design.strategy}"',
        f"cp_size = {design.cp_size}",
        f"align_size = {design.align_size}",
        f"capture_num_tokens = [{', '.join(str(b) for b in design.capture_num_tokens)}]",
        f"max_padding_factor = {factor_text(design.max_padding_factor)}",
        f'layout_basis = "{design.layout_basis}"',
        f'selector = "{design.selector}"',
        f"bytes_per_row = {design.bytes_per_row}",
    ]
    if design.context_len is not None:
        lines.append(f"context_len = {design.context_len}")
    lines += [
        "",
        "[capacity]",
        f'rule = "{design.capacity_rule}"',
    ]
    if design.capacity_rule == "headroom":
        lines.append(f"max_requests = {design.max_requests}")
    if design.capacity_rule == "table":
        cells = ", ".join(f'"{b}" = [{", ".join(str(x) for x in rows)}]' for b, rows in design.table)
        lines.append(f"table = {{ {cells} }}")
    return "\n".join(lines) + "\n"
