"""The search loop's fast path gives exactly the slow path's answers and findings.

calls.RankAsker asks every rank of a bound policy in one frame and, given the reference's decision
(reference.judge.expected_bucket), skips the answer records when every rank gave it
(reference.judge.keeps_everything); run.py's loop reaches it through judging.ask_judge. Held here
against ``judge(batch, ask(unbound policy))`` over random batches and random answer sets (right and
wrong decisions, raising calls, integer-likes, rows that fit or not), and expected_bucket against
``expected`` over the generator's own batches.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import event, given, strategies as st

from cpgraph.check import Batch, Policy, ask, judge, make_options
from cpgraph.check.calls import PolicyStop, bound, session
from cpgraph.check.generate import exhaustive, random_cases
from cpgraph.check.judging import ask_judge, spec_for
from cpgraph.reference.judge import expected, expected_bucket, keeps_everything
from cpgraph.reference.layout import rank_loads
from cpgraph.check.batch import make_batch
from cpgraph.strategies import batches


class _IntLike:
    """An integer-like answer (numpy ints are read through __index__)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


ADMITS = ("right", "right", "right", True, False, "raise")
BUCKETS = ("right", "right", "right", "none", "raise", "first", "last", "intlike", "n")
ROWS = ("loads", "loads", "aligned", "over", "short", "wrong_len", "raise", "float")


def _scripted(batch: Batch, script: list[tuple[object, str, str]]) -> Policy:
    """A policy answering rank r by ``script[r]`` (admit, bucket, rows behaviours), deterministic."""
    spec = expected(batch)

    def admit(**kw: Any) -> bool:
        how = script[kw["cp_rank"]][0]
        if how == "raise":
            raise RuntimeError("admit broke")
        return spec.bucket is not None if how == "right" else bool(how)

    def replay_bucket(**kw: Any) -> object:
        how = script[kw["cp_rank"]][1]
        buckets = kw["capture_num_tokens"]
        if how == "raise":
            raise LookupError("no bucket")
        return {
            "right": spec.bucket, "none": None, "first": buckets[0], "last": buckets[-1],
            "intlike": None if spec.bucket is None else _IntLike(spec.bucket), "n": kw["num_tokens"],
        }[how]

    def local_rows(*, bucket: int, **kw: Any) -> object:
        how = script[kw["cp_rank"]][2]
        loads = list(spec.loads)
        cap = kw["bucket_local_tokens"].get(bucket, 0)
        if how == "raise":
            raise ValueError("rows broke")
        return {
            "loads": loads, "aligned": [spec.required] * len(loads), "over": [cap + 1] * len(loads),
            "short": [max(0, x - 1) for x in loads], "wrong_len": loads + [0], "float": [float(x) for x in loads],
        }[how]

    return Policy("scripted", admit, replay_bucket, local_rows)


def _outcome(fn: Any) -> Any:
    try:
        return fn()
    except PolicyStop as stop:  # a float row count is a protocol error: both paths must stop alike
        return ("stop", stop.stop.line())


@given(
    batch=batches(cp_size_choices=(1, 2, 4, 8)),
    script=st.lists(st.tuples(st.sampled_from(ADMITS), st.sampled_from(BUCKETS), st.sampled_from(ROWS)), min_size=8, max_size=8),
    same=st.booleans(),
    always=st.booleans(),
    with_rows=st.booleans(),
)
def test_ask_judge_gives_the_slow_paths_answers_and_findings(
    batch: Batch, script: list[tuple[object, str, str]], same: bool, always: bool, with_rows: bool
) -> None:
    if same:  # every rank alike: the kept path is met often
        script = [script[0]] * 8
    raw = _scripted(batch, script)
    if not with_rows:
        raw = replace(raw, local_rows=None)
    mode = "always" if always else "admitted"
    wrapped = replace(bound(raw), asker=None)  # the per-call wrappers, asked one by one (the slow path)
    fast = bound(raw)
    with session(5.0):
        slow = _outcome(lambda: (lambda a: (a, judge(batch, a, replay_always=always)))(ask(wrapped, batch, ask_replay=mode)))
        quick = _outcome(lambda: ask_judge(fast, batch, ask_replay=mode))
        records = _outcome(lambda: ask(fast, batch, ask_replay=mode))
    event("protocol stop" if slow[0] == "stop" else "kept" if quick[0] is None else "judged by the rules")
    if slow[0] == "stop":
        assert quick == records == slow
        return
    answers, found = slow
    assert records == answers == ask(raw, batch, ask_replay=mode)  # the asker's records are the unbound ask's
    assert quick[1] == found
    kept = keeps_everything(batch, answers, expected(batch))
    assert (quick[0] is None) == kept
    if quick[0] is not None:
        assert quick[0] == answers


