"""The spec evaluated on concrete inputs: the expected side of the conformance harness.

Inputs become numerals, so z3.simplify folds most terms; where a fresh variable remains (a max_of or an
align_up quotient) one small solver call reads its value, and a second call confirms the spec's facts pin
that value down (a spec term that admits two values is a spec bug, reported as such).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import z3

from cpgraph.spec.logic import And, If
from cpgraph.proofs.engine.check import Status, check, determined_values

from cpgraph.spec.capacity import capture_local_tokens, headroom_local_tokens, required_local_tokens
from cpgraph.spec.selection import concrete_capture_list, padding_window, scan_select
from cpgraph.spec.strategies import rank_loads
from cpgraph.spec.terms import BoolTerm, Defined, IntTerm, Loads

_RLIMIT = 2_000_000


class SpecEvaluationError(RuntimeError):
    """The spec's facts do not determine a unique value for concrete inputs (or are contradictory)."""


def value_of(term: IntTerm | BoolTerm, facts: BoolTerm) -> int | bool:
    """The unique value of ``term`` under ``facts`` (inputs already concrete)."""
    folded = z3.simplify(term)
    if z3.is_int_value(folded):
        return int(folded.as_long())
    if z3.is_true(folded) or z3.is_false(folded):
        return bool(z3.is_true(folded))
    witness = check(False, hypotheses=(facts,), rlimit=_RLIMIT)
    if witness.status is not Status.REFUTED:
        raise SpecEvaluationError(f"spec facts are unsatisfiable (or undecided) for these inputs: {facts}")
    pairs = [
        (z3.Bool(k) if isinstance(v, bool) else z3.Int(k), z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v))
        for k, v in witness.model.items()
    ]
    value = z3.simplify(z3.substitute(term, *pairs)) if pairs else folded
    if not (z3.is_int_value(value) or z3.is_true(value) or z3.is_false(value)):
        raise SpecEvaluationError(f"spec term {term} has no value in the model of its facts")
    if not check(term == value, hypotheses=(facts,), rlimit=_RLIMIT).proved:
        raise SpecEvaluationError(f"spec term {term} is not determined by its facts (one value: {value})")
    if z3.is_int_value(value):
        return int(value.as_long())
    return bool(z3.is_true(value))


def _int(defined: Defined) -> int:
    value = value_of(defined.value, defined.holds)
    assert isinstance(value, int) and not isinstance(value, bool)
    return value


def _loads(extend_seq_lens: Sequence[int], cp_size: int, strategy: str) -> Loads:
    """The spec's loads folded to numerals (so the capacity terms built on them fold too)."""
    loads = rank_loads(tuple(extend_seq_lens), cp_size, "eval.loads", strategy)
    return Loads(tuple(z3.IntVal(_int(Defined(load, loads.holds))) for load in loads.loads), z3.BoolVal(True))


def spec_rank_loads(extend_seq_lens: Sequence[int], *, cp_size: int, strategy: str = "zigzag") -> tuple[int, ...]:
    """Per-rank loads by the spec."""
    return tuple(int(load.as_long()) for load in _loads(extend_seq_lens, cp_size, strategy).loads)


def spec_required_local_tokens(
    extend_seq_lens: Sequence[int], *, cp_size: int, align_size: int, strategy: str = "zigzag"
) -> int:
    """align_up(max_r l_r, A) by the spec."""
    return _int(required_local_tokens(_loads(extend_seq_lens, cp_size, strategy), align_size, "eval.required"))


def spec_capture_local_tokens(num_tokens: int, *, cp_size: int, align_size: int, strategy: str = "zigzag") -> int:
    """The single-request capacity of bucket ``num_tokens`` by the spec."""
    return _int(capture_local_tokens(num_tokens, cp_size, align_size, "eval.capture", strategy))


def spec_headroom_local_tokens(num_tokens: int, *, cp_size: int, align_size: int, max_requests: int) -> int:
    """The headroom capacity of bucket ``num_tokens`` by the spec."""
    return _int(headroom_local_tokens(num_tokens, cp_size, align_size, max_requests, "eval.headroom"))


def spec_select_replay_bucket(
    *,
    num_tokens: int,
    required_local_tokens: int,
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int | Fraction,
) -> int | None:
    """The spec's scan of the capture list (None = run eagerly); a rational F's window has a quotient, whose
    facts the values are read under."""
    capture = concrete_capture_list(tuple(capture_num_tokens), bucket_local_tokens)
    window = padding_window(num_tokens, max_padding_factor)
    chosen = scan_select(capture, window, required_local_tokens)
    admitted = value_of(chosen.admitted, window.holds)
    if not admitted:
        return None
    bucket = value_of(chosen.bucket, window.holds)
    assert isinstance(bucket, int)
    return bucket


