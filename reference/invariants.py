"""The invariants as one table: id, kind, cost and one sentence per subject, stated once for check, review,
the decode review, the reports, the emitted tests and the spec's docstrings.

A row's columns:

- ``id``: the stable id every judge, report and proof uses.
- ``kind``: ``safety`` (breaking it is a correctness failure) or ``efficiency`` (it wastes time).
- ``cost``: what breaking it costs: ``speed``, or the correctness failure it causes.
- one sentence per subject the checker judges (``SUBJECTS``): a prefill batch keyed by the global count n
  (``batch_global``: a bucket of n tokens, sglang), a prefill batch keyed by the rank-local rows m
  (``batch_local``: a size of rank-local rows, vLLM 0.29 on), and a step on a graph path with its DP ranks
  (``graph_path``: a descriptor of mode, tokens, requests and query length, vLLM's decode and mixed graphs), and
  an expert-parallel step with one batch per EP rank (``ep_step``: Megatron-Core's 3-D graphs,
  reference/ep_graphs.py). A new subject is a new column here and a name in ``SUBJECTS``; the ids, kinds and
  costs stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, Mapping

Kind = Literal["safety", "efficiency"]
SUBJECTS: Final = ("batch_global", "batch_local", "graph_path", "ep_step")  # the sentence columns, in table order
KEYINGS: Final = MappingProxyType({"global": "batch_global", "local": "batch_local"})  # a batch's keying -> its column


@dataclass(frozen=True)
class Invariant:
    """One row: the stable id, whether breaking it crashes (safety) or wastes (efficiency), what it costs, and
    the one sentence that states it on each subject."""

    id: str
    kind: Kind
    cost: str
    batch_global: str
    batch_local: str
    graph_path: str
    ep_step: str = ""  # an expert-parallel step, one batch per EP rank (Megatron-Core; reference/ep_graphs.py)

    @property
    def sentence(self) -> str:
        """The batch sentence under global keying (the table's first column)."""
        return self.batch_global

    @property
    def local_sentence(self) -> str:
        """The batch sentence under local keying."""
        return self.batch_local

    @property
    def costs(self) -> str:
        """``correctness`` (a safety invariant) or ``speed`` (an efficiency one), as a report's cost field."""
        return "correctness" if self.kind == "safety" else "speed"

    def stated(self, subject: str = "global") -> str:
        """The sentence on ``subject``: a column of ``SUBJECTS``, or a batch's keying ('global', 'local')."""
        column = KEYINGS.get(subject, subject)
        if column not in SUBJECTS:
            raise ValueError(f"subject must be one of {', '.join((*KEYINGS, *SUBJECTS))}; got {subject!r}")
        text: str = getattr(self, column)
        return text


SPEED: Final = "speed"
INVARIANT_TABLE: Final[Mapping[str, Invariant]] = MappingProxyType(
    {
        row.id: row
        for row in (
            Invariant(
                "rank_consensus", "safety",
                "a hang or a mis-sized collective: ranks replay graphs of different shapes",
                "every rank decides the same admit and bucket",
                "every rank decides the same admit and size",
                "every rank (and every DP rank) dispatches the same descriptor, its mode included",
                ep_step="every EP rank replays a graph of the same token count, or every EP rank runs eager, where the "
                        "dispatcher needs equal shapes; no rank skips a collective the others enter",
            ),
            Invariant(
                "admission_replay", "safety",
                "a crash at replay: a batch admission let through has no graph, or another one, to replay",
                "admitted on a rank => the batch is CP-active, and replay on that rank succeeds, returns the admitted bucket and its rows fit",
                "admitted on a rank => replay on that rank succeeds under the size admission chose, and its rows fit",
                "each rank replays the descriptor it dispatched, and its layout takes it",
                ep_step="the graph the CUDA-graph-aware admission planned for a step is the graph the step replays",
            ),
            Invariant(
                "captured_bucket", "safety",
                "a crash at replay: the graph was never captured",
                "the bucket is in the capture list and has a recorded capacity",
                "the size is in the capture list (a size s holds s rows on every rank)",
                "the descriptor was captured",
                ep_step="each EP rank's graph is in the captured list",
            ),
            Invariant(
                "padding_limit", "safety",
                "rows dropped (a graph smaller than the batch) or padding past the limit the stack promises",
                "the bucket B is within the padding limit: n <= B <= F*n",
                "the size holds the key: m <= s, m the largest rank-local rows (no padding window)",
                "the descriptor's tokens are at least the key (the largest rank-local rows)",
                ep_step="each EP rank's graph has at least the rank's tokens",
            ),
            Invariant(
                "capacity_fit", "safety",
                "a static-buffer overflow or wrong output: the live rows do not fit the graph's buffers, or are not the rows it runs on",
                "the live layout's rows on every rank fit the chosen bucket's recorded capacity (and a layout a rank shows "
                "holds exactly its strategy's tokens from row 0, each read back from the row that holds it)",
                "the live layout's rows on every rank fit the chosen size s (and a layout a rank shows holds exactly its "
                "strategy's tokens from row 0, each read back from the row that holds it)",
                "the descriptor holds every rank's rows and, a FULL one, its requests and query length (and a layout a "
                "rank shows holds exactly its placement's tokens from row 0, each read back from the row that holds it)",
                ep_step="each EP rank's graph holds its prefill and decode requests (a decode may take a prefill slot)",
            ),
            Invariant(
                "minimal_bucket", "efficiency", SPEED,
                "no smaller captured bucket would fit",
                "no smaller captured size would fit",
                "no smaller captured graph of the chosen mode fits every rank",
                ep_step="no graph of fewer tokens matches every EP rank (each rank under its own matching)",
            ),
            Invariant(
                "no_needless_fallback", "efficiency", SPEED,
                "if some captured bucket fits, the batch is admitted",
                "if some captured size holds the key, the batch is admitted",
                "the fastest captured graph that fits every rank is run: FULL before PIECEWISE before eager",
                ep_step="if some token count has a graph every EP rank matches, the step runs graphs; a chunked "
                        "prefill is admitted at the largest chunk a graph boundary allows within the budget",
            ),
        )
    }
)

SAFETY: Final = tuple(i for i, row in INVARIANT_TABLE.items() if row.kind == "safety")
EFFICIENCY: Final = tuple(i for i, row in INVARIANT_TABLE.items() if row.kind == "efficiency")
INVARIANTS: Final = SAFETY + EFFICIENCY


def sentence(invariant: str, subject: str = "global") -> str:
    """The sentence for ``invariant`` on ``subject`` (a column of ``SUBJECTS`` or a batch keying); ValueError
    names the known ids."""
    if invariant not in INVARIANT_TABLE:
        raise ValueError(f"invariant must be one of {', '.join(INVARIANT_TABLE)}; got {invariant!r}")
    return INVARIANT_TABLE[invariant].stated(subject)
