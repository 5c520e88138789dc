"""Megatron-Core's EP graph selection as Z3 term builders: the mirror of reference/ep_graphs.py.

Row for row with the reference:

- A graph, or a step's dimensions, is three ints (``Dims``: tokens T, prefill requests P, decode requests D);
  ``symbolic_graphs(n, name)`` a captured list of n graphs with free dimensions (``graph_facts``: T >= 1,
  P, D >= 0).
- ``applicable``: the match rule, one mode of ``MATCHING`` each (a decode-only step needs a decode-only graph
  with D >= d; strict needs P >= p and D >= d; loose P >= p and P + D >= p + d; every mode T >= t).
- ``match``: the least applicable graph in (T, P, D) order, folded over the list (``Matched``: ``found`` and
  the chosen dimensions; eager when none is found).
- ``SYNC``: what the EP ranks all-reduce (MAX) before matching, one builder per design id of the reference's
  ``SYNC_TABLE``: ``tokens`` (Megatron-Core 0.16: the token count, each rank keeps its own request counts),
  ``all`` (the synced form, 0.17 under strict matching: tokens, prefill and decode requests). A rank computes
  the MAX in its own order (starting from itself), so a consensus claim does not rest on one shared term.
- ``consensus``: every rank on a graph of the same token count, or every rank eager (the ``ep_step`` sentence
  of rank_consensus).

Nothing here calls a solver; an unknown matching mode or sync design is a ValueError naming the allowed ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

import z3

from cpgraph.spec.logic import And, If, Not, Or
from cpgraph.spec.terms import BoolTerm, IntTerm, all_of

MATCHING: Final = ("strict", "loose")


@dataclass(frozen=True)
class Dims:
    """Three dimensions as terms: ``tokens``, ``prefill`` requests, ``decode`` requests."""

    tokens: IntTerm
    prefill: IntTerm
    decode: IntTerm


@dataclass(frozen=True)
class Matched:
    """A rank's match: ``found`` (False: eager) and the chosen graph's dimensions (meaningful when found)."""

    found: BoolTerm
    dims: Dims


def dims(name: str) -> Dims:
    return Dims(z3.Int(f"{name}.T"), z3.Int(f"{name}.P"), z3.Int(f"{name}.D"))


def symbolic_graphs(count: int, name: str) -> tuple[Dims, ...]:
    if count < 1:
        raise ValueError(f"count must be >= 1 captured graphs, got {count!r}")
    return tuple(dims(f"{name}{i}") for i in range(count))


def graph_facts(graphs: Sequence[Dims]) -> BoolTerm:
    """Every captured graph has a token and no negative request count."""
    return all_of(And(g.tokens >= 1, g.prefill >= 0, g.decode >= 0) for g in graphs)


def step_facts(step: Dims) -> BoolTerm:
    """A busy rank's step: no negative dimension, at least one request, at least a token per request."""
    return And(step.prefill >= 0, step.decode >= 0, step.prefill + step.decode >= 1, step.tokens >= step.prefill + step.decode)


def applicable(graph: Dims, step: Dims, matching: str) -> BoolTerm:
    """The match rule (module docstring)."""
    if matching not in MATCHING:
        raise ValueError(f"matching must be one of {', '.join(MATCHING)}, got {matching!r}")
    decode_only = And(graph.prefill == 0, graph.decode >= step.decode)
    if matching == "strict":
        mixed = And(graph.prefill >= step.prefill, graph.decode >= step.decode)
    else:
        mixed = And(graph.prefill >= step.prefill, graph.prefill + graph.decode >= step.prefill + step.decode)
    return And(graph.tokens >= step.tokens, If(step.prefill == 0, decode_only, mixed))


def _before(a: Dims, b: Dims) -> BoolTerm:
    """a < b in (T, P, D) order."""
    return Or(a.tokens < b.tokens, And(a.tokens == b.tokens, Or(a.prefill < b.prefill,
                                                                   And(a.prefill == b.prefill, a.decode < b.decode))))


def match(step: Dims, graphs: Sequence[Dims], matching: str) -> Matched:
    """The least applicable graph, folded over the list."""
    found: BoolTerm = z3.BoolVal(False)
    best = Dims(z3.IntVal(0), z3.IntVal(0), z3.IntVal(0))
    for g in graphs:
        take = And(applicable(g, step, matching), Or(Not(found), _before(g, best)))
        best = Dims(If(take, g.tokens, best.tokens), If(take, g.prefill, best.prefill), If(take, g.decode, best.decode))
        found = Or(found, take)
    return Matched(found, best)


def _max(values: Sequence[IntTerm]) -> IntTerm:
    out = values[0]
    for v in values[1:]:
        out = If(v > out, v, out)
    return out


def _rotated(values: Sequence[IntTerm], rank: int) -> list[IntTerm]:
    return [*values[rank:], *values[:rank]]


def sync_tokens(steps: Sequence[Dims]) -> list[Dims]:
    """0.16: the token count's MAX, each rank's own request counts."""
    tokens = [s.tokens for s in steps]
    return [Dims(_max(_rotated(tokens, r)), s.prefill, s.decode) for r, s in enumerate(steps)]


def sync_all(steps: Sequence[Dims]) -> list[Dims]:
    """The synced form: the MAX of every dimension, each rank folding from itself."""
    t, p, d = [s.tokens for s in steps], [s.prefill for s in steps], [s.decode for s in steps]
    return [Dims(_max(_rotated(t, r)), _max(_rotated(p, r)), _max(_rotated(d, r))) for r in range(len(steps))]


SYNC: Final[MappingProxyType[str, Callable[[Sequence[Dims]], list[Dims]]]] = MappingProxyType(
    {"tokens": sync_tokens, "all": sync_all})


def synced_match(steps: Sequence[Dims], graphs: Sequence[Dims], matching: str, sync: str) -> list[Matched]:
    """Each rank's match under the sync design ``sync``."""
    if sync not in SYNC:
        raise ValueError(f"sync must be one of {', '.join(SYNC)}, got {sync!r}")
    return [match(s, graphs, matching) for s in SYNC[sync](steps)]


def consensus(matched: Sequence[Matched]) -> BoolTerm:
    """Every rank on a graph of the same token count, or every rank eager."""
    first = matched[0]
    return all_of(And(m.found == first.found, Or(Not(first.found), m.dims.tokens == first.dims.tokens)) for m in matched[1:])


def decode_graph_facts(graphs: Sequence[Dims], tokens_per_decode: int) -> BoolTerm:
    """Decode-only graphs as the generator builds them: P = 0 and T <= D * k (T is D * k rounded down to TP)."""
    return all_of(And(g.prefill == 0, g.tokens <= g.decode * tokens_per_decode) for g in graphs)
