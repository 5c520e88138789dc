"""Where the one-case harness's inputs come from: the spec's clause edges drawn by Z3 (proofs.boundaries),
exhaustive small domains, and Hypothesis (``case_strategy``)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

import hypothesis.strategies as st

from cpgraph import reference
from cpgraph.proofs.boundaries import boundary_cases
from cpgraph.proofs.conformance_compare import Case


def boundary_conformance_cases(
    cp_sizes: Iterable[int], *, strategies: Sequence[str] = reference.STRATEGIES, max_padding_factor: int = 2,
    max_requests: int = 3, max_tokens: int = 4096,
) -> Iterator[Case]:
    """The Z3-drawn clause edges (proofs.boundaries) for every cp_size and strategy."""
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
            for lengths in batches:
                n = sum(lengths)
                buckets = (n, 2 * n)
                caps = {b: reference.capture_local_tokens(b, cp_size=p, align_size=a, strategy=kind) for b in buckets}
                yield Case("exhaustive layout", p, a, kind, 2, n, tuple(lengths), buckets, caps)


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
            for lengths in batches:
                n = sum(lengths)
                buckets = (n, 2 * n)
                caps = {b: reference.capture_local_tokens(b, cp_size=p, align_size=a, strategy=kind) for b in buckets}
                yield Case("exhaustive dual_chunk_swap", p, a, kind, 2, n, tuple(lengths), buckets, caps)


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
