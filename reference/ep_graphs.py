"""Megatron-Core's dynamic-inference graphs over expert-parallel (EP) ranks: 3-D keys, matching, the EP sync, judged.

The model (Megatron-Core's dynamic inference engine, the third stack; docs/semantics.md):

- A captured graph is keyed in three dimensions (``GraphDims``): tokens T, prefill requests P and decode
  requests D, written ``[T]: P + D``. Graphs are ordered by (T, P, D); a step runs the least one that
  matches it.
- Matching (``applicable``, one row per ``MATCHING`` mode): a graph matches a step of (t, p, d) when T >= t
  and, for a decode-only step (p = 0), the graph is decode-only (P = 0) with D >= d; otherwise ``strict``
  (hybrid / Mamba models) needs P >= p and D >= d, ``loose`` (dense models) needs P >= p and P + D >= p + d
  (a prefill slot may hold a decode). Eager when none matches.
- EP ranks each have their own step (``RankStep``; ``None`` an idle rank, which runs a dummy step). Their
  expert exchange needs every rank on a graph of the same token count, or every rank eager, when the MoE
  dispatcher needs equal shapes (``DISPATCHERS``). What the ranks sync (an all-reduce MAX over some
  dimensions) before matching is the design under check (``SYNC_TABLE``).
- A graph holds a rank's step (``holds``) when T >= t (else tokens are dropped: ``padding_limit``) and its
  request slots hold the step's requests under the matching mode (``capacity_fit``; a decode may sit in a
  prefill slot of any graph, its slots just go unused).

``judge`` states the invariants (the ``ep_step`` column of reference/invariants.py) over one step's per-rank
answers: each rank's replayed graph (``None`` eager) and whether it skipped the collective the others entered
(a hang). Pure Python, no third-party imports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

MATCHING: Final = ("strict", "loose")
# dispatcher -> does its expert exchange need equal shapes on every EP rank (so every rank on a graph of
# the same token count, or every rank eager)? nvls handles per-rank token counts itself (its AGV/RSV path).
DISPATCHERS: Final = MappingProxyType({"alltoall": True, "nccl": True, "nvls": False})


@dataclass(frozen=True, order=True)
class GraphDims:
    """A graph's key, or a step's dimensions: ``tokens``, ``prefill`` requests, ``decode`` requests."""

    tokens: int
    prefill: int
    decode: int

    def __post_init__(self) -> None:
        for name in ("tokens", "prefill", "decode"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"GraphDims.{name} must be an int >= 0, got {value!r}")

    def __str__(self) -> str:
        return f"[{self.tokens}]: {self.prefill} P + {self.decode} D"

    @property
    def requests(self) -> int:
        return self.prefill + self.decode


RankStep = GraphDims | None  # one EP rank's step; None: idle (a dummy step)


def _mode(matching: str) -> str:
    if matching not in MATCHING:
        raise ValueError(f"matching must be one of {', '.join(MATCHING)}, got {matching!r}")
    return matching


def applicable(graph: GraphDims, step: GraphDims, matching: str) -> bool:
    """Megatron's match rule: may ``step`` run ``graph``? (the module docstring)."""
    strict = _mode(matching) == "strict"
    if graph.tokens < step.tokens:
        return False
    if step.prefill == 0:
        return graph.prefill == 0 and graph.decode >= step.decode
    if strict:
        return graph.prefill >= step.prefill and graph.decode >= step.decode
    return graph.prefill >= step.prefill and graph.requests >= step.requests


def match(step: GraphDims, graphs: Sequence[GraphDims], matching: str) -> GraphDims | None:
    """The least captured graph that matches ``step`` (None: eager)."""
    fitting = [g for g in graphs if applicable(g, step, matching)]
    return min(fitting) if fitting else None


def holds(graph: GraphDims, step: RankStep, matching: str) -> bool:
    """Does ``graph`` hold ``step``'s tokens and requests (an idle rank's dummy step fits any graph)?"""
    if step is None:
        return True
    if graph.tokens < step.tokens or graph.prefill < step.prefill:
        return False
    if _mode(matching) == "strict" and step.prefill > 0:
        return graph.decode >= step.decode
    return graph.requests >= step.requests


