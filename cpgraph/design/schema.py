"""The design file: every knob of the CP graph runner, parsed from TOML and validated.

A design is what ``cpgraph review`` proves and ``cpgraph simulate`` replays. Keys (top level)::

    name = "upstream"                  # optional, defaults to the file stem
    description = "..."                # optional, one line
    strategy = "zigzag"                # zigzag | interleave | contiguous | dual_chunk_swap
                                       #   | dual_chunk_swap_replicated | dual_chunk_swap_dcp
    keying = "global"                  # global (sglang: buckets of n tokens) | local (vLLM 0.29+: sizes of
                                       #   rank-local rows), the rows of reference/keying.py
    admission_key = "num_tokens"       # optional: what admission dispatches by; default the keying's own key
                                       #   (global: num_tokens, local: local_rows); "num_tokens" under local
                                       #   is vLLM 0.26-0.28's split (replay stays keyed by local rows)
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

Under ``keying = "local"`` a captured size s holds s rows on every rank and the selector takes the least
size >= the key with no window, so the knobs of the global keying have no meaning there and are REJECTED
(a DesignError naming the key and why), never silently ignored: ``align_size`` (rows are padded to the
size only, A = 1), ``max_padding_factor`` (no window), ``context_len`` and ``[capacity]`` (a size is not
captured as requests; it holds s rows), ``layout_basis`` (the layout is built from the live lengths and
padded per rank to the size). Every size is kept (no CP-active gate drops sizes below 2P). Under
``keying = "global"`` admission_key must be "num_tokens" (the only split modelled is vLLM's, under local).

Validation rejects unknown keys and wrong types with the key, the value and what is allowed. It
deliberately accepts designs that are unsafe (an unsorted capture list, a table missing a bucket,
per-rank capacities that differ): finding what goes wrong with them is the review's job.

A design with ``path = "decode"`` is a decode-path design (cpgraph/design/decode.py: its keys, and what it
rejects); ``parse_any_design`` / ``load_any_design`` read either kind (``cpgraph review``), while
``parse_design`` / ``load_design`` (plan, simulate) take prefill designs only and name the decode keys
(``DECODE_ONLY``) as needing ``path = "decode"``. ``path = "prefill"`` may be written; absent means it.

The Design record is in cpgraph/design/record.py, each key's value check (the limits included) in
cpgraph/design/keys.py; every name is importable from here.
"""

from __future__ import annotations

import tomllib
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Final

