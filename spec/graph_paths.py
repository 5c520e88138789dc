"""The decode path of a step's graph, as Z3 term builders: the mirror of reference/graph_paths.py for a uniform
decode step (every request a decode of q tokens) under vLLM's Model Runner V2 with prefill context parallel.

Row for row with the reference:

- ``CUDAGRAPH_MODES``: configured mode -> (decode routine's mode, mixed routine's mode, separate routines), and
  ``MODE_ORDER`` (FULL, PIECEWISE; eager after both), the same tables as reference/graph_paths.py (the
  agreement stage holds them equal). A dispatch is stated for the modes with a separate FULL decode routine
  (``DECODE_ROUTINE_MODES``: FULL_DECODE_ONLY, FULL_AND_PIECEWISE); the mixed routine's mode is the fallback
  (PIECEWISE graphs keyed by tokens, or eager).
- ``decode_step``: R decodes of q tokens on P ranks, placed as the DualChunkSwap strategy row says
  (``PLACEMENTS``): dealt round-robin (``dual_chunk_swap``, 0.32 on: the k-th decode on rank k mod P, so rank r
  holds (R - r + P - 1) // P of them, written with an explicit quotient and remainder) or copied to every rank
  (``dual_chunk_swap_replicated``, ``dual_chunk_swap_dcp``: R on every rank). Rank r holds q * requests_r rows.
- ``decode_graphs``: the captured FULL decode graphs at query length q, as their request counts n (sorted;
  a graph holds n requests and n*q tokens); ``token_sizes``: the mixed routine's token-keyed sizes (sorted).
- ``fits``: a graph fits a rank when its tokens hold the rank's rows, its requests (when it counts them) the
  rank's requests, and its query length (when it has one) is the step's.
- Two dispatch designs for the decode table (``REQUEST_KEYS``, the design knob as data): the key is the
  largest rank-local rows k = max_r rows_r (vLLM's ``get_num_tokens_for_dispatch``); the decode table picks the
  least decode graph with n >= ceil(k / q); it is taken only when n holds the request count the design
  checks, else the step falls back to the mixed routine (the least token size >= k under PIECEWISE; eager
  under NONE or past the largest size):
  ``global`` (``release_dispatch``, vLLM 0.32-0.34): the GLOBAL request count R (``_is_compatible(desc,
  num_reqs=R)`` in cudagraph_utils.py); ``local`` (``local_dispatch``): the largest rank-local request count
  max_r requests_r (what each rank holds; vLLM's partition asserts only ``padded_num_reqs >= num_local_reqs``).

Nothing here calls a solver; q and P are Python ints (the terms stay linear in R and the graph sizes); an
unknown mode, placement or request key is a ValueError naming the allowed ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

import z3

from cpgraph.spec.arith import ceil_div, floor_div, max_of
from cpgraph.spec.logic import And, If
from cpgraph.spec.terms import BoolTerm, Defined, IntLike, IntTerm, all_of, any_of, check_index, int_term, literal, mul

MODE_ORDER: Final = ("FULL", "PIECEWISE")  # the fastest first; eager after both
FULL, PIECEWISE, EAGER = 0, 1, 2  # a dispatch's mode as an index into MODE_ORDER (eager: past it)
CUDAGRAPH_MODES: Final = MappingProxyType({
    "NONE": ("NONE", "NONE", False),
    "PIECEWISE": ("PIECEWISE", "PIECEWISE", False),
    "FULL": ("FULL", "FULL", False),
    "FULL_DECODE_ONLY": ("FULL", "NONE", True),
    "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE", True),
})
DECODE_ROUTINE_MODES: Final = tuple(m for m, (decode, _, separate) in CUDAGRAPH_MODES.items() if separate and decode == "FULL")
# placement (a DualChunkSwap strategy row) -> where its decodes go in a uniform decode step
PLACEMENTS: Final = MappingProxyType({
    "dual_chunk_swap": "round_robin",
    "dual_chunk_swap_replicated": "copied",
    "dual_chunk_swap_dcp": "copied",
})


@dataclass(frozen=True)
class DecodeStep:
    """A uniform decode step of ``num_reqs`` decodes of ``query_len`` tokens on ``cp_size`` ranks: each rank's
    ``requests`` and ``rows``, and the facts defining them."""

    cp_size: int
    query_len: int
    num_reqs: IntTerm
    requests: tuple[IntTerm, ...]
    rows: tuple[IntTerm, ...]
    holds: BoolTerm


def placement_of(placement: str) -> str:
    """Where ``placement`` puts decodes ('round_robin' or 'copied'); ValueError names the placements."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}; got {placement!r}")
    return PLACEMENTS[placement]


