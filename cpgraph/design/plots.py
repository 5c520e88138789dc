"""PNG figures (matplotlib, Agg backend): eager-fallback region, padding against token count, simulations."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from cpgraph.design.efficiency import Efficiency  # noqa: E402
from cpgraph.design.simulate import SimResult  # noqa: E402


def plot_fallback_region(efficiencies: Sequence[tuple[str, Efficiency]], path: Path) -> Path:
    """One row per request count: where some (light) or every (dark) batch runs eagerly, per design."""
    fig, axes = plt.subplots(len(efficiencies), 1, figsize=(10, 1.2 + 1.6 * len(efficiencies)), squeeze=False)
    for ax, (name, e) in zip(axes[:, 0], efficiencies):
        least = e.largest_bucket * 0.004  # keep a region of a few tokens visible at this scale
        for region in e.regions:
            y = region.requests
            for lo, hi in region.some_eager:
                ax.barh(y, max(hi - lo + 1, least), left=lo, height=0.8, color="#f4a582")
            for lo, hi in region.all_eager:
                ax.barh(y, max(hi - lo + 1, least), left=lo, height=0.8, color="#b2182b")
        ax.axvline(e.largest_bucket, color="k", lw=0.8, ls="--")
        ax.set_xlim(0, e.largest_bucket * 1.03)
        ax.set_ylabel("requests")
        ax.set_title(f"{name}: eager fallback (light: some batches, dark: every batch; dashed: largest bucket)", fontsize=9)
    axes[-1, 0].set_xlabel("num_tokens n")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_padding(efficiencies: Sequence[tuple[str, Efficiency]], path: Path) -> Path:
    """Rows executed per real token (B/n) against n, least to largest over admitted batches, per design."""
    fig, ax = plt.subplots(figsize=(10, 4))
    for index, (name, e) in enumerate(efficiencies):
        if not e.curve:
            continue
        xs = [c[0] for c in e.curve]
        color = f"C{index}"
        ax.plot(xs, [c[2] for c in e.curve], color=color, lw=1.0, label=f"{name}: largest B/n")
        ax.plot(xs, [c[1] for c in e.curve], color=color, lw=0.8, ls=":", label=f"{name}: least B/n")
    ax.set_xlabel("num_tokens n")
    ax.set_ylabel("padding ratio B / n")
    ax.set_title("global padding of admitted batches (solid: largest, dotted: least B/n over request mixes)", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_simulation(results: Sequence[SimResult], path: Path) -> Path:
    """Per design: share served by graph, eager, crashes; and mean padded rows (global)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    names = [r.design.name for r in results]
    graph = [r.graph_share for r in results]
    eager = [r.eager / r.batches for r in results]
    crash = [r.overflows / r.batches for r in results]
    left.bar(names, graph, color="#4393c3", label="graph")
    left.bar(names, eager, bottom=graph, color="#f4a582", label="eager")
    left.bar(names, crash, bottom=[g + e for g, e in zip(graph, eager)], color="#b2182b", label="would crash")
    left.set_ylabel("share of batches")
    left.set_title(f"{results[0].workload}: how batches run", fontsize=9)
    left.legend(fontsize=8)
    right.bar(names, [r.mean_pad for r in results], color="#92c5de", label="mean")
    right.plot(names, [r.p99_pad for r in results], "kx", label="p99")
    right.set_ylabel("padded rows per batch (global)")
    right.set_title("padding (global rows, eager batches pad 0)", fontsize=9)
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
