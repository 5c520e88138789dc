"""--plot: the counterexample's live layout as a PNG - one bar per rank, rows coloured by request, the
padding up to the physical rows, and the replayed bucket's capacity as a line (overflow shaded red)."""

from __future__ import annotations

import os

from cpgraph.check.report import Violation
from cpgraph.reference import build_layout


def _replayed(v: Violation) -> int | None:
    for a in v.answers:
        if isinstance(a.bucket, int) and not isinstance(a.bucket, bool):
            return a.bucket
    return v.spec.bucket


def plot_violation(v: Violation, path: str, *, strategy: str = "zigzag") -> str:
    """Write the PNG for ``v`` to ``path`` (matplotlib, Agg backend); returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.55 * b.cp_size))
    for rank, tokens in enumerate(layout.rank_tokens):
        start = 0
        while start < len(tokens):  # runs of consecutive rows from one request (None: an in-layout pad row)
            slot = tokens[start]
            req = None if slot is None else slot[0]
            end = start
            while end < len(tokens) and (None if tokens[end] is None else tokens[end][0]) == req:  # type: ignore[index]
                end += 1
            if req is not None:
                ax.barh(rank, end - start, left=start, color=colours(req % 10), edgecolor="white", linewidth=0.5)
            start = end
        pad = physical[rank] - len(tokens)
        if pad > 0:
            ax.barh(rank, pad, left=len(tokens), color="#dddddd", hatch="//", edgecolor="#999999", linewidth=0.5)
        if capacity is not None and physical[rank] > capacity:
            ax.barh(rank, physical[rank] - capacity, left=capacity, color="none", edgecolor="red", hatch="xx", linewidth=1.0)
    top = max(physical + [capacity or 0, max(layout.loads)])
    if capacity is not None:
        ax.axvline(capacity, color="red", linestyle="--", linewidth=2)
        ax.text(capacity, -0.62, f" capacity of bucket {bucket}: {capacity} rows", color="red", va="bottom", fontsize=9)
    elif bucket is not None:
        ax.text(0, -0.62, f"bucket {bucket} has no recorded capacity", color="red", va="bottom", fontsize=9)
    ax.set_yticks(range(b.cp_size), [f"rank {r}\n{layout.loads[r]} tok" for r in range(b.cp_size)], fontsize=8)
    ax.set_xlim(0, top * 1.08 + 1)
    ax.set_ylim(b.cp_size - 0.4, -1.0)
    source = "the policy's local_rows" if policy_rows is not None else "the spec: aligned busiest load"
    ax.set_xlabel(f"rows on the rank (live tokens coloured by request; physical rows from {source})")
    handles = [Patch(color=colours(i % 10), label=f"request {i}: {length} tok") for i, length in enumerate(b.extend_seq_lens)][:10]
    handles.append(Patch(facecolor="#dddddd", hatch="//", edgecolor="#999999", label="padding"))
    if capacity is not None and max(physical) > capacity:
        handles.append(Patch(facecolor="none", hatch="xx", edgecolor="red", label="over capacity"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.set_title(
        f"{v.invariant}: P={b.cp_size}, n={b.num_tokens}, lengths {list(b.extend_seq_lens)}; "
        f"replayed {bucket}, spec: {v.spec.bucket if v.spec.bucket is not None else 'eager'}",
        fontsize=10,
    )
    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
