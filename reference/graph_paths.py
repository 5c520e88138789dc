"""Every graph path a step can take, not only the prefill bucket: the step's graph mode, the uniform decode
graphs keyed by (query length, request count) beside the token-keyed ones, where decodes are placed, the
request side of fitting, and the agreement of data-parallel (DP) ranks.

The model (vLLM's Model Runner V2 under prefill context parallel, the stack that has these paths):

- A configured ``cudagraph_mode`` (``CUDAGRAPH_MODES``) names the mode of each routine: uniform decode
  batches run the decode routine's graphs and every other batch the mixed routine's (``FULL_AND_PIECEWISE``:
  FULL decode graphs, PIECEWISE mixed; ``FULL_DECODE_ONLY``: FULL decode graphs, mixed batches eager;
  ``PIECEWISE`` / ``FULL``: one routine for every batch).
- The captured graphs (``captured``): decode graphs (FULL, ``query_len`` q, ``requests`` n, n*q tokens) for
  each captured request count n and query length q (1 plus the speculative tokens), when the decode routine
  is FULL and separate; token-keyed graphs of the mixed mode for each token size T (a FULL one holds
  min(T, max_num_seqs) requests, a PIECEWISE one any number).
- A step (``GraphStep``) is laid out by its DualChunkSwap strategy row: prefills cut into 2P chunks, decodes
  dealt round-robin (``dual_chunk_swap``) or copied to every rank (``dual_chunk_swap_replicated``,
  ``dual_chunk_swap_dcp``). Rank r holds ``rows[r]`` tokens of ``requests[r]`` requests. The step is a
  uniform decode of query length q when every request is a decode of q tokens.
- A graph fits rank r when its tokens hold the rank's rows, its requests (when it counts them) hold the
  rank's requests, and its query length (when it has one) is the step's.
- The fastest graph that fits every rank is the one to run (``expected``): the first mode in the
  release's order FULL, PIECEWISE that has a fitting graph, and in it the least tokens (then the least
  requests); eager (None) when none fits. Every DP rank replays one agreed descriptor (``agreed``): the
  fastest graph that fits every rank of every DP rank, its key the DP maximum.

``judge`` states the seven invariants over a step's per-rank answers (the descriptor each rank dispatched
and the one it replayed): the same ids as the prefill bucket's, so a report reads the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from cpgraph.reference.invariants import EFFICIENCY as EFFICIENCY, INVARIANT_TABLE, SAFETY as SAFETY
from cpgraph.reference.laid_out import LaidOut, layout_mismatch
from cpgraph.reference.strategies import strategy_row

MODE_ORDER: Final = ("FULL", "PIECEWISE")  # the release's order: the fastest first; eager after both
# configured mode -> (decode routine's mode, mixed routine's mode, separate routines)
CUDAGRAPH_MODES: Final = MappingProxyType({
    "NONE": ("NONE", "NONE", False),
    "PIECEWISE": ("PIECEWISE", "PIECEWISE", False),
    "FULL": ("FULL", "FULL", False),
    "FULL_DECODE_ONLY": ("FULL", "NONE", True),
    "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE", True),
})
PLACEMENTS: Final = ("dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp")


@dataclass(frozen=True, order=True)
class Graph:
    """A captured graph: its ``mode`` ('FULL' or 'PIECEWISE'), the ``tokens`` it holds on every rank, the
    ``requests`` it holds (None: any number), and the uniform ``query_len`` it serves (None: any batch)."""

    mode: str
    tokens: int
    requests: int | None = None
    query_len: int | None = None

    def describe(self) -> str:
        parts = [f"{self.mode} {self.tokens} tokens"]
        if self.requests is not None:
            parts.append(f"{self.requests} requests")
        if self.query_len is not None:
            parts.append(f"q={self.query_len}")
        return ", ".join(parts)


@dataclass(frozen=True)
class GraphConfig:
    """What a runner captured: ``cudagraph_mode``, the token-keyed sizes, the decode graphs' request counts
    and query lengths, and ``max_num_seqs`` (a FULL token-keyed graph holds min(T, it) requests)."""

    cudagraph_mode: str
    token_sizes: tuple[int, ...]
    decode_request_sizes: tuple[int, ...] = ()
    query_lens: tuple[int, ...] = (1,)
    max_num_seqs: int = 256

    def __post_init__(self) -> None:
        if self.cudagraph_mode not in CUDAGRAPH_MODES:
            raise ValueError(f"cudagraph_mode must be one of {', '.join(CUDAGRAPH_MODES)}; got {self.cudagraph_mode!r}")
        for name in ("token_sizes", "decode_request_sizes", "query_lens"):
            values = getattr(self, name)
            if not isinstance(values, tuple) or not all(type(v) is int and v >= 1 for v in values):
                raise ValueError(f"{name} must be a tuple of ints >= 1, got {values!r}")
        if type(self.max_num_seqs) is not int or self.max_num_seqs < 1:
            raise ValueError(f"max_num_seqs must be an int >= 1, got {self.max_num_seqs!r}")


def captured(config: GraphConfig) -> tuple[Graph, ...]:
    """Every graph ``config`` captures (see the module docstring), sorted."""
    decode_mode, mixed_mode, separate = CUDAGRAPH_MODES[config.cudagraph_mode]
    out: set[Graph] = set()
    if separate and decode_mode == "FULL":
        for q in config.query_lens:
            for n in config.decode_request_sizes:
                if n <= config.max_num_seqs:
                    out.add(Graph("FULL", n * q, n, q))
    if mixed_mode != "NONE":
        for size in config.token_sizes:
            out.add(Graph(mixed_mode, size, min(size, config.max_num_seqs) if mixed_mode == "FULL" else None))
    return in_order(tuple(out))


@dataclass(frozen=True)
class GraphStep:
    """One step's batch: request ``lengths`` (tokens scheduled this step), which are ``prefilling`` (the rest
    are decodes), ``cp_size`` ranks, laid out by ``placement`` (a DualChunkSwap strategy row)."""

    lengths: tuple[int, ...]
    prefilling: tuple[bool, ...]
    cp_size: int
    placement: str = "dual_chunk_swap"

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}; got {self.placement!r}")
        if len(self.lengths) != len(self.prefilling) or not self.lengths:
            raise ValueError(f"lengths and prefilling must be equally long and not empty, got {self.lengths!r}, {self.prefilling!r}")
        if not all(type(v) is int and v >= 1 for v in self.lengths):
            raise ValueError(f"lengths must hold ints >= 1, got {self.lengths!r}")
        if type(self.cp_size) is not int or self.cp_size < 1:
            raise ValueError(f"cp_size must be an int >= 1, got {self.cp_size!r}")

    @property
    def uniform_query_len(self) -> int | None:
        """q when every request is a decode of q tokens (a uniform decode step), else None."""
        if any(self.prefilling) or len(set(self.lengths)) != 1:
            return None
        return self.lengths[0]

    def ranks(self) -> tuple[tuple[int, int], ...]:
        """(rows, requests) on every rank; one rank holds the whole batch."""
        if self.cp_size == 1:
            return ((sum(self.lengths), len(self.lengths)),)
        row = strategy_row(self.placement)
        assert row.mixed_rows is not None
        slots = row.mixed_rows(self.lengths, self.prefilling, self.cp_size)
        return tuple((len(rank), len({s[0] for s in rank if s is not None})) for rank in slots)


def fits(graph: Graph, rows: int, requests: int, query_len: int | None) -> bool:
    """Does ``graph`` hold a rank's ``rows`` tokens of ``requests`` requests of a step of ``query_len``?"""
    return (
        graph.tokens >= rows
        and (graph.requests is None or graph.requests >= requests)
        and (graph.query_len is None or graph.query_len == query_len)
    )