def _positive(argument: str, value: object) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"{argument} must be an int >= 1, got {value!r}")
    return value


def decode_step(num_reqs: IntLike, query_len: int, cp_size: int, placement: str, name: str) -> DecodeStep:
    """R = ``num_reqs`` decodes of ``query_len`` tokens laid out on ``cp_size`` ranks by ``placement``
    (module docstring): round-robin, rank r holds (R - r + P - 1) // P requests; copied, R on every rank."""
    p, q = _positive("cp_size", cp_size), _positive("query_len", query_len)
    how = placement_of(placement)
    r_term = int_term(num_reqs)
    if how == "copied" or p == 1:
        requests = tuple(r_term for _ in range(p))
        holds: BoolTerm = z3.BoolVal(True)
    else:
        known = literal(num_reqs)  # a literal R folds every share to a numeral
        shares = [floor_div(known - r + p - 1 if known is not None else r_term - r + p - 1, p, f"{name}.rank{r}")
                  for r in range(p)]
        requests = tuple(s.value for s in shares)
        holds = And([s.holds for s in shares])
    rows = tuple(mul(q, x) for x in requests)
    return DecodeStep(p, q, r_term, requests, rows, holds)


@dataclass(frozen=True)
class DecodeGraphs:
    """The captured FULL decode graphs at ``query_len``: their request counts (a graph holds n requests and
    n * query_len tokens), sorted ascending by hypothesis (``decode_graphs_are_sorted``)."""

    query_len: int
    requests: tuple[IntTerm, ...]

    def tokens(self, i: int) -> IntTerm:
        return mul(self.query_len, self.requests[i])

    def __len__(self) -> int:
        return len(self.requests)


def decode_graphs(requests: Sequence[IntLike], query_len: int) -> DecodeGraphs:
    """Decode graphs of the given request counts (ints or terms) at ``query_len``."""
    return DecodeGraphs(_positive("query_len", query_len), tuple(int_term(n) for n in requests))


def symbolic_decode_graphs(count: int, query_len: int, name: str) -> DecodeGraphs:
    """``count`` decode graphs of free request counts ``{name}.n0`` .. (sorted by ``decode_graphs_are_sorted``)."""
    if type(count) is not int or count < 0:
        raise ValueError(f"count must be an int >= 0, got {count!r}")
    return decode_graphs([z3.Int(f"{name}.n{i}") for i in range(count)], query_len)


def symbolic_token_sizes(count: int, name: str) -> tuple[IntTerm, ...]:
    """``count`` free token-keyed sizes ``{name}.t0`` .. of the mixed routine."""
    if type(count) is not int or count < 0:
        raise ValueError(f"count must be an int >= 0, got {count!r}")
    return tuple(z3.Int(f"{name}.t{i}") for i in range(count))


def fits(tokens: IntLike, requests: IntLike | None, query_len: int | None, rows: IntLike, rank_requests: IntLike,
         step_query_len: int | None) -> BoolTerm:
    """A graph of ``tokens`` (holding ``requests``, None: any number; serving ``query_len``, None: any batch)
    fits a rank's ``rows`` of ``rank_requests`` requests of a step of ``step_query_len``."""
    if query_len is not None and query_len != step_query_len:
        return z3.BoolVal(False)
    room = int_term(tokens) >= int_term(rows)
    return room if requests is None else And(room, int_term(requests) >= int_term(rank_requests))


def decode_graph_fits_every_rank(graphs: DecodeGraphs, i: int, step: DecodeStep) -> BoolTerm:
    """Decode graph ``i`` fits every rank of ``step`` (its query length is the step's by construction)."""
    return all_of(fits(graphs.tokens(i), graphs.requests[i], graphs.query_len, rows, reqs, step.query_len)
                  for rows, reqs in zip(step.rows, step.requests))


def least_at_or_above(values: Sequence[IntTerm], target: IntLike) -> tuple[BoolTerm, IntTerm]:
    """(some value >= target, the first such value in list order: the least on a sorted list; 0 when none)."""
    chosen: IntTerm = z3.IntVal(0)
    for v in reversed(values):
        chosen = If(v >= target, v, chosen)
    return any_of(v >= target for v in values), chosen


