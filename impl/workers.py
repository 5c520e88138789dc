"""A ready-made rank worker for ``spawn``: the same batches through ``DistributedPrefillRunner`` on every rank,
with faults injected on chosen ranks (the multi-rank fault tests, and a drill for operators).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from cpgraph.impl.checks import check_capture_list, check_int, check_is_prefilling, check_keying, check_lengths, check_strategy
from cpgraph.impl.distributed import ConsensusError, DistributedPrefillRunner
from cpgraph.impl.model import AllGather, CPTransformer, ModelConfig, batch_hidden, one_device_all_gather
from cpgraph.impl.config import CAPTURE_RULES

# What a Fault does on its rank. Start-up faults: "capture_list" (capture ``value`` instead), "align_size"
# (align_size = value[0]), "capture_raises" (the model raises while capturing buckets of value[0] rows per
# rank, 0: every bucket; after value[1] all-gathers of that forward when given, else before the first). Serving faults, at batch ``batch``: "bad_hidden" (one row short), "bad_lengths" (a
# negative length), "raise" (an exception outside the runner), "kill" (SIGKILL itself), "stop" (SIGSTOP itself).
FAULT_KINDS = ("capture_list", "align_size", "capture_raises", "bad_hidden", "bad_lengths", "raise", "kill", "stop")


@dataclass(frozen=True)
class Fault:
    """One fault injected on one rank (see FAULT_KINDS)."""

    kind: str
    rank: int
    batch: int = 0
    value: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"Fault.kind must be one of {', '.join(FAULT_KINDS)}; got {self.kind!r}")
        check_int("rank", self.rank, minimum=0)
        check_int("batch", self.batch, minimum=0)
        if self.kind in ("capture_list", "align_size", "capture_raises") and not self.value:
            raise ValueError(f"Fault {self.kind!r} needs a value, got value={self.value!r}")


@dataclass(frozen=True)
class PrefillJob:
    """What each rank runs: a model built from ``seed``, the capture list, and batches of lengths.

    ``overrides`` maps (batch index, rank) to the lengths that rank is fed instead (to exercise the guard);
    ``faults`` injects failures (Fault). ``strategy`` and ``keying`` configure the runner; ``is_prefilling`` holds
    one entry per batch (None: all prefills), or nothing (every batch all prefills).
    """

    config: ModelConfig
    seed: int
    capture_num_tokens: tuple[int, ...]
    batches: tuple[tuple[int, ...], ...]
    overrides: tuple[tuple[int, int, tuple[int, ...]], ...] = ()
    capture_rule: str = "captured"
    max_requests: int = 1
    device: str = "cpu"  # "cuda": rank r uses cuda:r (NCCL)
    faults: tuple[Fault, ...] = ()
    strategy: str = "zigzag"
    keying: str = "global"
    is_prefilling: tuple[tuple[bool, ...] | None, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.config, ModelConfig):
            raise TypeError(f"config must be a ModelConfig, got {type(self.config).__name__}")
        check_int("seed", self.seed, minimum=0)
        check_capture_list("capture_num_tokens", self.capture_num_tokens)
        for i, lengths in enumerate(self.batches):
            check_lengths(f"batches[{i}]", lengths)
        for batch, rank, lengths in self.overrides:
            check_int("overrides batch", batch, minimum=0)
            check_int("overrides rank", rank, minimum=0)
            check_lengths("overrides lengths", lengths)
        if self.capture_rule not in CAPTURE_RULES:
            raise ValueError(f"capture_rule must be one of {', '.join(CAPTURE_RULES)}; got {self.capture_rule!r}")
        check_int("max_requests", self.max_requests, minimum=1)
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {self.device!r}")
        if not all(isinstance(f, Fault) for f in self.faults):
            raise TypeError(f"faults must be Fault records, got {self.faults!r}")
        check_strategy(self.strategy)
        check_keying(self.keying)
        if self.is_prefilling and len(self.is_prefilling) != len(self.batches):
            raise ValueError(f"is_prefilling must hold one entry per batch ({len(self.batches)}) or none, got "
                             f"{len(self.is_prefilling)}")
        for i, flags in enumerate(self.is_prefilling):
            check_is_prefilling(flags, len(self.batches[i]), f"is_prefilling[{i}]")


class RaisesWhileCapturing(CPTransformer):
    """The model, raising while ``armed`` at ``rows`` rows per rank (0: at any), before its first all-gather
    or after ``after`` of them (between collectives): a capture failure on one rank."""

    def __init__(self, config: ModelConfig, rows: int, after: int = 0) -> None:
        super().__init__(config)
        self.rows = rows
        self.after = after
        self.armed = True

    def forward(self, hidden: Tensor, request_id: Tensor, position: Tensor,
                all_gather: AllGather = one_device_all_gather) -> Tensor:
        if not (self.armed and self.rows in (0, hidden.shape[1])):
            return super().forward(hidden, request_id, position, all_gather)
        message = f"injected capture failure at {hidden.shape[1]} rows per rank"
        if self.after == 0:
            raise RuntimeError(message)
        done = [0]

        def counting(x: Tensor) -> Tensor:
            out = all_gather(x)
            done[0] += 1
            if done[0] == self.after:
                raise RuntimeError(f"{message}, after {self.after} all-gathers")
            return out

        return super().forward(hidden, request_id, position, counting)


def _model(job: PrefillJob, faults: list[Fault], device: torch.device) -> CPTransformer:
    torch.manual_seed(job.seed)  # the same weights as build_model(job.config, job.seed)
    raises = [f for f in faults if f.kind == "capture_raises"]
    model = RaisesWhileCapturing(job.config, *raises[0].value[:2]) if raises else CPTransformer(job.config)
    return model.to(device).eval()


def _serving_fault(fault: Fault, rank: int, index: int) -> None:
    if fault.kind == "raise":
        raise RuntimeError(f"injected failure on rank {rank} at batch {index}")
    if fault.kind in ("kill", "stop"):
        os.kill(os.getpid(), signal.SIGKILL if fault.kind == "kill" else signal.SIGSTOP)


def prefill_worker(rank: int, world: int, job: PrefillJob) -> dict[str, Any]:
    """Run ``job`` on this rank. Returns what start-up captured (``bucket_local_tokens``, ``dropped``) and one
    record per batch in ``batches``: outputs (as lists) and the decision, or the guard's refusal."""
    device = torch.device(f"cuda:{rank}" if job.device == "cuda" else "cpu")
    faults = [f for f in job.faults if f.rank == rank]
    kwargs: dict[str, Any] = {"capture_rule": job.capture_rule, "max_requests": job.max_requests,
                              "strategy": job.strategy, "keying": job.keying}
    capture = job.capture_num_tokens
    for f in faults:
        if f.kind == "capture_list":
            capture = f.value
        elif f.kind == "align_size":
            kwargs["align_size"] = f.value[0]
    model = _model(job, faults, device)
    runner = DistributedPrefillRunner(model, capture_num_tokens=capture, **kwargs)
    if isinstance(model, RaisesWhileCapturing):
        model.armed = False
    overrides = {(i, r): lens for i, r, lens in job.overrides}
    records: list[dict[str, Any]] = []
    for i, lengths in enumerate(job.batches):
        mine = overrides.get((i, rank), lengths)
        hidden = batch_hidden(mine, job.config.hidden, job.seed, i).to(device)
        for f in faults:
            if f.batch == i:
                _serving_fault(f, rank, i)
                hidden = hidden[:-1] if f.kind == "bad_hidden" else hidden
                mine = (-1, *mine) if f.kind == "bad_lengths" else mine
        flags = job.is_prefilling[i] if job.is_prefilling else None
        try:
            result = runner.run(hidden, mine, is_prefilling=flags)
        except ConsensusError as exc:
            records.append({"error": str(exc), "type": type(exc).__name__})
            continue
        records.append({"mode": result.mode, "reason": result.reason, "bucket": result.plan.bucket,
                        "output": result.output.cpu().tolist()})
    inner = runner.runner
    return {"bucket_local_tokens": dict(inner.bucket_local_tokens), "dropped": dict(inner.dropped), "batches": records}
