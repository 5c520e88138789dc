"""Where the one-case harness's inputs come from: the spec's clause edges drawn by Z3 (proofs.conformance.boundaries),
exhaustive small domains, Hypothesis (``case_strategy``), and the gates', window's, capture list's, ranks' and
keyings' edges drawn on purpose (``edge_cases``), compared whole at every rank."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from fractions import Fraction

import hypothesis.strategies as st

import cpgraph.reference as reference
from cpgraph.proofs.conformance.boundaries import boundary_cases
from cpgraph.proofs.conformance.compare import WHOLE_BATCH, Case


def boundary_conformance_cases(
    cp_sizes: Iterable[int], *, strategies: Sequence[str] = reference.STRATEGIES, max_padding_factor: int = 2,
    max_requests: int = 3, max_tokens: int = 4096,
) -> Iterator[Case]:
    """The Z3-drawn clause edges (proofs.conformance.boundaries) for every cp_size and strategy."""
    for p in cp_sizes:
        for kind in strategies:
            for edge in boundary_cases(
                cp_size=p, max_padding_factor=max_padding_factor, max_requests=max_requests,
                max_tokens=max_tokens, strategy=kind,
            ):
                yield Case(
                    f"boundary: {edge.clause}", p, edge.align_size, kind, edge.max_padding_factor, edge.num_tokens,
                    edge.extend_seq_lens, edge.capture_num_tokens, edge.bucket_local_tokens,
                )


def exhaustive_layout_cases(max_cp_size: int = 4, *, strategies: Sequence[str] = reference.STRATEGIES) -> Iterator[Case]:
    """Every cp_size <= ``max_cp_size``; every single length 1..4P+1 and every pair of lengths 1..2P+1; the
    capture list [n, 2n] with upstream's captured capacities."""
    for p in range(1, max_cp_size + 1):
        for kind in strategies:
            a = reference.default_align_size(cp_size=p, strategy=kind)
            batches: list[tuple[int, ...]] = [(x,) for x in range(1, 4 * p + 2)]
            batches += [tuple(pair) for pair in itertools.product(range(1, 2 * p + 2), repeat=2)]
            yield from _window_cases("exhaustive layout", p, a, kind, batches)


DUAL_CHUNK_SWAP_ROWS = ("dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp")


def exhaustive_dual_chunk_swap_cases(max_cp_size: int = 8) -> Iterator[Case]:
    """The DualChunkSwap rows at every cp_size <= ``max_cp_size``: every single length 1..2P(2P+1)+1 (every
    remainder at every quotient below the split threshold 2P-2 and past it, so every short prefill the dcp
    row copies and the first it splits), and every pair of lengths 1..2P+1 up to P = 3; the capture list
    [n, 2n] with upstream's captured capacities."""
    for p in range(1, max_cp_size + 1):
        for kind in DUAL_CHUNK_SWAP_ROWS:
            a = reference.default_align_size(cp_size=p, strategy=kind)
            batches: list[tuple[int, ...]] = [(x,) for x in range(1, 2 * p * (2 * p + 1) + 2)]
            if p <= 3:
                batches += [tuple(pair) for pair in itertools.product(range(1, 2 * p + 2), repeat=2)]
            yield from _window_cases("exhaustive dual_chunk_swap", p, a, kind, batches)


def _window_cases(family: str, p: int, a: int, kind: str, batches: list[tuple[int, ...]]) -> Iterator[Case]:
    """One case per batch: the capture list [n, 2n] with upstream's captured capacities, F = 2."""
    for lengths in batches:
        n = sum(lengths)
        buckets = (n, 2 * n)
        caps = {b: reference.capture_local_tokens(b, cp_size=p, align_size=a, strategy=kind) for b in buckets}
        yield Case(family, p, a, kind, 2, n, tuple(lengths), buckets, caps)


def exhaustive_selection_cases(*, max_bucket: int = 5, max_list_length: int = 3) -> Iterator[Case]:
    """Every sorted capture list over 1..``max_bucket`` of up to ``max_list_length`` buckets, every capacity
    in {missing, 1, 2} per bucket, n in {2, 3}, F in {1, 2}, for one request (P = 1, required rows = n
    aligned to 1): the selection's every branch (below n, in the window, above F*n, missing, short)."""
    for k in range(1, max_list_length + 1):
        for buckets in itertools.combinations(range(1, max_bucket + 1), k):
            for caps in itertools.product((None, 1, 2), repeat=k):
                table = {b: c for b, c in zip(buckets, caps) if c is not None}
                for n in (2, 3):
                    for f in (1, 2):
                        yield Case(
                            "exhaustive selection", 1, 1, "zigzag", f, n, (n,), tuple(buckets), table,
                            functions=("select_replay_bucket",),
                        )


