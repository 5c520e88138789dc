"""One design on one concrete batch: every rank's answers, judged by the reference's judge.

A design is a runner under review: on each rank its selector (``select``: the scan in the order the
capture list is written, ``search`` or the pre-fix ``smallest``) chooses a bucket, and its replay lays
the batch out (live lengths, or with the pad folded into the last request) in that bucket's static
buffer. The ranks' answers become ``RankAnswer`` records and every invariant is judged by
``reference.judge`` (the rules ``cpgraph check`` uses, registered against reference/invariants.py), on
the reference's loads and fitting set. Ranks that recorded the same capacities are judged together
(the judge reads one capacity table per batch); consensus is judged over all ranks.

One consequence is the design's own, because a design replays the graph: an admitted rank whose
bucket breaks captured_bucket or capacity_fit cannot replay it, so admission_replay ("admitted =>
replay succeeds ... and its rows fit") is broken too (``REPLAY_FAILS``). ``cpgraph check`` reports such
a bug once, under the specific id, since a policy only names the bucket.

Under a keying with no window (``local``, reference/keying.py: vLLM) the design is keyed by m, the
largest rank-local rows: every batch is keyed (no CP-active gate), the selector takes the first size >= its
admission key in scan order, a size s holds s rows, and the judge is asked with the key in the place of n
and no window (``NO_WINDOW``: [m, m * 2**40] holds every size a design may capture), so padding_limit
reads m <= B and the fitting set is every size >= m. When admission reads another key than replay
(vLLM 0.26-0.28: admitted by n, replayed keyed by m), each rank replays the graph of its replay key, the
judge judges that bucket, and admission_replay is broken whenever it is not the admitted one (the other
design-specific step).

This is the concrete semantics the solver encoding (spec/design.py) must agree with; every
counterexample the review shows is replayed through it.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from cpgraph.design.schema import Design
from cpgraph.design.record import KEY_OF_KEYING
from cpgraph.reference import align_up, build_layout, is_cp_active, rank_loads
from cpgraph.reference.keying import KEYING_TABLE
from cpgraph.reference.invariants import INVARIANTS as INVARIANTS, SAFETY as SAFETY
from cpgraph.reference.judge import Expectation, RankAnswer, fitting_set, judge_answers, rank_answer
from cpgraph.reference.selection import iter_fitting, window_top

REPLAY_FAILS: Final = ("captured_bucket", "capacity_fit")  # on an admitted bucket: replay raises
CRASHES: Final = ("rank_consensus", "admission_replay", "captured_bucket", "capacity_fit")
_PER_GROUP: Final = frozenset(INVARIANTS) - {"rank_consensus"}
_CONSENSUS: Final = frozenset({"rank_consensus"})
NO_WINDOW: Final = Fraction(1 << 40)  # the factor a keying with no window is judged with: F*key is above every size


def key_value(key: str, n: int, loads: Sequence[int]) -> int:
    """The value of a key (num_tokens or local_rows) on a batch of n tokens with these live loads: the key
    function of the keying whose own key it is (reference/keying.py)."""
    for keying, name in KEY_OF_KEYING.items():
        if name == key:
            return KEYING_TABLE[keying].key(n, loads)
    raise ValueError(f"key must be one of {', '.join(KEY_OF_KEYING.values())}; got {key!r}")


def select_keyed(design: Design, key: int, required: int, caps: Mapping[int, int]) -> int | None:
    """The design's selector under a keying with no window: the first size >= ``key`` in scan order whose
    capacity holds ``required`` rows (search) or the first >= ``key`` at all (smallest)."""
    buckets = design.buckets
    if design.is_sorted:
        buckets = buckets[bisect.bisect_left(buckets, key) :]
    need = 0 if design.selector == "smallest" else required
    for b in buckets:
        if b >= key and (design.selector == "smallest" or caps.get(b, -1) >= need):
            return b
    return None


def select(design: Design, n: int, required: int, caps: Mapping[int, int]) -> int | None:
    """The design's selector on one rank (the runner under review): the reference's scan
    (reference.selection.iter_fitting) over the buckets in the order written, which skips those below n
    and stops at the first above F*n; ``search`` takes the first whose recorded capacity holds
    ``required`` rows, ``smallest`` (the pre-fix selector) the first at all, as if every bucket had room."""
    buckets = design.buckets
    if design.is_sorted:  # the skipped prefix (buckets below n) can be jumped over
        buckets = buckets[bisect.bisect_left(buckets, n) :]
    top = window_top(n, design.max_padding_factor)
    if design.selector == "smallest":
        return next(iter_fitting(n, 0, buckets, _any_room(design), top), None)
    return next(iter_fitting(n, required, buckets, caps, top), None)


@dataclass(frozen=True)
class GroupBatch:
    """The batch as the ranks sharing one capacity table were asked it (reference.judge's AskedBatch)."""

    cp_size: int
    align_size: int
    num_tokens: int
    extend_seq_lens: tuple[int, ...]
    capture_num_tokens: tuple[int, ...]
    capacities: Mapping[int, int]
    max_padding_factor: Fraction


@functools.lru_cache(maxsize=64)
def _any_room(design: Design) -> Mapping[int, int]:
    """Every bucket with a capacity of 0 rows: the smallest selector's scan, which ignores capacities."""
    return dict.fromkeys(design.buckets, 0)


@functools.lru_cache(maxsize=64)
def _listed(design: Design) -> tuple[int, ...]:
    """The design's buckets as a sorted capture list (what the judge and the fitting set read)."""
    return tuple(sorted(set(design.buckets)))


@functools.lru_cache(maxsize=64)
def rank_groups(design: Design) -> tuple[tuple[int, ...], ...]:
    """Ranks grouped by the capacities they recorded (one group unless a table differs per rank); the group
    holding rank 0 comes first."""
    caps = design.capacities()
    if not design.per_rank_table:
        return (tuple(range(design.cp_size)),)
    groups: dict[tuple[tuple[int, int], ...], list[int]] = {}
    for r in range(design.cp_size):
        groups.setdefault(tuple(sorted(caps[r].items())), []).append(r)
    return tuple(tuple(g) for g in groups.values())


def _answers(ranks: Sequence[int], bucket: int | None, rows: tuple[int, ...] | None) -> list[RankAnswer]:
    """What each rank of a group answers: admit, the bucket it replays (asked only after admitting, as
    protocol v2 asks) and the rows its replay layout puts on every rank."""
    admitted = bucket is not None
    return [rank_answer(r, admitted, None, bucket, None, rows if admitted else None, None, admitted) for r in ranks]


GroupDecision = tuple[int | None, Expectation, tuple[int, ...] | None]  # a group's bucket, expectation, replay rows


def _factor(design: Design) -> Fraction:
    """The padding factor the judge reads: the design's, or NO_WINDOW under a keying without a window."""
    return design.max_padding_factor if design.keyed.windowed else NO_WINDOW


def _judge(design: Design, n: int, lengths: tuple[int, ...], decisions: Sequence[GroupDecision]) -> set[str]:
    """Every invariant the groups' decisions break: the judge per group, consensus over all ranks, then
    admission_replay where an admitted bucket cannot be replayed (REPLAY_FAILS). ``n`` is the keying's key
    (the batch's tokens under global keying)."""
    caps = design.capacities()
    listed = _listed(design)
    factor = _factor(design)
    broken: set[str] = set()
    everyone: list[RankAnswer] = []
    for group, (bucket, expect, rows) in zip(rank_groups(design), decisions):
        batch = GroupBatch(design.cp_size, design.align_size, n, lengths, listed, caps[group[0]], factor)
        answers = _answers(group, bucket, rows)
        everyone += answers
        found = {f.invariant for f in judge_answers(batch, answers, invariants=_PER_GROUP, expect=expect)}
        if found & set(REPLAY_FAILS):
            found.add("admission_replay")
        broken |= found
    if len(decisions) > 1:
        first = decisions[0][1]
        batch = GroupBatch(design.cp_size, design.align_size, n, lengths, listed, caps[0], factor)
        broken |= {f.invariant for f in judge_answers(batch, everyone, invariants=_CONSENSUS, expect=first)}
    return broken


def _fitting(design: Design, n: int, required: int, caps: Mapping[int, int]) -> tuple[int, ...]:
    """The fitting set for key ``n`` (the tokens under global keying, m under local)."""
    return fitting_set(
        num_tokens=n, required=required, capture_num_tokens=_listed(design), capacities=caps, factor=_factor(design),
    )


def _decisions_at(design: Design, n: int, required: int) -> list[GroupDecision]:
    """Each rank group's decision on a CP-active batch of n tokens needing ``required`` rows (live layout:
    every decision and every rule reads only n and the live rows, the busiest rank stands for all; a
    windowed, global keying only: a local one's decision reads its keys, see ``evaluate``)."""
    if not design.keyed.windowed:
        raise ValueError(f"violations_at reads a batch's n and rows under keying = 'global'; got {design.keying!r}")
    if design.layout_basis != "live":
        raise ValueError(f"violations_at needs layout_basis = 'live', got {design.layout_basis!r}")
    caps = design.capacities()
    rows = (required,) * design.cp_size
    decisions: list[GroupDecision] = []
    for group in rank_groups(design):
        c = caps[group[0]]
        expect = Expectation(True, rows, required, _fitting(design, n, required, c))
        decisions.append((select(design, n, required, c), expect, rows))
    return decisions


def violations_at(design: Design, n: int, required: int) -> frozenset[str]:
    """Invariants a CP-active batch of n tokens needing ``required`` rows breaks, for a live-layout design."""
    broken = _judge(design, n, (required,) * design.cp_size, _decisions_at(design, n, required))
    return frozenset(i for i in INVARIANTS if i in broken)


def decide_at(design: Design, n: int, required: int) -> tuple[int | None, bool]:
    """(rank 0's bucket or None for eager, replay crashes) from n and the live rows (live layout only):
    one decision per rank group, judged once."""
    decisions = _decisions_at(design, n, required)
    broken = _judge(design, n, (required,) * design.cp_size, decisions)
    return decisions[0][0], bool(broken & set(CRASHES))


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
    capacity: tuple[int | None, ...]  # per rank, recorded rows of the bucket it replays
    violated: tuple[str, ...]
    replayed: tuple[int | None, ...] = ()  # per rank, the bucket replayed when not the admitted one (a split)
    key: int | None = None  # the keying's key when it is not n (local: the largest rank-local rows m)

    @property
    def bucket(self) -> int | None:
        """Rank 0's admitted bucket (None: eager)."""
        return self.buckets[0]

    @property
    def replayed_bucket(self) -> int | None:
        """The bucket rank 0 replays: the admitted one, unless admission and replay read different keys."""
        return self.replayed[0] if self.replayed else self.buckets[0]

    @property
    def admitted(self) -> bool:
        return self.buckets[0] is not None

    @property
    def crashes(self) -> bool:
        """Replay would raise: overflow, a bucket with no static buffer, or ranks out of step."""
        return any(v in self.violated for v in CRASHES)


def evaluate(design: Design, extend_seq_lens: Sequence[int]) -> Outcome:
    """Run the design's decision on every rank and judge every invariant on this batch."""
    lengths = tuple(extend_seq_lens)
    n = sum(lengths)
    p, a = design.cp_size, design.align_size
    live = rank_loads(lengths, cp_size=p, strategy=design.strategy)
    required = align_up(max(live), a)
    if not design.keyed.windowed:
        return _evaluate_keyed(design, lengths, live, required)
    if not is_cp_active(lengths, num_tokens=n, cp_size=p):
        none: tuple[int | None, ...] = (None,) * p
        return Outcome(lengths, n, False, required, none, none, none, ())
    caps = design.capacities()
    groups = rank_groups(design)
    decisions = []
    chosen: list[int | None] = [None] * p
    rows: list[int | None] = [None] * p
    held: list[int | None] = [None] * p
    for group in groups:
        c = caps[group[0]]
        bucket = select(design, n, required, c)
        loads = live if bucket is None else rank_loads(replay_lengths(design, lengths, bucket), cp_size=p, strategy=design.strategy)
        need = align_up(max(loads), a)
        expect = Expectation(True, loads, need, _fitting(design, n, required, c))
        decisions.append((bucket, expect, tuple(align_up(x, a) for x in loads)))
        for r in group:
            chosen[r] = bucket
            rows[r] = None if bucket is None else need
            held[r] = None if bucket is None else c.get(bucket)
    broken = _judge(design, n, lengths, decisions)
    violated = tuple(i for i in INVARIANTS if i in broken)
    return Outcome(lengths, n, True, required, tuple(chosen), tuple(rows), tuple(held), violated)


def _evaluate_keyed(design: Design, lengths: tuple[int, ...], live: tuple[int, ...], required: int) -> Outcome:
    """``evaluate`` under a keying with no window (local): every batch keyed, admission by its key, replay
    keyed by the keying's key (the admitted size, or under a split the key itself); the judge reads the key
    as n with NO_WINDOW; a split whose replayed size is not the admitted one breaks admission_replay."""
    p, n = design.cp_size, sum(lengths)
    key = key_value(design.key, n, live)
    admission = key_value(design.admits_by, n, live)
    caps = design.capacities()
    chosen: list[int | None] = [None] * p
    replayed: list[int | None] = [None] * p
    rows: list[int | None] = [None] * p
    held: list[int | None] = [None] * p
    decisions: list[GroupDecision] = []
    for group in rank_groups(design):
        c = caps[group[0]]
        bucket = select_keyed(design, admission, required, c)
        replay = None if bucket is None else (key if design.split else bucket)
        expect = Expectation(True, live, required, _fitting(design, key, required, c))
        decisions.append((replay, expect, live))
        for r in group:
            chosen[r], replayed[r] = bucket, replay
            rows[r] = None if replay is None else required
            held[r] = None if replay is None else c.get(replay)
    broken = _judge(design, key, lengths, decisions)
    if any(b is not None and b != r for b, r in zip(chosen, replayed)):
        broken.add("admission_replay")
    violated = tuple(i for i in INVARIANTS if i in broken)
    return Outcome(
        lengths, n, True, required, tuple(chosen), tuple(rows), tuple(held), violated,
        tuple(replayed) if design.split else (), key,
    )


def replay_message(design: Design, outcome: Outcome) -> str:
    """Replay the batch through the reference's build_layout at the chosen capacity; say what happens."""
    b = outcome.bucket
    if b is None:
        return "runs eagerly (no graph replay)"
    replayed = outcome.replayed_bucket
    cap = outcome.capacity[0]
    if replayed != b:
        head = f"admitted the graph of size {b} but replays the one keyed by {replayed}"
        if cap is None:
            return f"{head}, a size never captured: no graph to replay"
        return f"{head}: a different graph from the one admitted"
    if cap is None:
        return f"bucket {b} has no recorded capacity on rank 0: replay has no static buffer to use"
    lengths = replay_lengths(design, outcome.extend_seq_lens, b)
    try:
        build_layout(lengths, cp_size=design.cp_size, rows=cap, strategy=design.strategy)
    except ValueError as exc:
        return f"reference build_layout refuses it: {exc}"
    return f"reference build_layout lays it out in {cap} rows per rank"