def in_order(graphs: Sequence[Graph]) -> tuple[Graph, ...]:
    """``graphs`` in the order a step should try them: the faster mode first, then the fewer tokens, then the
    fewer requests."""
    return tuple(sorted(set(graphs), key=lambda g: (MODE_ORDER.index(g.mode), g.tokens, g.requests or 0, g.query_len or 0)))


def fastest(graphs: Sequence[Graph], held: Iterable[tuple[int, int, int | None]]) -> Graph | None:
    """The fastest of the captured ``graphs`` that holds every rank's (rows, requests, query length of its step)
    in ``held``; None: eager."""
    ranks = tuple(held)
    return next((g for g in in_order(graphs) if all(fits(g, rows, requests, q) for rows, requests, q in ranks)), None)


def held_by(groups: Sequence[tuple[GraphStep, Sequence[PathAnswer]]]) -> list[tuple[int, int, int | None]]:
    """Every rank's (rows, requests, query length) of every DP rank's step, as the answers laid them out."""
    return [(a.rows, a.requests, step.uniform_query_len) for step, answers in groups for a in answers]


def expected(step: GraphStep, graphs: Sequence[Graph], ranks: Sequence[tuple[int, int]] | None = None) -> Graph | None:
    """The fastest of the captured ``graphs`` that fits every rank (module docstring), the ranks' (rows,
    requests) being ``ranks`` when given (what a release laid out), else the step's own; None: eager."""
    q = step.uniform_query_len
    return fastest(graphs, ((rows, requests, q) for rows, requests in (step.ranks() if ranks is None else ranks)))


