"""Real CUDA graphs (impl/graphs.py) for P in {1, 2, 4, 8} on one device, against eager.

Tolerances: float32 atol = rtol = 1e-4 and bfloat16 atol = 6e-2, rtol = 2e-2 against the model without
context parallelism (attention sums in a different order; bf16 rounds every op to 8 bits of mantissa);
bit-exact (torch.equal) against the same padded computation run eagerly. CPGRAPH_GPU_REPLAYS sets the
randomised replays per (P, dtype) (default 40; scripts/gpu-check raises it past 1,000 in all).
Uses no Hypothesis and no z3, so it runs with ``pytest --noconftest`` on a bare GPU machine.
"""

from __future__ import annotations

import os
import random

import pytest
import torch

from torch import Tensor

from cpgraph.impl.agreement import StartupError
from cpgraph.impl.harness import compare_drawn_batch, random_batch
from cpgraph.impl.launch import spawn
from cpgraph.impl.model import AllGather, CPTransformer, ModelConfig, batch_hidden, build_model, one_device_all_gather
from cpgraph.impl.runner import PrefillGraphRunner
from cpgraph.impl.workers import PrefillJob, prefill_worker

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

CONFIG = ModelConfig(hidden=128, heads=4, layers=2)
BUCKETS = (64, 128, 256, 512, 1024, 2048)
TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.bfloat16: (6e-2, 2e-2)}
REPLAYS = int(os.environ.get("CPGRAPH_GPU_REPLAYS", "40"))
RUNNERS: dict[tuple[int, torch.dtype, str], PrefillGraphRunner] = {}


def runner_for(p: int, dtype: torch.dtype, rule: str = "headroom") -> PrefillGraphRunner:
    if (p, dtype, rule) not in RUNNERS:
        model = build_model(CONFIG, seed=p, device="cuda").to(dtype)
        RUNNERS[p, dtype, rule] = PrefillGraphRunner(
            model, cp_size=p, capture_num_tokens=BUCKETS, capture_rule=rule, max_requests=16, dtype=dtype
        )
    return RUNNERS[p, dtype, rule]


@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_every_bucket_is_a_real_cuda_graph(p: int) -> None:
    runner = runner_for(p, torch.bfloat16)
    assert runner.mode == "cuda_graph"
    assert not runner.dropped, runner.dropped
    assert set(runner.bucket_local_tokens) == {b for b in BUCKETS if b >= 2 * p}
    assert len(runner.graph_runner.graphs) == len(runner.bucket_local_tokens)
    # The start-up replay check ran on every graph before any batch; real graphs replay bit-exact.
    assert set(runner.startup_checks) == set(runner.bucket_local_tokens)
    assert all(c.bit_exact for c in runner.startup_checks.values()), runner.describe()["startup_checks"]


def test_a_runner_built_for_index_less_cuda_serves_cuda_0_tensors() -> None:
    """The certain first-batch crash: torch.device("cuda") != torch.device("cuda:0"), tensors report cuda:0."""
    model = build_model(CONFIG, seed=0, device="cuda")
    runner = PrefillGraphRunner(model, cp_size=2, capture_num_tokens=(64, 128), device=torch.device("cuda"))
    hidden = batch_hidden((40, 30), CONFIG.hidden, 0, 0).to("cuda")
    assert str(hidden.device) == "cuda:0"
    result = runner.run(hidden, (40, 30))
    assert result.mode == "cuda_graph" and result.plan.bucket == 128


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_randomised_replays_equal_eager(p: int, dtype: torch.dtype) -> None:
    runner = runner_for(p, dtype)
    atol, rtol = TOLERANCE[dtype]
    rng = random.Random(1000 * p + (dtype == torch.bfloat16))
    g = runner.graph_runner
    pointers = (g.static_hidden.data_ptr(), g.static_request_id.data_ptr(), g.static_position.data_ptr())
    replayed = 0
    for i in range(REPLAYS):
        lengths = random_batch(rng, cp_size=p, max_tokens=BUCKETS[-1])
        hidden = batch_hidden(lengths, CONFIG.hidden, p, i).to("cuda", dtype)
        c = compare_drawn_batch(runner, lengths, hidden, atol=atol, rtol=rtol)
        if c is None:  # P = 1 and no captured bucket holds the batch
            continue
        assert c.within_tolerance, c.message(atol, rtol)
        if c.bit_exact is not None:
            assert c.mode == "cuda_graph"
            assert c.bit_exact, c.message(atol, rtol)
            replayed += 1
    assert (g.static_hidden.data_ptr(), g.static_request_id.data_ptr(), g.static_position.data_ptr()) == pointers
    assert replayed >= REPLAYS // 2


