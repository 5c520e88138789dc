"""One harness for replay-vs-eager comparisons (GPU tests and scripts/gpu-check; CPU emulation alike).

Each comparison runs three things on the same batch: the runner (replay or fallback), the model without context
parallelism (ground truth, compared under a stated tolerance) and, when replayed, the same padded computation
run eagerly (compared bit for bit). A failed comparison's message carries every input and both values.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch
from torch import Tensor

from cpgraph.impl.graphs import BucketKey
from cpgraph.impl.layout import build_torch_layout
from cpgraph.impl.runner import PrefillGraphRunner


@dataclass(frozen=True)
class Comparison:
    extend_seq_lens: tuple[int, ...]
    cp_size: int
    mode: str  # cuda_graph | emulation | eager
    bucket: int | None
    reason: str | None
    max_abs_error: float  # against the non-CP eager model
    within_tolerance: bool
    bit_exact: bool | None  # against the padded eager computation; None when the batch ran eagerly

    def message(self, atol: float, rtol: float) -> str:
        return (
            f"cp_size={self.cp_size} extend_seq_lens={self.extend_seq_lens} mode={self.mode} bucket={self.bucket} "
            f"reason={self.reason}: max |replay - eager| = {self.max_abs_error:.3g} (atol={atol}, rtol={rtol}), "
            f"bit-exact vs padded eager: {self.bit_exact}"
        )


def _close(actual: Tensor, expected: Tensor, atol: float, rtol: float) -> tuple[float, bool]:
    if actual.shape != expected.shape:
        return float("inf"), False
    a, e = actual.float(), expected.float()
    diff = (a - e).abs()
    ok = bool(torch.all(diff <= atol + rtol * e.abs()).item()) and bool(torch.isfinite(a).all().item())
    return (float(diff.max().item()) if diff.numel() else 0.0), ok


def compare_with_eager(
    runner: PrefillGraphRunner, lengths: tuple[int, ...], hidden: Tensor, *, atol: float, rtol: float,
    is_prefilling: object = None,
) -> Comparison:
    """Run the batch (``is_prefilling`` marking decodes) through ``runner`` and both eager controls."""
    result = runner.run(hidden, lengths, is_prefilling=is_prefilling)
    err, ok = _close(result.output, runner.run_eager(hidden, lengths), atol, rtol)
    exact = (torch.equal(result.output, runner.run_padded_eager(hidden, result.plan, is_prefilling))
             if result.plan.admitted else None)
    return Comparison(lengths, runner.cp_size, result.mode, result.plan.bucket, result.reason, err, ok, exact)


def compare_at_bucket(
    runner: PrefillGraphRunner, lengths: tuple[int, ...], hidden: Tensor, bucket: int, *, atol: float, rtol: float
) -> Comparison:
    """Replay a captured bucket directly, bypassing the dispatcher (cp_size = 1 is never CP-active upstream,
    yet its graphs must still equal eager)."""
    rows = runner.bucket_local_tokens[bucket]
    key = BucketKey(bucket, rows, runner.keying)
    layout = build_torch_layout(lengths, cp_size=runner.cp_size, rows=rows, strategy=runner.strategy, device=runner.device)
    g = runner.graph_runner
    replayed = g.replay(key, layout, hidden)
    err, ok = _close(replayed, runner.run_eager(hidden, lengths), atol, rtol)
    exact = torch.equal(replayed, g.eager(key, layout, hidden))
    return Comparison(lengths, runner.cp_size, g.mode, bucket, None, err, ok, exact)


def compare_drawn_batch(
    runner: PrefillGraphRunner, lengths: tuple[int, ...], hidden: Tensor, *, atol: float, rtol: float
) -> Comparison | None:
    """Replay vs eager for one drawn batch. With cp_size = 1 no batch is CP-active, so the smallest captured
    bucket that holds it is replayed directly; None when none does."""
    if runner.cp_size > 1:
        return compare_with_eager(runner, lengths, hidden, atol=atol, rtol=rtol)
    fits = [b for b, rows in runner.bucket_local_tokens.items() if rows >= sum(lengths)]
    return compare_at_bucket(runner, lengths, hidden, min(fits), atol=atol, rtol=rtol) if fits else None


def random_batch(rng: random.Random, *, cp_size: int, max_tokens: int, max_requests: int = 16) -> tuple[int, ...]:
    """1..max_requests lengths, each >= 2P (CP-active) unless one is made short on purpose (1 in 10), summing
    to at most ``max_tokens`` where 2P per request allows it."""
    floor = 2 * cp_size
    r = rng.randint(1, max(1, min(max_requests, max_tokens // floor)))
    extra = rng.randint(0, max(0, max_tokens - floor * r))
    cuts = sorted(rng.randint(0, extra) for _ in range(r - 1))
    lengths = [floor + b - a for a, b in zip([0, *cuts], [*cuts, extra])]
    if rng.random() < 0.1:  # the SHORT_REQUEST fallback
        lengths[rng.randrange(r)] = rng.randint(1, floor - 1) if floor > 1 else 1
    return tuple(lengths)
