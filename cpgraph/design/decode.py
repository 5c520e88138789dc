"""A decode-path design (``path = "decode"``): how a runner dispatches a uniform decode step (every request a
decode of ``query_len`` tokens) to its FULL decode graphs, keyed by request count, under prefill context
parallel (vLLM's Model Runner V2). The model is reference/graph_paths.py (the oracle) and spec/graph_paths.py
(the terms); the review is cpgraph/design/decode_review.py.

Keys (top level)::

    path = "decode"                       # required: a decode-path design (absent: a prefill design)
    name = "vllm_decode_dealt"            # optional, defaults to the file stem
    description = "..."                   # optional, one line
    cudagraph_mode = "FULL_AND_PIECEWISE" # FULL_AND_PIECEWISE (fallback: PIECEWISE token-keyed graphs)
                                          #   | FULL_DECODE_ONLY (fallback: eager); a separate FULL decode routine
    placement = "dual_chunk_swap"         # where decodes go, a DualChunkSwap strategy row: dual_chunk_swap
                                          #   (dealt round-robin) | dual_chunk_swap_replicated | dual_chunk_swap_dcp
                                          #   (copied to every rank)
    request_key = "global"                # the request count a decode graph must hold: global (vLLM 0.32-0.34,
                                          #   the step's R) | local (the largest rank-local count); REQUEST_KEYS
    cp_size = 4                           # 1 <= P <= 64
    query_len = 1                         # q = 1 + speculative tokens, 1 <= q <= 64
    decode_request_sizes = [1, 2, 4, ...] # the decode graphs' request counts, 1..256 of them, strictly ascending,
                                          #   each <= max_num_seqs (a graph of n requests holds n*q tokens)
    token_sizes = [1, 2, 4, ...]          # FULL_AND_PIECEWISE only: the PIECEWISE graphs' token sizes, 1..256,
                                          #   strictly ascending, each <= 262144
    max_num_seqs = 256                    # optional (vLLM's default 256): the largest decode graph allowed

Every fault is a DesignError naming the key, the value and what is allowed. A decode design rejects the
prefill design's keys (``PREFILL_ONLY``) and a prefill design rejects these (``DECODE_ONLY``), each naming
why. The lists must be ascending because the release's dispatch tables are built sorted (cudagraph_utils.py
sorts the decode descriptors by tokens): a list written out of order is refused, not silently reordered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from cpgraph.design.keys import MAX_BUCKETS, MAX_CP_SIZE, MAX_TOKENS, choice, int_value, key_error, labels, reject_unknown
from cpgraph.design.record import DesignError
from cpgraph.spec.graph_paths import DECODE_ROUTINE_MODES, PLACEMENTS, REQUEST_KEYS

MAX_QUERY_LEN: Final = 64  # 1 + speculative tokens
DEFAULT_MAX_NUM_SEQS: Final = 256  # vLLM's default max_num_seqs
DECODE_KEYS: Final = (
    "path", "name", "description", "cudagraph_mode", "placement", "request_key", "cp_size", "query_len",
    "decode_request_sizes", "token_sizes", "max_num_seqs",
)
# Keys only a decode design has (a prefill design rejects them, naming path = "decode").
DECODE_ONLY: Final = tuple(k for k in DECODE_KEYS if k not in ("path", "name", "description", "cp_size"))
# Keys only a prefill design has, with why a decode design has no use for them.
PREFILL_ONLY: Final = {
    "strategy": "a decode design's layout is its placement (placement = ...)",
    "keying": "decode graphs are keyed by request count (request_key = ...)",
    "admission_key": "the decode dispatch reads the largest rank-local rows and a request count (request_key)",
    "align_size": "decode rows are not aligned",
    "capture_num_tokens": "decode graphs are listed by request count (decode_request_sizes), the fallback's by tokens (token_sizes)",
    "max_padding_factor": "no padding window on the decode path",
    "context_len": "a decode graph holds n requests of query_len tokens",
    "layout_basis": "a decode step is laid out by its placement",
    "selector": "the decode dispatch takes the least decode graph >= the key",
    "bytes_per_row": "a decode design is not costed",
    "capacity": "a decode graph of n requests holds n * query_len rows on every rank",
}


@dataclass(frozen=True)
class DecodeDesign:
    """A runner's decode path: its ``cudagraph_mode`` (a mode with a separate FULL decode routine), decode
    ``placement``, the ``request_key`` its dispatch checks a decode graph against, ``cp_size`` ranks, the query
    length ``query_len``, the decode graphs' request counts and the fallback's token sizes (both ascending)."""

    name: str
    cudagraph_mode: str
    placement: str
    request_key: str
    cp_size: int
    query_len: int
    decode_request_sizes: tuple[int, ...]
    token_sizes: tuple[int, ...] = ()
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    description: str = ""
    source: str = field(default="", compare=False)

    @property
    def path(self) -> str:
        """The graph path this design is about (a prefill design has none of these keys)."""
        return "decode"

    def summary(self) -> str:
        sizes = _listed(self.decode_request_sizes)
        fallback = f"PIECEWISE sizes={len(self.token_sizes)} [{_listed(self.token_sizes)}]" if self.token_sizes else "eager"
        return (
            f"decode path: {self.cudagraph_mode} placement={self.placement} request_key={self.request_key} "
            f"P={self.cp_size} q={self.query_len} decode graphs (requests)={len(self.decode_request_sizes)} [{sizes}]; "
            f"fallback {fallback}"
        )


def _listed(values: tuple[int, ...]) -> str:
    return ", ".join(str(v) for v in values[:4]) + (f", ... {values[-1]}" if len(values) > 4 else "")


def _ascending(data: dict[str, object], key: str, maximum: int, limit_why: str) -> tuple[int, ...]:
    """``data[key]``: 1..MAX_BUCKETS strictly ascending ints in 1..``maximum``."""
    if key not in data:
        raise DesignError(f"design key {key!r} is missing; allowed: a non-empty list of positive integers, strictly ascending")
    raw = data[key]
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in raw)
    ):
        raise key_error(key, raw, "a non-empty list of positive integers, strictly ascending")
    if len(raw) > MAX_BUCKETS:
        raise key_error(key, f"a list of {len(raw)} sizes", f"at most {MAX_BUCKETS} sizes")
    if max(raw) > maximum:
        raise key_error(key, max(raw), f"sizes <= {maximum} ({limit_why})")
    if any(a >= b for a, b in zip(raw, raw[1:])):
        bad = next(b for a, b in zip(raw, raw[1:]) if a >= b)
        raise key_error(key, raw, f"strictly ascending sizes ({bad} follows a size >= it), as the release sorts them")
    return tuple(int(v) for v in raw)


def parse_decode_design(data: dict[str, object], *, name: str = "design", source: str = "") -> DecodeDesign:
    """Validate a parsed TOML document with ``path = "decode"`` into a DecodeDesign (DesignError on any fault)."""
    if data.get("path") != "decode":
        raise key_error("path", data.get("path"), '"decode" for a decode-path design')
    for key, why in PREFILL_ONLY.items():
        if key in data:
            raise DesignError(
                f"design key {key!r}: got {data[key]!r}; allowed: nothing under path = \"decode\" ({why}); remove it"
            )
    reject_unknown(data, DECODE_KEYS)
    mode = choice(data, "cudagraph_mode", DECODE_ROUTINE_MODES, "FULL_AND_PIECEWISE")
    placement = choice(data, "placement", tuple(PLACEMENTS), "dual_chunk_swap")
    request_key = choice(data, "request_key", tuple(REQUEST_KEYS), "global")
    cp_size = int_value(data, "cp_size", minimum=1, maximum=MAX_CP_SIZE)
    query_len = int_value(data, "query_len", minimum=1, default=1, maximum=MAX_QUERY_LEN)
    max_num_seqs = int_value(data, "max_num_seqs", minimum=1, default=DEFAULT_MAX_NUM_SEQS, maximum=MAX_TOKENS // query_len)
    sizes = _ascending(data, "decode_request_sizes", max_num_seqs,
                       f"max_num_seqs = {max_num_seqs}: the release captures no decode graph above it")
    if mode == "FULL_AND_PIECEWISE":
        tokens = _ascending(data, "token_sizes", MAX_TOKENS, "the limit of the review's encoding")
    elif "token_sizes" in data:
        raise DesignError(
            f"design key 'token_sizes': got {data['token_sizes']!r}; allowed: nothing under cudagraph_mode = "
            f"\"{mode}\" (its mixed routine runs eagerly: no token-keyed graph is captured); remove it"
        )
    else:
        tokens = ()
    label, description = labels(data, name)
    return DecodeDesign(label, mode, placement, request_key, cp_size, query_len, sizes, tokens, max_num_seqs,
                        description, source)
