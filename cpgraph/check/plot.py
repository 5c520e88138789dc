"""--plot: the counterexample's live layout as a PNG - one bar per rank, rows coloured by request, the
padding up to the physical rows, and the replayed bucket's capacity as a line (overflow shaded red)."""

from __future__ import annotations

import os
from typing import Any

from cpgraph.check.finding import Violation
from cpgraph.reference import build_layout


def _replayed(v: Violation) -> int | None:
    for a in v.answers:
        if isinstance(a.bucket, int) and not isinstance(a.bucket, bool):
            return a.bucket
    bucket: int | None = v.spec.bucket
    return bucket


def plot_violation(v: Violation, path: str, *, strategy: str = "zigzag") -> str:
    """Write the PNG for ``v`` to ``path`` (matplotlib, Agg backend); returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    b = v.batch
    layout = build_layout(b.extend_seq_lens, cp_size=b.cp_size, strategy=strategy)
    bucket = _replayed(v)
    capacity = b.capacities.get(bucket) if bucket is not None else None
    policy_rows = next((a.rows for a in v.answers if a.rows is not None), None)
    physical = [v.spec.required] * b.cp_size
    if policy_rows is not None:
        physical = [
            rows if isinstance(rows, int) and not isinstance(rows, bool) else v.spec.required
            for rows in list(policy_rows)[: b.cp_size] + [None] * (b.cp_size - len(policy_rows))
        ]
    colours = plt.get_cmap("tab10")
    # Each rank's own decision: ranks that decide differently from the most common decision are red.
    decisions = [a.decision for a in v.answers]
    common = max(set(decisions), key=decisions.count) if decisions else None
    by_rank = {a.rank: a for a in v.answers}
    disagree = {a.rank for a in v.answers if a.decision != common}
    fig, ax = plt.subplots(figsize=(10.5, 1.4 + 0.6 * b.cp_size))
    for rank, tokens in enumerate(layout.rank_tokens):
        start = 0
        while start < len(tokens):  # runs of consecutive rows from one request (None: a pad row)
            first = tokens[start]
            req = -1 if first is None else first[0]
            end = start
            while end < len(tokens) and (-1 if tokens[end] is None else tokens[end][0]) == req:  # type: ignore[index]
                end += 1
            style = {"color": "#dddddd", "hatch": "//"} if req < 0 else {"color": colours(req % 10)}
            ax.barh(rank, end - start, left=start, edgecolor="white", linewidth=0.5, **style)
            start = end
        pad = physical[rank] - len(tokens)
        if pad > 0:
            ax.barh(rank, pad, left=len(tokens), color="#dddddd", hatch="//", edgecolor="#999999", linewidth=0.5)
        answer = by_rank.get(rank)
        own = answer.bucket if answer is not None and isinstance(answer.bucket, int) and not isinstance(answer.bucket, bool) else None
        own_cap = b.capacities.get(own) if isinstance(own, int) else None
        if own_cap is not None:  # this rank's bucket capacity, on this rank's row
            ax.plot([own_cap, own_cap], [rank - 0.45, rank + 0.45], color="red", lw=2.5, solid_capstyle="butt")
            if physical[rank] > own_cap:
                ax.barh(rank, physical[rank] - own_cap, left=own_cap, color="none", edgecolor="red", hatch="xx", linewidth=1.0)
    top = max(physical + [max(b.capacities.values(), default=0) if disagree else capacity or 0, max(layout.loads)])
    right = top * 1.08 + 1  # each rank's decision is written to the right of the bars, inside the axes
    for rank in range(b.cp_size):
        answer = by_rank.get(rank)
        if answer is None:
            continue
        said = f"admit={answer.decision[0]} bucket={answer.decision[1]}"
        ax.text(right, rank, said, va="center", fontsize=8, color="red" if rank in disagree else "black",
                fontweight="bold" if rank in disagree else "normal", clip_on=False)
    if capacity is not None and not disagree:
        ax.text(capacity, -0.62, f" capacity of bucket {bucket}: {capacity} rows", color="red", va="bottom", fontsize=9)
    elif bucket is not None and capacity is None:
        ax.text(0, -0.62, f"bucket {bucket} has no recorded capacity", color="red", va="bottom", fontsize=9)
    labels = [f"rank {r}\n{layout.loads[r]} tok" for r in range(b.cp_size)]
    ax.set_yticks(range(b.cp_size), labels, fontsize=8)
    for r, tick in enumerate(ax.get_yticklabels()):
        if r in disagree:
            tick.set_color("red")
    ax.set_xlim(0, right + top * 0.5 + 8)
    ax.axvline(right - top * 0.02, color="#999999", lw=0.5)
    ax.set_xticks([t for t in ax.get_xticks() if 0 <= t < right - top * 0.02])  # no row scale under the decisions
    ax.set_ylim(b.cp_size - 0.4, -1.0)
    source = "the policy's local_rows" if policy_rows is not None else "the spec: aligned busiest load"
    ax.set_xlabel(f"rows on the rank (physical rows from {source}) | each rank's decision", fontsize=9)
    handles: list[Any] = [Patch(color=colours(i % 10), label=f"request {i}: {length} tok") for i, length in enumerate(b.extend_seq_lens)][:10]
    handles.append(Patch(facecolor="#dddddd", hatch="//", edgecolor="#999999", label="padding"))
    handles.append(Line2D([], [], color="red", lw=2.5, label="capacity of the rank's own bucket"))
    caps = b.capacities
    over = [r for r, a in by_rank.items() if isinstance(a.bucket, int) and r < len(physical) and physical[r] > caps.get(a.bucket, physical[r])]
    if over:
        handles.append(Patch(facecolor="none", hatch="xx", edgecolor="red", label="over capacity"))
    if disagree:
        handles.append(Patch(color="red", label=f"ranks deciding unlike the rest: {sorted(disagree)}"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    what = f"ranks disagree ({len(disagree)} of {b.cp_size} differ)" if disagree else f"replayed {bucket}"
    ax.set_title(
        f"{v.invariant}: P={b.cp_size}, n={b.num_tokens}, lengths {list(b.extend_seq_lens)}; "
        f"{what}, spec: {v.spec.bucket if v.spec.bucket is not None else 'eager'}",
        fontsize=10,
    )
    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