@st.composite
def case_strategy(draw: st.DrawFn, *, max_cp_size: int = 16, max_length: int = 3000) -> Case:
    """A random Case: a batch, a sorted capture list around its token count, capacities (some missing,
    some short), a padding factor."""
    p = draw(st.integers(1, max_cp_size), label="cp_size")
    kind = draw(st.sampled_from(reference.STRATEGIES), label="strategy")
    a = draw(st.sampled_from((reference.default_align_size(cp_size=p, strategy=kind), 1, 8)), label="align_size")
    lengths = tuple(draw(st.lists(st.integers(0, max_length), min_size=1, max_size=4), label="extend_seq_lens"))
    n = max(1, sum(lengths))
    f = draw(st.integers(1, 3), label="max_padding_factor")
    buckets = draw(st.lists(st.integers(1, 3 * n + 2), min_size=1, max_size=6, unique=True), label="buckets")
    table: dict[int, int] = {}
    for b in sorted(buckets):
        if draw(st.booleans(), label=f"recorded[{b}]"):
            table[b] = draw(st.integers(0, max(1, 2 * n // p + 2 * a)), label=f"capacity[{b}]")
    return Case("hypothesis", p, a, kind, f, n, lengths, tuple(sorted(buckets)), table)


def edge_cases(
    cp_sizes: Iterable[int] = (1, 2, 3, 4, 5), *, strategies: Sequence[str] = reference.STRATEGIES,
    long_cp_sizes: Iterable[int] = (3,),
) -> Iterator[Case]:
    """Cases drawn on purpose where spec and implementation would differ, each compared whole (``plan``: gates,
    selection and replay at every rank) as well as function by function, for every strategy row and P:

    - the CP-active gate's edges (proofs.teeth.agreement.stage ``gate_batches``): n = 2P-1 and 2P, one request of 2P-1 and
      of 2P, a short request first, in the middle or last of long ones, n padded past the lengths' sum; on a
      short list around n (2P, n-1, n, n+1, 2n, 2n+1) with the captured capacities;
    - ranks whose loads differ (``rank_batches``, P >= 3, A = 1): buckets n, n+1, ... recording every rank's
      own load in ascending order, so a rank that decided from its own load would take an earlier bucket; and
      a padded batch on a bucket holding exactly its live rows;
    - the window's edges: a list of n-1 and n, n-1 and floor(F*n), n-1 and floor(F*n)+1 (F = 3/2 and 2; n =
      3(2P+1), odd, in three requests);
    - the capture list's ends (P in ``long_cp_sizes``): 40 buckets 2P, 4P, ..., n at the first, the 9th (a
      short request mixed in too), the last, and above the last;
    - the local keying (A = 1, no recorded capacities): sizes below the key m only, at m, and past F*m only.
    """
    from cpgraph.proofs.teeth.agreement.stage import LONG_LIST, gate_batches, rank_batches, rank_table

    layout_only = ("rank_loads", "required_local_tokens")
    for p in cp_sizes:
        s = 2 * p
        for kind in strategies:
            a = reference.default_align_size(cp_size=p, strategy=kind)

            def captured(buckets: Sequence[int], align: int = a) -> dict[int, int]:
                return {b: reference.capture_local_tokens(b, cp_size=p, align_size=align, strategy=kind) for b in buckets}

            for lengths, n in gate_batches(p):
                buckets = tuple(sorted({x for x in (s, n - 1, n, n + 1, 2 * n, 2 * n + 1) if x >= 1}))
                yield Case("edge: gate", p, a, kind, 2, n, lengths, buckets, captured(buckets), WHOLE_BATCH)
            for lengths in rank_batches(p) if p >= 3 else ():
                buckets, table = rank_table(lengths, p, kind)
                yield Case("edge: ranks", p, 1, kind, 2, sum(lengths), lengths, buckets, dict(table),
                           (*layout_only, "select_replay_bucket", "plan"))
            if p >= 2:
                lengths = (s + 1,) * 3
                n = sum(lengths) + s + 1
                rows = max(reference.rank_loads(lengths, cp_size=p, strategy=kind))
                yield Case("edge: padded", p, 1, kind, 2, n, lengths, (n, n + 1), {n: rows, n + 1: 10**6},
                           (*layout_only, "select_replay_bucket", "plan"))
            for factor in (Fraction(3, 2), Fraction(2)):
                for lengths in ((s + 1, s + 1, s + 1),):
                    n = sum(lengths)
                    top = (factor.numerator * n) // factor.denominator
                    for buckets in ((n - 1, n), (n - 1, top), (n - 1, top + 1)):
                        yield Case("edge: window", p, a, kind, factor, n, lengths, buckets, captured(buckets), WHOLE_BATCH)
            if p in tuple(long_cp_sizes):
                long = tuple(s * k for k in range(1, LONG_LIST + 1))
                for lengths in ((s,), (9 * s - 1,), (s - 1, 8 * s), (s * LONG_LIST,), (s * LONG_LIST + 1,)):
                    yield Case("edge: capture list ends", p, a, kind, 2, sum(lengths), lengths, long, captured(long),
                               WHOLE_BATCH)
            for lengths in ((1,), (s - 1,), (s + 1,) * 3, (s - 1, 3 * s + 1), (9 * p + 2,)):
                m = max(reference.rank_loads(lengths, cp_size=p, strategy=kind))
                for sizes in ((m - 1,), (m - 1, m, m + 1), (m - 1, 2 * m + 1)):
                    listed = tuple(sorted({x for x in sizes if x >= 1}))
                    if listed:
                        yield Case("edge: local keying", p, 1, kind, 2, sum(lengths), lengths, listed, {},
                                   (*layout_only, "plan"), keying="local")
