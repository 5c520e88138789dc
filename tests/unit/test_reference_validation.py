"""Every public reference function rejects bad input with an error naming the argument and the value."""

from collections.abc import Callable
from typing import Any

import pytest

from cpgraph.reference.validate import MAX_CP_SIZE
from cpgraph.reference import (
    CaptureRule,
    ReferenceRunner,
    ReplayError,
    build_layout,
    capture_local_tokens,
    headroom_local_tokens,
    rank_loads,
    required_local_tokens,
    select_replay_bucket,
)

SELECT_OK: dict[str, Any] = dict(
    num_tokens=2048,
    required_local_tokens=520,
    capture_num_tokens=(2048, 2304),
    bucket_local_tokens={2048: 512, 2304: 576},
    max_padding_factor=2,
)


def _select(**changes: Any) -> Callable[[], object]:
    return lambda: select_replay_bucket(**{**SELECT_OK, **changes})


CASES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("negative length", lambda: rank_loads((5, -1), cp_size=2), ValueError, "extend_seq_lens[1]"),
    ("float length", lambda: rank_loads((5.0,), cp_size=2), TypeError, "extend_seq_lens[0]"),
    ("bool length", lambda: rank_loads((True, 4), cp_size=2), TypeError, "extend_seq_lens[0]"),
    ("empty batch", lambda: rank_loads((), cp_size=2), ValueError, "empty batch"),
    ("string batch", lambda: rank_loads("12", cp_size=2), TypeError, "extend_seq_lens"),
    ("cp_size 0", lambda: rank_loads((5,), cp_size=0), ValueError, "cp_size"),
    ("cp_size float", lambda: rank_loads((5,), cp_size=2.0), TypeError, "cp_size"),
    ("unknown strategy", lambda: rank_loads((5,), cp_size=2, strategy="ring"), ValueError, "strategy"),
    ("align_size 0", lambda: required_local_tokens((5,), cp_size=2, align_size=0), ValueError, "align_size"),
    ("capture num_tokens 0", lambda: capture_local_tokens(0, cp_size=2, align_size=4), ValueError, "num_tokens"),
    (
        "headroom max_requests 0",
        lambda: headroom_local_tokens(64, cp_size=2, align_size=4, max_requests=0),
        ValueError,
        "max_requests",
    ),
    ("unsorted capture list", _select(capture_num_tokens=(2304, 2048)), ValueError, "sorted"),
    ("duplicated capture list", _select(capture_num_tokens=(2048, 2048)), ValueError, "twice"),
    ("non-positive bucket", _select(capture_num_tokens=(0, 2048)), ValueError, "capture_num_tokens[0]"),
    ("empty capture list", _select(capture_num_tokens=()), ValueError, "capture_num_tokens"),
    ("negative capacity", _select(bucket_local_tokens={2048: -1}), ValueError, "bucket_local_tokens[2048]"),
    ("float capacity", _select(bucket_local_tokens={2048: 1.5}), TypeError, "bucket_local_tokens[2048]"),
    ("capacities not a mapping", _select(bucket_local_tokens=[512]), TypeError, "bucket_local_tokens"),
    ("padding factor 0", _select(max_padding_factor=0), ValueError, "max_padding_factor"),
    ("padding factor float", _select(max_padding_factor=1.5), TypeError, "max_padding_factor"),
    ("negative required", _select(required_local_tokens=-1), ValueError, "required_local_tokens"),
    (
        "num_tokens below the batch",
        lambda: ReferenceRunner(cp_size=2, capture_num_tokens=(64,)).plan((40, 40), 64),
        ValueError,
        "num_tokens",
    ),
    (
        "no bucket >= 2P",
        lambda: ReferenceRunner(cp_size=8, capture_num_tokens=(4, 8)),
        ValueError,
        "2*cp_size",
    ),
    ("unknown capture rule", lambda: CaptureRule("huge"), ValueError, "CaptureRule.kind"),
    ("layout rows too few", lambda: build_layout((9,), cp_size=2, rows=4), ValueError, "never truncated"),
]


@pytest.mark.parametrize(("label", "call", "error", "needle"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_naming_the_argument(
    label: str, call: Callable[[], object], error: type[Exception], needle: str
) -> None:
    with pytest.raises(error) as info:
        call()
    assert needle in str(info.value), f"{label}: message {str(info.value)!r} lacks {needle!r}"


def test_missing_capacity_is_skipped_not_an_error() -> None:
    assert select_replay_bucket(**{**SELECT_OK, "bucket_local_tokens": {2304: 576}}) == 2304
    assert select_replay_bucket(**{**SELECT_OK, "bucket_local_tokens": {2048: 512, 2304: None}}) is None


def test_replay_of_a_batch_that_was_not_admitted_raises() -> None:
    runner = ReferenceRunner(cp_size=2, capture_num_tokens=(64,))
    plan = runner.plan((3,))
    with pytest.raises(ReplayError, match="not admitted"):
        runner.replay(plan)


def test_policy_functions_take_exactly_the_batch_keywords() -> None:
    from cpgraph.reference import policy

    batch = dict(
        cp_rank=0,
        cp_size=2,
        align_size=4,
        num_tokens=8,
        extend_seq_lens=(8,),
        capture_num_tokens=(8,),
        bucket_local_tokens={8: 4},
        max_padding_factor=2,
    )
    assert policy.admit(**batch) and policy.replay_bucket(**batch) == 8
    without_rank = {k: v for k, v in batch.items() if k != "cp_rank"}
    with pytest.raises(TypeError, match=r"missing \['cp_rank'\]"):
        policy.admit(**without_rank)
    with pytest.raises(TypeError, match=r"unexpected \['strategy'\]"):
        policy.replay_bucket(**batch, strategy="zigzag")


@pytest.mark.parametrize("cp_size", [MAX_CP_SIZE + 1, 10**9, 2**64])
def test_a_cp_size_beyond_the_bound_is_refused_not_built(cp_size: int) -> None:
    """A layout holds one entry per rank: a huge P must be a ValueError naming cp_size, never an
    OverflowError or a P-tuple of a billion entries."""
    from cpgraph import reference as ref

    calls = [
        lambda: ref.rank_loads((4,), cp_size=cp_size),
        lambda: ref.required_local_tokens((4,), cp_size=cp_size, align_size=1),
        lambda: ref.capture_local_tokens(4, cp_size=cp_size, align_size=1),
        lambda: ref.build_layout((4,), cp_size=cp_size, rows=4),
        lambda: ref.is_cp_active((4,), num_tokens=4, cp_size=cp_size),
        lambda: ReferenceRunner(cp_size=cp_size, capture_num_tokens=(64,)),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=rf"cp_size must be an int in 1\.\.{MAX_CP_SIZE}.*got {cp_size}"):
            call()


def test_the_largest_cp_size_is_accepted() -> None:
    from cpgraph import reference as ref

    assert len(ref.rank_loads((4,), cp_size=MAX_CP_SIZE)) == MAX_CP_SIZE