@pytest.mark.parametrize("p", [2, 4, 8])
def test_captured_rule_falls_back_for_the_reference_reason(p: int) -> None:
    from cpgraph import reference

    runner = runner_for(p, torch.bfloat16, rule="captured")
    ref = reference.ReferenceRunner(cp_size=p, capture_num_tokens=BUCKETS)
    rng = random.Random(p)
    for i in range(30):
        lengths = random_batch(rng, cp_size=p, max_tokens=BUCKETS[-1])
        hidden = batch_hidden(lengths, CONFIG.hidden, p, i).to("cuda", torch.bfloat16)
        result = runner.run(hidden, lengths)
        want = ref.plan(lengths)
        assert (result.plan.bucket, result.reason) == (want.bucket, want.fallback.value if want.fallback else None)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices for NCCL ranks")
def test_nccl_ranks_return_the_one_device_outputs() -> None:
    batches = ((400, 300), (1000,), (100, 100, 100))
    job = PrefillJob(ModelConfig(hidden=64, heads=4), seed=2, capture_num_tokens=(256, 512, 1024, 2048), batches=batches,
                     device="cuda")
    results = spawn(prefill_worker, 2, job, backend="nccl", timeout_s=300)
    one = PrefillGraphRunner(build_model(job.config, seed=2), cp_size=2, capture_num_tokens=job.capture_num_tokens)
    for i, lengths in enumerate(batches):
        want = one.run(batch_hidden(lengths, 64, 2, i), lengths).output
        for rank in range(2):
            record = results[rank]["batches"][i]
            torch.testing.assert_close(torch.tensor(record["output"]), want, atol=1e-4, rtol=1e-4)


class SyncsInForward(CPTransformer):
    """A host sync (``.item()``) in forward: fine in warm-up, illegal inside CUDA graph capture."""

    def forward(self, hidden: Tensor, request_id: Tensor, position: Tensor,
                all_gather: AllGather = one_device_all_gather) -> Tensor:
        if float(hidden.float().abs().sum().item()) < 0:
            raise AssertionError("unreachable")
        return super().forward(hidden, request_id, position, all_gather)


def test_a_failed_capture_stops_start_up_naming_the_bucket_and_restores_the_stream() -> None:
    """Last in this file: torch leaves a failed capture's allocator state undefined for this process."""
    torch.manual_seed(0)
    model = SyncsInForward(CONFIG).to("cuda").eval()
    with pytest.raises(StartupError, match=r"bucket 128 \(32 rows per rank\) failed to capture: .*"
                                           r"CUDA graph capture of bucket 128"):
        PrefillGraphRunner(model, cp_size=4, capture_num_tokens=(64, 128))
    assert torch.cuda.current_stream() == torch.cuda.default_stream()


@pytest.mark.parametrize("strategy", ["dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp"])
@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_local_keying_replays_real_graphs_with_decodes(p: int, strategy: str) -> None:
    """vLLM's keying on real graphs: sizes of rank-local rows, each captured with s rows on every rank; a batch
    (prefills and decodes) replays the least size >= its largest live rows, equal to eager within tolerance and
    bit for bit to the padded eager computation."""
    from cpgraph.impl.harness import compare_with_eager

    sizes = (1, 2, 4, 8, *range(16, 257, 16))
    model = build_model(CONFIG, seed=p, device="cuda")
    runner = PrefillGraphRunner(model, cp_size=p, capture_num_tokens=sizes, strategy=strategy, keying="local")
    assert runner.mode == "cuda_graph" and runner.bucket_local_tokens == {s: s for s in sizes}
    assert all(c.bit_exact for c in runner.startup_checks.values()), runner.describe()["startup_checks"]
    rng = random.Random(7 * p)
    atol, rtol = TOLERANCE[torch.float32]
    for i in range(max(4, REPLAYS // 4)):
        count = rng.randint(1, 12)
        flags = tuple(rng.random() < 0.6 for _ in range(count))
        lengths = tuple(rng.randint(1, 400) if f else rng.randint(1, 2) for f in flags)
        hidden = batch_hidden(lengths, CONFIG.hidden, p, i).to("cuda")
        c = compare_with_eager(runner, lengths, hidden, atol=atol, rtol=rtol, is_prefilling=flags)
        assert c.within_tolerance, c.message(atol, rtol)
        assert c.bit_exact is not False, c.message(atol, rtol)
