"""The layout strategies as one table (one row per strategy): alignment and per-rank loads of a batch.

- zigzag: per request, 2P blocks, rank r owns blocks r and 2P-1-r (spec/zigzag.py).
- contiguous: per request, rank r owns [floor(L*r/P), floor(L*(r+1)/P)).
- interleave: token t of the whole batch goes to rank t mod P; request boundaries do not matter.
- dual_chunk_swap, dual_chunk_swap_replicated, dual_chunk_swap_dcp: vLLM's DualChunkSwap (Model Runner
  V2's PCPManager). A prefill of L tokens is cut into 2P chunks of c = ceil(L/2P) tokens, chunk j holding
  min(c, max(0, L - j*c)) (the trailing chunks short or empty), and rank r takes chunks r and 2P-1-r. The
  three rows differ in where a request that is not prefilling (a decode) goes: dealt round-robin, copied to
  every rank, or (dcp) copied, and so is a prefill too short to fill all 2P chunks, (2P-1)*c >= L.

The spec states PREFILL loads only: a batch here is a batch of prefills. Where decodes go (the ``decodes``
column, mirrored from reference/strategies.py) is a concern of the reference, impl and ``cpgraph check``,
which see ``is_prefilling``; the spec's terms never read it. The dcp row's short-prefill rule is a rule about
prefills, so it is in its terms: a short prefill puts all L tokens on every rank.

Every term is linear for a concrete P: c is an explicit quotient (L + 2P - 1 = 2P*c + t, 0 <= t < 2P),
j*c has a constant j, and min/max are If terms.

``class_encodable``: whether spec/batch.py's remainder-class abstraction (one request's loads are
q*loads(2P) + loads(m) for L = 2P*q + m) holds for the row. It does for zigzag, contiguous and interleave;
it does NOT for DualChunkSwap, whose loads for small q depend on q and m jointly (L = 9, P = 4 gives
(2, 2, 2, 3), not loads(8) + loads(1) = (3, 2, 2, 2)); for q >= 2P-2 (a tight threshold) they are 2q on
every rank plus g(m) = (m-2P+2, 2, ..., 2) for m > 0 (proofs/theorems/dual_chunk_swap.py proves both). The class-batch theorems
therefore state their scope as the class-encodable rows, and spec/batch.py's ``class_loads`` raises a
ValueError for any other row (never a silent skip); the DualChunkSwap rows are covered by the
any-layout theorems of proofs/theorems/end_to_end_local.py and by the per-request theorems.

Row for row the mirror of reference/strategies.py (same ids, same alignment factor, same decode placement);
an unknown id is a ValueError, never a default.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import z3

from cpgraph.spec.logic import If, Sum
from cpgraph.spec.arith import DivMod, ceil_div, divmod_by
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, all_of, indicator, int_term, literal, literals, sub
from cpgraph.spec.zigzag import zigzag_request_loads

RequestLoads = Callable[[IntLike, int, str], Loads]


def contiguous_request_loads(length: IntLike, cp_size: int, name: str) -> Loads:
    """Per-rank loads of one sequence cut into P contiguous blocks: floor(L(r+1)/P) - floor(Lr/P)."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    n = literal(length)
    cuts = [
        divmod_by(n * r if n is not None else int_term(length) * r, cp_size, f"{name}.cut{r}")
        for r in range(1, cp_size)
    ]
    starts = [z3.IntVal(0), *(c.quotient for c in cuts), int_term(length)]
    loads = tuple(sub(starts[r + 1], starts[r]) for r in range(cp_size))
    return Loads(loads, all_of(c.holds for c in cuts))


# -- DualChunkSwap (vLLM) ---------------------------------------------------------------------------------------


def dual_chunk_swap_chunk(length: IntLike, chunk: IntLike, j: int) -> IntLike:
    """Chunk j of a prefill of L tokens in chunks of c: min(c, max(0, L - j*c)); one ladder for both worlds
    (ints give an int, terms give an If term). Rank r's load is chunk r plus chunk 2P-1-r."""
    rest = length - j * chunk
    if isinstance(rest, int) and isinstance(chunk, int):
        return min(chunk, max(0, rest))
    room = If(rest >= 0, rest, z3.IntVal(0))
    return If(chunk <= room, chunk, room)


