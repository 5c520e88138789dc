"""impl/runner.py, impl/config.py, impl/startup.py and impl/graphs.py: start-up, capacities, capture failure,
the start-up replay check, argument validation, device handling, tripwires and bad input (CPU)."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch
from torch import Tensor

from cpgraph import reference
from cpgraph.reference import policy as reference_policy
from cpgraph.impl.decision import FallbackReason
from cpgraph.impl import startup
from cpgraph.impl.agreement import LocalControl, StartupError
from cpgraph.impl.graphs import BucketKey, CaptureError, GraphRunner, Placement, canonical_device, explain, same_device
from cpgraph.impl.layout import build_torch_layout
from cpgraph.impl.model import AllGather, CPTransformer, ModelConfig, batch_hidden, build_model, one_device_all_gather
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
    with caplog.at_level(logging.WARNING, logger="cpgraph.impl.startup"):
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
    """The tripwire compares impl's rule with the reference's before anything is captured (not with itself)."""
    rule_rows = startup._rule_rows
    monkeypatch.setattr(startup, "_rule_rows", lambda config, b: rule_rows(config, b) + 8)
    with pytest.raises(RuntimeError, match="bucket 16: impl's 'captured' rule gives 16 rows per rank but the "
                                           "reference's capture_local_tokens gives 8"):
        make()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(warmup_iters=0), ValueError, "warmup_iters must be an int >= 1, got 0"),
        (dict(warmup_iters=1.5), TypeError, r"warmup_iters must be an int >= 1, got 1.5 \(float\)"),
        (dict(warmup_iters=True), TypeError, r"warmup_iters must be an int >= 1, got True \(bool\)"),
        (dict(max_requests=0), ValueError, "max_requests must be an int >= 1, got 0"),
        (dict(align_size="8"), TypeError, r"align_size must be an int >= 1, got '8' \(str\)"),
        (dict(strategy="ring"), ValueError, "strategy must be one of zigzag, .*; got 'ring'"),
        (dict(capture_rule=None), TypeError, "capture_rule must be one of captured, headroom; got None"),
        (dict(use_cuda_graph=1), TypeError, r"use_cuda_graph must be True, False or None \(automatic\), got 1"),
        (dict(dtype="float32"), TypeError, "dtype must be one of torch.float64, .* got 'float32'"),
        (dict(dtype=torch.int64), TypeError, "dtype must be one of .* got torch.int64"),
        (dict(dtype=torch.bfloat16), ValueError, "model parameters are torch.float32 but dtype=torch.bfloat16"),
        (dict(device="meta"), ValueError, "device must be a cpu or cuda device, got 'meta'"),
        (dict(device="gpu"), ValueError, "device must be 'cpu', 'cuda' or 'cuda:<index>', got 'gpu'"),
        (dict(device=0.5), TypeError, "device must be a torch.device or a string"),
        (dict(buckets=()), ValueError, "capture_num_tokens must be a non-empty sorted sequence"),
        (dict(buckets=(16, 16)), ValueError, "must not repeat a bucket; 16 appears twice"),
        (dict(placement="one"), TypeError, "placement must be a Placement or None, got str"),
    ],
)
def test_every_constructor_argument_is_validated(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make(**kwargs)  # type: ignore[arg-type]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_a_cuda_device_without_cuda_is_refused_naming_the_device() -> None:
    with pytest.raises(ValueError, match=r"device='cuda' \(cuda:0\) is not available: this machine has 0 CUDA devices"):
        make(device="cuda")


def test_model_must_be_a_cp_transformer() -> None:
    with pytest.raises(TypeError, match="model must be a CPTransformer, got Linear"):
        PrefillGraphRunner(torch.nn.Linear(2, 2), cp_size=2, capture_num_tokens=(8,))  # type: ignore[arg-type]


def test_device_indices_are_normalised() -> None:
    assert canonical_device("cpu") == canonical_device("cpu:0") == torch.device("cpu")
    assert same_device(torch.device("cpu:0"), torch.zeros(1).device)
    if not torch.cuda.is_available():
        assert canonical_device("cuda") == torch.device("cuda:0")
    assert canonical_device("cuda:3") == torch.device("cuda", 3)
    assert same_device("cuda", "cuda:0") or torch.cuda.current_device() != 0
    assert not same_device("cpu", "cuda:0")


def test_a_runner_built_for_cpu_0_serves_cpu_tensors() -> None:
    """The first-batch crash: the device check compared cpu:0 with a cpu tensor's cpu and refused it."""
    runner = make(device="cpu:0")
    assert runner.device == torch.device("cpu")
    lengths = (30, 20)
    result = runner.run(batch_hidden(lengths, CONFIG.hidden, 0, 0), lengths)
    assert result.mode == "emulation" and result.plan.bucket == 64


