"""One design on one concrete batch: every rank's decision, the rows replay needs, the invariants it breaks.

This is the concrete semantics the solver encoding (spec/design.py) must agree with; every
counterexample the review shows is replayed through it, and it is built on the reference's
rank_loads / required_local_tokens / build_layout so a replay is the oracle's verdict.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from cpgraph.design.schema import Design
from cpgraph.reference import build_layout, is_cp_active, required_local_tokens
from cpgraph.reference.invariants import INVARIANTS as INVARIANTS, SAFETY as SAFETY



def select(design: Design, n: int, required: int, caps: dict[int, int]) -> int | None:
    """The design's selector on one rank: scan the buckets in the order written."""
    buckets = design.buckets
    if design.is_sorted:  # the skipped prefix (buckets below n) can be jumped over
        buckets = buckets[bisect.bisect_left(buckets, n) :]
    for b in buckets:
        if b < n:
            continue
        if b > design.max_padding_factor * n:
            return None
        if design.selector == "smallest":
            return b
        if b in caps and caps[b] >= required:
            return b
    return None


def fits(design: Design, n: int, required: int, caps: dict[int, int], b: int) -> bool:
    """b is captured, within [n, F*n], and its recorded capacity holds the live rows."""
    return n <= b <= design.max_padding_factor * n and b in caps and caps[b] >= required


def rank_violations(design: Design, n: int, required: int, need: int, caps: dict[int, int], bucket: int | None) -> set[str]:
    """The invariants one rank's decision breaks on a CP-active batch of n tokens: ``required`` is the live
    rows (what fitting means), ``need`` the rows the replay layout needs at the chosen bucket."""
    broken: set[str] = set()
    fitting = [c for c in design.buckets if fits(design, n, required, caps, c)]
    if bucket is None:
        if fitting:
            broken.add("no_needless_fallback")
        return broken
    if bucket not in caps:
        broken.update(("captured_bucket", "admission_replay"))
    elif need > caps[bucket]:
        broken.update(("capacity_fit", "admission_replay"))
    if not n <= bucket <= design.max_padding_factor * n:
        broken.add("padding_limit")
    if any(c < bucket for c in fitting):
        broken.add("minimal_bucket")
    return broken


def violations_at(design: Design, n: int, required: int) -> frozenset[str]:
    """Invariants a CP-active batch of n tokens needing ``required`` rows breaks, for a live-layout design
    (there every decision and every check reads only n and the live rows)."""
    if design.layout_basis != "live":
        raise ValueError(f"violations_at needs layout_basis = 'live', got {design.layout_basis!r}")
    caps = design.capacities()
    ranks = range(design.cp_size) if design.per_rank_table else range(1)
    chosen = [select(design, n, required, caps[r]) for r in ranks]
    broken = set()
    if len(set(chosen)) > 1:
        broken.add("rank_consensus")
    for r, b in zip(ranks, chosen):
        broken |= rank_violations(design, n, required, required, caps[r], b)
    return frozenset(broken)


def replay_lengths(design: Design, lengths: tuple[int, ...], bucket: int) -> tuple[int, ...]:
    """Lengths the replay layout is built on: live, or with the pad folded into the last request."""
    if design.layout_basis == "live":
        return lengths
    return lengths[:-1] + (lengths[-1] + bucket - sum(lengths),)


@dataclass(frozen=True)
class Outcome:
    """What the design does with one batch (``buckets[r]`` is rank r's choice, None = eager)."""

    extend_seq_lens: tuple[int, ...]
    num_tokens: int
    cp_active: bool
    required_local_tokens: int
    buckets: tuple[int | None, ...]
    replay_rows: tuple[int | None, ...]  # per rank, rows the replay layout needs at its bucket
    capacity: tuple[int | None, ...]  # per rank, recorded rows of its bucket
    violated: tuple[str, ...]

    @property
    def bucket(self) -> int | None:
        return self.buckets[0]

    @property
    def admitted(self) -> bool:
        return self.buckets[0] is not None

    @property
    def crashes(self) -> bool:
        """Replay would raise: overflow, a bucket with no static buffer, or ranks out of step."""
        return any(v in self.violated for v in ("capacity_fit", "captured_bucket", "admission_replay", "rank_consensus"))


def evaluate(design: Design, extend_seq_lens: Sequence[int]) -> Outcome:
    """Run the design's decision on every rank and check each invariant on this batch."""
    lengths = tuple(extend_seq_lens)
    n = sum(lengths)
    p = design.cp_size
    required = required_local_tokens(lengths, cp_size=p, align_size=design.align_size, strategy=design.strategy)
    caps = design.capacities()
    if not is_cp_active(lengths, num_tokens=n, cp_size=p):
        none: tuple[int | None, ...] = (None,) * p
        return Outcome(lengths, n, False, required, none, none, none, ())
    # Ranks with the same recorded capacities decide alike: check one, copy its verdict.
    ranks = range(p) if design.per_rank_table else range(1)
    chosen = tuple(select(design, n, required, caps[r]) for r in ranks)
    rows: list[int | None] = []
    held: list[int | None] = []
    broken: set[str] = set()
    if len(set(chosen)) > 1:
        broken.add("rank_consensus")
    for r, b in zip(ranks, chosen):
        if b is None:
            rows.append(None)
            held.append(None)
            broken |= rank_violations(design, n, required, required, caps[r], None)
            continue
        need = required_local_tokens(
            replay_lengths(design, lengths, b), cp_size=p, align_size=design.align_size, strategy=design.strategy
        )
        rows.append(need)
        held.append(caps[r].get(b))
        broken |= rank_violations(design, n, required, need, caps[r], b)
    if len(chosen) < p:
        chosen, rows, held = chosen * p, rows * p, held * p
    violated = tuple(i for i in INVARIANTS if i in broken)
    return Outcome(lengths, n, True, required, chosen, tuple(rows), tuple(held), violated)


def replay_message(design: Design, outcome: Outcome) -> str:
    """Replay the batch through the reference's build_layout at the chosen capacity; say what happens."""
    b = outcome.bucket
    if b is None:
        return "runs eagerly (no graph replay)"
    cap = outcome.capacity[0]
    if cap is None:
        return f"bucket {b} has no recorded capacity on rank 0: replay has no static buffer to use"
    lengths = replay_lengths(design, outcome.extend_seq_lens, b)
    try:
        build_layout(lengths, cp_size=design.cp_size, rows=cap, strategy=design.strategy)
    except ValueError as exc:
        return f"reference build_layout refuses it: {exc}"
    return f"reference build_layout lays it out in {cap} rows per rank"