def agreed(steps: Sequence[GraphStep], graphs: Sequence[Graph]) -> Graph | None:
    """The one descriptor every DP rank replays: the fastest of ``graphs`` that fits every rank of every DP
    rank's step (a DP rank with no uniform decode keeps every rank off decode graphs); None: eager."""
    return fastest(graphs, ((rows, requests, s.uniform_query_len) for s in steps for rows, requests in s.ranks()))


@dataclass(frozen=True)
class PathAnswer:
    """What one rank did with a step: the descriptor it dispatched (``dispatched``, None: eager), the one it
    replayed (``replayed``, None: eager or refused, ``refusal`` then says why), its real ``rows`` and
    ``requests``, and (optional) ``padded_requests``, the request count its layout was padded to for the
    replay (a FULL graph replays inputs laid out for exactly the requests it was captured with; None: not
    known, or not padded), and (optional) ``layout``, the layout the rank built for the replay
    (reference/laid_out.py: what every rank's rows hold and where each token is read back from; None: not
    shown)."""

    rank: int
    dispatched: Graph | None
    replayed: Graph | None
    rows: int
    requests: int
    refusal: str | None = None
    padded_requests: int | None = None
    layout: LaidOut | None = None

    def describe(self) -> str:
        said = f"dispatched {self.dispatched.describe() if self.dispatched else 'eager'}"
        if self.refusal is not None:
            return f"{said}; replay refused: {self.refusal}"
        return f"{said}; replayed {self.replayed.describe() if self.replayed else 'eager'}; holds {self.rows} rows of {self.requests} requests"


@dataclass(frozen=True)
class PathFinding:
    """A broken invariant: its id, and why, in words."""

    invariant: str
    why: str
    cost: str  # 'correctness' (a safety invariant) or 'speed' (an efficiency one): the table's ``costs``


# the seven invariants are reference/invariants.py's rows; their graph_path column states them over a step's graph


def judge(step: GraphStep, graphs: Sequence[Graph], answers: Sequence[PathAnswer]) -> list[PathFinding]:
    """The invariants ``answers`` (one per rank) break on ``step`` with ``graphs`` captured (see judge_dp)."""
    return judge_dp([(step, answers)], graphs)


