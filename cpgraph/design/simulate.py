"""Designs side by side on one workload: what each does with every batch, and what it costs.

Per batch (cpgraph.design.evaluate): served by a graph (admitted, replay fits), eager, or would crash
(admitted, but replay overflows, has no buffer, ranks disagree, or replays another graph than the one
admitted: what the review catches). Padded rows: global B - n for a graph batch (under local keying, where
a size s holds s rows on every rank, P*s - n), 0 for an eager one; per rank, the rows a rank executes (the
bucket's static capacity for a graph, align_up of the busiest load when eager) minus its real tokens,
averaged over ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cpgraph.design.evaluate import evaluate
from cpgraph.design.schema import Design
from cpgraph.reference import rank_loads


@dataclass(frozen=True)
class SimResult:
    design: Design
    workload: str
    batches: int
    graph: int
    eager: int
    overflows: int
    mean_pad: float
    p99_pad: float
    mean_rank_pad: float
    p99_rank_pad: float
    static_rows: int  # per rank, over all buckets
    static_bytes: int
    first_overflow: tuple[int, ...] | None
    first_violated: tuple[str, ...] = ()  # the invariants the first crashing batch breaks

    @property
    def graph_share(self) -> float:
        return self.graph / self.batches


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else 0.0


def simulate(design: Design, batches: Sequence[tuple[int, ...]], workload: str = "workload") -> SimResult:
    """Replay every batch through the design (the reference decides, the layout checks the fit)."""
    graph = eager = overflows = 0
    pads: list[float] = []
    rank_pads: list[float] = []
    first: tuple[int, ...] | None = None
    first_violated: tuple[str, ...] = ()
    p = design.cp_size
    per_size = 1 if design.keyed.recorded_capacity else p  # a local size s is s rows on each of P ranks
    for batch in batches:
        outcome = evaluate(design, batch)
        n = outcome.num_tokens
        loads = rank_loads(batch, cp_size=p, strategy=design.strategy)
        if outcome.admitted and outcome.crashes:
            overflows += 1
            if first is None:
                first, first_violated = batch, outcome.violated
            pads.append(float(per_size * (outcome.bucket or n) - n))
            rank_pads.append(float(max(outcome.replay_rows[0] or 0, outcome.capacity[0] or 0)) - n / p)
        elif outcome.admitted:
            graph += 1
            pads.append(float(per_size * (outcome.bucket or n) - n))
            rank_pads.append(float(outcome.capacity[0] or 0) - sum(loads) / p)
        else:
            eager += 1
            pads.append(0.0)
            rank_pads.append(float(outcome.required_local_tokens) - sum(loads) / p)
    caps = design.capacities()[0]
    rows = sum(caps.values())
    return SimResult(
        design,
        workload,
        len(batches),
        graph,
        eager,
        overflows,
        sum(pads) / len(pads),
        _p99(pads),
        sum(rank_pads) / len(rank_pads),
        _p99(rank_pads),
        rows,
        rows * design.bytes_per_row,
        first,
        first_violated,
    )


def table(results: Sequence[SimResult]) -> list[list[str]]:
    """Header and one row per design."""
    head = [
        "design", "graph", "eager", "would crash", "mean pad", "p99 pad",
        "mean pad/rank", "p99 pad/rank", "static rows/rank", "static MiB/rank",
    ]
    rows = [head]
    for r in results:
        rows.append(
            [
                r.design.name,
                f"{r.graph} ({r.graph_share:.1%})",
                str(r.eager),
                str(r.overflows),
                f"{r.mean_pad:.1f}",
                f"{r.p99_pad:.0f}",
                f"{r.mean_rank_pad:.1f}",
                f"{r.p99_rank_pad:.0f}",
                str(r.static_rows),
                f"{r.static_bytes / 2**20:.1f}",
            ]
        )
    return rows