@dataclass(frozen=True)
class Dispatch:
    """What a rank dispatches a uniform decode step to: ``mode`` (FULL = 0: a decode graph, PIECEWISE = 1: a
    token-keyed graph, EAGER = 2), the graph's ``tokens`` and ``requests`` (the decode graph's n; 0 otherwise;
    tokens 0 when eager), the token ``key`` it compared, and the facts defining them."""

    mode: IntTerm
    tokens: IntTerm
    requests: IntTerm
    key: IntTerm
    holds: BoolTerm

    @property
    def full(self) -> BoolTerm:
        return self.mode == FULL

    @property
    def piecewise(self) -> BoolTerm:
        return self.mode == PIECEWISE

    @property
    def eager(self) -> BoolTerm:
        return self.mode == EAGER


RequestKey = Callable[[DecodeStep, str], Defined]  # (the step, a name) -> the requests a decode graph must hold


def _global_requests(step: DecodeStep, name: str) -> Defined:
    del name
    return Defined(step.num_reqs, z3.BoolVal(True))


def _local_requests(step: DecodeStep, name: str) -> Defined:
    return max_of(step.requests, f"{name}.local_reqs")


REQUEST_KEYS: Final = MappingProxyType({"global": _global_requests, "local": _local_requests})


def request_key(design: str) -> RequestKey:
    """The request count ``design`` checks a decode graph against; ValueError names the designs."""
    if design not in REQUEST_KEYS:
        raise ValueError(f"request key must be one of {', '.join(REQUEST_KEYS)}; got {design!r}")
    return REQUEST_KEYS[design]


def dispatch(step: DecodeStep, graphs: DecodeGraphs, token_sizes: Sequence[IntTerm], mode: str, design: str,
             rank: IntLike, name: str) -> Dispatch:
    """The graph rank ``rank`` dispatches ``step`` to under ``mode`` and ``design`` (module docstring). Every
    input is rank-invariant (the step is the global batch); ``rank`` is the deciding rank, which the design
    does not read."""
    if mode not in DECODE_ROUTINE_MODES:
        raise ValueError(f"mode must be one of {', '.join(DECODE_ROUTINE_MODES)} (a separate FULL decode routine); got {mode!r}")
    if graphs.query_len != step.query_len:
        raise ValueError(f"graphs must be captured at the step's query length {step.query_len}, got {graphs.query_len}")
    need_of = request_key(design)
    check_index("rank", rank, step.cp_size, "a rank of the step")
    key = max_of(step.rows, f"{name}.key")
    target = ceil_div(key.value, step.query_len, f"{name}.target")
    found, n = least_at_or_above(graphs.requests, target.value)
    need = need_of(step, name)
    take = And(found, n >= need.value)
    mixed = CUDAGRAPH_MODES[mode][1]
    sized, t = least_at_or_above(token_sizes, key.value) if mixed == "PIECEWISE" else (z3.BoolVal(False), z3.IntVal(0))
    mode_term = If(take, z3.IntVal(FULL), If(sized, z3.IntVal(PIECEWISE), z3.IntVal(EAGER)))
    tokens = If(take, mul(step.query_len, n), If(sized, t, z3.IntVal(0)))
    requests = If(take, n, z3.IntVal(0))
    return Dispatch(mode_term, tokens, requests, key.value, And(step.holds, key.holds, target.holds, need.holds))


def release_dispatch(step: DecodeStep, graphs: DecodeGraphs, token_sizes: Sequence[IntTerm], mode: str, rank: IntLike,
                     name: str) -> Dispatch:
    """vLLM 0.32-0.34: a decode graph is compatible only when it holds the GLOBAL request count R."""
    return dispatch(step, graphs, token_sizes, mode, "global", rank, name)


def local_dispatch(step: DecodeStep, graphs: DecodeGraphs, token_sizes: Sequence[IntTerm], mode: str, rank: IntLike,
                   name: str) -> Dispatch:
    """The fix: a decode graph is compatible when it holds the largest rank-local request count."""
    return dispatch(step, graphs, token_sizes, mode, "local", rank, name)


DISPATCHES: Final = MappingProxyType({"release": release_dispatch, "local": local_dispatch})