def runnable_tokens(step: RankStep, graphs: Sequence[GraphDims], matching: str) -> frozenset[int] | None:
    """The token counts of the graphs ``step`` matches (None: an idle rank, which can run any)."""
    if step is None:
        return None
    return frozenset(g.tokens for g in graphs if applicable(g, step, matching))


def common_tokens(steps: Sequence[RankStep], graphs: Sequence[GraphDims], matching: str) -> int | None:
    """The least token count at which every rank has a graph it matches: the graph every rank can run
    (None: none; every rank idle counts as none, there is nothing to run)."""
    shared: frozenset[int] | None = None
    for step in steps:
        tokens = runnable_tokens(step, graphs, matching)
        if tokens is not None:
            shared = tokens if shared is None else shared & tokens
    return min(shared) if shared else None


# --- the EP sync: what each design all-reduces (MAX) before matching ---------------------------------------

def sync_tokens(steps: Sequence[GraphDims]) -> list[GraphDims]:
    """Megatron-Core 0.16: the token count is synced, each rank keeps its own request counts."""
    t = max(s.tokens for s in steps)
    return [GraphDims(t, s.prefill, s.decode) for s in steps]


def sync_all(steps: Sequence[GraphDims]) -> list[GraphDims]:
    """The synced form (0.17 under strict matching): tokens, prefill and decode requests all synced."""
    synced = GraphDims(max(s.tokens for s in steps), max(s.prefill for s in steps), max(s.decode for s in steps))
    return [synced] * len(steps)


SYNC_TABLE: Final[Mapping[str, Callable[[Sequence[GraphDims]], list[GraphDims]]]] = MappingProxyType(
    {"tokens": sync_tokens, "all": sync_all}
)


def synced_match(steps: Sequence[GraphDims], graphs: Sequence[GraphDims], matching: str, sync: str) -> list[GraphDims | None]:
    """Each rank's graph under the design ``sync`` (a ``SYNC_TABLE`` id): its synced dims, then ``match``."""
    if sync not in SYNC_TABLE:
        raise ValueError(f"sync must be one of {', '.join(SYNC_TABLE)}, got {sync!r}")
    return [match(s, graphs, matching) for s in SYNC_TABLE[sync](steps)]


# --- judging a step ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class EpAnswer:
    """What EP rank ``rank`` ran: the ``graph`` it replayed (None: eager), or ``hung`` (it skipped a
    collective the other ranks entered, or entered one they skipped)."""

    rank: int
    graph: GraphDims | None
    hung: bool = False

    def describe(self) -> str:
        return "hung at the EP collective" if self.hung else f"graph {self.graph}" if self.graph else "eager"


@dataclass(frozen=True)
class EpFinding:
    """A broken invariant (``info``: reported, not a violation), its ``kind`` (rank_consensus: ``hang``,
    ``graph_and_eager``, ``token_mismatch``, or the information ``3d_mismatch``; else the invariant's id) and
    why, in the step's terms."""

    invariant: str
    why: str
    info: bool = False
    kind: str = ""


