"""Theorems about spec/graph_paths.py: where a uniform decode step's graph goes under vLLM's Model Runner V2 with
prefill context parallel, for ANY number of decodes R >= 1 (a symbolic R; P and the query length q fixed per
query, so every division has a constant divisor and the queries are linear), on any sorted list of
``DECODE_GRAPHS`` captured decode graphs (symbolic request counts) and ``TOKEN_SIZES`` token-keyed sizes.

The claims restate what a rank holds from its own definition, never from the spec's builder: under the
round-robin placement (the reference strategy table's ``decodes`` column: ``round_robin``) rank r holds the
decodes k < R with k mod P = r, i.e. the least c >= 0 with r + P*c >= R of them; under a copied placement every
rank holds all R. A decode graph of n requests fits a rank holding c of them when n*q >= q*c rows and n >= c.

- ``dispatched_graph_holds_every_rank`` (capacity_fit): both designs, every placement and decode mode;
- ``local_dispatch_takes_a_decode_graph_whenever_one_fits`` (no_needless_fallback, the fix);
- ``release_dispatch_takes_a_decode_graph_whenever_one_fits_if_decodes_are_copied`` (no_needless_fallback as
  vLLM 0.32-0.34 ship it: it holds where decodes are copied, and at P = 1);
- ``release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt`` (the design fact: at every
  P >= 2 the release dispatches a step to the mixed routine while a decode graph fits every rank; proved by a
  witness, R = 2 decodes and a decode graph of 1 request, and no step of fewer requests is one);
- ``local_dispatch_takes_the_least_fitting_decode_graph`` (minimal_bucket);
- ``graph_dispatch_is_the_same_on_every_rank`` (rank_consensus: every rank, each building the step under its
  own names, dispatches it to the same graph).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import z3

from cpgraph.proofs.engine.obligation import Query
from cpgraph.reference.strategies import strategy_row
from cpgraph.spec.graph_paths import (
    DECODE_ROUTINE_MODES, DISPATCHES, DecodeGraphs, DecodeStep, Dispatch, decode_step, local_dispatch, release_dispatch,
    symbolic_decode_graphs, symbolic_token_sizes,
)
from cpgraph.spec.logic import And, Implies, Not, Or
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, all_of, any_of

DispatchFn = Callable[[DecodeStep, DecodeGraphs, Sequence[IntTerm], str, IntLike, str], Dispatch]

PLACEMENTS = ("dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp")
DEALT = ("dual_chunk_swap",)  # the placement that deals decodes round-robin (0.32 on, dcp = 1)
COPIED = ("dual_chunk_swap_replicated", "dual_chunk_swap_dcp")
MODES = DECODE_ROUTINE_MODES  # FULL_DECODE_ONLY (fallback eager), FULL_AND_PIECEWISE (fallback PIECEWISE)
QUERY_LENS = (1, 2)  # q: a plain decode, and one speculative token
DECODE_GRAPHS = 3  # captured decode graphs per list (symbolic request counts)
TOKEN_SIZES = 3  # the mixed routine's token-keyed sizes (symbolic)
EVERY_RANK_MAX_P = 8  # the consensus theorem compares every rank with rank 0 up to here; above, ranks P/2 and P-1
CONSENSUS_MODES = ("FULL_AND_PIECEWISE",)  # the mode with both routines' graphs (FULL_DECODE_ONLY's dispatch is its prefix)
WITNESS_REQUESTS = 2  # the fewest decodes a release passes over a fitting decode graph with (P >= 2)


def held(cp_size: int, placement: str, num_reqs: IntTerm, rank: int, name: str) -> tuple[IntTerm, BoolTerm]:
    """The requests rank ``rank`` holds, from the definition (module docstring), and the facts defining them."""
    if strategy_row(placement).decodes != "round_robin" or cp_size == 1:
        return num_reqs, z3.BoolVal(True)
    c = z3.Int(f"{name}.held{rank}")
    p = cp_size
    return c, And(c >= 0, rank + p * c >= num_reqs, Or(c == 0, rank + p * (c - 1) < num_reqs))


def ranks_at(cp_size: int) -> tuple[int, ...]:
    """The ranks compared with rank 0: every one up to ``EVERY_RANK_MAX_P``, then P/2 and P-1 (rank 0 itself at P = 1)."""
    if cp_size <= EVERY_RANK_MAX_P:
        return tuple(range(1, cp_size)) or (0,)
    return (cp_size // 2, cp_size - 1)


class Case:
    """One uniform decode step under one placement, mode and query length: R, the graph lists, every rank's
    requests by definition (``held``), and the hypotheses every query of the case shares."""

    def __init__(self, cp_size: int, placement: str, mode: str, query_len: int) -> None:
        self.cp_size, self.placement, self.mode, self.q = cp_size, placement, mode, query_len
        self.num_reqs = z3.Int("R")
        self.graphs = symbolic_decode_graphs(DECODE_GRAPHS, query_len, "dec")
        self.sizes = symbolic_token_sizes(TOKEN_SIZES, "tok") if mode == "FULL_AND_PIECEWISE" else ()
        pairs = [held(cp_size, placement, self.num_reqs, r, "truth") for r in range(cp_size)]
        self.held = tuple(c for c, _ in pairs)
        self.defined = And([f for _, f in pairs])
        n = self.graphs.requests
        self.sorted: tuple[BoolTerm, ...] = (n[0] >= 1, *[a < b for a, b in zip(n, n[1:])])
        if self.sizes:
            self.sorted += (self.sizes[0] >= 1, *[a < b for a, b in zip(self.sizes, self.sizes[1:])])

    def label(self, part: str, design: str, extra: str = "") -> str:
        """"part (placement, design, mode, q=1)"; ``extra`` ends the parenthesis (its own chain)."""
        return f"{part} ({self.placement}, {design}, {self.mode}, q={self.q}{', ' + extra if extra else ''})"

    def step(self, name: str) -> DecodeStep:
        return decode_step(self.num_reqs, self.q, self.cp_size, self.placement, name)

    def dispatched(self, fn: DispatchFn, rank: int = 0, name: str = "chosen") -> Dispatch:
        return fn(self.step(f"{name}.step"), self.graphs, self.sizes, self.mode, rank, name)

    def fits(self, n: IntTerm) -> BoolTerm:
        """A decode graph of ``n`` requests fits every rank (rows and requests, by definition)."""
        q = self.q
        return all_of(And(q * n >= q * c, n >= c) for c in self.held)

    def some_fits(self) -> BoolTerm:
        return any_of(self.fits(n) for n in self.graphs.requests)

    def hypotheses(self, d: Dispatch, *extra: BoolTerm) -> tuple[BoolTerm, ...]:
        return (self.num_reqs >= 1, *self.sorted, d.holds, self.defined, *extra)

    def shown(self, d: Dispatch) -> tuple[tuple[str, IntTerm], ...]:
        return (("R", self.num_reqs), ("mode (0 FULL, 1 PIECEWISE, 2 eager)", d.mode), ("graph tokens", d.tokens),
                ("decode graph requests", d.requests), ("key (largest rank rows)", d.key))


def cases(cp_size: int, placements: Sequence[str] = PLACEMENTS, modes: Sequence[str] = MODES) -> list[Case]:
    return [Case(cp_size, pl, mode, q) for pl in placements for mode in modes for q in QUERY_LENS]


def _holds_every_rank(c: Case, d: Dispatch) -> BoolTerm:
    q = c.q
    decode = And(any_of(d.requests == n for n in c.graphs.requests), d.tokens == q * d.requests,
                 all_of(And(d.tokens >= q * h, d.requests >= h) for h in c.held))
    mixed = And(any_of(d.tokens == t for t in c.sizes), all_of(d.tokens >= q * h for h in c.held))
    return And(Implies(d.full, decode), Implies(d.piecewise, mixed))


def dispatched_graph_holds_every_rank(
    cp_size: int, *, dispatches: Mapping[str, DispatchFn] = DISPATCHES,
) -> tuple[Query, ...]:
    """capacity_fit on the decode path: for every uniform decode step of any R >= 1 decodes, under every
    placement (dealt round-robin or copied), decode mode and both dispatch designs, the graph a rank dispatches
    to is a captured one that holds every rank's rows and requests (a decode graph of n requests: n*q tokens,
    n requests; a PIECEWISE size: its tokens)."""
    out: list[Query] = []
    for c in cases(cp_size):
        for design, fn in dispatches.items():
            d = c.dispatched(fn)
            out.append(Query(c.label("capacity_fit", design), _holds_every_rank(c, d), c.hypotheses(d),
                             size=c.num_reqs, shown=c.shown(d)))
    return tuple(out)


def local_dispatch_takes_a_decode_graph_whenever_one_fits(
    cp_size: int, *, dispatch_fn: DispatchFn = local_dispatch,
) -> tuple[Query, ...]:
    """no_needless_fallback on the decode path under the local design: a uniform decode step of any R >= 1
    decodes runs a FULL decode graph exactly when some captured decode graph fits every rank (never the mixed
    routine's PIECEWISE graph or eager while one fits), under every placement and decode mode."""
    out: list[Query] = []
    for c in cases(cp_size):
        d = c.dispatched(dispatch_fn)
        out.append(Query(c.label("no_needless_fallback", "local"), d.full == c.some_fits(), c.hypotheses(d),
                         size=c.num_reqs, shown=c.shown(d)))
    return tuple(out)


def release_dispatch_takes_a_decode_graph_whenever_one_fits_if_decodes_are_copied(
    cp_size: int, *, dispatch_fn: DispatchFn = release_dispatch, placements: Sequence[str] = COPIED,
) -> tuple[Query, ...]:
    """no_needless_fallback under the release's dispatch (vLLM 0.32-0.34: a decode graph must hold the global
    request count R): where decodes are copied to every rank (each rank holds all R), a uniform decode step of
    any R >= 1 decodes runs a FULL decode graph exactly when one fits every rank; and so at P = 1 under the
    round-robin placement (one rank holds every decode)."""
    chosen = tuple(placements) + (DEALT if cp_size == 1 else ())
    out: list[Query] = []
    for c in cases(cp_size, tuple(dict.fromkeys(chosen))):
        d = c.dispatched(dispatch_fn)
        out.append(Query(c.label("no_needless_fallback", "release"), d.full == c.some_fits(), c.hypotheses(d),
                         size=c.num_reqs, shown=c.shown(d)))
    return tuple(out)


def release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt(
    cp_size: int, *, dispatch_fn: DispatchFn = release_dispatch, witness: int = WITNESS_REQUESTS,
) -> tuple[Query, ...]:
    """The release's design fact (vLLM 0.32-0.34, decodes dealt round-robin): at every P >= 2 some uniform decode
    step is dispatched to the mixed routine (PIECEWISE or eager) while a captured decode graph fits every rank:
    R = 2 decodes, one on each of two ranks, with a decode graph of 1 request captured (whatever the other
    graphs and sizes), for every decode mode and query length; and no step of fewer decodes is one (R = 1 runs a
    decode graph whenever one fits). At P = 1 there is none: there the release never passes over one."""
    out: list[Query] = []
    for c in cases(cp_size, DEALT):
        d = c.dispatched(dispatch_fn)
        passes_over = And(c.some_fits(), Not(d.full))
        if cp_size == 1:
            out.append(Query(c.label("no witness at P = 1", "release"), Not(passes_over), c.hypotheses(d),
                             size=c.num_reqs, shown=c.shown(d)))
            continue
        # R and the least decode graph pinned (R >= 1 and n0 >= 1 would be implied: not hypotheses here)
        pinned = (c.num_reqs == witness, c.graphs.requests[0] == 1, *c.sorted[1:], d.holds, c.defined)
        out.append(Query(c.label("witness", "release", f"R = {witness}"), passes_over, pinned, shown=c.shown(d)))
        out.append(Query(c.label("fewer requests", "release", f"R < {witness}"), Not(passes_over),
                         (*c.hypotheses(d), c.num_reqs < witness), size=c.num_reqs, shown=c.shown(d)))
    return tuple(out)


def local_dispatch_takes_the_least_fitting_decode_graph(
    cp_size: int, *, dispatch_fn: DispatchFn = local_dispatch,
) -> tuple[Query, ...]:
    """minimal_bucket on the decode path under the local design: when a uniform decode step of any R >= 1
    decodes runs a decode graph, no smaller captured decode graph fits every rank."""
    out: list[Query] = []
    for c in cases(cp_size):
        d = c.dispatched(dispatch_fn)
        claim = Implies(d.full, all_of(Implies(c.fits(n), d.requests <= n) for n in c.graphs.requests))
        out.append(Query(c.label("minimal_bucket", "local"), claim, c.hypotheses(d), size=c.num_reqs, shown=c.shown(d)))
    return tuple(out)


def graph_dispatch_is_the_same_on_every_rank(
    cp_size: int, *, dispatches: Mapping[str, DispatchFn] = DISPATCHES,
) -> tuple[Query, ...]:
    """rank_consensus on the decode path: every rank, building the step's layout and key under its own names
    from the global batch (R decodes, the captured lists), dispatches a uniform decode step of any R >= 1
    decodes to the same mode and graph as rank 0, under both designs and every placement, in FULL_AND_PIECEWISE
    (every rank up to P = 8, ranks P/2 and P-1 above; at P = 1 rank 0 with a second build of itself)."""
    out: list[Query] = []
    for c in cases(cp_size, modes=CONSENSUS_MODES):
        for design, fn in dispatches.items():
            own = c.step(f"{design}.rank0.step")
            first = fn(own, c.graphs, c.sizes, c.mode, 0, f"{design}.rank0")
            for r in ranks_at(cp_size):
                name = f"{design}.rank{r}.again" if r == 0 else f"{design}.rank{r}"
                theirs = c.step(f"{name}.step")
                other = fn(theirs, c.graphs, c.sizes, c.mode, r, name)
                # Lemma: the two builds of the step's layout agree rank by rank (divmod uniqueness), so the
                # consensus step is a small query.
                same = all_of(x == y for x, y in zip(own.requests, theirs.requests))
                out.append(Query(c.label(f"layouts agree, rank {r}", design), same,
                                 (c.num_reqs >= 1, own.holds, theirs.holds), size=c.num_reqs))
                claim = And(first.mode == other.mode, first.tokens == other.tokens, first.requests == other.requests)
                out.append(Query(c.label(f"rank_consensus, rank {r}", design), claim, (*c.hypotheses(first), other.holds, same),
                                 size=c.num_reqs, shown=(("rank 0 mode", first.mode), (f"rank {r} mode", other.mode),
                                                         ("rank 0 tokens", first.tokens), (f"rank {r} tokens", other.tokens))))
    return tuple(out)


THEOREM_OF_INVARIANT = {
    "capacity_fit": dispatched_graph_holds_every_rank,
    "no_needless_fallback": local_dispatch_takes_a_decode_graph_whenever_one_fits,
    "minimal_bucket": local_dispatch_takes_the_least_fitting_decode_graph,
    "rank_consensus": graph_dispatch_is_the_same_on_every_rank,
}
