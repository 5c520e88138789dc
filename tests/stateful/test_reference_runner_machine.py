"""Admission equals replay across any sequence of batches on one reference runner."""

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cpgraph.reference import CaptureRule, Plan, ReferenceRunner, ReplayError, rank_loads


class RunnerMachine(RuleBasedStateMachine):
    """Model: the last plan and whether it was admitted. System: ReferenceRunner.replay."""

    def __init__(self) -> None:
        super().__init__()
        self.runner = ReferenceRunner(
            cp_size=4, capture_num_tokens=(64, 128, 256, 512, 1024), align_size=8, capture_rule=CaptureRule()
        )
        self.last: Plan | None = None

    @rule(lens=st.lists(st.integers(1, 300), min_size=1, max_size=6), pad=st.integers(0, 40))
    def plan(self, lens: list[int], pad: int) -> None:
        self.last = self.runner.plan(lens, sum(lens) + pad)

    @precondition(lambda self: self.last is not None and self.last.admitted)
    @rule()
    def replay_admitted(self) -> None:
        assert self.last is not None and self.last.bucket is not None
        layout = self.runner.replay(self.last)
        assert layout.rows == self.runner.bucket_local_tokens[self.last.bucket]
        assert max(layout.loads) <= layout.rows
        assert layout.loads == rank_loads(self.last.extend_seq_lens, cp_size=4)

    @precondition(lambda self: self.last is not None and not self.last.admitted)
    @rule()
    def replay_refused(self) -> None:
        assert self.last is not None
        try:
            self.runner.replay(self.last)
        except ReplayError:
            return
        raise AssertionError(f"replay accepted a batch admission refused: {self.last}")

    @invariant()
    def admission_is_the_plan(self) -> None:
        if self.last is not None:
            assert self.runner.admit(self.last.extend_seq_lens, self.last.num_tokens) == self.last.admitted


TestRunnerMachine = RunnerMachine.TestCase