def test_every_captured_bucket_is_replayed_against_eager_at_start_up() -> None:
    runner = make()
    assert set(runner.startup_checks) == set(runner.bucket_local_tokens)
    for b, check in runner.startup_checks.items():
        rows = runner.bucket_local_tokens[b]
        assert sum(check.extend_seq_lens) <= b and check.bit_exact and check.max_abs_error == 0.0
        assert reference.required_local_tokens(check.extend_seq_lens, cp_size=4, align_size=8) <= rows
    assert runner.startup_checks[256].extend_seq_lens == (128, 128)  # several requests where they fit
    assert runner.describe()["startup_checks"]["256"]["bit_exact"] is True  # type: ignore[index]


def test_a_graph_whose_replay_differs_from_eager_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = GraphRunner.replay
    monkeypatch.setattr(GraphRunner, "replay", lambda self, key, layout, hidden: replay(self, key, layout, hidden) + 1)
    with pytest.raises(StartupError, match=r"start-up replay check of bucket 16 \(8 rows per rank\) failed: "
                                           r"ReplayMismatch: replay differs from eager by 1"):
        make()


def test_zero_captured_buckets_is_a_start_up_error_naming_why_each_failed() -> None:
    model = FailsAtRows(CONFIG, rows=-1).eval()
    model.forward = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("model raises"))  # type: ignore[method-assign]
    with pytest.raises(StartupError, match=r"no bucket could be captured, so every batch would run eagerly; refusing "
                                           r"to start: bucket 16 \(8 rows per rank\): RuntimeError: model raises; "
                                           r"bucket 64 \(16 rows per rank\): RuntimeError: model raises"):
        PrefillGraphRunner(model, cp_size=4, capture_num_tokens=(16, 64))


class FailingCapture(GraphRunner):
    def capture(self, key: BucketKey, layout: object, hidden: Tensor) -> None:  # type: ignore[override]
        raise RuntimeError("operation not permitted when stream is capturing")


def test_a_failed_capture_on_a_cuda_runner_stops_start_up_naming_the_bucket() -> None:
    """The policy (not the CUDA call) runs on CPU: with use_cuda_graph the first failure is fatal."""
    runner = make()
    config = dataclasses.replace(runner.config, use_cuda_graph=True)
    g = FailingCapture(runner.model, placement=runner.placement, max_local_tokens=64, device=torch.device("cpu"),
                       dtype=torch.float32, use_cuda_graph=False)
    with pytest.raises(StartupError, match=r"bucket 256 \(64 rows per rank\) failed to capture: RuntimeError: "
                                           r"operation not permitted .* torch leaves the stream and allocator state"):
        startup.capture_buckets(config, g, LocalControl(), startup.capacities(config))


