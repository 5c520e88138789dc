"""cpgraph/check/calls.py: every policy call bounded and judged (timeouts, exits, protocol errors, tracebacks)."""

import time
from collections.abc import Callable
from typing import Any

import pytest

from cpgraph.check import Policy, check_policy, make_batch
from cpgraph.check.calls import PolicyStop, bound, last_traceback, session
from cpgraph.check.protocol import ask
from cpgraph.reference import policy as reference

BATCH = make_batch([1534, 161, 353], [2048, 2304, 2560], cp_size=4)


def _policy(admit: Callable[..., Any] = reference.admit, replay: Callable[..., Any] = reference.replay_bucket,
            rows: Callable[..., Any] | None = None) -> Policy:
    return bound(Policy("test-policy", admit, replay, rows))


def _stop(policy: Policy, timeout_s: float = 5.0) -> PolicyStop:
    with session(timeout_s), pytest.raises(PolicyStop) as stopped:
        ask(policy, BATCH)
    return stopped.value


def test_a_sound_policy_answers_as_before() -> None:
    with session(5.0):
        answers = ask(_policy(), BATCH)
    assert {a.bucket for a in answers} == {2304} and all(a.admit is True for a in answers)


def test_a_hung_call_is_stopped_and_names_the_call_and_the_batch() -> None:
    def admit(**batch: Any) -> bool:
        if batch["cp_rank"] == 2:
            time.sleep(3600)
        return True

    stop = _stop(_policy(admit=admit), timeout_s=1.0).stop  # ranks 0 and 1 must answer in time on a busy machine
    assert stop.kind == "timeout" and stop.method == "admit" and stop.rank == 2
    assert "did not return within 1 s" in stop.line() and "extend_seq_lens=(1534, 161, 353)" in stop.line()


def test_a_busy_loop_that_swallows_exception_is_still_stopped() -> None:
    def admit(**batch: Any) -> bool:
        while True:
            try:
                sum(range(1000))
            except Exception:  # the timeout is a BaseException: this cannot swallow it
                pass

    assert _stop(_policy(admit=admit), timeout_s=0.2).stop.kind == "timeout"


@pytest.mark.parametrize(
    "raised, kind",
    [(SystemExit(3), "system_exit"), (KeyboardInterrupt(), "keyboard_interrupt")],
)
def test_system_exit_and_keyboard_interrupt_from_a_policy_are_findings(raised: BaseException, kind: str) -> None:
    def admit(**batch: Any) -> bool:
        raise raised

    stop = _stop(_policy(admit=admit)).stop
    assert stop.kind == kind and not stop.protocol_error
    assert "test_check_calls.py" in stop.policy_traceback and "in admit" in stop.policy_traceback


@pytest.mark.parametrize(
    "method, value, says",
    [
        ("admit", None, "returned None (NoneType); the protocol requires a bool"),
        ("admit", "yes", "returned 'yes' (str); the protocol requires a bool"),
        ("admit", 8.0, "returned 8.0 (float); the protocol requires a bool"),
        ("admit", 1, "returned 1 (int); the protocol requires a bool"),
        ("replay_bucket", 2304.0, "returned 2304.0 (float); the protocol requires an int bucket"),
        ("replay_bucket", "2304", "returned '2304' (str)"),
        ("replay_bucket", True, "returned True (bool)"),
        ("local_rows", 576, "returned 576 (int); the protocol requires a sequence of cp_size ints"),
        ("local_rows", [576, 576.0, 576, 576], "item 576.0 is a float"),
    ],
)
def test_a_wrong_answer_type_is_a_protocol_error(method: str, value: object, says: str) -> None:
    def answer(**batch: Any) -> object:
        return value

    fns: dict[str, Any] = {"admit": reference.admit, "replay": reference.replay_bucket, "rows": reference.local_rows}
    fns[{"admit": "admit", "replay_bucket": "replay", "local_rows": "rows"}[method]] = answer
    stop = _stop(_policy(fns["admit"], fns["replay"], fns["rows"])).stop
    assert stop.protocol_error and stop.method == method
    assert says in stop.detail


def test_positional_parameters_are_a_protocol_error_not_a_violation() -> None:
    def admit(cp_rank, cp_size, align_size, num_tokens, extend_seq_lens, capture_num_tokens,  # type: ignore[no-untyped-def]
              bucket_local_tokens, max_padding_factor, /):
        return True

    stop = _stop(_policy(admit=admit)).stop
    assert stop.protocol_error and "cannot be called with the protocol's keywords" in stop.detail
    assert "positional only" in stop.detail


def test_numpy_like_integers_and_iterables_are_accepted() -> None:
    class Index:
        def __init__(self, value: int) -> None:
            self.value = value

        def __index__(self) -> int:
            return self.value

    def rows(*, bucket: int, **batch: Any) -> Any:
        return (Index(576) for _ in range(4))  # a generator: read once

    def replay(**batch: Any) -> Index:
        return Index(reference.replay_bucket(**batch))

    with session(5.0):
        answers = ask(_policy(replay=replay, rows=rows), BATCH)
    assert all(a.bucket == 2304 and a.rows == (576,) * 4 for a in answers)


def test_an_exception_stays_an_answer_and_keeps_the_policys_own_traceback() -> None:
    def helper(n: int) -> bool:
        raise ZeroDivisionError(f"no room for {n}")

    def admit(**batch: Any) -> bool:
        return helper(batch["num_tokens"])

    with session(5.0):
        answers = ask(_policy(admit=admit), BATCH)
    assert answers[0].admit is None and answers[0].admit_error is not None
    tb = last_traceback("admit", 0, answers[0].admit_error)
    assert "in helper" in tb and "in admit" in tb and "ZeroDivisionError: no room for 2048" in tb
    assert "cpgraph/check/calls.py" not in tb and "Traceback" not in tb  # the policy's frames only


def test_check_policy_reports_a_raising_policy_with_its_traceback() -> None:
    def admit(**batch: Any) -> bool:
        raise RuntimeError("policy bug")

    report = check_policy(Policy("raiser", admit, reference.replay_bucket, None), max_cases=50, cp_sizes=(2,),
                          workers=1, boundary=False)
    v = report.violation("admission_replay")
    assert v is not None and "RuntimeError: policy bug" in v.policy_traceback and "in admit" in v.text()


def test_check_policy_raises_policy_stop_for_a_hung_policy_in_either_search_process() -> None:
    def admit(**batch: Any) -> bool:
        if batch["cp_size"] == 4 and sum(batch["extend_seq_lens"]) > 500:
            time.sleep(3600)
        return bool(reference.admit(**batch))

    with pytest.raises(PolicyStop) as stopped:  # the calls before the hang must answer in time on a busy machine
        check_policy(Policy("sleeper", admit, reference.replay_bucket, None), max_cases=20_000, cp_sizes=(2, 4),
                     call_timeout_s=2.0, boundary=False)
    assert stopped.value.stop.kind == "timeout" and "cp_size=4" in stopped.value.stop.batch


def test_session_rejects_a_bad_timeout() -> None:
    with pytest.raises(ValueError, match="call_timeout_s must be a number of seconds > 0, got 0"):
        with session(0):
            pass
