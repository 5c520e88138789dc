"""Theorems about spec/ep_graphs.py: whether Megatron-Core's EP ranks, each matching its own step against the same
captured list of ``GRAPHS`` graphs with free dimensions (any step, any list), end on graphs of one token count.

- ``synced_dimensions_give_consensus``: when the ranks sync every dimension (the MAX of tokens, prefill and
  decode requests, each rank folding from itself; Megatron-Core 0.17 under strict matching), every rank matches
  a graph of the same token count or every rank runs eager, under strict and loose matching, at EP sizes
  ``EP_SIZES``. Its wrong variant (proofs/teeth/variants/ep_graphs.py) syncs the token count alone, as 0.16 did,
  and must be refuted under strict matching: the counterexample replays through the release
  (tests/quality/test_megatron_proofs.py).
- ``decode_steps_synced_by_tokens_agree``: the form 0.18 on use (any prefill on any rank: every rank eager; else
  the token count synced, each rank's decode count its own): on decode-only steps (t = d * k) and decode-only
  graphs as the generator builds them (T <= D * k), every rank matches the same graph, for k = 1..4 tokens per
  decode (MTP), both matchings.
- ``syncing_tokens_alone_breaks_consensus_under_strict_matching``: the design fact behind Megatron-LM PR #3033,
  proved by a witness: EP 2, a decode step [1]: 0 P + 1 D beside a prefill step [1]: 1 P + 0 D, graphs
  [8]: 0 P + 8 D, [16]: 0 P + 16 D, [16]: 16 P + 0 D (cpgraph check's minimal witness on 0.16.0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cpgraph.proofs.engine.obligation import Query
from cpgraph.spec.ep_graphs import (
    SYNC, Dims, consensus, decode_graph_facts, dims, graph_facts, match, step_facts, symbolic_graphs, synced_match,
)
from cpgraph.spec.logic import And, Not
from cpgraph.spec.terms import BoolTerm, all_of

GRAPHS = 3  # captured graphs per list, their dimensions free
EP_SIZES = (2, 3, 4)
DIRECT_EP_SIZES = (2,)  # the whole claim in one query; EP 3 proved on one z3 seed and not another within the rlimit
# (measured 2026-12-07), so EP 3 and up stand on the lemma (synced dimensions agree, equal dimensions match equal graphs)
LEMMA_EP_SIZES = (2, 3, 4, 5, 6, 7, 8)
MATCHINGS = ("strict", "loose")
TOKENS_PER_DECODE = (1, 2, 3, 4)
WITNESS_STEPS = ((1, 0, 1), (1, 1, 0))
WITNESS_GRAPHS = ((8, 0, 8), (16, 0, 16), (16, 16, 0))


def _steps(ep_size: int) -> list[Dims]:
    return [dims(f"rank{r}") for r in range(ep_size)]


def _shown(steps: list[Dims], graphs: tuple[Dims, ...]) -> tuple[tuple[str, object], ...]:
    out: list[tuple[str, object]] = []
    for r, s in enumerate(steps):
        out += [(f"rank{r}.T", s.tokens), (f"rank{r}.P", s.prefill), (f"rank{r}.D", s.decode)]
    for i, g in enumerate(graphs):
        out += [(f"graph{i}.T", g.tokens), (f"graph{i}.P", g.prefill), (f"graph{i}.D", g.decode)]
    return tuple(out)


SyncFn = Callable[[Sequence[Dims]], list[Dims]]


def synced_dimensions_give_consensus(_: int = 0, *, sync: str | SyncFn = "all", matchings: tuple[str, ...] = MATCHINGS) -> tuple[Query, ...]:
    """rank_consensus over EP ranks: when every EP rank all-reduces (MAX) its token count, prefill and decode
    request counts before matching, every rank replays a graph of the same token count or every rank runs eager,
    for any steps and any list of 3 captured graphs, under strict and loose matching: directly at EP size 2;
    at EP sizes 2 to 8 because every rank's synced dimensions are equal (each rank folds the MAX from itself)
    and equal dimensions match equal graphs."""
    sync_fn = SYNC[sync] if isinstance(sync, str) else sync
    out: list[Query] = []
    for matching in matchings:
        for ep in DIRECT_EP_SIZES:
            steps, graphs = _steps(ep), symbolic_graphs(GRAPHS, "graph")
            matched = [match(s, graphs, matching) for s in sync_fn(steps)]
            out.append(Query(f"rank_consensus ({matching}, EP {ep})", consensus(matched),
                             (graph_facts(graphs), *(step_facts(s) for s in steps)),
                             shown=_shown(steps, graphs)))
        graphs = symbolic_graphs(GRAPHS, "graph")
        one, other = dims("synced0"), dims("synced1")
        equal = And(one.tokens == other.tokens, one.prefill == other.prefill, one.decode == other.decode)
        out.append(Query(f"equal dimensions match equal graphs ({matching})",
                         consensus([match(one, graphs, matching), match(other, graphs, matching)]),
                         (graph_facts(graphs), step_facts(one), equal), shown=_shown([one, other], graphs)))
    for ep in LEMMA_EP_SIZES:
        steps = _steps(ep)
        synced = sync_fn(steps)
        for field in ("tokens", "prefill", "decode"):
            agree = all_of(getattr(s, field) == getattr(synced[0], field) for s in synced[1:])
            out.append(Query(f"synced {field} agree (EP {ep})", agree, tuple(step_facts(s) for s in steps),
                             shown=_shown(steps, ())))
    return tuple(out)


def decode_steps_synced_by_tokens_agree(_: int = 0, *, graph_facts_of: Callable[[Sequence[Dims], int], BoolTerm] = decode_graph_facts) -> tuple[Query, ...]:
    """rank_consensus as Megatron-Core 0.18 on sync: on decode-only steps (d decodes of k tokens each, k = 1..4)
    and decode-only graphs of at most D * k tokens, syncing the token count alone (each rank keeping its own
    decode count) gives every EP rank the same graph, at EP sizes 2, 3 and 4, strict and loose matching."""
    out: list[Query] = []
    for matching in MATCHINGS:
        for k in TOKENS_PER_DECODE:
            for ep in EP_SIZES:
                steps, graphs = _steps(ep), symbolic_graphs(GRAPHS, "graph")
                matched = synced_match(steps, graphs, matching, "tokens")
                facts = graph_facts_of(graphs, k)
                decode_only = all_of(And(s.prefill == 0, s.decode >= 1, s.tokens == s.decode * k) for s in steps)
                same = all_of(And(m.found == matched[0].found, m.dims.tokens == matched[0].dims.tokens,
                                  m.dims.decode == matched[0].dims.decode) for m in matched[1:])
                out.append(Query(f"rank_consensus ({matching}, k={k}, EP {ep})", same,
                                 (graph_facts(graphs), facts, decode_only), shown=_shown(steps, graphs)))
    return tuple(out)


def syncing_tokens_alone_breaks_consensus_under_strict_matching(_: int = 0, *, sync: str = "tokens") -> tuple[Query, ...]:
    """The design fact behind Megatron-LM PR #3033: syncing the token count alone (Megatron-Core 0.16) leaves two
    EP ranks on graphs of different token counts under strict matching; a witness: a decode step [1]: 0 P + 1 D
    beside a prefill step [1]: 1 P + 0 D, with graphs [8]: 0 P + 8 D, [16]: 0 P + 16 D and [16]: 16 P + 0 D."""
    steps, graphs = _steps(2), symbolic_graphs(GRAPHS, "graph")
    pinned = [And(s.tokens == t, s.prefill == p, s.decode == d) for s, (t, p, d) in zip(steps, WITNESS_STEPS)]
    pinned += [And(g.tokens == t, g.prefill == p, g.decode == d) for g, (t, p, d) in zip(graphs, WITNESS_GRAPHS)]
    matched = synced_match(steps, graphs, "strict", sync)
    return (Query("witness (strict, EP 2)", Not(consensus(matched)), (graph_facts(graphs), *pinned), shown=_shown(steps, graphs)),)