def judge(steps: Sequence[RankStep], graphs: Sequence[GraphDims], answers: Sequence[EpAnswer], *,
          matching: str, equal_shapes: bool) -> list[EpFinding]:
    """Every invariant ``steps`` (one per EP rank) break under ``answers``, given the captured ``graphs``,
    the ``matching`` mode and whether the dispatcher needs ``equal_shapes``."""
    if len(steps) != len(answers):
        raise ValueError(f"answers must have one per EP rank ({len(steps)}), got {len(answers)}")
    _mode(matching)
    found: list[EpFinding] = []
    hung = [a.rank for a in answers if a.hung]
    if hung:
        return [EpFinding("rank_consensus", f"EP rank(s) {hung} hang: a collective entered by some ranks only", kind="hang")]
    ran = [a.graph for a in answers]
    captured = set(graphs)
    for a, step in zip(answers, steps):
        if a.graph is None:
            continue
        if a.graph not in captured:
            found.append(EpFinding("captured_bucket", f"EP rank {a.rank} replays {a.graph}, never captured"))
        if step is not None and a.graph.tokens < step.tokens:
            found.append(EpFinding("padding_limit", f"EP rank {a.rank}'s {step.tokens} tokens exceed its graph {a.graph}"))
        elif not holds(a.graph, step, matching):
            found.append(EpFinding("capacity_fit", f"EP rank {a.rank}'s step {step} does not fit its graph {a.graph}"))
    tokens = {g.tokens if g is not None else None for g in ran}
    if equal_shapes and len(tokens) > 1:
        shown = ", ".join(f"rank {a.rank}: {a.describe()}" for a in answers)
        kind = "graph_and_eager" if None in tokens else "token_mismatch"
        found.append(EpFinding("rank_consensus", f"the dispatcher needs equal shapes; EP ranks ran {shown}", kind=kind))
    elif equal_shapes and len({g for g in ran}) > 1:
        found.append(EpFinding("rank_consensus", "equal token counts, different 3-D graphs: "
                               + ", ".join(f"rank {a.rank}: {a.describe()}" for a in answers), info=True, kind="3d_mismatch"))
    best = _best(steps, graphs, matching, equal_shapes)
    if all(g is None for g in ran) and any(b is not None for b in best):
        found.append(EpFinding("no_needless_fallback", f"every rank ran eager; graphs of {_tokens(best)} tokens match every rank"))
    else:
        for a, b in zip(answers, best):
            if a.graph is not None and b is not None and a.graph.tokens > b:
                found.append(EpFinding("minimal_bucket", f"EP rank {a.rank} ran {a.graph}; a graph of {b} tokens matches "
                                       + ("every rank" if equal_shapes else "its step")))
                break
    return found


def _best(steps: Sequence[RankStep], graphs: Sequence[GraphDims], matching: str, equal_shapes: bool) -> list[int | None]:
    """The least token count each rank can run: one shared count when the dispatcher needs equal shapes."""
    if equal_shapes:
        shared = common_tokens(steps, graphs, matching)
        return [shared] * len(steps)
    out: list[int | None] = []
    for step in steps:
        tokens = runnable_tokens(step, graphs, matching)
        out.append(min(tokens) if tokens else None)
    return out


def _tokens(best: Sequence[int | None]) -> str:
    return "/".join(str(b) for b in dict.fromkeys(best) if b is not None)



# --- a configuration of the engine, and a step over its EP ranks -------------------------------------------

MODELS: Final = MappingProxyType({"dense": "loose", "hybrid": "strict"})  # model kind -> its matching mode
SIZINGS: Final = ("exponential", "linear")


@dataclass(frozen=True)
class EpConfig:
    """The knobs of a Megatron-Core engine that decide its graphs and their matching: EP size, model kind
    (``MODELS``), MoE dispatcher (``DISPATCHERS``), speculative (MTP) tokens, the graph count (-1: auto) and
    sizing, the request and token limits, the mixed-prefill request count, non-decode graphs on or off, the
    prefill graph budget (``cuda_graph_max_tokens``, ``all_prefills``) and the tensor-parallel size."""

    ep_size: int
    model: str = "dense"
    dispatcher: str = "alltoall"
    spec_tokens: int = 0
    num_cuda_graphs: int = 8
    max_requests: int = 32
    max_tokens: int = 256
    max_sequence_length: int = 4096
    mixed_prefill_count: int = 16
    non_decode_graphs: bool = True
    all_prefills: bool = False
    cuda_graph_max_tokens: int = 256
    sizing: str = "exponential"
    tp_size: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.ep_size <= 64:
            raise ValueError(f"EpConfig.ep_size must be in 1..64, got {self.ep_size!r}")
        if self.model not in MODELS:
            raise ValueError(f"EpConfig.model must be one of {', '.join(MODELS)}, got {self.model!r}")
        if self.dispatcher not in DISPATCHERS:
            raise ValueError(f"EpConfig.dispatcher must be one of {', '.join(DISPATCHERS)}, got {self.dispatcher!r}")
        if self.sizing not in SIZINGS:
            raise ValueError(f"EpConfig.sizing must be one of {', '.join(SIZINGS)}, got {self.sizing!r}")
        if self.num_cuda_graphs != -1 and self.num_cuda_graphs < 1:
            raise ValueError(f"EpConfig.num_cuda_graphs must be -1 (auto) or >= 1, got {self.num_cuda_graphs!r}")

    @property
    def matching(self) -> str:
        return MODELS[self.model]

    @property
    def equal_shapes(self) -> bool:
        return DISPATCHERS[self.dispatcher]

    @property
    def tokens_per_decode(self) -> int:
        return self.spec_tokens + 1

    def describe(self) -> str:
        return (f"ep_size={self.ep_size} model={self.model} ({self.matching} matching) dispatcher={self.dispatcher} "
                f"spec_tokens={self.spec_tokens} num_cuda_graphs={self.num_cuda_graphs} sizing={self.sizing} "
                f"max_requests={self.max_requests} max_tokens={self.max_tokens} "
                f"mixed_prefill_count={self.mixed_prefill_count} non_decode_graphs={self.non_decode_graphs} "
                f"all_prefills={self.all_prefills} cuda_graph_max_tokens={self.cuda_graph_max_tokens} tp_size={self.tp_size}")


