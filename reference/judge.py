"""The concrete judge of every invariant over one batch's per-rank answers, registered against the ids of
reference/invariants.py: stated once here, used by ``cpgraph check`` and ``cpgraph review``.

The API (none of it depends on cpgraph.check):

- ``RankAnswer``: what one rank answered (admit, replay_bucket, optionally local_rows), errors as text;
- ``expected(batch, strategy)`` (reference/expectation.py, re-exported): the reference's verdict on a batch (``Expectation``: CP-active?, live
  loads, rows required, the fitting set), computed with reference.required_local_tokens /
  fitting_buckets / is_cp_active; a batch is anything with the attributes of ``AskedBatch``
  (cpgraph.check.Batch is one);
- ``JUDGES``: id -> rule, one per row of INVARIANT_TABLE (checked at import); a rule takes a ``JudgedBatch``
  and returns why the invariant is broken, or None;
- ``judge_answers(batch, answers, ...)``: every broken invariant as ``Finding(invariant, why)``, in
  table order.

Protocol v2 (what ``replay_asked`` means): upstream calls ``load_batch`` only after ``can_run_graph``
said yes, so by default a rank is asked ``replay_bucket`` only when it admitted the batch; an answer
whose ``replay_asked`` is False carries no bucket and is not judged on one. Policies that promise a
total replay function are asked on every rank (``replay_asked`` True everywhere) and are then also held
to "not admitted => replay refuses".

Rules worth knowing: efficiency ids apply to CP-active batches only; a batch that is not CP-active (under
the strategy's gate, reference/strategies.py's ``cp_active`` column; under ``local`` keying every batch is
keyed) runs eagerly: a rank that admits it breaks ``admission_replay``. ``admission_replay`` covers the call
contract (admit answers; only a CP-active batch is admitted; an admitted rank's replay succeeds; with a
total replay, a refused batch is not replayed); whether the replayed bucket is captured, within the window and holds the rows is judged
under the more specific ids (captured_bucket, padding_limit, capacity_fit), so one bug gets one id there.
padding_limit and minimal_bucket read as their sentences and spec/invariants.py do: any replayed int bucket
outside [n, F*n] breaks the first, any above the least fitting one the second, captured or not (checked
against the spec's terms by tests/differential/test_judge_vs_spec.py). capacity_fit leaves a bucket with no
recorded capacity to captured_bucket, as the review's terms (spec/design.py) do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from cpgraph.reference.expectation import (
    Expectation,
    _loads as _loads,
    _per_request as _per_request,
    capture_loads as capture_loads,
    expected,
    expected_bucket,
    fitting_set,
    memo_loads as memo_loads,
)
from cpgraph.reference.invariants import INVARIANT_TABLE, INVARIANTS
from cpgraph.reference.laid_out import LaidOut, layout_mismatch
from cpgraph.reference.selection import window_top
from cpgraph.reference.strategies import strategy_row

__all__ = [
    "JUDGES",
    "NOT_ASKED",
    "REFUSED",
    "AskedBatch",
    "JudgedBatch",
    "Expectation",
    "Finding",
    "RankAnswer",
    "expected",
    "expected_bucket",
    "fitting_set",
    "judge_answers",
    "keeps_everything",
    "rank_answer",
    "window_top",
]

from cpgraph.reference.answers import NOT_ASKED, REFUSED, AskedBatch, Factor, Finding, RankAnswer, rank_answer


@dataclass(frozen=True)
class JudgedBatch:
    """One judged batch: the batch, every rank's answers, the reference's expectation, and whether
    replay was asked of every rank (``replay_always``) or only after admission (protocol v2)."""

    batch: AskedBatch
    answers: tuple[RankAnswer, ...]
    expect: Expectation
    replay_always: bool = False

    def replayed(self) -> list[tuple[RankAnswer, object]]:
        """(answer, bucket) of every rank that named a bucket."""
        return [(a, a.bucket) for a in self.answers if a.bucket is not None]


Rule = Callable[[JudgedBatch], "str | None"]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rank_consensus(case: JudgedBatch) -> str | None:
    decisions = {a.decision for a in case.answers}
    if len(decisions) <= 1:
        return None
    groups: list[tuple[list[int], tuple[object, object]]] = []
    for a in case.answers:
        if groups and groups[-1][1] == a.decision:
            groups[-1][0].append(a.rank)
        else:
            groups.append(([a.rank], a.decision))
    by = "; ".join(
        f"{'rank' if len(r) == 1 else 'ranks'} {r[0] if len(r) == 1 else f'{r[0]}-{r[-1]}'}: admit={d[0]} bucket={d[1]}"
        for r, d in groups[:6]
    )
    return f"ranks disagree: {by}{'; ...' if len(groups) > 6 else ''}"


def _admission_replay(case: JudgedBatch) -> str | None:
    for a in case.answers:
        if a.admit is None:
            return f"rank {a.rank}: admit raised {a.admit_error}; admit must answer True or False"
        if a.admit and not case.expect.active:
            rule = strategy_row(case.expect.strategy).cp_active_rule()
            return (
                f"rank {a.rank} admitted a batch that is not CP-active under {case.expect.strategy} ({rule}): "
                "only a CP-active batch takes the CP graph path; the CP-local replay of any other batch has no layout to run"
            )
        if a.admit and a.bucket is None:
            return f"rank {a.rank} admitted but replay_bucket refused ({a.replay_error})"
        if a.admit and a.admitted is not None and a.admitted != a.bucket:
            return (
                f"rank {a.rank} admitted for size {a.admitted!r} but replays under {a.bucket!r}: the graph chosen "
                "at admission is not the one replayed"
            )
        if not a.admit and a.bucket is not None and case.replay_always:
            return f"rank {a.rank} did not admit but replay_bucket returned {a.bucket!r} (--ask-replay always)"
    return None


def _captured_bucket(case: JudgedBatch) -> str | None:
    caps = case.batch.capacities
    for a, b in case.replayed():
        if not _is_int(b) or b not in case.batch.capture_num_tokens:
            return f"rank {a.rank} replays {b!r}, not in capture_num_tokens"
        if b not in caps:
            return f"rank {a.rank} replays bucket {b}, which has no recorded capacity"
    return None


def _padding_limit(case: JudgedBatch) -> str | None:
    if case.expect.keying == "local":  # keyed by rank-local rows: no window, the size only holds the key
        m = case.expect.key
        for a, b in case.replayed():
            if isinstance(b, int) and not isinstance(b, bool) and b < m:
                return f"rank {a.rank} replays size {b} below the key m = {m} (the largest rank-local rows)"
        return None
    n, f = case.batch.num_tokens, case.batch.max_padding_factor
    top = window_top(n, f)
    for a, b in case.replayed():
        if isinstance(b, int) and not isinstance(b, bool) and not n <= b <= top:
            return f"rank {a.rank} replays bucket {b} outside [n, F*n] = [{n}, {f}*{n}] (largest allowed {top})"
    return None


def _capacity_fit(case: JudgedBatch) -> str | None:
    batch, spec = case.batch, case.expect
    caps = batch.capacities
    for a, b in case.replayed():
        if not _is_int(b) or b not in caps:
            continue
        assert isinstance(b, int)
        why = _rows_fit(batch, spec, a, b, caps[b])
        if why is not None:
            return why
    return None


def _rows_fit(batch: AskedBatch, spec: Expectation, a: RankAnswer, bucket: int, capacity: int) -> str | None:
    if a.layout is not None:  # the layout the rank built (local_layout): its rows must be the live layout's
        why = _layout_fits(batch, spec, a, capacity)
        if why is not None:
            return why
    if a.rows_error is not None:
        return f"rank {a.rank}: local_rows(bucket={bucket}) raised {a.rows_error}"
    if a.rows is None:
        if spec.required > capacity:
            busiest = spec.loads.index(max(spec.loads))
            return (
                f"bucket {bucket} holds {capacity} rows per rank but the live layout needs {spec.required} "
                f"(rank {busiest} holds {max(spec.loads)} tokens, aligned to {batch.align_size})"
            )
        return None
    rows = a.rows
    if len(rows) != batch.cp_size or not all(_is_int(r) for r in rows):
        return f"rank {a.rank}: local_rows returned {list(rows)}, not {batch.cp_size} int row counts"
    for q, r in enumerate(rows):
        assert isinstance(r, int)
        if r > capacity:
            return f"rank {a.rank}'s layout puts {r} rows on rank {q}; bucket {bucket} holds {capacity}"
        if r < spec.loads[q]:
            return f"rank {a.rank}'s layout gives rank {q} {r} rows for its {spec.loads[q]} live tokens"
    return None


def _layout_fits(batch: AskedBatch, spec: Expectation, a: RankAnswer, capacity: int) -> str | None:
    if isinstance(a.layout, str):
        return f"rank {a.rank}: local_layout raised {a.layout}"
    assert isinstance(a.layout, LaidOut)
    why = layout_mismatch(
        a.layout, lengths=tuple(batch.extend_seq_lens), cp_size=batch.cp_size, strategy=spec.strategy,
        is_prefilling=getattr(batch, "is_prefilling", None), capacity=capacity,
    )
    return None if why is None else f"rank {a.rank}: {why}"


def _minimal_bucket(case: JudgedBatch) -> str | None:
    spec = case.expect
    if not spec.active or spec.bucket is None:
        return None
    for a, b in case.replayed():  # as spec.invariants.minimal_bucket: any replayed bucket above the least fitting
        if isinstance(b, int) and not isinstance(b, bool) and b > spec.bucket:
            return f"rank {a.rank} replays bucket {b} but the smaller bucket {spec.bucket} fits"
    return None


def _no_needless_fallback(case: JudgedBatch) -> str | None:
    spec = case.expect
    if not spec.active or not spec.fitting:
        return None
    for a in case.answers:
        if a.admit is not True:  # an admitted rank whose replay refuses is admission_replay's
            how = "runs eagerly (did not admit)" if a.admit is False else "cannot decide (admit raised)"
            return f"rank {a.rank} {how} but bucket {spec.fitting[0]} fits"
    return None


JUDGES: Final[Mapping[str, Rule]] = MappingProxyType(
    {
        "rank_consensus": _rank_consensus,
        "admission_replay": _admission_replay,
        "captured_bucket": _captured_bucket,
        "padding_limit": _padding_limit,
        "capacity_fit": _capacity_fit,
        "minimal_bucket": _minimal_bucket,
        "no_needless_fallback": _no_needless_fallback,
    }
)
if tuple(JUDGES) != tuple(INVARIANT_TABLE):  # one judge per row of the invariant table, in its order
    raise AssertionError(f"JUDGES {tuple(JUDGES)} must list exactly the invariant ids {tuple(INVARIANT_TABLE)}")


def keeps_everything(batch: AskedBatch, answers: Sequence[RankAnswer], spec: Expectation) -> bool:
    """A sufficient condition, checked in one pass, under which no rule can fire: every rank answered
    exactly the reference's decision without an error, and any rows it gave fit. Either every rank
    admitted and replays the least fitting bucket of a CP-active batch, or every rank declined (and
    refused to replay, if asked) a batch where no bucket fits or that is not CP-active. The rules then
    find nothing: the ranks agree, admission and replay agree, the bucket is captured, in the window and
    holds the rows, it is the least, and nothing fits that was declined. Anything else goes to the rules."""
    want = spec.bucket
    if want is None:
        for a in answers:
            if a.admit is not False or a.bucket is not None or a.admit_error is not None or a.rows_error is not None:
                return False
        return True
    capacity = batch.capacities[want] if spec.keying == "global" else want
    loads = spec.loads
    for a in answers:
        if a.admit is not True or type(a.bucket) is not int or a.bucket != want or a.admit_error is not None:
            return False
        if a.admitted is not None and a.admitted != want:
            return False
        if a.layout is not None and _layout_fits(batch, spec, a, capacity) is not None:  # a layout shown is judged
            return False
        if a.rows is not None or a.rows_error is not None:
            rows = a.rows
            if rows is None or len(rows) != len(loads):
                return False
            for r, load in zip(rows, loads):
                if type(r) is not int or not load <= r <= capacity:
                    return False
    return True


def judge_answers(
    batch: AskedBatch,
    answers: Sequence[RankAnswer],
    *,
    strategy: str = "zigzag",
    invariants: frozenset[str] | None = None,
    expect: Expectation | None = None,
    replay_always: bool = False,
    keying: str = "global",
) -> list[Finding]:
    """Every invariant in ``invariants`` (default: all) that the ranks' ``answers`` break on ``batch``,
    in INVARIANT_TABLE order. ``expect`` defaults to ``expected(batch, strategy, keying)``; ``replay_always``
    says replay was asked of every rank (then a rank that did not admit must refuse)."""
    spec = expect if expect is not None else expected(batch, strategy, keying)
    if keeps_everything(batch, answers, spec):
        return []
    case = JudgedBatch(batch, tuple(answers), spec, replay_always)
    found = []
    for inv in INVARIANTS:
        if invariants is not None and inv not in invariants:
            continue
        why = JUDGES[inv](case)
        if why is not None:
            found.append(Finding(inv, why))
    return found