def test_explain_names_the_original_error_before_the_one_that_masked_it() -> None:
    try:
        try:
            raise ValueError("model failed inside capture")
        except ValueError:
            raise RuntimeError("capture_end: operation failed due to a previous error during capture")
    except RuntimeError as exc:
        text, masked = explain(exc), exc
    assert text == ("ValueError: model failed inside capture (then RuntimeError: capture_end: operation failed due "
                    "to a previous error during capture)")
    wrapped = CaptureError(f"CUDA graph capture of bucket 64 (16 rows per rank) failed: {text}")
    wrapped.__cause__ = masked
    assert explain(wrapped) == f"CaptureError: {wrapped}"  # said once, not again through its causes


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(cp_size=2, first_rank=2, local_ranks=1), ValueError, r"Placement holds ranks 2..2 but cp_size=2"),
        (dict(cp_size=2, first_rank=-1, local_ranks=1), ValueError, "first_rank must be an int >= 0, got -1"),
        (dict(cp_size=2, first_rank=0, local_ranks=0), ValueError, "local_ranks must be an int >= 1, got 0"),
        (dict(cp_size=2, first_rank=0, local_ranks=2, all_gather=None), TypeError, "all_gather must be callable"),
    ],
)
def test_placement_is_validated(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        Placement(**{"all_gather": one_device_all_gather, **kwargs})  # type: ignore[arg-type]


def test_graph_runner_arguments_are_validated() -> None:
    model = build_model(CONFIG, seed=0)
    common: dict[str, object] = dict(placement=Placement.one_device(2), max_local_tokens=8, device="cpu",
                                     dtype=torch.float32, use_cuda_graph=False)
    for change, error, message in [
        (dict(warmup_iters=0), ValueError, "warmup_iters must be an int >= 1, got 0"),
        (dict(use_cuda_graph=None), TypeError, "use_cuda_graph must be True or False, got None"),
        (dict(use_cuda_graph=True), ValueError, "use_cuda_graph=True needs a CUDA device, got device=cpu"),
        (dict(dtype=torch.int32), TypeError, "dtype must be a floating torch.dtype, got torch.int32"),
        (dict(max_local_tokens=0), ValueError, "max_local_tokens must be an int >= 1, got 0"),
    ]:
        with pytest.raises(error, match=message):
            GraphRunner(model, **{**common, **change})  # type: ignore[arg-type]


# -- local keying (vLLM 0.29 on): sizes of rank-local rows, the layout padded to the size -------------------------

SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
DCS = ("dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp")


def _local_size(lengths: tuple[int, ...], p: int, strategy: str, flags: tuple[bool, ...] | None) -> tuple[int, int | None]:
    key = max(reference.rank_loads(lengths, cp_size=p, strategy=strategy, is_prefilling=flags))
    return key, next((s for s in SIZES if s >= key), None)


def test_local_keying_captures_every_size_with_its_own_rows() -> None:
    runner = make(buckets=SIZES, strategy="dual_chunk_swap", keying="local")
    assert runner.capture_num_tokens == SIZES  # nothing dropped below 2P: every batch is keyed
    assert runner.bucket_local_tokens == {s: s for s in SIZES}  # a size s holds s rows on every rank
    assert runner.graph_runner.max_local_tokens == 128
    assert {key.keying for key in runner.graph_runner.static_output} == {"local"}
    assert all(tuple(out.shape[:2]) == (4, key.local_tokens) == (4, key.num_tokens)
               for key, out in runner.graph_runner.static_output.items())
    assert runner.describe()["keying"] == "local"
    assert set(runner.startup_checks) == set(SIZES)


def test_local_keying_replays_the_issue_example_at_size_128() -> None:
    """P = 4, [170, 161, 153]: the largest live rows are 126, so size 128 is replayed with the layout padded to
    128 rows on every rank; its output equals eager."""
    runner = make(buckets=SIZES, strategy="dual_chunk_swap", keying="local")
    lengths = (170, 161, 153)
    hidden = batch_hidden(lengths, CONFIG.hidden, 0, 0)
    result = runner.run(hidden, lengths)
    assert (result.plan.required_local_tokens, result.plan.bucket, result.plan.bucket_local_tokens) == (126, 128, 128)
    assert result.mode == "emulation" and result.reason is None
    torch.testing.assert_close(result.output, runner.run_eager(hidden, lengths), atol=1e-5, rtol=1e-5)
    assert torch.equal(result.output, runner.run_padded_eager(hidden, result.plan))
    _, request_id, _ = runner.graph_runner.inputs(128)  # the replayed layout: 128 rows, real rows first
    assert ((request_id >= 0).sum(1)).tolist() == [106, 126, 126, 126]
    assert runner.dispatcher.key(result.plan) == BucketKey(128, 128, "local")


@pytest.mark.parametrize("strategy", DCS)
def test_local_keying_with_decodes_replays_equal_to_eager(strategy: str) -> None:
    runner = make(buckets=SIZES, strategy=strategy, keying="local")
    cases: list[tuple[tuple[int, ...], tuple[bool, ...] | None]] = [
        ((300, 1, 1, 1, 1, 1), (True, False, False, False, False, False)),
        ((3, 1, 49, 50, 2), (True, False, True, True, False)),
        ((1,), (False,)),
        ((5, 0, 7), None),
        ((130, 1), (True, False)),
    ]
    for i, (lengths, flags) in enumerate(cases):
        hidden = batch_hidden(lengths, CONFIG.hidden, i, 0)
        result = runner.run(hidden, lengths, is_prefilling=flags)
        key, size = _local_size(lengths, 4, strategy, flags)
        assert (result.plan.required_local_tokens, result.plan.bucket) == (key, size), (lengths, flags)
        torch.testing.assert_close(result.output, runner.run_eager(hidden, lengths), atol=1e-5, rtol=1e-5)
        if size is not None:
            assert torch.equal(result.output, runner.run_padded_eager(hidden, result.plan, flags))


def test_local_keying_runs_eagerly_above_the_largest_size_and_keys_at_p_1() -> None:
    runner = make(buckets=SIZES, strategy="dual_chunk_swap", keying="local")
    lengths = (2000,)  # 8 chunks of 250: 500 rows a rank > 128
    result = runner.run(batch_hidden(lengths, CONFIG.hidden, 0, 0), lengths)
    assert (result.mode, result.reason, result.plan.required_local_tokens) == ("eager", "too_many_tokens", 500)
    one = make(p=1, buckets=(8, 32), strategy="zigzag", keying="local")
    assert one.capture_num_tokens == (8, 32)
    result = one.run(batch_hidden((3, 4), CONFIG.hidden, 0, 0), (3, 4))
    assert (result.mode, result.plan.bucket) == ("emulation", 8)  # global keying would say cp_disabled


def test_a_plan_made_for_other_decodes_is_refused() -> None:
    """P = 4, (60, 3): as prefills the rows are [13, 17, 17, 16] (key 17); with the 3 a replicated decode they are
    [15, 19, 19, 19]. A plan made without the flags does not serve the batch with them, though size 32 holds both."""
    runner = make(buckets=SIZES, strategy="dual_chunk_swap_replicated", keying="local")
    lengths, flags = (60, 3), (True, False)
    hidden = batch_hidden(lengths, CONFIG.hidden, 0, 0)
    plan = runner.plan(lengths)
    assert (plan.required_local_tokens, plan.bucket) == (17, 32)
    with pytest.raises(ReplayError, match=r"plan records 17 rows per rank but this batch needs 19 "
                                          r"\(is_prefilling=\(True, False\)\); the plan was made for another batch"):
        runner.run(hidden, lengths, plan=plan, is_prefilling=flags)
    flagged = runner.plan(lengths, is_prefilling=flags)
    assert (flagged.required_local_tokens, flagged.bucket) == (19, 32)
    result = runner.run(hidden, lengths, plan=flagged, is_prefilling=list(flags))
    assert result.mode == "emulation"
    torch.testing.assert_close(result.output, runner.run_eager(hidden, lengths), atol=1e-5, rtol=1e-5)


def test_decodes_under_a_strategy_that_does_not_place_them_are_refused() -> None:
    runner = make()
    with pytest.raises(ValueError, match=r"is_prefilling\[1\] is False but strategy 'zigzag' lays out prefills only"):
        runner.run(batch_hidden((30, 20), CONFIG.hidden, 0, 0), (30, 20), is_prefilling=(True, False))
    with pytest.raises(ValueError, match=r"is_prefilling must hold one bool per request \(2\), got 1"):
        runner.plan((30, 20), is_prefilling=(True,))


def test_runner_answers_the_policy_protocol_under_local_keying() -> None:
    runner = make(buckets=SIZES, strategy="dual_chunk_swap", keying="local")
    for lengths in [(170, 161, 153), (3,), (2000,), (300, 1, 1)]:
        batch = dict(cp_rank=1, cp_size=4, align_size=1, num_tokens=sum(lengths), extend_seq_lens=lengths,
                     capture_num_tokens=SIZES, bucket_local_tokens={}, max_padding_factor=2)
        key, size = _local_size(lengths, 4, "dual_chunk_swap", None)
        assert runner.admit(**batch) == (size is not None)  # type: ignore[arg-type]
        if size is not None:
            assert runner.replay_bucket(**batch) == size  # type: ignore[arg-type]
            assert runner.local_rows(bucket=size, **batch) == (key,) * 4  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(keying="rank"), ValueError, "keying must be one of global, local; got 'rank'"),
        (dict(keying=None), ValueError, "keying must be one of global, local; got None"),
        (dict(keying="local", capture_rule="headroom"), ValueError,
         "capture_rule 'headroom' is a global-keying rule; under keying='local' a size s holds s rows"),
    ],
)
def test_keying_is_validated(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make(**kwargs)  # type: ignore[arg-type]


def test_a_local_capacity_that_disagrees_with_the_keying_table_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    rule_rows = startup._rule_rows
    monkeypatch.setattr(startup, "_rule_rows", lambda config, b: rule_rows(config, b) + 1)
    with pytest.raises(RuntimeError, match="bucket 1: impl's 'captured' rule gives 2 rows per rank but the "
                                           "reference's keying table gives 1"):
        make(buckets=SIZES, strategy="dual_chunk_swap", keying="local")