def _generated(strategy: str, **options: Any) -> list[Batch]:
    opts = make_options(boundary=False, seed=3, strategy=strategy, **options)
    ex = [b for _, b in itertools.islice(exhaustive(opts), 1500)]
    return ex + [b for _, b in itertools.islice(random_cases(opts), 1500)]


@pytest.mark.parametrize("strategy", ["zigzag", "interleave", "contiguous", "dual_chunk_swap"])
def test_expected_bucket_is_expecteds_bucket_on_generated_batches(strategy: str) -> None:
    for batch in _generated(strategy, padding_factors=(1, Fraction(3, 2), 2, 4)) + _generated(strategy):
        spec = expected(batch, strategy)
        assert spec == spec_for(batch, strategy)
        want, loads, capacity = expected_bucket(batch, strategy)
        assert (want, loads) == (spec.bucket, spec.loads), batch
        assert loads == rank_loads(batch.extend_seq_lens, cp_size=batch.cp_size, strategy=strategy)  # not a memo
        assert capacity == (0 if want is None else batch.capacities[want])


@given(batch=batches(cp_size_choices=(1, 2, 3, 4, 8), max_padding_factor=1) | batches(cp_size_choices=(2, 4)))
def test_expected_bucket_is_expecteds_bucket_on_random_batches(batch: Batch) -> None:
    spec = expected(batch)
    assert expected_bucket(batch)[:2] == (spec.bucket, spec.loads)
    assert spec.loads == rank_loads(batch.extend_seq_lens, cp_size=batch.cp_size)  # the memo against the reference


@pytest.mark.parametrize("strategy", ["zigzag", "interleave", "contiguous", "dual_chunk_swap"])
def test_expected_bucket_sums_per_request_loads_for_any_request_count(strategy: str) -> None:
    """1..6 requests (the sum has its own code for one, two and more), at P = 1..8, with the memo
    emptied half way (it is bounded and cleared when full)."""
    from cpgraph.reference import expectation

    lengths = (2, 3, 17, 64, 129, 4095)
    for p in (1, 2, 3, 8):
        for count in range(1, 7):
            if count == 4:
                expectation._REQUEST_MEMOS.clear()
            live = lengths[:count]
            batch = make_batch(live, [sum(live), 2 * sum(live)], cp_size=p, strategy=strategy)
            assert expected_bucket(batch, strategy)[1] == rank_loads(live, cp_size=p, strategy=strategy), (live, p)


def test_an_asker_is_not_used_once_the_policys_functions_are_replaced() -> None:
    def admit(**_: Any) -> bool:
        return False

    def replay(**_: Any) -> None:
        return None

    policy = bound(Policy("p", admit, replay, None))
    swapped = replace(policy, admit=lambda **_: True)
    assert policy.asker.serves(policy) and not policy.asker.serves(swapped)
    batch = next(iter(random_cases(make_options(boundary=False))))[1]
    assert all(a.admit is True for a in ask(swapped, batch))


@given(
    lengths=st.lists(st.integers(0, 5000), min_size=1, max_size=6).map(tuple),
    cp_size=st.integers(1, 16),
    strategy=st.sampled_from(["zigzag", "interleave", "contiguous", "dual_chunk_swap"]),
)
def test_memoised_loads_are_rank_loads(lengths: tuple[int, ...], cp_size: int, strategy: str) -> None:
    from cpgraph.reference.judge import _loads
    from cpgraph.reference.layout import rank_loads

    assert _loads(lengths, cp_size, strategy) == rank_loads(lengths, cp_size=cp_size, strategy=strategy)


def test_per_request_strategies_are_recognised() -> None:
    from cpgraph.reference.judge import _per_request

    assert [_per_request(s) for s in ("zigzag", "interleave", "contiguous", "dual_chunk_swap", "nope")] == [True, False, True, True, False]


def _misbehaving(mode: dict[str, str]) -> Policy:
    """Answers like the reference until ``mode['how']`` is set, then misbehaves that way on rank 1."""
    import time as _time

    from cpgraph.reference import policy as reference

    def act(method: str, kw: dict[str, Any], good: Any) -> Any:
        how = mode.get("how", "")
        if kw["cp_rank"] != 1 or not how.startswith(method):
            return good(**kw)
        what = how.split(":")[1]
        if what == "raise":
            raise ValueError("broken on purpose")
        if what == "exit":
            raise SystemExit(3)
        if what == "interrupt":
            raise KeyboardInterrupt
        if what == "hang":
            _time.sleep(30)
        return {"one": 1, "text": "x", "bool": True, "intlike": _IntLike(good(**kw) or 0)}[what]

    def admit(**kw: Any) -> Any:
        return act("admit", kw, reference.admit)

    def replay_bucket(**kw: Any) -> Any:
        return act("replay", kw, reference.replay_bucket)

    return Policy("misbehaving", admit, replay_bucket, None)


