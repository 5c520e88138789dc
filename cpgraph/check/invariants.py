"""Judge every rank's answers against the spec, one verdict per invariant id (reference/ is the oracle)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from cpgraph.check.batch import Batch
from cpgraph.check.protocol import RankAnswer
from cpgraph.reference import fitting_buckets, is_cp_active, rank_loads, required_local_tokens
from cpgraph.reference.invariants import EFFICIENCY as EFFICIENCY, INVARIANTS as INVARIANTS, SAFETY as SAFETY
from cpgraph.reference.invariants import INVARIANT_TABLE


CLAIMS: Final = {i: row.sentence for i, row in INVARIANT_TABLE.items()}  # one sentence per id, from the table


@dataclass(frozen=True)
class Spec:
    """What the spec says about a batch: CP-active?, the live loads, rows required, the fitting set."""

    active: bool
    loads: tuple[int, ...]
    required: int
    fitting: tuple[int, ...]

    @property
    def bucket(self) -> int | None:
        """The spec's choice: the least fitting bucket of a CP-active batch, else None (run eagerly)."""
        return self.fitting[0] if self.active and self.fitting else None

    def describe(self, batch: Batch) -> str:
        choice = f"replay bucket {self.bucket}" if self.bucket is not None else "run eagerly (admit False, replay refuses)"
        if not self.active:
            choice = "not CP-active (P > 1, n >= 2P, every length >= 2P): any admitted bucket must still be safe"
        return f"spec: loads {self.loads} -> required {self.required} rows; fitting buckets {self.fitting} -> {choice}"


@lru_cache(maxsize=65536)
def live_loads(lengths: tuple[int, ...], cp_size: int, strategy: str) -> tuple[int, ...]:
    return rank_loads(lengths, cp_size=cp_size, strategy=strategy)


