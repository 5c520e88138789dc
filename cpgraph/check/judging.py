"""The check's view of the invariants: the reference's expectation of a batch (cached) and the judge of
every rank's answers, both taken from reference/judge.py (one judge per id of reference/invariants.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from cpgraph.check.batch import Batch
from cpgraph.reference.invariants import EFFICIENCY as EFFICIENCY, INVARIANTS as INVARIANTS, SAFETY as SAFETY
from cpgraph.check.protocol import ASK_REPLAY, Policy, ask
from cpgraph.reference.judge import Expectation, Finding as Finding, RankAnswer, expected, expected_bucket, judge_answers
from cpgraph.reference.capacity import align_up
from cpgraph.reference.keying import keying_row
from cpgraph.reference.layout import rank_loads
from cpgraph.reference.selection import fitting_buckets, is_cp_active


Spec = Expectation  # the reference's verdict on a batch (the name the reports use)


@lru_cache(maxsize=65536)
def live_loads(lengths: tuple[int, ...], cp_size: int, strategy: str) -> tuple[int, ...]:
    """reference.rank_loads of live lengths, memoised (the generator asks it for every batch)."""
    return rank_loads(lengths, cp_size=cp_size, strategy=strategy)


@lru_cache(maxsize=16384)
def spec_for(batch: Batch, strategy: str = "zigzag", keying: str = "global") -> Expectation:
    """reference.judge.expected(batch) (rows from the live lengths, the fitting set at num_tokens,
    CP-activity; under ``local`` keying the key's), memoised: the same batch meets many ranks and the
    minimiser."""
    return expected(batch, strategy, keying)


def spec_by_reference(batch: Batch, strategy: str = "zigzag", keying: str = "global") -> Expectation:
    """``spec_for`` computed call by call through reference/'s public, validating functions and the keying
    table's row (slow; tests hold it equal to ``spec_for``)."""
    row = keying_row(keying)
    loads = rank_loads(batch.extend_seq_lens, cp_size=batch.cp_size, strategy=strategy, is_prefilling=batch.is_prefilling)
    key = row.key(batch.num_tokens, loads)
    required = align_up(max(loads), batch.align_size)
    capacities = row.capacities(batch.capture_num_tokens, batch.capacities)
    if row.windowed:
        fitting = fitting_buckets(
            num_tokens=key, required_local_tokens=required, capture_num_tokens=batch.capture_num_tokens,
            bucket_local_tokens=capacities, max_padding_factor=batch.max_padding_factor,
        )
    else:  # no window: every captured size from the key up whose capacity holds the rows
        fitting = tuple(b for b in batch.capture_num_tokens if b >= key and capacities.get(b, -1) >= required)
    active = (
        is_cp_active(batch.extend_seq_lens, num_tokens=batch.num_tokens, cp_size=batch.cp_size, strategy=strategy)
        if row.gated else True
    )
    return Expectation(active, loads, required, fitting, row.id, key, strategy)


def judge(
    batch: Batch,
    answers: tuple[RankAnswer, ...],
    *,
    strategy: str = "zigzag",
    invariants: frozenset[str] | None = None,
    replay_always: bool = False,
    keying: str = "global",
) -> list[Finding]:
    """Every invariant in ``invariants`` (default: all) that the ranks' answers break on ``batch``:
    reference.judge.judge_answers (a freshly generated batch is seen once, so its expectation is not
    memoised here; its loads are). ``replay_always``: replay was asked of
    every rank (--ask-replay always), so a rank that did not admit must also refuse."""
    return judge_answers(
        batch, answers, strategy=strategy, invariants=invariants, expect=expected(batch, strategy, keying),
        replay_always=replay_always, keying=keying,
    )


Step = Callable[[Batch, "frozenset[str] | None"], "tuple[tuple[RankAnswer, ...] | None, list[Finding]]"]


def stepper(policy: Policy, *, strategy: str = "zigzag", ask_replay: str = "admitted", keying: str = "global") -> Step:
    """``ask_judge`` for one policy and one run's knobs, with what does not change between batches
    looked up once (the search loop calls it for every batch). A policy that says which size it admitted
    (``admitted_bucket``) is asked through protocol.ask, which asks that too."""
    always = ask_replay == "always"
    asker = policy.asker
    if asker is None or ask_replay not in ASK_REPLAY or not asker.serves(policy) or policy.admitted_bucket is not None:

        def slow(batch: Batch, invariants: frozenset[str] | None) -> tuple[tuple[RankAnswer, ...] | None, list[Finding]]:
            answers = ask(policy, batch, ask_replay=ask_replay)
            return answers, judge(batch, answers, strategy=strategy, invariants=invariants, replay_always=always, keying=keying)

        return slow

    def step(batch: Batch, invariants: frozenset[str] | None) -> tuple[tuple[RankAnswer, ...] | None, list[Finding]]:
        table = dict(batch.bucket_local_tokens)  # read by the decision; each rank is given its own copy
        want, loads, capacity = expected_bucket(batch, strategy, table, keying)
        answers: tuple[RankAnswer, ...] | None = asker(batch, None, always, want, loads, capacity, table)
        if answers is None:
            return None, []
        return answers, judge(batch, answers, strategy=strategy, invariants=invariants, replay_always=always, keying=keying)

    return step


def ask_judge(
    policy: Policy,
    batch: Batch,
    *,
    strategy: str = "zigzag",
    invariants: frozenset[str] | None = None,
    ask_replay: str = "admitted",
    keying: str = "global",
) -> tuple[tuple[RankAnswer, ...] | None, list[Finding]]:
    """``ask`` then ``judge``, the search loop's step: every rank asked, every invariant in ``invariants``
    judged, the same findings. For a bound policy (calls.bound) with the reference's decision in hand
    (reference.judge.expected_bucket), a batch on which every rank gave that decision is answered
    (None, []) without building the answer records or the expectation (reference.judge.keeps_everything
    says no rule can fire then); otherwise the answers and ``judge``'s findings. ``batch`` must be a
    valid batch (a generated one): expected_bucket does not validate."""
    return stepper(policy, strategy=strategy, ask_replay=ask_replay, keying=keying)(batch, invariants)
