"""Wrong dispatches substituted into the decode-path theorems (proofs/theorems/graph_paths.py), each with the
verdict it must get: vLLM 0.32-0.34's own dispatch first.

The release's dispatch (``release_dispatch``: a decode graph must hold the GLOBAL request count R) is the fix's
theorem's counterexample where decodes are dealt round-robin (P = 2, R = 2, a decode graph of 1 request: it
fits both ranks, the release runs the mixed routine). Every other variant is spec/graph_paths.py's ``dispatch``
with one piece changed (``wrong_dispatch``): the key (the deciding rank's own rows), the decode table's target
(one short, no compatibility check), the pick (the largest decode graph at or above the target), the order of
the routines (the mixed routine's graph first), the PIECEWISE lookup (one token short). Two equivalent rewrites
stay proved.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import z3

from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.theorems import graph_paths as theorems
from cpgraph.spec.arith import ceil_div, max_of
from cpgraph.spec.graph_paths import (
    CUDAGRAPH_MODES, EAGER, FULL, PIECEWISE, DecodeGraphs, DecodeStep, Dispatch, least_at_or_above, local_dispatch,
    release_dispatch, request_key,
)
from cpgraph.spec.logic import And, If
from cpgraph.spec.terms import IntLike, IntTerm, any_of, literal, mul

P = 4  # where the variants are checked (round-robin ranks hold 0, 1 or more decodes there)
REFUTED, PROVED = Status.REFUTED, Status.PROVED


def _greatest_at_or_above(values: Sequence[IntTerm], target: IntLike) -> tuple[z3.BoolRef, IntTerm]:
    chosen: IntTerm = z3.IntVal(0)
    for v in values:
        chosen = If(v >= target, v, chosen)
    return any_of(v >= target for v in values), chosen


def wrong_dispatch(
    step: DecodeStep, graphs: DecodeGraphs, token_sizes: Sequence[IntTerm], mode: str, rank: IntLike, name: str, *,
    need: str | None = "local", own_rank_key: bool = False, target_shift: int = 0, largest: bool = False,
    mixed_first: bool = False, piecewise_shift: int = 0,
) -> Dispatch:
    """spec.graph_paths.dispatch with one piece changed: ``need`` (the request key checked, None: no check),
    ``own_rank_key`` (the deciding rank's own rows, not the largest), ``target_shift`` (added to the decode
    table's target), ``largest`` (the largest decode graph at or above the target), ``mixed_first`` (the mixed
    routine's graph whenever one fits), ``piecewise_shift`` (added to the PIECEWISE lookup's key)."""
    r = literal(rank) or 0
    key = (step.rows[r], z3.BoolVal(True)) if own_rank_key else (lambda k: (k.value, k.holds))(max_of(step.rows, f"{name}.key"))
    target = ceil_div(key[0], step.query_len, f"{name}.target")
    found, n = (_greatest_at_or_above if largest else least_at_or_above)(graphs.requests, target.value + target_shift)
    holds = And(step.holds, key[1], target.holds)
    take = found
    if need is not None:
        needed = request_key(need)(step, name)
        take, holds = And(found, n >= needed.value), And(holds, needed.holds)
    sized, t = (least_at_or_above(token_sizes, key[0] + piecewise_shift) if CUDAGRAPH_MODES[mode][1] == "PIECEWISE"
                else (z3.BoolVal(False), z3.IntVal(0)))
    if mixed_first:
        take = And(take, z3.Not(sized))
    mode_term = If(take, z3.IntVal(FULL), If(sized, z3.IntVal(PIECEWISE), z3.IntVal(EAGER)))
    tokens = If(take, mul(step.query_len, n), If(sized, t, z3.IntVal(0)))
    return Dispatch(mode_term, tokens, If(take, n, z3.IntVal(0)), key[0], holds)


def _wrong(*, need: str | None = "local", own_rank_key: bool = False, target_shift: int = 0, largest: bool = False,
           mixed_first: bool = False, piecewise_shift: int = 0) -> theorems.DispatchFn:
    """``wrong_dispatch`` with its changes bound: a dispatch the theorems take."""
    return functools.partial(wrong_dispatch, need=need, own_rank_key=own_rank_key, target_shift=target_shift,
                             largest=largest, mixed_first=mixed_first, piecewise_shift=piecewise_shift)


def variants() -> tuple[tuple[str, str, str, int, Status, Callable[[int], tuple[Query, ...]]], ...]:
    """(name, theorem, description, cp_size, expected verdict, builder) for every decode-path variant."""
    t = theorems
    rows: list[tuple[str, str, str, Status, dict[str, object]]] = [  # (variant, theorem, what is wrong, verdict, the builder's wrong keywords)
        ("release_dispatch", "local_dispatch_takes_a_decode_graph_whenever_one_fits",
         "vLLM 0.32-0.34: a decode graph must hold the global request count R (dealt decodes run the mixed routine)", REFUTED,
         {"dispatch_fn": release_dispatch}),
        ("mixed_first", "local_dispatch_takes_a_decode_graph_whenever_one_fits",
         "the mixed routine's PIECEWISE graph whenever one fits, before the decode graphs", REFUTED,
         {"dispatch_fn": _wrong(mixed_first=True)}),
        ("no_compatibility_check", "local_dispatch_takes_a_decode_graph_whenever_one_fits",
         "the least decode graph >= ceil(k/q), no request check: the same (k = q * the most requests a rank holds)", PROVED,
         {"dispatch_fn": _wrong(need=None)}),
        ("release_dispatch", "local_dispatch_takes_the_least_fitting_decode_graph",
         "the release's dispatch: it passes over decode graphs, never takes a larger one than the least fitting", PROVED,
         {"dispatch_fn": release_dispatch}),
        ("largest_decode_graph", "local_dispatch_takes_the_least_fitting_decode_graph",
         "the largest decode graph at or above ceil(k/q)", REFUTED,
         {"dispatch_fn": _wrong(largest=True)}),
        ("target_one_short_unchecked", "dispatched_graph_holds_every_rank",
         "the least decode graph >= ceil(k/q) - 1 with no request check", REFUTED,
         {"dispatches": {"local": _wrong(need=None, target_shift=-1)}}),
        ("piecewise_key_one_short", "dispatched_graph_holds_every_rank",
         "the PIECEWISE fallback's least size >= k - 1", REFUTED,
         {"dispatches": {"release": _wrong(need="global", piecewise_shift=-1)}}),
        ("own_rank_key", "graph_dispatch_is_the_same_on_every_rank",
         "each rank keys by its own rows (a rank holding fewer decodes picks a smaller graph)", REFUTED,
         {"dispatches": {"local": _wrong(own_rank_key=True)}}),
        ("own_rank_key_release", "graph_dispatch_is_the_same_on_every_rank",
         "the release's request check with each rank keyed by its own rows", REFUTED,
         {"dispatches": {"release": _wrong(need="global", own_rank_key=True)}}),
        ("release_under_round_robin", "release_dispatch_takes_a_decode_graph_whenever_one_fits_if_decodes_are_copied",
         "the release's claim where decodes are dealt round-robin (vLLM 0.32 on, dcp = 1)", REFUTED,
         {"placements": theorems.DEALT}),
        ("local_dispatch", "release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt",
         "the fix's dispatch has no witness: it never passes over a fitting decode graph", REFUTED,
         {"dispatch_fn": local_dispatch}),
        ("witness_one_more", "release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt",
         "the witness claimed at R = 3: R = 2 is a step of fewer decodes that is one", REFUTED,
         {"witness": 3}),
    ]
    return tuple((name, theorem, description, P, verdict, functools.partial(getattr(t, theorem), **wrong))
                 for name, theorem, description, verdict, wrong in rows)
