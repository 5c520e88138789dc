"""The concrete judge (reference/judge.py) against the spec's invariant terms (spec/invariants.py).

One CP-active batch summarised by n, the rows it needs and a capture table; one rank answers a bucket
(or runs eagerly). For every invariant both can state on one rank, the judge's verdict must equal the
spec term's, decided by the solver on the literals (a rational F brings a floor's quotient, so the term
is decided, not simplified). A judge that drifts from the spec's reading (it once skipped a non-fitting
bucket above the least fitting one under minimal_bucket) fails here.
"""

from __future__ import annotations

from fractions import Fraction

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from cpgraph.design.evaluate import GroupBatch  # a plain record of the asked batch (AskedBatch)
from cpgraph.proofs.engine.check import Status, check
from cpgraph.reference.judge import Expectation, fitting_set, judge_answers, rank_answer
from cpgraph.spec import invariants as spec
from cpgraph.spec.selection import Selection, concrete_capture_list, padding_window

ONE_RANK = ("captured_bucket", "padding_limit", "capacity_fit", "minimal_bucket", "no_needless_fallback")


@st.composite
def cases(draw: st.DrawFn) -> tuple[GroupBatch, int, int | None]:
    buckets = tuple(sorted(draw(st.sets(st.integers(1, 400), min_size=1, max_size=6))))
    caps = {b: draw(st.integers(0, 120)) for b in buckets if draw(st.booleans()) or draw(st.booleans())}
    n = draw(st.integers(1, 300))
    required = draw(st.integers(0, 120))
    factor = Fraction(draw(st.integers(2, 12)), draw(st.integers(1, 4)))
    factor = max(factor, Fraction(1))
    bucket = draw(st.none() | st.sampled_from(buckets) | st.integers(1, 500))
    batch = GroupBatch(1, 1, n, (n,), buckets, caps, factor)
    return batch, required, bucket


def _spec_holds(batch: GroupBatch, required: int, bucket: int | None) -> dict[str, bool]:
    capture = concrete_capture_list(batch.capture_num_tokens, batch.capacities)
    window = padding_window(batch.num_tokens, batch.max_padding_factor, "w")
    sel = Selection(z3.BoolVal(bucket is not None), z3.IntVal(0 if bucket is None else bucket))
    claims = {
        "captured_bucket": spec.captured_bucket(sel, capture),
        "padding_limit": spec.padding_limit(sel, window),
        "capacity_fit": z3.Implies(
            z3.BoolVal(bucket in batch.capacities), spec.capacity_fit(sel, capture, required)
        ),  # the judge leaves an unrecorded bucket to captured_bucket
        "minimal_bucket": spec.minimal_bucket(sel, capture, window, required),
        "no_needless_fallback": spec.no_needless_fallback(sel, capture, window, required),
    }
    verdicts = {}
    for name, claim in claims.items():
        verdict = check(claim, hypotheses=[window.holds])
        assert verdict.status in (Status.PROVED, Status.REFUTED), (name, verdict)
        verdicts[name] = verdict.status is Status.PROVED
    return verdicts


@settings(max_examples=300, deadline=None)
@given(cases())
def test_the_judge_reads_each_one_rank_invariant_as_the_spec_does(case: tuple[GroupBatch, int, int | None]) -> None:
    batch, required, bucket = case
    fitting = fitting_set(
        num_tokens=batch.num_tokens, required=required, capture_num_tokens=batch.capture_num_tokens,
        capacities=batch.capacities, factor=batch.max_padding_factor,
    )
    expect = Expectation(True, (required,), required, fitting)
    answer = rank_answer(0, bucket is not None, None, bucket, None, None, None, bucket is not None)
    broken = {f.invariant for f in judge_answers(batch, [answer], expect=expect)}
    holds = _spec_holds(batch, required, bucket)
    for invariant in ONE_RANK:
        assert (invariant not in broken) == holds[invariant], (invariant, batch, required, bucket, broken)
