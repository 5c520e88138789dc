"""vLLM's DualChunkSwap per-request loads for the review's class table: the definition and its closed form.

The definition (Model Runner V2's PCPManager; reference/strategies.py states it too, this module does not
read it): a prefill of L tokens is cut into 2P chunks of c = ceil(L/2P) tokens, chunk j holding
min(c, max(0, L - j*c)) (the trailing chunks short or empty), and rank r holds chunks r and 2P-1-r.
The ``dcp`` placement (decode context parallel) copies a prefill whose last chunk is empty,
(2P-1) * c >= L with L > 0, to every rank instead.

The closed form the count encoding uses: write L = 2P*q + m with 0 <= m < 2P. When the last chunk is
the only short one (m = 0, or q >= 2P-1-m), rank r holds

    2q + g(m)[r],   g(0) = 0,   g(m)[0] = m - 2P + 2,   g(m)[r] = 2 for r >= 1   (m > 0),

which is every length from ``regular_from(P)`` = 2P(2P-3) + 2 on (P >= 2; the longest length with two
short chunks is m = 1, q = 2P-3). Shorter lengths have loads that are not of this form (L = 9, P = 4:
(2, 2, 2, 3), not 2 + g(1) = (-3, 4, 4, 4)), so the encoding counts each of them apart, with its loads
from the definition (``request_loads``). The ``dcp`` row is the same closed form from
2P(2P-2) + 2 on (the longest copied prefill is L = 2P(2P-2) + 1). proofs/theorems/design_lemmas.py proves, for
every L >= 0, that the encoding (short lengths apart, longer ones by class) equals the definition's Z3
terms built here (``request_load_terms``).

Plain integers and term builders only: no solver, nothing from reference/.
"""

from __future__ import annotations

import functools

import z3

from cpgraph.spec.logic import And, If
from cpgraph.spec.arith import ceil_div
from cpgraph.spec.terms import IntLike, IntTerm, Loads, int_term, literal


def chunk_lens(length: int, cp_size: int) -> tuple[int, ...]:
    """The 2P chunks of one prefill: c = ceil(L/2P) tokens each, chunk j holding min(c, max(0, L - j*c))."""
    chunks = 2 * cp_size
    c = -(-length // chunks)
    return tuple(min(c, max(0, length - j * c)) for j in range(chunks))


def request_loads(length: int, cp_size: int) -> tuple[int, ...]:
    """Rows of one prefill on each rank: chunks r and 2P-1-r (L = 300, P = 4: (72, 76, 76, 76))."""
    sizes = chunk_lens(length, cp_size)
    return tuple(sizes[r] + sizes[2 * cp_size - 1 - r] for r in range(cp_size))


def copied_by_dcp(length: int, cp_size: int) -> bool:
    """The dcp placement copies a prefill whose last chunk is empty: (2P-1) * ceil(L/2P) >= L, L > 0."""
    return length > 0 and (2 * cp_size - 1) * -(-length // (2 * cp_size)) >= length


def dcp_request_loads(length: int, cp_size: int) -> tuple[int, ...]:
    """Rows of one prefill under the dcp placement: the whole prefill on every rank when copied."""
    return (length,) * cp_size if copied_by_dcp(length, cp_size) else request_loads(length, cp_size)


def regular_from(cp_size: int) -> int:
    """The least length from which every DualChunkSwap prefill has the closed form 2q + g(m)."""
    return 0 if cp_size < 2 else 2 * cp_size * (2 * cp_size - 3) + 2


def dcp_regular_from(cp_size: int) -> int:
    """The least length from which no prefill is copied by dcp and the closed form holds."""
    return max(regular_from(cp_size), 2 * cp_size * (2 * cp_size - 2) + 2)


def excess(cp_size: int, m: int, r: int) -> int:
    """g(m)[r]: rows of class m on rank r beyond 2q."""
    if m == 0:
        return 0
    return m - 2 * cp_size + 2 if r == 0 else 2


@functools.lru_cache(maxsize=4096)
def _cached(kind: str, length: int, cp_size: int) -> tuple[int, ...]:
    return dcp_request_loads(length, cp_size) if kind == "dcp" else request_loads(length, cp_size)


def short_loads(kind: str, length: int, cp_size: int) -> tuple[int, ...]:
    """The loads of one short length (counted apart by the encoding), cached: ``kind`` "dcs" or "dcp"."""
    if kind not in ("dcs", "dcp"):
        raise ValueError(f"kind must be one of dcs, dcp; got {kind!r}")
    return _cached(kind, length, cp_size)


def request_load_terms(length: IntLike, cp_size: int, name: str, *, dcp: bool = False) -> Loads:
    """The definition as Z3 terms (linear: c is an explicit quotient, j a constant): chunk j is
    If(L - j*c >= c, c, If(L - j*c >= 0, L - j*c, 0)) and rank r holds chunks r and 2P-1-r; with ``dcp``,
    a prefill with L > 0 and (2P-1)*c >= L holds L rows on every rank."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    chunks = 2 * cp_size
    known = literal(length)
    if known is not None:  # a literal length folds: the same formula over ints (no terms, facts true)
        width = -(-known // chunks)
        left = [known - j * width for j in range(chunks)]
        folded = [width if x >= width else (x if x >= 0 else 0) for x in left]
        rows = [folded[r] + folded[chunks - 1 - r] for r in range(cp_size)]
        if dcp and known > 0 and (chunks - 1) * width >= known:
            rows = [known] * cp_size
        return Loads(tuple(z3.IntVal(x) for x in rows), z3.BoolVal(True))
    c = ceil_div(length, chunks, f"{name}.c")
    sizes = []
    for j in range(chunks):
        left = int_term(length) - j * c.value
        sizes.append(If(left >= c.value, c.value, If(left >= 0, left, z3.IntVal(0))))
    loads = [sizes[r] + sizes[chunks - 1 - r] for r in range(cp_size)]
    if dcp:
        copied = And(int_term(length) > 0, (chunks - 1) * c.value >= length)
        loads = [If(copied, length, load) for load in loads]
    return Loads(tuple(loads), c.holds)