def dual_chunk_swap_chunk_size(length: IntLike, cp_size: int, name: str) -> tuple[IntTerm, BoolTerm]:
    """c = ceil(L/2P), the size of every full chunk, with its defining facts (``{name}.chunk.q``)."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    size = ceil_div(length, 2 * cp_size, f"{name}.chunk")
    return size.value, size.holds


def _dcs_rank_loads(length: IntLike, chunk: IntLike, cp_size: int) -> tuple[IntLike, ...]:
    last = 2 * cp_size - 1
    return tuple(dual_chunk_swap_chunk(length, chunk, r) + dual_chunk_swap_chunk(length, chunk, last - r) for r in range(cp_size))


def _dual_chunk_swap(length: IntLike, cp_size: int, name: str) -> tuple[Loads, IntLike]:
    """The DualChunkSwap loads of one prefill and its chunk size c (a numeral for a concrete length)."""
    chunk, holds = dual_chunk_swap_chunk_size(length, cp_size, name)
    n = literal(length)
    if n is not None:  # concrete length (so a numeral chunk size): fold the same ladder over Python ints
        c = literal(chunk)
        if c is None:
            raise AssertionError(f"the chunk size of a concrete length {n} is not a numeral: {chunk}")
        return Loads(tuple(z3.IntVal(x) for x in _dcs_rank_loads(n, c, cp_size)), holds), c
    return Loads(tuple(int_term(x) for x in _dcs_rank_loads(int_term(length), chunk, cp_size)), holds), chunk


def dual_chunk_swap_request_loads(length: IntLike, cp_size: int, name: str) -> Loads:
    """Per-rank loads of one prefill under DualChunkSwap, for a concrete P: chunks r and 2P-1-r of the 2P
    chunks of c = ceil(L/2P) tokens, chunk j = min(c, max(0, L - j*c)) (L = 300, P = 4: (72, 76, 76, 76);
    L = 3, P = 4: (1, 1, 1, 0)). A stable entry point: the design review's class table reads it."""
    return _dual_chunk_swap(length, cp_size, name)[0]


def is_short_for_dcp(length: IntLike, chunk: IntLike, cp_size: int) -> BoolTerm | bool:
    """vLLM's dcp rule: a prefill whose last chunk is empty, (2P-1)*c >= L, is copied to every rank."""
    n, c = literal(length), literal(chunk)
    if n is not None and c is not None:
        return (2 * cp_size - 1) * c >= n
    return (2 * cp_size - 1) * int_term(chunk) >= int_term(length)


def dual_chunk_swap_dcp_request_loads(length: IntLike, cp_size: int, name: str) -> Loads:
    """Per-rank loads of one prefill under DualChunkSwap with decode context parallel (dcp > 1): a prefill
    too short to fill all 2P chunks ((2P-1)*c >= L) is copied whole to every rank, any other is split as
    DualChunkSwap splits it. A stable entry point, like ``dual_chunk_swap_request_loads``."""
    split, chunk = _dual_chunk_swap(length, cp_size, name)
    short = is_short_for_dcp(length, chunk, cp_size)
    if isinstance(short, bool):
        whole = literal(length)
        assert whole is not None
        return Loads(tuple(z3.IntVal(whole) for _ in split.loads), split.holds) if short else split
    return Loads(tuple(If(short, int_term(length), x) for x in split.loads), split.holds)


# -- interleave -----------------------------------------------------------------------------------------------


def interleave_rank_load(split: DivMod, rank: IntLike) -> IntTerm:
    """Tokens of a batch of N = P*q + m tokens on rank r under interleave: q + [r < m]."""
    return split.quotient + indicator(int_term(rank) < split.remainder)