@pytest.mark.parametrize(
    "how",
    ["admit:raise", "admit:exit", "admit:interrupt", "admit:hang", "admit:one", "admit:text",
     "replay:raise", "replay:exit", "replay:interrupt", "replay:hang", "replay:text", "replay:bool", "replay:intlike"],
)
def test_the_asker_after_its_first_batch_stops_and_answers_as_the_per_call_bound(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a clean first batch the asker calls the policy without _call's frame: every stop, answer
    and kept traceback must be the one the per-call wrappers give."""
    from cpgraph.check.calls import last_traceback

    batch = next(b for _, b in exhaustive(make_options(boundary=False, cp_sizes=(4,))) if expected(b).bucket is not None)
    results: list[tuple[object, ...]] = []
    for inline in (True, False):
        mode: dict[str, str] = {}
        policy = bound(_misbehaving(mode))
        if not inline:
            policy = replace(policy, asker=None)
        with session(1.0):  # the good calls must answer in time on a busy machine too
            ask(policy, batch)  # the first batch checks the signatures; later ones take the written-out path
            mode["how"] = how
            if inline:  # admit and replay_bucket no longer go through _call
                import cpgraph.check.asking as asking

                monkeypatch.setattr(asking, "_call", None)
            try:
                answers = ask(policy, batch)
                tb = last_traceback("admit" if how.startswith("admit") else "replay_bucket", 1, answers[1].admit_error or answers[1].replay_error)
                results.append((answers, tb))
            except PolicyStop as stop:
                results.append((stop.stop.kind, stop.stop.line(), stop.stop.policy_traceback))
            monkeypatch.undo()
    assert results[0] == results[1]
    if how.endswith(":raise"):
        assert "broken on purpose" in str(results[0][1]) and "asking.py" not in str(results[0][1])


@given(batch=batches(cp_size_choices=(1, 2, 4)))
def test_kwargs_less_table_is_kwargs_without_the_table_in_order(batch: Batch) -> None:
    assert list(batch.kwargs_less_table().items()) == [(k, v) for k, v in batch.kwargs().items() if k != "bucket_local_tokens"]


@given(
    bucket=st.integers(1, 40000),
    cp_size=st.integers(1, 16),
    align=st.integers(1, 64),
    strategy=st.sampled_from(["zigzag", "interleave", "contiguous", "dual_chunk_swap"]),
    context_len=st.none() | st.integers(1, 5000),
)
def test_captured_rows_are_capture_local_tokens(bucket: int, cp_size: int, align: int, strategy: str, context_len: int | None) -> None:
    from cpgraph.check.batch import captured_rows
    from cpgraph.reference import capture_local_tokens

    want = capture_local_tokens(bucket, cp_size=cp_size, align_size=align, strategy=strategy, context_len=context_len)
    assert captured_rows.__wrapped__(bucket, cp_size, align, strategy, context_len) == want


@pytest.mark.parametrize("strategy", ["zigzag", "interleave", "contiguous", "dual_chunk_swap"])
def test_capture_loads_are_the_reference_loads_of_the_capture_lengths(strategy: str) -> None:
    """reference.judge.capture_loads sums B / context_len requests without building them; it equals
    rank_loads of reference's capture_lengths (no rest, a rest, B at or below the context length)."""
    from cpgraph.reference.judge import capture_loads
    from cpgraph.reference.strategies import capture_lengths

    for p in (1, 2, 3, 8):
        for ctx in (None, 1, 7, 64):
            for bucket in (1, 6, 7, 8, 63, 64, 65, 128, 1000):
                want = rank_loads(capture_lengths(bucket, context_len=ctx), cp_size=p, strategy=strategy)
                assert capture_loads(bucket, ctx, p, strategy) == want, (bucket, ctx, p)


def test_captured_rows_of_a_bucket_of_many_context_lengths_do_not_build_them() -> None:
    """A 'captured' table at a context length far below the buckets (10**12 / 3 requests a bucket) is
    recorded in closed form, equal to the loads of the one-rest case scaled."""
    from cpgraph.check.batch import captured_rows
    from cpgraph.reference.judge import capture_loads

    bucket, ctx, p = 10**12 + 2, 3, 8
    full = bucket // ctx
    one, rest = rank_loads((ctx,), cp_size=p), rank_loads((bucket % ctx,), cp_size=p)
    assert capture_loads(bucket, ctx, p, "zigzag") == tuple(full * a + b for a, b in zip(one, rest))
    assert captured_rows(bucket, p, 2 * p, "zigzag", ctx) == -(-max(full * a + b for a, b in zip(one, rest)) // (2 * p)) * (2 * p)
    assert capture_loads(bucket, ctx, p, "interleave") == rank_loads((bucket,), cp_size=p, strategy="interleave")
