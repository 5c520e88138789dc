"""impl/runner.py and impl/graphs.py: start-up, capacities, capture failure, tripwires and bad input (CPU)."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch
from torch import Tensor

from cpgraph import reference
from cpgraph.reference import policy as reference_policy
from cpgraph.impl.decision import FallbackReason
from cpgraph.impl.distributed import batch_hidden, build_model
from cpgraph.impl.graphs import BucketKey
from cpgraph.impl.layout import build_torch_layout
from cpgraph.impl.model import AllGather, CPTransformer, ModelConfig, one_device_all_gather
from cpgraph.impl.runner import PrefillGraphRunner, ReplayError

torch.set_num_threads(1)
CONFIG = ModelConfig(hidden=32, heads=4)


def make(p: int = 4, buckets: tuple[int, ...] = (4, 16, 64, 128, 256), **kwargs: object) -> PrefillGraphRunner:
    return PrefillGraphRunner(build_model(CONFIG, seed=0), cp_size=p, capture_num_tokens=buckets, **kwargs)  # type: ignore[arg-type]


def test_startup_drops_buckets_below_2p_and_records_reference_capacities(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="cpgraph.impl.runner"):
        runner = make()
    assert runner.capture_num_tokens == (16, 64, 128, 256)
    assert "dropped buckets below 2P=8: [4]" in caplog.text
    ref = reference.ReferenceRunner(cp_size=4, capture_num_tokens=(4, 16, 64, 128, 256))
    assert runner.bucket_local_tokens == ref.bucket_local_tokens
    assert runner.mode == "emulation"
    assert runner.describe()["mode"] == "emulation"
    assert set(runner.capture_seconds) == {16, 64, 128, 256}


def test_headroom_rule_records_the_reference_headroom() -> None:
    runner = make(capture_rule="headroom", max_requests=5)
    ref = reference.ReferenceRunner(cp_size=4, capture_num_tokens=(4, 16, 64, 128, 256),
                                    capture_rule=reference.CaptureRule("headroom", max_requests=5))
    assert runner.bucket_local_tokens == ref.bucket_local_tokens
    assert runner.graph_runner.max_local_tokens == max(ref.bucket_local_tokens.values())


def test_no_bucket_at_or_above_2p_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match=r"has no bucket >= 2\*cp_size = 8"):
        make(buckets=(2, 4, 7))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(capture_rule="exact"), ValueError, "capture_rule must be one of captured, headroom; got 'exact'"),
        (dict(capture_rule="headroom", strategy="interleave"), ValueError, "headroom' is defined for zigzag only"),
        (dict(use_cuda_graph=True), ValueError, "use_cuda_graph=True needs a CUDA device"),
        (dict(max_padding_factor=0), ValueError, "max_padding_factor must be an int >= 1, got 0"),
        (dict(buckets=(64, 16)), ValueError, "sorted ascending"),
        (dict(p=0), ValueError, "cp_size must be an int >= 1, got 0"),
    ],
)
def test_runner_rejects_bad_configuration(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make(**kwargs)  # type: ignore[arg-type]


class FailsAtRows(CPTransformer):
    """A model whose forward raises at one rows-per-rank count: a capture failure for exactly one bucket."""

    def __init__(self, config: ModelConfig, rows: int) -> None:
        super().__init__(config)
        self.rows = rows

    def forward(self, hidden: Tensor, request_id: Tensor, position: Tensor,
                all_gather: AllGather = one_device_all_gather) -> Tensor:
        if hidden.shape[1] == self.rows:
            raise RuntimeError(f"out of memory at {self.rows} rows (simulated)")
        return super().forward(hidden, request_id, position, all_gather)


def test_capture_failure_drops_that_bucket_logs_why_and_keeps_serving(caplog: pytest.LogCaptureFixture) -> None:
    model = FailsAtRows(CONFIG, rows=32).eval()  # bucket 128 at P=4 has 32 rows
    with caplog.at_level(logging.WARNING, logger="cpgraph.impl.runner"):
        runner = PrefillGraphRunner(model, cp_size=4, capture_num_tokens=(16, 64, 128, 256))
    assert "dropping bucket 128 (32 rows per rank): capture failed: RuntimeError: out of memory" in caplog.text
    assert 128 not in runner.bucket_local_tokens and "out of memory" in runner.dropped[128]
    # n = 100: 128 would have been chosen; 256 is outside [100, 200]: eager, for the reference's reason.
    table = reference.CaptureRule("table", table={16: 8, 64: 16, 128: None, 256: 64})
    ref = reference.ReferenceRunner(cp_size=4, capture_num_tokens=(16, 64, 128, 256), capture_rule=table)
    for lengths in [(60, 40), (130,), (40, 30, 20)]:
        hidden = batch_hidden(lengths, CONFIG.hidden, 1, 0)
        result = runner.run(hidden, lengths)
        want = ref.plan(lengths)
        assert (result.plan.bucket, result.reason) == (want.bucket, want.fallback.value if want.fallback else None)
        torch.testing.assert_close(result.output, runner.run_eager(hidden, lengths), atol=1e-5, rtol=1e-5)
    assert runner.plan((60, 40)).fallback is FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT


def test_cp_size_one_always_runs_eagerly_as_cp_disabled() -> None:
    runner = make(p=1)
    hidden = batch_hidden((30, 20), CONFIG.hidden, 0, 0)
    result = runner.run(hidden, (30, 20))
    assert (result.mode, result.reason) == ("eager", "cp_disabled")


def test_bad_inputs_raise_with_the_offending_value() -> None:
    runner = make()
    lengths = (30, 20)
    with pytest.raises(ValueError, match=r"hidden has shape \(49, 32\) but extend_seq_lens=\(30, 20\) needs \(50, 32\)"):
        runner.run(torch.zeros(49, 32), lengths)
    with pytest.raises(ValueError, match=r"needs \(50, 32\)"):
        runner.run(torch.zeros(50, 16), lengths)
    with pytest.raises(TypeError, match="hidden has dtype torch.float64, the runner was built for torch.float32"):
        runner.run(torch.zeros(50, 32, dtype=torch.float64), lengths)
    with pytest.raises(TypeError, match="hidden must be a torch.Tensor, got list"):
        runner.run([[0.0] * 32] * 50, lengths)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_tokens must be >= sum"):
        runner.run(torch.zeros(50, 32), lengths, num_tokens=49)
    with pytest.raises(ValueError, match=r"plan is for extend_seq_lens=\(30, 21\), batch has \(30, 20\)"):
        runner.run(torch.zeros(50, 32), lengths, plan=runner.plan((30, 21)))


def test_dispatcher_tripwires_name_the_plan_and_the_captured_buckets() -> None:
    runner = make()
    with pytest.raises(ReplayError, match="not admitted"):
        runner.dispatcher.key(runner.plan((3, 50)))
    plan = runner.plan((30, 20))
    assert plan.admitted and plan.bucket == 64
    forged = dataclasses.replace(plan, bucket=96, bucket_local_tokens=24)
    with pytest.raises(ReplayError, match=r"bucket 96 with 24 rows, but the captured buckets are \[\(16, 8\), \(64, 16\)"):
        runner.dispatcher.key(forged)
    greedy = dataclasses.replace(plan, required_local_tokens=17)
    with pytest.raises(ReplayError, match="needs 17 rows per rank but bucket 64 has 16"):
        runner.dispatcher.key(greedy)


def test_a_live_layout_that_would_exceed_the_buffer_is_refused_not_truncated() -> None:
    runner = make()
    g = runner.graph_runner
    key = BucketKey(64, 16)
    with pytest.raises(ValueError, match=r"layout needs 25 rows on rank 0 \(loads \(25, 25, 22, 22\)\) but 16 rows are available"):
        build_torch_layout((64, 10, 10, 10), cp_size=4, rows=key.local_tokens)
    wide = build_torch_layout((64, 10, 10, 10), cp_size=4)
    with pytest.raises(ValueError, match="layout has 25 rows per rank but bucket 64 was captured with 16"):
        g.replay(key, wide, torch.zeros(94, 32))
    with pytest.raises(ValueError, match="65 rows per rank needed but the static buffers hold 64; refused"):
        g.inputs(65)
    with pytest.raises(KeyError, match="was never captured"):
        g.replay(BucketKey(96, 24), wide, torch.zeros(94, 32))


def test_runner_answers_the_policy_protocol_like_the_reference() -> None:
    runner = make()
    for lengths in [(1534, 161, 353), (8, 8, 8), (100,), (3, 300), (700, 700, 648)]:
        batch = dict(cp_rank=2, cp_size=4, align_size=8, num_tokens=sum(lengths), extend_seq_lens=lengths,
                     capture_num_tokens=(2048, 2304, 2560), bucket_local_tokens={2048: 512, 2304: 576, 2560: 640},
                     max_padding_factor=2)
        assert runner.admit(**batch) == reference_policy.admit(**batch)  # type: ignore[arg-type]
        if runner.admit(**batch):
            bucket = runner.replay_bucket(**batch)
            assert bucket == reference_policy.replay_bucket(**batch)  # type: ignore[arg-type]
            assert runner.local_rows(bucket=bucket, **batch) == reference_policy.local_rows(bucket=bucket, **batch)  # type: ignore[arg-type]
        else:
            with pytest.raises(LookupError):
                runner.replay_bucket(**batch)


def test_a_capacity_that_disagrees_with_the_reference_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    rule_rows = PrefillGraphRunner._rule_rows
    monkeypatch.setattr(PrefillGraphRunner, "_rule_rows", lambda self, b: rule_rows(self, b) + 8)
    with pytest.raises(RuntimeError, match="bucket 256 was captured with 72 rows per rank but the reference's 'captured' rule gives 64"):
        make()
