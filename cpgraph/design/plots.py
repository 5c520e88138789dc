"""PNG figures (matplotlib, Agg backend) a person reads at a glance: where each design runs graphs, falls
back to eager or would crash, its padding against token count, and simulations. Every figure carries a
colour key in its legend; regions too narrow to see at the figure's scale get a marker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from cpgraph.design.efficiency import Efficiency, runs  # noqa: E402
from cpgraph.design.report import Review  # noqa: E402
from cpgraph.design.review import InvariantResult  # noqa: E402
from cpgraph.design.schema import Design  # noqa: E402
from cpgraph.design.simulate import SimResult  # noqa: E402

SOME_EAGER = "#fdb863"  # light orange: some batches of this (n, R) run eagerly
ALL_EAGER = "#e66101"  # dark orange: every batch runs eagerly
CRASH = "#d7191c"  # red: some batch's replay overflows (or breaks another safety invariant)
GRAPH = "#4393c3"  # blue: replayed as a graph
CRASHING = ("capacity_fit", "captured_bucket", "admission_replay", "rank_consensus")
CRASH_REQUEST_BOUND = 8
MIN_VISIBLE = 0.004  # of the x range: a region narrower than this is drawn this wide (and marked, when few)
MAX_MARKED = 5


@dataclass(frozen=True)
class Panel:
    """One design's regions: per request count, fallback runs and crash runs (token ranges), and the
    smallest crashing batch found by the review (n, requests), if it refuted a safety invariant."""

    name: str
    efficiency: Efficiency
    crash: tuple[tuple[int, tuple[tuple[int, int], ...]], ...]
    witnesses: tuple[tuple[int, int, str], ...]  # (n, requests, invariant)


def crash_region(design: Design, request_bound: int, top: int) -> tuple[tuple[int, tuple[tuple[int, int], ...]], ...]:
    """Token ranges where some CP-active batch breaks a safety invariant (it would crash a server), exact
    for any number of requests (cpgraph.design.efficiency.crash_region; row 0 = any R) for live-layout
    designs; () for others (their replay reads the padded count, so only the review's witness is drawn)."""
    from cpgraph.design.efficiency import crash_region as exact_crash_region

    spans = exact_crash_region(design)
    return ((0, spans),) if spans else ()


def _witnesses(results: Sequence[InvariantResult]) -> tuple[tuple[int, int, str], ...]:
    return tuple(
        (r.witness.num_tokens, len(r.witness.extend_seq_lens), r.invariant)
        for r in results
        if r.status == "refuted" and r.invariant in CRASHING and r.witness is not None
    )


def panels_of(review: Review) -> list[Panel]:
    """The design (and the old one) as panels; crash regions only for designs the review refuted."""
    from cpgraph.design.efficiency import efficiency

    pairs: list[tuple[Design, Efficiency, Sequence[InvariantResult]]] = [(review.design, review.efficiency, review.invariants)]
    if review.old is not None:
        pairs.append((review.old[0], efficiency(review.old[0]), review.old[1]))
    out = []
    for design, eff, results in pairs:
        witnesses = _witnesses(results)
        bound = min(eff.request_bound, CRASH_REQUEST_BOUND)
        crash = crash_region(design, bound, eff.largest_bucket) if witnesses else ()
        out.append(Panel(design.name, eff, crash, witnesses))
    return out


def _bar(ax: Any, y: float, lo: int, hi: int, least: float, **style: Any) -> bool:
    """Draw [lo, hi] on row y at least ``least`` wide; True when it had to be widened (so it gets a marker)."""
    width = hi - lo + 1
    ax.barh(y, max(width, least), left=lo, height=0.8, **style)
    return width < least


def plot_regions(panels: Sequence[Panel], path: Path) -> Path:
    """One panel per design, one row per request count: graph (blank), some/every batch eager (orange),
    crash (red, hatched), the review's smallest crashing batch (red X); narrow regions marked."""
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 1.4 + 2.2 * len(panels)), squeeze=False)
    for ax, panel in zip(axes[:, 0], panels):
        e = panel.efficiency
        least = e.largest_bucket * MIN_VISIBLE
        for region in e.regions:
            y = region.requests
            for lo, hi in region.some_eager:
                _bar(ax, y, lo, hi, least, color=SOME_EAGER)
            for lo, hi in region.all_eager:
                _bar(ax, y, lo, hi, least, color=ALL_EAGER)
        for requests, spans in panel.crash:
            narrow = [lo for lo, hi in spans if _bar(ax, requests, lo, hi, least, color=CRASH, hatch="xx", edgecolor="#67000d", linewidth=0.3)]
            if len(narrow) <= MAX_MARKED:  # a few isolated slivers get a marker; many already read as a pattern
                for lo in narrow:
                    ax.plot(lo, requests + 0.5, marker="v", color=CRASH, markersize=7, markeredgecolor="white", zorder=4)
        rows = max([e.request_bound, 1] + [w[1] for w in panel.witnesses])
        if rows > e.request_bound:  # the review's witness needs more requests than the regions enumerate
            ax.axhspan(e.request_bound + 0.5, rows + 0.9, color="#f0f0f0", zorder=0)
            ax.text(e.largest_bucket * 0.5, rows + 0.5, f"R > {e.request_bound}: regions not enumerated; the review's witness only",
                    ha="center", va="center", fontsize=8, color="#555555")
        for n, requests, invariant in panel.witnesses[:1]:
            ax.plot(n, requests, marker="X", color="black", markersize=11, markeredgecolor="white", zorder=5)
            ax.annotate(f"smallest crash: R={requests}, n={n} ({invariant})", (n, requests), xytext=(8, -3),
                        textcoords="offset points", fontsize=8, va="top")
        ax.axvline(e.largest_bucket, color="k", lw=0.8, ls="--")
        ax.set_xlim(0, e.largest_bucket * 1.03)
        ax.set_ylim(0.4, rows + 0.9)
        ax.set_ylabel("requests R")
        step = 1 if rows <= 10 else (rows + 9) // 10
        ax.set_yticks(sorted(set(range(1, rows + 1, step)) | {rows}))
        crashes = sum(len(s) for _, s in panel.crash)
        verdict = "UNSAFE: some batches crash" if panel.witnesses else "safe"
        ax.set_title(f"{panel.name} ({verdict}{f', {crashes} crash ranges' if crashes else ''})", fontsize=10, loc="left")
    axes[-1, 0].set_xlabel("num_tokens n")
    key = [
        Patch(color=SOME_EAGER, label="some batches run eagerly"),
        Patch(color=ALL_EAGER, label="every batch runs eagerly"),
        Patch(facecolor=CRASH, hatch="xx", edgecolor="#67000d", label="some batch crashes (replay overflows)"),
        Line2D([], [], marker="X", color="black", markeredgecolor="white", ls="", markersize=9, label="smallest crashing batch (review)"),
        Line2D([], [], marker="v", color=CRASH, ls="", label="an isolated crash range too narrow to see"),
        Line2D([], [], color="k", lw=0.8, ls="--", label="largest bucket (above: always eager)"),
    ]
    fig.legend(handles=key, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1 if len(panels) > 1 else 0.16, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_padding(panels: Sequence[Panel], path: Path) -> Path:
    """Rows executed per real token (B/n) against n, per design in its own colour: the band between the
    least and the largest B/n over request mixes; the n where some batch of that design crashes in red."""
    fig, ax = plt.subplots(figsize=(11, 4.4))
    handles: list[Any] = []
    top = 1.0
    for index, panel in enumerate(panels):
        curve = panel.efficiency.curve
        colour = f"C{index}"
        if curve:
            xs = [c[0] for c in curve]
            ax.fill_between(xs, [c[1] for c in curve], [c[2] for c in curve], color=colour, alpha=0.25, lw=0)
            ax.plot(xs, [c[2] for c in curve], color=colour, lw=1.6 - 0.4 * min(index, 2), ls=("-", "--", ":")[index % 3])
            top = max(top, max(c[2] for c in curve))
            handles.append(Line2D([], [], color=colour, lw=1.6 - 0.4 * min(index, 2), ls=("-", "--", ":")[index % 3],
                                  label=f"{panel.name}: largest B/n (band: least..largest over request mixes)"))
        spans = runs(sorted({n for _, s in panel.crash for lo, hi in s for n in range(lo, hi + 1)}))
        for lo, hi in spans:
            ax.axvspan(lo, hi + 1, ymin=0, ymax=0.04 + 0.03 * index, color=CRASH, alpha=0.9, lw=0)
        if spans:
            handles.append(Patch(color=CRASH, label=f"{panel.name}: n where some batch crashes (strip at the bottom)"))
    ax.set_xlabel("num_tokens n")
    ax.set_ylabel("padding ratio B / n (admitted batches)")
    ax.set_ylim(0.95, top * 1.05)
    ax.set_title("global padding per design", fontsize=10, loc="left")
    ax.legend(handles=handles, fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_review(review: Review, folder: Path) -> list[Path]:
    """The review's figures in ``folder``: eager_fallback.png (fallback and crash regions per design)
    and padding.png (B/n per design)."""
    folder.mkdir(parents=True, exist_ok=True)
    panels = panels_of(review)
    return [plot_regions(panels, folder / "eager_fallback.png"), plot_padding(panels, folder / "padding.png")]


def plot_fallback_region(efficiencies: Sequence[tuple[str, Efficiency]], path: Path) -> Path:
    """The regions figure without crash data (kept for callers that have only efficiencies)."""
    return plot_regions([Panel(name, e, (), ()) for name, e in efficiencies], path)


def plot_simulation(results: Sequence[SimResult], path: Path) -> Path:
    """Per design: share of batches served by graph, eager, crash (every non-zero share labelled, a
    crash share marked however small); and padded rows per batch (global)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4))
    names = [r.design.name for r in results]
    graph = [r.graph / r.batches if r.batches else 0.0 for r in results]
    eager = [r.eager / r.batches if r.batches else 0.0 for r in results]
    crash = [r.overflows / r.batches if r.batches else 0.0 for r in results]
    xs = range(len(results))
    left.bar(xs, graph, color=GRAPH)
    left.bar(xs, eager, bottom=graph, color=ALL_EAGER)
    left.bar(xs, crash, bottom=[g + e for g, e in zip(graph, eager)], color=CRASH, hatch="xx", edgecolor="#67000d")
    for x, (g, e, c) in enumerate(zip(graph, eager, crash)):
        if g > 0.04:
            left.text(x, g / 2, f"{g:.1%}", ha="center", va="center", fontsize=8, color="white")
        if e > 0.04:
            left.text(x, g + e / 2, f"{e:.1%}", ha="center", va="center", fontsize=8)
        elif e > 0:  # too thin to label inside: beside the bar
            left.text(x + 0.42, g + e / 2, f"{e:.1%} eager", ha="left", va="center", fontsize=7, color=ALL_EAGER)
        if c > 0:
            left.plot(x, 1.04, marker="v", color=CRASH, markersize=9, clip_on=False)
            left.text(x, 1.08, f"{c:.1%} crash ({results[x].overflows})", ha="center", va="bottom", fontsize=8, color=CRASH)
    left.set_xticks(list(xs), names)
    left.set_ylim(0, 1.16)
    left.set_ylabel("share of batches")
    left.set_title(f"{results[0].workload}: how batches run", fontsize=10, loc="left")
    left.legend(
        handles=[
            Patch(color=GRAPH, label="graph replay"),
            Patch(color=ALL_EAGER, label="eager fallback"),
            Patch(facecolor=CRASH, hatch="xx", edgecolor="#67000d", label="would crash"),
            Line2D([], [], marker="v", color=CRASH, ls="", label="crash share (any size)"),
        ],
        fontsize=8, loc="lower right",
    )
    right.bar(list(xs), [r.mean_pad for r in results], color="#92c5de", label="mean")
    right.plot(list(xs), [r.p99_pad for r in results], "kx", label="p99")
    right.set_xticks(list(xs), names)
    right.set_ylabel("padded rows per batch (global)")
    right.set_title("padding (eager batches pad 0)", fontsize=10, loc="left")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
