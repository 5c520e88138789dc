"""Symbolic batches for the induction over requests: the batch so far and one more request.

A step's hypotheses about the batch so far are exactly what its claim re-establishes for the batch with
one more request (plus the request lemma's conclusion), so the induction is closed.

Symbolic batches for the induction over requests: a batch so far (any loads a_r, N tokens, k non-empty
requests) and one more request (loads l_r, L tokens). A theorem about any number of requests is a
per-request lemma, plus a step from the batch so far to the batch with one more request.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Final

import z3

from cpgraph.spec.logic import And
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.engine.replay import batch_replay
from cpgraph.spec.invariants import conservation
from cpgraph.spec.strategies import RequestLoads
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads

EMPTY_BATCH: Final = (0, 0, 0)
"""(a rank's load, tokens N, non-empty requests k) of the batch before its first request: the state every
induction's base is stated at. The teeth pass checks it against the spec's own empty batch
(proofs/teeth/guards.py: ``induction_base``), so no theorem writes the base state by hand."""

Invariant = Callable[[IntLike, IntLike, IntLike], BoolTerm]


@functools.lru_cache(maxsize=256)
def symbolic_loads(cp_size: int, prefix: str) -> Loads:
    """P per-rank loads ``{prefix}{r}`` with no constraint at all (built once, shared). Not even >= 0: a
    theorem over these holds for every load vector, so no unproved fact about real loads is assumed."""
    loads = tuple(z3.Int(f"{prefix}{r}") for r in range(cp_size))
    return Loads(loads, z3.BoolVal(True))


def state_so_far() -> tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef]:
    """(a rank's load a, tokens N, non-empty requests k) of the batch so far: the state induction_chain's
    step and bound assume the invariant at; a theorem builds its step and bound terms from these."""
    return z3.Int("a"), z3.Int("N"), z3.Int("k")


def batch_so_far(cp_size: int) -> tuple[Loads, IntTerm, IntTerm]:
    """(loads a_r, tokens N, non-empty requests k) of the batch laid out so far."""
    return symbolic_loads(cp_size, "a"), z3.Int("N"), z3.Int("k")


def next_request(cp_size: int) -> tuple[Loads, IntTerm]:
    """(loads l_r, length L) of the next request, constrained only by the per-request lemma."""
    return symbolic_loads(cp_size, "l"), z3.Int("L")


def request_excess(cp_size: IntLike, load: IntLike, length: IntLike) -> z3.BoolRef:
    """The per-request lemma's conclusion, stated once: a request of L tokens puts l on a rank with
    P*l <= L + P - 1, i.e. l <= ceil(L/P). For an integer load that already says an empty request puts
    nothing (P*l <= P-1 gives l <= 0), so no [L >= 1] term is written: it would change no verdict. Every use
    of the lemma calls this."""
    p, n = _term(cp_size), _term(length)
    return p * _term(load) <= n + p - 1


def within_headroom(cp_size: IntLike, load: IntLike, tokens: IntLike, requests: IntLike) -> z3.BoolRef:
    """The induction invariant of the headroom bound, stated once: N tokens in k <= N non-empty requests,
    with P*a <= N + k(P-1) on the rank. Nothing says N >= 0 or k >= 0: the base (0, 0, 0) and the step
    (N and k only grow) keep them anyway, and a negative k only tightens P*a <= N + k(P-1), so with them
    or without, the same bound follows; a conjunct that no verdict reads is not written."""
    p, a, n, k = _term(cp_size), _term(load), _term(tokens), _term(requests)
    return And(k <= n, p * a <= n + k * (p - 1))


def _term(value: IntLike) -> z3.ArithRef:
    return z3.IntVal(value) if isinstance(value, int) else value


def induction_chain(
    invariant: Invariant,
    *,
    step_to: tuple[IntLike, IntLike, IntLike],
    step_facts: Sequence[BoolTerm],
    bound: BoolTerm,
    bound_facts: Sequence[BoolTerm],
    base_facts: Sequence[BoolTerm] = (),
) -> tuple[Query, Query, Query]:
    """Base, step and bound of an induction over the requests of a batch, all three built from one
    ``invariant(load, tokens, requests)``: the base is the invariant at EMPTY_BATCH; the step assumes it at
    (a, N, k) and re-establishes it at ``step_to`` (one more request); the bound assumes it at (a, N, k)
    and concludes ``bound``. So the invariant the step assumes is the one the base and the step prove,
    and the one the bound uses: the three compose into one checked chain."""
    prior, tokens, requests = state_so_far()
    held = invariant(prior, tokens, requests)
    return (
        Query("base", invariant(*EMPTY_BATCH), tuple(base_facts)),
        Query("step", invariant(*step_to), (held, *step_facts)),
        Query("bound", bound, (held, *bound_facts), size=tokens),
    )


# -- one request's loads and conservation over requests (the layouts' theorems share them) ---------------------


@functools.lru_cache(maxsize=512)
def request_terms(request_loads: RequestLoads, cp_size: int) -> tuple[IntTerm, Loads]:
    """(L, the loads of one request of length L): built once per builder and cp_size, shared by theorems."""
    length = z3.Int("L")
    return length, request_loads(length, cp_size, "req")


def loads_shown(loads: Loads) -> tuple[tuple[str, IntTerm], ...]:
    """A counterexample's shown terms: each rank's load, named l0, l1, ..."""
    return tuple((f"l{r}", x) for r, x in enumerate(loads.loads))


def conservation_over_requests(cp_size: int, strategy: str, request_loads: RequestLoads, theorem: str) -> tuple[Query, ...]:
    """Conservation (loads sum to tokens) for any number of requests laid out by ``request_loads``: the request
    lemma, the base at the empty batch and the step to one more request."""
    length, loads = request_terms(request_loads, cp_size)
    request = Query(
        "request",
        conservation(loads, length),
        (length >= 0, loads.holds),
        size=length,
        shown=loads_shown(loads),
        replay=batch_replay(
            theorem=theorem, cp_size=cp_size, strategy=strategy, length_names=("L",), claim="sum(loads) == N"
        ),
    )
    so_far, tokens, _ = batch_so_far(cp_size)
    more, extra = next_request(cp_size)
    step = Query(
        "step",
        conservation(so_far.plus(more), tokens + extra),
        (conservation(so_far, tokens), conservation(more, extra)),
    )
    load, empty_tokens, _ = EMPTY_BATCH
    base = Query("base", conservation(Loads(tuple(z3.IntVal(load) for _ in range(cp_size)), z3.BoolVal(True)), empty_tokens), ())
    return (request, base, step)
