"""The runner and the reference runner side by side over a session of batches, poisoned buffers in between;
and a runner keyed by rank-local rows (vLLM's keying and DualChunkSwap layout, decodes included) against the
reference's loads and keying table."""

from __future__ import annotations

import math

import torch
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from cpgraph import reference
from cpgraph.reference.keying import keying_row
from cpgraph.impl.harness import compare_with_eager
from cpgraph.impl.model import ModelConfig, batch_hidden, build_model
from cpgraph.impl.runner import PrefillGraphRunner

torch.set_num_threads(1)
CONFIG = ModelConfig(hidden=32, heads=4)
BUCKETS = (16, 32, 64, 96, 128, 192, 256)


def _pointers(runner: PrefillGraphRunner) -> tuple[int, int, int]:
    g = runner.graph_runner
    return g.static_hidden.data_ptr(), g.static_request_id.data_ptr(), g.static_position.data_ptr()


class StaticBuffersMachine(RuleBasedStateMachine):
    """What both machines share: once a batch was served, the static buffers may be poisoned between batches
    (the next replay must overwrite them), and they never move. A subclass sets ``runner``, ``pointers`` (from
    ``_pointers``) and ``served`` when it starts."""

    runner: PrefillGraphRunner
    pointers: tuple[int, int, int]
    served: int

    @precondition(lambda self: self.served > 0)
    @rule()
    def poison_static_buffers(self) -> None:
        g = self.runner.graph_runner
        g.static_hidden.fill_(math.nan)
        g.static_request_id.fill_(0)
        g.static_position.fill_(-5)

    @invariant()
    def buffers_never_move(self) -> None:
        if hasattr(self, "runner"):
            assert _pointers(self.runner) == self.pointers


class RunnerMachine(StaticBuffersMachine):
    """Model: reference.ReferenceRunner. System: PrefillGraphRunner. They agree on every plan; every output
    equals eager; the static buffers never move."""

    @initialize(p=st.sampled_from((2, 4)), rule_name=st.sampled_from(("captured", "headroom")),
                max_requests=st.integers(1, 8))
    def start(self, p: int, rule_name: str, max_requests: int) -> None:
        self.runner = PrefillGraphRunner(build_model(CONFIG, seed=p), cp_size=p, capture_num_tokens=BUCKETS,
                                         capture_rule=rule_name, max_requests=max_requests)
        self.reference = reference.ReferenceRunner(
            cp_size=p, capture_num_tokens=BUCKETS, capture_rule=reference.CaptureRule(rule_name, max_requests=max_requests))
        self.pointers = _pointers(self.runner)
        self.served = 0

    @rule(lengths=st.lists(st.integers(1, 48), min_size=1, max_size=8), seed=st.integers(0, 1000))
    def serve(self, lengths: list[int], seed: int) -> None:
        batch = tuple(lengths)
        want = self.reference.plan(batch)
        c = compare_with_eager(self.runner, batch, batch_hidden(batch, CONFIG.hidden, seed, 0), atol=1e-5, rtol=1e-5)
        assert (c.bucket, c.reason) == (want.bucket, want.fallback.value if want.fallback else None), c
        assert c.within_tolerance and c.bit_exact is not False, c.message(1e-5, 1e-5)
        self.served += 1


RunnerMachine.TestCase.settings = settings(RunnerMachine.TestCase.settings, max_examples=8, stateful_step_count=15)
TestRunnerMachine = RunnerMachine.TestCase


SIZES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96)


class LocalRunnerMachine(StaticBuffersMachine):
    """Model: reference.rank_loads and the keying table's local row (key = the largest rank-local rows, size = the
    least captured s >= key, s rows on every rank). System: PrefillGraphRunner(keying="local") with a
    dual_chunk_swap row. Every plan is the model's; every output equals eager; the static buffers never move."""

    @initialize(p=st.sampled_from((1, 2, 4)),
                strategy=st.sampled_from(("dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp")))
    def start(self, p: int, strategy: str) -> None:
        self.p, self.strategy = p, strategy
        self.runner = PrefillGraphRunner(build_model(CONFIG, seed=p), cp_size=p, capture_num_tokens=SIZES,
                                         strategy=strategy, keying="local")
        assert self.runner.bucket_local_tokens == {s: s for s in SIZES}
        self.pointers = _pointers(self.runner)
        self.served = 0

    @rule(batch=st.lists(st.tuples(st.integers(0, 70), st.booleans()), min_size=1, max_size=8),
          seed=st.integers(0, 1000))
    def serve(self, batch: list[tuple[int, bool]], seed: int) -> None:
        lengths = tuple(length if prefill else min(length, 2) for length, prefill in batch)
        if sum(lengths) == 0:
            lengths = (1,) + lengths[1:]
        flags = tuple(prefill for _, prefill in batch)
        row = keying_row("local")
        key = row.key(sum(lengths), reference.rank_loads(lengths, cp_size=self.p, strategy=self.strategy,
                                                         is_prefilling=flags))
        fitting = [s for s, cap in row.capacities(SIZES, {}).items() if cap >= key]
        c = compare_with_eager(self.runner, lengths, batch_hidden(lengths, CONFIG.hidden, seed, 0), atol=1e-5,
                               rtol=1e-5, is_prefilling=flags)
        assert c.bucket == (min(fitting) if fitting else None), (c, key)
        assert c.reason == (None if fitting else "too_many_tokens"), c
        assert c.within_tolerance and c.bit_exact is not False, c.message(1e-5, 1e-5)
        self.served += 1


LocalRunnerMachine.TestCase.settings = settings(LocalRunnerMachine.TestCase.settings, max_examples=8,
                                                stateful_step_count=15)
TestLocalRunnerMachine = LocalRunnerMachine.TestCase
