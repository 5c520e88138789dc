"""Symbolic batches for the induction over requests: the batch so far and one more request.

A step's hypotheses about the batch so far are exactly what its claim re-establishes for the batch with
one more request (plus the request lemma's conclusion), so the induction is closed.

Symbolic batches for the induction over requests: a batch so far (any loads a_r, N tokens, k non-empty
requests) and one more request (loads l_r, L tokens). A theorem about any number of requests is a
per-request lemma, plus a step from the batch so far to the batch with one more request.
"""

from __future__ import annotations

import functools

import z3

from cpgraph.spec.terms import IntTerm, Loads


@functools.lru_cache(maxsize=256)
def symbolic_loads(cp_size: int, prefix: str) -> Loads:
    """P per-rank loads ``{prefix}{r}`` with no constraint at all (built once, shared). Not even >= 0: a
    theorem over these holds for every load vector, so no unproved fact about real loads is assumed."""
    loads = tuple(z3.Int(f"{prefix}{r}") for r in range(cp_size))
    return Loads(loads, z3.BoolVal(True))


def batch_so_far(cp_size: int) -> tuple[Loads, IntTerm, IntTerm]:
    """(loads a_r, tokens N, non-empty requests k) of the batch laid out so far."""
    return symbolic_loads(cp_size, "a"), z3.Int("N"), z3.Int("k")


def next_request(cp_size: int) -> tuple[Loads, IntTerm]:
    """(loads l_r, length L) of the next request, constrained only by the per-request lemma."""
    return symbolic_loads(cp_size, "l"), z3.Int("L")
