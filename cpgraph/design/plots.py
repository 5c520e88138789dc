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

from cpgraph.design.efficiency import Efficiency  # noqa: E402
from cpgraph.design.segments import runs  # noqa: E402
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


def crash_rows(design: Design, request_bound: int, top: int) -> tuple[tuple[int, tuple[tuple[int, int], ...]], ...]:
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
        crash = crash_rows(design, bound, eff.top) if witnesses else ()
        out.append(Panel(design.name, eff, crash, witnesses))
    return out


def _bar(ax: Any, y: float, lo: int, hi: int, least: float, **style: Any) -> bool:
    """Draw [lo, hi] on row y at least ``least`` wide; True when it had to be widened (so it gets a marker)."""
    width = hi - lo + 1
    ax.barh(y, max(width, least), left=lo, height=0.8, **style)
    return width < least


def _lanes(panel: Panel) -> list[tuple[str, str, Any]]:
    """The rows of a design's panel, top to bottom: (label, kind, data) with kind 'eager' (a Region) or
    'crash' (token ranges); a design refuted without crash ranges (a padded layout) gets a crash row for
    its witness."""
    lanes: list[tuple[str, str, Any]] = []
    for region in panel.efficiency.regions:
        lanes.append(("eager fallback" + ("" if region.requests == 0 else f", R={region.requests}"), "eager", region))
    for requests, spans in panel.crash:
        lanes.append(("crash" + ("" if requests == 0 else f", R={requests}"), "crash", spans))
    if panel.witnesses and not panel.crash:
        lanes.append(("crash", "crash", ()))
    return lanes


def plot_regions(panels: Sequence[Panel], path: Path) -> Path:
    """One panel per design, one row per region: where some / every batch runs eagerly (orange), where
    some batch would crash (red, hatched), and the review's smallest crashing batch (X); regions too
    narrow to see at this scale are widened (and marked with a triangle when isolated)."""
    heights = [max(len(_lanes(p)), 1) for p in panels]
    tall = 1.1 + sum(0.5 * h + 0.9 for h in heights)
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, tall), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, panel in zip(axes[:, 0], panels):
        e = panel.efficiency
        least = e.top * MIN_VISIBLE
        lanes = _lanes(panel)
        crash_row = None
        for y, (_, kind, data) in enumerate(lanes):
            if kind == "eager":
                for lo, hi in data.some_eager:
                    _bar(ax, y, lo, hi, least, color=SOME_EAGER)
                for lo, hi in data.all_eager:
                    _bar(ax, y, lo, hi, least, color=ALL_EAGER)
                continue
            crash_row = y if crash_row is None else crash_row
            narrow = [lo for lo, hi in data if _bar(ax, y, lo, hi, least, color=CRASH, hatch="xx", edgecolor="#67000d", linewidth=0.3)]
            if len(narrow) <= MAX_MARKED:  # a few isolated slivers get a marker; many already read as a pattern
                for lo in narrow:
                    ax.plot(lo, y - 0.5, marker="v", color=CRASH, markersize=8, markeredgecolor="white", zorder=4, clip_on=False)
        for n, requests, invariant in panel.witnesses[:1]:
            y = crash_row if crash_row is not None else 0
            ax.plot(n, y, marker="X", color="black", markersize=11, markeredgecolor="white", zorder=5)
            ax.annotate(f"smallest crash: {requests} requests, n={n} ({invariant})", (n, y), xytext=(9, 9),
                        textcoords="offset points", fontsize=8, va="bottom", zorder=6,
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "#999999", "alpha": 0.9})
        ax.axvline(e.top, color="k", lw=0.8, ls="--")
        ax.set_xlim(0, e.top * 1.03)
        ax.set_ylim(len(lanes) - 0.5, -0.7)
        ax.set_yticks(range(len(lanes)), [label for label, _, _ in lanes], fontsize=8)
        spans = sum(len(data) for _, kind, data in lanes if kind == "crash")
        verdict = "UNSAFE: some batches would crash" if panel.witnesses else "safe: no batch crashes"
        scope = "any number of requests" if e.request_bound == 0 else f"1..{e.request_bound} requests"
        ax.set_title(f"{panel.name}: {verdict}{f' ({spans} crash ranges)' if spans else ''}; regions exact over {scope}",
                     fontsize=10, loc="left")
    axes[-1, 0].set_xlabel("num_tokens n")
    key = [
        Patch(color=SOME_EAGER, label="some batches of this n run eagerly"),
        Patch(color=ALL_EAGER, label="every batch of this n runs eagerly"),
        Patch(facecolor=CRASH, hatch="xx", edgecolor="#67000d", label="some batch of this n crashes (replay overflows)"),
        Line2D([], [], marker="X", color="black", markeredgecolor="white", ls="", markersize=9, label="smallest crashing batch (review)"),
        Line2D([], [], marker="v", color=CRASH, ls="", label="an isolated crash range too narrow to see"),
        Line2D([], [], color="k", lw=0.8, ls="--", label="largest bucket, or P x largest size (above: always eager)"),
    ]
    fig.legend(handles=key, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.62 / tall, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_padding(panels: Sequence[Panel], path: Path) -> Path:
    """Rows executed per real token (B/n; a design keyed by local rows: P*s/n) against n, per design in its own
    colour: the band between the least and the largest over request mixes; the n where some batch of that
    design crashes in red."""
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
                                  label=f"{panel.name}: largest {'P*s/n' if panel.efficiency.keyed_locally else 'B/n'} "
                                        "(band: least..largest over request mixes)"))
        spans = runs(sorted({n for _, s in panel.crash for lo, hi in s for n in range(lo, hi + 1)}))
        for lo, hi in spans:
            ax.axvspan(lo, hi + 1, ymin=0, ymax=0.04 + 0.03 * index, color=CRASH, alpha=0.9, lw=0)
        if spans:
            handles.append(Patch(color=CRASH, label=f"{panel.name}: n where some batch crashes (strip at the bottom)"))
    ax.set_xlabel("num_tokens n")
    local = any(panel.efficiency.keyed_locally for panel in panels)
    ax.set_ylabel("padding ratio B / n" + (" (local keying: P*s / n)" if local else "") + " (admitted batches)")
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