def rank_step(prefill_tokens: Sequence[int], decodes: int, config: EpConfig) -> GraphDims:
    """A rank's step from its prefills' token counts and its decode count (each decode 1 + spec tokens)."""
    if any(t < 1 for t in prefill_tokens) or decodes < 0:
        raise ValueError(f"prefill_tokens must be >= 1 each and decodes >= 0, got {list(prefill_tokens)!r}, {decodes!r}")
    return GraphDims(sum(prefill_tokens) + decodes * config.tokens_per_decode, len(prefill_tokens), decodes)


# --- the CUDA-graph-aware admission (Megatron-Core 0.19 on): a chunked prefill snapped to a graph boundary ----

def largest_chunk(active: GraphDims, graphs: Sequence[GraphDims], budget: int, matching: str) -> int | None:
    """The largest chunk of a new prefill a graph boundary allows within ``budget``: the most c in 1..budget such
    that the step with the chunk added, (active tokens + c, active prefills + 1, active decodes), matches a
    captured graph of exactly active tokens + c tokens (None: no boundary within the budget)."""
    best: int | None = None
    for g in graphs:
        chunk = g.tokens - active.tokens
        if 1 <= chunk <= budget and applicable(g, GraphDims(g.tokens, active.prefill + 1, active.decode), matching):
            best = chunk if best is None else max(best, chunk)
    return best


def judge_chunk(active: GraphDims, graphs: Sequence[GraphDims], budget: int, chunk: int | None, matching: str) -> list[EpFinding]:
    """The admission's invariants for one chunked prefill planned by the engine (``chunk``; None: no graph
    boundary found, the engine admits the whole budget eagerly): the chunk is within the budget, the step it
    makes replays a graph of the planned token count (admission_replay), and it is the largest a boundary
    allows (no_needless_fallback)."""
    found: list[EpFinding] = []
    if chunk is not None and not 1 <= chunk <= budget:
        found.append(EpFinding("padding_limit", f"the admitted chunk {chunk} is outside the budget 1..{budget}", kind="chunk"))
        return found
    if chunk is not None:
        step = GraphDims(active.tokens + chunk, active.prefill + 1, active.decode)
        ran = match(step, graphs, matching)
        if ran is None or ran.tokens != step.tokens:
            found.append(EpFinding("admission_replay", f"admitted a chunk of {chunk} for a graph of {step.tokens} tokens; "
                                   f"the step {step} replays {ran if ran is not None else 'eager'}", kind="chunk"))
    best = largest_chunk(active, graphs, budget, matching)
    if best is not None and (chunk is None or chunk < best):
        found.append(EpFinding("no_needless_fallback", f"admitted a chunk of {chunk if chunk is not None else 'none (eager)'}; "
                               f"a graph boundary allows {best} within the budget {budget}", kind="chunk"))
    return found