from cpgraph.design.decode import DECODE_ONLY, DecodeDesign, parse_decode_design
from cpgraph.design.ep import EpDesign, parse_ep_design
from cpgraph.design.keys import (
    labels,
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
from cpgraph.design.record import ADMISSION_KEYS, DEFAULT_BYTES_PER_ROW, KEY_OF_KEYING, Design, DesignError
from cpgraph.reference import STRATEGIES, default_align_size
from cpgraph.reference.keying import KEYINGS, keying_row

__all__ = [
    "ADMISSION_KEYS", "BUNDLED", "BUNDLED_DECODE", "CAPACITY_KEYS", "DecodeDesign", "load_any_design", "loads_any_design",
    "parse_any_design", "CAPACITY_RULES", "DEFAULT_BYTES_PER_ROW", "LAYOUT_BASES", "LOCAL_REJECTS",
    "MAX_BUCKETS", "MAX_CP_SIZE", "MAX_FACTOR_TERMS", "MAX_TOKENS", "SELECTORS", "TOP_KEYS", "Design", "DesignError",
    "dumps_design", "factor_toml", "load_design", "loads_design", "parse_design", "parse_factor",
]

LAYOUT_BASES: Final = ("live", "padded")
SELECTORS: Final = ("search", "smallest")
CAPACITY_RULES: Final = ("captured", "headroom", "table")
BUNDLED: Final = ("upstream", "prefix", "headroom", "vllm_pcp", "vllm_pcp_0_28")  # prefill designs (simulate runs them all)
BUNDLED_DECODE: Final = ("vllm_decode_copied", "vllm_decode_dealt", "vllm_decode_dealt_local")  # path = "decode"
BUNDLED_EP: Final = ("megatron_0_16", "megatron_synced", "megatron_decode_only")  # path = "ep" (cpgraph/design/ep.py)
PATHS: Final = ("prefill", "decode", "ep")
TOP_KEYS: Final = (
    "path",
    "name",
    "description",
    "strategy",
    "keying",
    "admission_key",
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
# Keys a local-keyed design rejects, with why (a size s holds s rows on every rank, no window).
LOCAL_REJECTS: Final = {
    "align_size": "rank-local rows are padded to the captured size only (A = 1)",
    "max_padding_factor": "no padding window: the least captured size >= the key is taken",
    "context_len": "a size is not captured as requests: it holds s rows on every rank",
    "layout_basis": "the layout is built from the live lengths and padded per rank to the size",
    "capacity": "a size s holds s rows on every rank (there is no capacity table)",
}

def parse_design(data: dict[str, object], *, name: str = "design", source: str = "") -> Design:
    """Validate a parsed TOML document into a (prefill) Design; raise DesignError naming the key on any fault
    (a decode design's key, or ``path = "decode"``, included: read those with ``parse_any_design``)."""
    path = choice(data, "path", PATHS, "prefill")
    if path != "prefill":
        raise key_error("path", path, '"prefill" here: a decode-path design is read by cpgraph review only (plan and simulate take prefill designs)')
    for key in DECODE_ONLY:
        if key in data:
            raise DesignError(
                f"design key {key!r}: got {data[key]!r}; allowed: only in a decode-path design (path = \"decode\"); "
                "a prefill design has no such knob"
            )
    reject_unknown(data, TOP_KEYS)
    strategy = choice(data, "strategy", STRATEGIES, "zigzag")
    keying = choice(data, "keying", KEYINGS, "global")
    admission_key = choice(data, "admission_key", ADMISSION_KEYS, KEY_OF_KEYING[keying])
    cp_size = int_value(data, "cp_size", minimum=1, maximum=MAX_CP_SIZE)
    if not keying_row(keying).recorded_capacity:
        return _local_design(data, name, source, strategy, keying, admission_key, cp_size)
    if admission_key != KEY_OF_KEYING[keying]:
        raise key_error(
            "admission_key", admission_key,
            f'{KEY_OF_KEYING[keying]} under keying = "{keying}" (the split admission key modelled is vLLM '
            '0.26-0.28\'s, admission by num_tokens under keying = "local")',
        )
    default_align = default_align_size(cp_size=cp_size, strategy=strategy)
    align_size = int_value(data, "align_size", minimum=1, default=default_align, maximum=MAX_TOKENS)
    buckets = _capture_list(data.get("capture_num_tokens"), cp_size, gated=True)
    factor = parse_factor(data.get("max_padding_factor", 2))
    context_len = None
    if "context_len" in data:
        context_len = int_value(data, "context_len", minimum=1, maximum=MAX_TOKENS)
    basis = choice(data, "layout_basis", LAYOUT_BASES, "live")
    selector = choice(data, "selector", SELECTORS, "search")
    bytes_per_row = int_value(data, "bytes_per_row", minimum=1, default=DEFAULT_BYTES_PER_ROW)
    rule, max_requests, table = _capacity(data.get("capacity", {"rule": "captured"}), cp_size, context_len)
    label, description = labels(data, name)
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
        keying=keying,
    )


def _local_design(
    data: dict[str, object], name: str, source: str, strategy: str, keying: str, admission_key: str, cp_size: int
) -> Design:
    """A design keyed by rank-local rows: the global keying's knobs are rejected (LOCAL_REJECTS), every size
    is kept, alignment 1, capacities s -> s (record.py)."""
    for key, why in LOCAL_REJECTS.items():
        if key in data:
            raise DesignError(
                f"design key {key!r}: got {data[key]!r}; allowed: nothing under keying = \"{keying}\" ({why}); "
                "remove it"
            )
    buckets = _capture_list(data.get("capture_num_tokens"), cp_size, gated=False)
    selector = choice(data, "selector", SELECTORS, "search")
    bytes_per_row = int_value(data, "bytes_per_row", minimum=1, default=DEFAULT_BYTES_PER_ROW)
    label, description = labels(data, name)
    return local_design(
        label, strategy, cp_size, buckets, keying=keying, selector=selector, bytes_per_row=bytes_per_row,
        description=description, source=source, admission_key=admission_key,
    )


def local_design(
    name: str, strategy: str, cp_size: int, capture_num_tokens: tuple[int, ...], *, keying: str = "local",
    selector: str = "search", bytes_per_row: int = DEFAULT_BYTES_PER_ROW, description: str = "", source: str = "",
    admission_key: str | None = None,
) -> Design:
    """A design keyed by rank-local rows, with what that keying fixes stated once: alignment 1, the live
    layout, capacities s -> s (the capture rule is not read) and no window (the factor is not read)."""
    return Design(
        name=name,
        strategy=strategy,
        cp_size=cp_size,
        align_size=1,
        capture_num_tokens=capture_num_tokens,
        max_padding_factor=Fraction(2),  # unused: a local keying has no window
        layout_basis="live",
        selector=selector,
        capacity_rule="captured",
        bytes_per_row=bytes_per_row,
        description=description,
        source=source,
        keying=keying,
        admission_key=admission_key,
    )




def _capture_list(raw: object, cp_size: int, *, gated: bool) -> tuple[int, ...]:
    """capture_num_tokens: 1..MAX_BUCKETS distinct positive buckets of at most MAX_TOKENS, one of them >= 2P
    when only CP-active batches take the graph path (``gated``); the order written is kept (it is the scan
    order)."""
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
    if gated and not any(b >= 2 * cp_size for b in buckets):
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


def parse_any_design(data: dict[str, object], *, name: str = "design", source: str = "") -> Design | DecodeDesign | EpDesign:
    """A prefill Design, a DecodeDesign when ``path = "decode"``, an EpDesign when ``path = "ep"``."""
    path = choice(data, "path", PATHS, "prefill")
    if path == "decode":
        return parse_decode_design(data, name=name, source=source)
    if path == "ep":
        return parse_ep_design(data, name=name, source=source)
    return parse_design(data, name=name, source=source)


def _toml(text: str, name: str, source: str) -> dict[str, object]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DesignError(f"{source or name}: not valid TOML: {exc}") from None


def loads_any_design(text: str, *, name: str = "design", source: str = "") -> Design | DecodeDesign | EpDesign:
    """Parse TOML text into a Design or a DecodeDesign."""
    return parse_any_design(_toml(text, name, source), name=name, source=source)


def _design_text(ref: str, bundled_names: tuple[str, ...]) -> tuple[str, str, str]:
    """(TOML text, name, source) of a design given by path or bundled name; DesignError naming the bundled ones."""
    path = Path(ref)
    if path.is_file():
        return path.read_text(encoding="utf-8"), path.stem, str(path)
    bundled = resources.files("cpgraph.designs").joinpath(f"{ref}.toml")
    if bundled.is_file():
        return bundled.read_text(encoding="utf-8"), ref, f"bundled:{ref}"
    raise DesignError(f"design {ref!r}: no such file and no bundled design; bundled: {', '.join(bundled_names)}")


def load_any_design(ref: str) -> Design | DecodeDesign | EpDesign:
    """A design of any path by file or bundled name (``vllm_decode_dealt``, ``megatron_0_16``)."""
    text, name, source = _design_text(ref, BUNDLED + BUNDLED_DECODE + BUNDLED_EP)
    return loads_any_design(text, name=name, source=source)


def loads_design(text: str, *, name: str = "design", source: str = "") -> Design:
    """Parse TOML text into a Design."""
    return parse_design(_toml(text, name, source), name=name, source=source)


def load_design(ref: str) -> Design:
    """A design by path (``designs/upstream.toml``) or bundled name (``upstream``)."""
    text, name, source = _design_text(ref, BUNDLED)
    return loads_design(text, name=name, source=source)


def dumps_design(design: Design) -> str:
    """TOML text for a design (used by ``cpgraph plan`` to write the chosen design)."""
    lines = [f'name = "{design.name}"']
    if design.description:
        lines.append(f'description = "{design.description}"')
    lines.append(f'strategy = "{design.strategy}"')
    if not design.keyed.recorded_capacity:  # local keying: none of the global keying's knobs (LOCAL_REJECTS)
        lines.append(f'keying = "{design.keying}"')
        if design.split:
            lines.append(f'admission_key = "{design.admits_by}"')
        lines += [
            f"cp_size = {design.cp_size}",
            f"capture_num_tokens = [{', '.join(str(b) for b in design.capture_num_tokens)}]",
            f'selector = "{design.selector}"',
            f"bytes_per_row = {design.bytes_per_row}",
        ]
        return "\n".join(lines) + "\n"
    lines += [
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