def values_of(terms: Sequence[IntTerm | BoolTerm], facts: BoolTerm) -> tuple[int | bool, ...]:
    """The unique values of many ``terms`` under one conjunction of ``facts`` (inputs already concrete), in
    two solver calls at most (one model, one proof that the model's values are the only ones), where
    ``value_of`` makes two per term; the same SpecEvaluationError when the facts are contradictory or do
    not pin a value down."""
    folded = [z3.simplify(t) for t in terms]
    out: list[int | bool | None] = [_numeral(f) for f in folded]
    open_ = [i for i, v in enumerate(out) if v is None]
    if not open_:
        return tuple(v for v in out if v is not None)
    values, why = determined_values([folded[i] for i in open_], facts, rlimit=_RLIMIT)
    if values is None and why != "not determined":
        raise SpecEvaluationError(f"spec facts are unsatisfiable (or undecided) for these inputs: {z3.simplify(facts)}")
    if values is None:
        raise SpecEvaluationError(f"spec terms {[terms[i] for i in open_]} are not determined by their facts")
    by_index = dict(zip(open_, values))
    for i in open_:
        out[i] = _numeral(by_index[i])
        if out[i] is None:
            raise SpecEvaluationError(f"spec term {terms[i]} has no value in the model of its facts")
    return tuple(v for v in out if v is not None)


def _numeral(term: z3.ExprRef) -> int | bool | None:
    if z3.is_int_value(term):
        return int(term.as_long())
    if z3.is_true(term) or z3.is_false(term):
        return bool(z3.is_true(term))
    return None


@dataclass(frozen=True)
class RankPlan:
    """One rank's whole-batch decision by the spec: the bucket admission admits (None: fallback) and the one
    replay runs (None: replay refuses: not admitted, or the tripwire)."""

    rank: int
    admitted: int | None
    replayed: int | None


def spec_plan(
    extend_seq_lens: Sequence[int],
    *,
    num_tokens: int,
    cp_size: int,
    align_size: int,
    strategy: str,
    max_padding_factor: int | Fraction,
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    keying: str = "global",
    ranks: Sequence[int] | None = None,
) -> tuple[RankPlan, ...] | str:
    """Whole-batch admission (spec/admission.py ``admit``, the CP-active gate included) and replay
    (spec/replay.py ``replay``, its tripwire included) of a concrete batch, at each of ``ranks`` (every rank
    by default), all evaluated in one ``values_of``; or, when the spec has no value, why (a string). The spec
    is read through its modules' attributes at call time, so what is evaluated is what they hold now."""
    from cpgraph.spec import admission, batch, replay, selection

    every = tuple(range(cp_size)) if ranks is None else tuple(ranks)
    setup = admission.RankSetup(strategy, cp_size, align_size, Fraction(max_padding_factor),
                                selection.concrete_capture_list(tuple(capture_num_tokens), bucket_local_tokens), keying)
    live = batch.RequestsBatch(cp_size, tuple(z3.IntVal(x) for x in extend_seq_lens), z3.BoolVal(True))
    terms: list[IntTerm | BoolTerm] = []
    facts: list[BoolTerm] = []
    try:
        for r in every:
            admitted = admission.admit(live, num_tokens, setup, r, f"eval.admit{r}")
            replayed = replay.replay(live, num_tokens, setup, r, f"eval.replay{r}")
            # an eager decision (or a refused replay) has no bucket: the spec leaves it free, so it is not read
            terms += [admitted.selection.admitted, If(admitted.selection.admitted, admitted.selection.bucket, 0),
                      replayed.succeeded, If(replayed.succeeded, replayed.selection.bucket, 0)]
            facts += [admitted.holds, replayed.holds]
        got = values_of(terms, And(*facts))
    except (SpecEvaluationError, ValueError, TypeError, z3.Z3Exception) as exc:
        return f"spec raised {type(exc).__name__}: {str(exc)[:200]}"
    out = []
    for j, r in enumerate(every):
        a, b, ok, c = got[4 * j: 4 * j + 4]
        out.append(RankPlan(r, int(b) if a else None, int(c) if ok else None))
    return tuple(out)