@lru_cache(maxsize=16384)
def spec_for(batch: Batch, strategy: str = "zigzag") -> Spec:
    """The reference's verdict on ``batch`` (cached: the same batch meets many policies and ranks).

    Loads come from reference.rank_loads; the fitting set and CP-activity are the reference's
    definitions (fitting_buckets, is_cp_active) inlined on already-validated values, because this runs
    once per checked batch (tests/unit/test_check_judge.py holds them equal to the reference's).
    """
    p, n, factor = batch.cp_size, batch.num_tokens, batch.max_padding_factor
    loads = live_loads(batch.extend_seq_lens, p, strategy)
    required = -(-max(loads) // batch.align_size) * batch.align_size
    caps = batch.capacities
    fitting = tuple(b for b in batch.capture_num_tokens if n <= b <= factor * n and b in caps and caps[b] >= required)
    active = p > 1 and n >= 2 * p and min(batch.extend_seq_lens) >= 2 * p
    return Spec(active, loads, required, fitting)


def spec_by_reference(batch: Batch, strategy: str = "zigzag") -> Spec:
    """``spec_for`` computed entirely through reference/'s public, validating functions (slow; for tests)."""
    required = required_local_tokens(batch.extend_seq_lens, cp_size=batch.cp_size, align_size=batch.align_size, strategy=strategy)
    fitting = fitting_buckets(
        num_tokens=batch.num_tokens,
        required_local_tokens=required,
        capture_num_tokens=batch.capture_num_tokens,
        bucket_local_tokens=batch.capacities,
        max_padding_factor=batch.max_padding_factor,
    )
    active = is_cp_active(batch.extend_seq_lens, num_tokens=batch.num_tokens, cp_size=batch.cp_size)
    return Spec(active, rank_loads(batch.extend_seq_lens, cp_size=batch.cp_size, strategy=strategy), required, fitting)


@dataclass(frozen=True)
class Finding:
    """One invariant broken on one batch: which, and why (one or two lines naming ranks and values)."""

    invariant: str
    why: str


def _is_bucket(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def judge(
    batch: Batch, answers: tuple[RankAnswer, ...], *, strategy: str = "zigzag", invariants: frozenset[str] | None = None
) -> list[Finding]:
    """Every invariant in ``invariants`` (default: all) that the ranks' answers break on ``batch``.

    Efficiency invariants apply to CP-active batches only; a non-active batch may run eagerly or be
    admitted, but an admitted bucket must be safe. ``capacity_fit`` reads local_rows when the policy
    answered it, else the spec's live layout (align_up(max load, A) rows on every rank).
    """
    wanted = INVARIANTS if invariants is None else invariants
    spec = spec_for(batch, strategy)
    n, factor = batch.num_tokens, batch.max_padding_factor
    capacities = batch.capacities
    found: dict[str, str] = {}

    def note(invariant: str, why: str) -> None:
        if invariant in wanted and invariant not in found:
            found[invariant] = why

    decisions = {a.decision for a in answers}
    if len(decisions) > 1:
        groups: list[tuple[list[int], tuple[object, object]]] = []
        for a in answers:
            if groups and groups[-1][1] == a.decision:
                groups[-1][0].append(a.rank)
            else:
                groups.append(([a.rank], a.decision))
        by = "; ".join(
            f"{'rank' if len(r) == 1 else 'ranks'} {r[0] if len(r) == 1 else f'{r[0]}-{r[-1]}'}: admit={d[0]} bucket={d[1]}"
            for r, d in groups[:6]
        )
        note("rank_consensus", f"ranks disagree: {by}{'; ...' if len(groups) > 6 else ''}")
    for a in answers:
        replayed = a.bucket is not None
        if a.admit is None:
            note("admission_replay", f"rank {a.rank}: admit raised {a.admit_error}; admit must answer True or False")
        elif a.admit and not replayed:
            note("admission_replay", f"rank {a.rank} admitted but replay_bucket refused ({a.replay_error})")
        elif not a.admit and replayed:
            note("admission_replay", f"rank {a.rank} did not admit but replay_bucket returned {a.bucket!r}")
        if not replayed:
            if spec.active and spec.fitting and a.admit is not True:  # declined, or crashed deciding
                how = "runs eagerly" if a.admit is False else "cannot decide (admit raised)"
                note("no_needless_fallback", f"rank {a.rank} {how} but bucket {spec.fitting[0]} fits")
            continue
        if spec.active and spec.fitting and a.admit is False:
            note("no_needless_fallback", f"rank {a.rank} did not admit but bucket {spec.fitting[0]} fits")
        b = a.bucket
        if not _is_bucket(b) or b not in batch.capture_num_tokens:
            note("captured_bucket", f"rank {a.rank} replays {b!r}, not in capture_num_tokens")
            continue
        assert isinstance(b, int)
        if b not in capacities:
            note("captured_bucket", f"rank {a.rank} replays bucket {b}, which has no recorded capacity")
        if not n <= b <= factor * n:
            note("padding_limit", f"rank {a.rank} replays bucket {b} outside [n, F*n] = [{n}, {factor * n}]")
        if b in capacities:
            _judge_capacity(batch, spec, a, b, capacities[b], note)
        if spec.active and spec.bucket is not None and b in spec.fitting and b != spec.bucket:
            note("minimal_bucket", f"rank {a.rank} replays bucket {b} but the smaller bucket {spec.bucket} fits")
    return [Finding(inv, found[inv]) for inv in INVARIANTS if inv in found]


def _judge_capacity(
    batch: Batch, spec: Spec, a: RankAnswer, bucket: int, capacity: int, note: Callable[[str, str], None]
) -> None:
    if a.rows_error is not None:
        note("capacity_fit", f"rank {a.rank}: local_rows(bucket={bucket}) raised {a.rows_error}")
        return
    if a.rows is None:
        if spec.required > capacity:
            busiest = spec.loads.index(max(spec.loads))
            note(
                "capacity_fit",
                f"bucket {bucket} holds {capacity} rows per rank but the live layout needs {spec.required} "
                f"(rank {busiest} holds {max(spec.loads)} tokens, aligned to {batch.align_size})",
            )
        return
    rows = a.rows
    if len(rows) != batch.cp_size or not all(_is_bucket(r) for r in rows):
        note("capacity_fit", f"rank {a.rank}: local_rows returned {list(rows)}, not {batch.cp_size} int row counts")
        return
    for q, r in enumerate(rows):
        assert isinstance(r, int)
        if r > capacity:
            note("capacity_fit", f"rank {a.rank}'s layout puts {r} rows on rank {q}; bucket {bucket} holds {capacity}")
            return
        if r < spec.loads[q]:
            note("capacity_fit", f"rank {a.rank}'s layout gives rank {q} {r} rows for its {spec.loads[q]} live tokens")
            return
