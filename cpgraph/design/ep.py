"""An expert-parallel design (``path = "ep"``): how a MoE engine's EP ranks, each with its own step, agree on a
3-D CUDA graph (tokens T, prefill requests P, decode requests D), as Megatron-Core's dynamic inference engine
does. The model is reference/ep_graphs.py (the oracle) and spec/ep_graphs.py (the terms); the review is
cpgraph/design/ep_review.py.

Keys (top level)::

    path = "ep"                            # required: an EP design
    name = "megatron_0_16"                 # optional, defaults to the file stem
    description = "..."                    # optional, one line
    matching = "strict"                    # strict (hybrid / Mamba models) | loose (dense models); MATCHING
    sync = "tokens"                        # what the ranks all-reduce (MAX) before matching: tokens (0.16) | all
                                           #   (the synced form, 0.17 strict) | decode_only (0.18 on: any prefill
                                           #   on any rank makes every rank eager, else the tokens); SYNCS
    ep_size = 2                            # 2 <= EP <= 8
    graphs = [[8, 0, 8], [16, 16, 0]]      # the captured graphs [T, P, D], 1..64 of them, no repeats, T >= 1
    tokens_per_decode = 1                  # optional: k = 1 + MTP tokens (a decode step's tokens are D * k), 1..16

Every fault is a DesignError naming the key, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cpgraph.design.keys import choice, int_value, key_error, reject_unknown
from cpgraph.design.record import DesignError
from cpgraph.reference.ep_graphs import MATCHING, GraphDims

SYNCS: Final = ("tokens", "all", "decode_only")
EP_KEYS: Final = ("path", "name", "description", "matching", "sync", "ep_size", "graphs", "tokens_per_decode")
MAX_GRAPHS: Final = 64
MAX_EP: Final = 8


@dataclass(frozen=True)
class EpDesign:
    """An EP design (module docstring)."""

    name: str
    description: str
    matching: str
    sync: str
    ep_size: int
    graphs: tuple[GraphDims, ...]
    tokens_per_decode: int = 1
    source: str = ""


def _graphs(value: object) -> tuple[GraphDims, ...]:
    allowed = f"a list of 1..{MAX_GRAPHS} [T, P, D] int triples, T >= 1, P and D >= 0, no repeats"
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_GRAPHS:
        raise key_error("graphs", value, allowed)
    out: list[GraphDims] = []
    for item in value:
        if (not isinstance(item, list) or len(item) != 3 or not all(isinstance(x, int) and not isinstance(x, bool) for x in item)
                or item[0] < 1 or item[1] < 0 or item[2] < 0):
            raise key_error("graphs", item, allowed)
        out.append(GraphDims(item[0], item[1], item[2]))
    if len(set(out)) != len(out):
        raise key_error("graphs", value, allowed)
    return tuple(out)


def parse_ep_design(data: dict[str, object], *, name: str = "design", source: str = "") -> EpDesign:
    """An EpDesign from a TOML table; DesignError naming the key, the value and what is allowed."""
    reject_unknown(data, EP_KEYS)
    if data.get("path") != "ep":
        raise key_error("path", data.get("path"), '"ep"')
    for key in ("matching", "sync", "ep_size", "graphs"):
        if key not in data:
            raise DesignError(f"design key {key!r} is missing; an EP design needs matching, sync, ep_size and graphs")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise key_error("description", description, "a string")
    given = data.get("name", name)
    return EpDesign(
        name=given if isinstance(given, str) else name, description=description,
        matching=choice(data, "matching", MATCHING, "strict"), sync=choice(data, "sync", SYNCS, "tokens"),
        ep_size=int_value(data, "ep_size", minimum=2, maximum=MAX_EP), graphs=_graphs(data["graphs"]),
        tokens_per_decode=int_value(data, "tokens_per_decode", minimum=1, default=1, maximum=16), source=source,
    )