def interleave_loads(total: IntLike, cp_size: int, name: str) -> Loads:
    """Per-rank loads when token t of the batch goes to rank t mod P: floor(N/P) + [r < N mod P]."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    split = divmod_by(total, cp_size, name)
    folded = literals(split.quotient, split.remainder)
    if folded is not None:
        q, m = folded
        return Loads(tuple(z3.IntVal(q + (1 if m > r else 0)) for r in range(cp_size)), split.holds)
    return Loads(tuple(interleave_rank_load(split, r) for r in range(cp_size)), split.holds)


DECODE_PLACEMENTS = ("round_robin", "replicated", "dcp")  # the ``decodes`` column's values (None: prefills only)


# The CP-activity gates (mirrors reference/strategies.py's ``cp_active`` column): "blocks", P > 1, n >= 2P and
# every length >= 2P (every one of a request's 2P blocks holds a token); "tokens", P > 1 and the lengths' sum
# >= P (every rank holds a token of the batch: interleave, as sglang gates it).
CP_ACTIVE_GATES: tuple[str, ...] = ("blocks", "tokens")


@dataclass(frozen=True)
class Strategy:
    """One row of the strategy table."""

    name: str
    align_factor: int  # A = align_factor * P (upstream's default alignment); 0: none, A = 1 (vLLM aligns nothing)
    request_loads: RequestLoads | None  # per-request prefill loads; None when loads depend only on the total
    decodes: str | None = None  # where a decode goes (reference/, impl/, check/ only; see the module docstring)
    class_encodable: bool = True  # spec/batch.py's remainder classes hold for this row (see the module docstring)
    cp_active: str = "blocks"  # the gate under a gated keying (spec/admission.py cp_active): "blocks" or "tokens"

    def __post_init__(self) -> None:
        if self.decodes is not None and self.decodes not in DECODE_PLACEMENTS:
            raise ValueError(f"decodes must be None or one of {', '.join(DECODE_PLACEMENTS)}; got {self.decodes!r}")
        if self.cp_active not in CP_ACTIVE_GATES:
            raise ValueError(f"cp_active must be one of {', '.join(CP_ACTIVE_GATES)}; got {self.cp_active!r}")

    def align_size(self, cp_size: int) -> int:
        """Upstream's default alignment for this strategy (align_factor 0: A = 1)."""
        return self.align_factor * cp_size if self.align_factor else 1

    def batch_loads(self, lengths: Sequence[IntLike], cp_size: int, name: str) -> Loads:
        """Per-rank loads of the whole batch (the sum over requests, or the interleave of the total)."""
        if not lengths:
            raise ValueError(f"lengths must hold at least one request, got {lengths!r}")
        if self.request_loads is None:
            values = [literal(x) for x in lengths]
            total = sum(v for v in values if v is not None) if all(v is not None for v in values) else None
            return interleave_loads(total if total is not None else Sum([int_term(x) for x in lengths]), cp_size, name)
        each = [self.request_loads(length, cp_size, f"{name}.req{i}") for i, length in enumerate(lengths)]
        return functools.reduce(Loads.plus, each)


STRATEGIES: dict[str, Strategy] = {
    "zigzag": Strategy("zigzag", 2, zigzag_request_loads),
    "interleave": Strategy("interleave", 1, None, cp_active="tokens"),
    "contiguous": Strategy("contiguous", 1, contiguous_request_loads),
    "dual_chunk_swap": Strategy("dual_chunk_swap", 0, dual_chunk_swap_request_loads, "round_robin", False),
    "dual_chunk_swap_replicated": Strategy(
        "dual_chunk_swap_replicated", 0, dual_chunk_swap_request_loads, "replicated", False
    ),
    "dual_chunk_swap_dcp": Strategy("dual_chunk_swap_dcp", 0, dual_chunk_swap_dcp_request_loads, "dcp", False),
}

CLASS_ENCODABLE: tuple[str, ...] = tuple(sid for sid, row in STRATEGIES.items() if row.class_encodable)
DUAL_CHUNK_SWAP: tuple[str, ...] = tuple(sid for sid, row in STRATEGIES.items() if row.decodes is not None)


def strategy(name: str) -> Strategy:
    """The table row for ``name``; ValueError names the allowed strategies."""
    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {name!r}")
    return STRATEGIES[name]


def class_encodable(name: str) -> Strategy:
    """The table row for ``name`` when the remainder-class abstraction holds for it; a ValueError naming the
    rows it holds for otherwise (an unknown id too)."""
    row = strategy(name)
    if not row.class_encodable:
        raise ValueError(
            f"strategy {name!r} is not class-encodable (its per-request loads are not q*loads(2P) + loads(m) "
            f"for L = 2P*q + m with q < 2P-2); the class-batch abstraction holds for {', '.join(CLASS_ENCODABLE)}"
        )
    return row


def rank_loads(lengths: Sequence[IntLike], cp_size: int, name: str, kind: str = "zigzag") -> Loads:
    """Per-rank loads of a batch of prefills under strategy ``kind`` (the spec's counterpart of
    reference.rank_loads without ``is_prefilling``)."""
    return strategy(kind).batch_loads(lengths, cp_size, name)