def judge_dp(groups: Sequence[tuple[GraphStep, Sequence[PathAnswer]]], graphs: Sequence[Graph]) -> list[PathFinding]:
    """The invariants broken by the answers of every DP rank (``groups``: each DP rank's step and its ranks'
    answers) with ``graphs`` captured: consensus on one descriptor over every rank of every DP rank, each rank
    replays the descriptor it dispatched (its mode included) and its layout takes it, it was captured, it
    holds every rank's rows and requests (and its query length is the rank's step's), no smaller graph of its
    mode fits every rank, and no faster mode's graph does. A rank's rows and requests are its answer's (what
    the release laid out); a layout it shows must be the placement's layout of the step (capacity_fit)."""
    known = set(graphs)
    found: list[PathFinding] = []
    multi = len(groups) > 1

    def add(invariant: str, why: str) -> None:
        if all(f.invariant != invariant for f in found):
            found.append(PathFinding(invariant, why, INVARIANT_TABLE[invariant].costs))

    def who(d: int, a: PathAnswer) -> str:
        return f"DP rank {d} rank {a.rank}" if multi else f"rank {a.rank}"

    best = fastest(graphs, held_by(groups))
    ranked = [(d, step, a) for d, (step, answers) in enumerate(groups) for a in answers]
    if len({a.dispatched for _, _, a in ranked}) > 1:
        shown = "; ".join(f"{who(d, a)}: {_shown(a.dispatched)}" for d, _, a in ranked)
        add("rank_consensus", f"the ranks dispatched different descriptors ({shown})")
    for d, step, a in ranked:
        if a.refusal is not None:
            add("admission_replay", f"{who(d, a)} dispatched {_shown(a.dispatched)} but its replay refused it: {a.refusal}")
        elif a.replayed != a.dispatched:
            add("admission_replay", f"{who(d, a)} dispatched {_shown(a.dispatched)} but replays {_shown(a.replayed)}")
        elif (a.replayed is not None and a.replayed.requests is not None and a.padded_requests is not None
              and a.padded_requests != a.replayed.requests):
            add("admission_replay", f"{who(d, a)} replays {a.replayed.describe()} with its layout padded to "
                                    f"{a.padded_requests} requests (it holds {a.requests}): the graph's inputs do not take it")
        g = a.dispatched
        if g is None:
            continue
        if g not in known:
            add("captured_bucket", f"{who(d, a)} dispatched {g.describe()}, which was never captured")
        if g.tokens < a.rows:
            add("padding_limit", f"{who(d, a)} dispatched {g.tokens} tokens below its {a.rows} rows")
        if not fits(g, a.rows, a.requests, step.uniform_query_len):
            add("capacity_fit", f"{who(d, a)} holds {a.rows} rows of {a.requests} requests; {g.describe()} does not hold them")
        elif a.layout is not None and a.replayed is not None:  # the rows the replay runs on: the live layout's?
            why = layout_mismatch(a.layout, lengths=step.lengths, cp_size=step.cp_size, strategy=step.placement,
                                  is_prefilling=step.prefilling, capacity=a.replayed.tokens)
            if why is not None:
                add("capacity_fit", f"{who(d, a)} replays {a.replayed.describe()}: {why}")
        if best is not None and best.mode == g.mode and (best.tokens, best.requests or 0) < (g.tokens, g.requests or 0):
            add("minimal_bucket", f"{best.describe()} fits every rank and is smaller than {g.describe()}, which {who(d, a)} dispatched")
    dispatched = next((a.dispatched for _, _, a in ranked if a.dispatched is not None), None)
    used = MODE_ORDER.index(dispatched.mode) if dispatched is not None else len(MODE_ORDER)
    if best is not None and MODE_ORDER.index(best.mode) < used:
        add("no_needless_fallback", f"{best.describe()} fits every rank, but the step ran "
                                    f"{dispatched.describe() if dispatched is not None else 'eagerly'}")
    return found


def _shown(graph: Graph | None) -> str:
    return graph.describe() if graph is not None else "eager"
