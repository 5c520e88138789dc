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

The Design record is in cpgraph/design/record.py, each key's value check (the limits included) in
cpgraph/design/keys.py; every name is importable from here.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Final

from cpgraph.design.keys import (
    MAX_BUCKETS,
    MAX_CP_SIZE,
    MAX_FACTOR_TERMS,
    MAX_TOKENS,
    capacity_table,
    choice,
    factor_toml,
    int_value,
    key_error,
    parse_factor,
    reject_unknown,
)
from cpgraph.design.record import DEFAULT_BYTES_PER_ROW, Design, DesignError
from cpgraph.reference import STRATEGIES, default_align_size

__all__ = [
    "BUNDLED", "CAPACITY_KEYS", "CAPACITY_RULES", "DEFAULT_BYTES_PER_ROW", "LAYOUT_BASES", "MAX_BUCKETS", "MAX_CP_SIZE",
    "MAX_FACTOR_TERMS", "MAX_TOKENS", "SELECTORS", "TOP_KEYS", "Design", "DesignError", "dumps_design", "factor_toml",
    "load_design", "loads_design", "parse_design", "parse_factor",
]

LAYOUT_BASES: Final = ("live", "padded")
SELECTORS: Final = ("search", "smallest")
CAPACITY_RULES: Final = ("captured", "headroom", "table")
BUNDLED: Final = ("upstream", "prefix", "headroom", "vllm_pcp")
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

def parse_design(data: dict[str, object], *, name: str = "design", source: str = "") -> Design:
    """Validate a parsed TOML document into a Design; raise DesignError naming the key on any fault."""
    reject_unknown(data, TOP_KEYS)
    strategy = choice(data, "strategy", STRATEGIES, "zigzag")
    cp_size = int_value(data, "cp_size", minimum=1, maximum=MAX_CP_SIZE)
    default_align = default_align_size(cp_size=cp_size, strategy=strategy)
    align_size = int_value(data, "align_size", minimum=1, default=default_align, maximum=MAX_TOKENS)
    buckets = _capture_list(data.get("capture_num_tokens"), cp_size)
    factor = parse_factor(data.get("max_padding_factor", 2))
    context_len = None
    if "context_len" in data:
        context_len = int_value(data, "context_len", minimum=1, maximum=MAX_TOKENS)
    basis = choice(data, "layout_basis", LAYOUT_BASES, "live")
    selector = choice(data, "selector", SELECTORS, "search")
    bytes_per_row = int_value(data, "bytes_per_row", minimum=1, default=DEFAULT_BYTES_PER_ROW)
    rule, max_requests, table = _capacity(data.get("capacity", {"rule": "captured"}), cp_size, context_len)
    label = data.get("name", name)
    description = data.get("description", "")
    if not isinstance(label, str) or not label:
        raise key_error("name", label, "a non-empty string")
    if not isinstance(description, str):
        raise key_error("description", description, "a string")
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


def _capture_list(raw: object, cp_size: int) -> tuple[int, ...]:
    """capture_num_tokens: 1..MAX_BUCKETS distinct positive buckets of at most MAX_TOKENS, one of them >= 2P;
    the order written is kept (it is the scan order)."""
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in raw)
    ):
        raise key_error("capture_num_tokens", raw, "a non-empty list of positive integers (buckets, in scan order)")
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
        raise key_error("capture_num_tokens", raw, f"each bucket once ({dup} is repeated)")
    buckets = tuple(int(b) for b in raw)
    if not any(b >= 2 * cp_size for b in buckets):
        raise key_error("capture_num_tokens", raw, f"at least one bucket >= 2*cp_size = {2 * cp_size}")
    return buckets


def _capacity(
    cap: object, cp_size: int, context_len: int | None
) -> tuple[str, int, tuple[tuple[int, tuple[int, ...]], ...]]:
    """The [capacity] table: its rule, max_requests (headroom only) and rows per bucket (table only);
    context_len goes with the captured rule only."""
    if not isinstance(cap, dict):
        raise key_error("capacity", cap, 'a table, e.g. [capacity] rule = "captured"')
    reject_unknown(cap, CAPACITY_KEYS, prefix="capacity.")
    rule = choice(cap, "rule", CAPACITY_RULES, "captured", prefix="capacity.")
    max_requests = 1
    table: tuple[tuple[int, tuple[int, ...]], ...] = ()
    if rule == "headroom":
        max_requests = int_value(cap, "max_requests", minimum=1, prefix="capacity.", maximum=MAX_TOKENS)
    elif "max_requests" in cap:
        raise key_error("capacity.max_requests", cap["max_requests"], 'nothing unless capacity.rule = "headroom"')
    if context_len is not None and rule != "captured":
        raise key_error("context_len", context_len, 'nothing unless capacity.rule = "captured" (it sets how buckets are captured)')
    if rule == "table":
        table = capacity_table(cap.get("table"), cp_size)
    elif "table" in cap:
        raise key_error("capacity.table", cap["table"], 'nothing unless capacity.rule = "table"')
    return rule, max_requests, table


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
        f"max_padding_factor = {factor_toml(design.max_padding_factor)}",
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
