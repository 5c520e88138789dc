"""A decode dispatcher of your own, checked by cpgraph on its graph paths: ``cpgraph check
examples/decode_dispatcher/dispatcher.py:policy``.

What it serves: under prefill context parallelism (P ranks), a step's prefills are cut into 2P DualChunkSwap
chunks and its decodes dealt round-robin, one rank each; data-parallel (DP) ranks run their own steps. It
captures FULL decode graphs keyed by request count (for a uniform decode step of query length q) and, under
FULL_AND_PIECEWISE, PIECEWISE graphs keyed by tokens for every other step. Each rank must replay a graph that
holds its own rows and requests, and every rank of every DP rank the same graph: so the key is the largest
rank-local rows and requests over all of them (what a MAX all-reduce across DP ranks gives).

The graph-path protocol it implements (``cpgraph.PathDriver``): ``version``, ``modes``, ``dcp_size``,
``placement(cp_size)``, ``captured(config)`` and ``answers_dp(steps, config)``; cpgraph draws the steps and
configurations, asks, judges every answer against its reference and minimises what breaks.
"""

from __future__ import annotations

from collections.abc import Sequence

from cpgraph import Graph, GraphConfig, GraphStep, PathAnswer


class DecodeDispatcher:
    """FULL decode graphs for uniform decodes, PIECEWISE graphs by tokens otherwise, one key for every rank."""

    version = "decode_dispatcher example"
    modes = ("FULL_AND_PIECEWISE", "FULL_DECODE_ONLY")
    dcp_size = 1

    def placement(self, cp_size: int) -> str:
        return "dual_chunk_swap"  # prefills in 2P chunks, decodes dealt round-robin

    def captured(self, config: GraphConfig) -> tuple[Graph, ...]:
        """FULL decode graphs of n requests of q tokens (n*q tokens), and PIECEWISE graphs of T tokens when mixed
        steps run graphs too."""
        graphs = [Graph("FULL", n * q, n, q) for q in config.query_lens for n in config.decode_request_sizes
                  if n <= config.max_num_seqs]
        if config.cudagraph_mode == "FULL_AND_PIECEWISE":
            graphs += [Graph("PIECEWISE", tokens) for tokens in config.token_sizes]
        return tuple(sorted(set(graphs)))

    def key(self, steps: Sequence[GraphStep]) -> tuple[int, int, int | None]:
        """The largest rows and requests over every rank of every DP rank, and the query length they share (None
        unless every DP rank runs a uniform decode of the same q): the DP all-reduce."""
        held = [rank for step in steps for rank in step.ranks()]
        shared = {step.uniform_query_len for step in steps}
        return max(rows for rows, _ in held), max(requests for _, requests in held), shared.pop() if len(shared) == 1 else None

    def dispatch(self, graphs: Sequence[Graph], rows: int, requests: int, query_len: int | None) -> Graph | None:
        """The least FULL decode graph that holds the key, else the least PIECEWISE one, else eager (None)."""
        decode = [g for g in graphs if g.mode == "FULL" and g.query_len == query_len and g.tokens >= rows
                  and g.requests is not None and g.requests >= requests]
        if decode:
            return min(decode, key=lambda g: (g.tokens, g.requests or 0))
        mixed = [g for g in graphs if g.mode == "PIECEWISE" and g.tokens >= rows]
        return min(mixed, key=lambda g: g.tokens) if mixed else None

    def answers_dp(self, steps: Sequence[GraphStep], config: GraphConfig) -> tuple[tuple[PathAnswer, ...], ...]:
        """Every rank of every DP rank: the graph it dispatches and replays, and the rows and requests it holds."""
        graphs = self.captured(config)
        out = []
        for d, step in enumerate(steps):
            chosen = self.dispatch(graphs, *self.key_of(steps, d))
            out.append(tuple(PathAnswer(r, chosen, chosen, rows, requests) for r, (rows, requests) in enumerate(step.ranks())))
        return tuple(out)

    def key_of(self, steps: Sequence[GraphStep], dp_rank: int) -> tuple[int, int, int | None]:
        """DP rank ``dp_rank``'s key: the agreed one."""
        return self.key(steps)


policy = DecodeDispatcher()
