"""The prefill runner: start-up capture of every bucket, a dispatcher that alone knows what was captured, and
``run`` which plans once and replays (or runs eagerly, saying why).

The three parts (STYLE.md): ``BucketKey`` (impl/graphs.py) is the frozen key; ``Dispatcher`` maps a batch to a
``Plan`` and a plan to a key; ``GraphRunner`` (impl/graphs.py) owns the static buffers and trusts both.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Unpack

import torch
from torch import Tensor

from cpgraph.impl import policy
from cpgraph.impl.checks import check_capture_list, check_int, check_lengths, check_num_tokens, check_strategy
from cpgraph.impl.decision import (
    Plan,
    Selector,
    align_up,
    default_align_size,
    headroom_local_tokens,
    plan_batch,
    required_local_tokens,
)
from cpgraph.impl.graphs import BucketKey, GraphRunner, Placement
from cpgraph.impl.layout import build_torch_layout, packed_layout
from cpgraph.impl.model import CPTransformer
from cpgraph.reference.policy import PolicyBatch

log = logging.getLogger("cpgraph.impl.runner")

CAPTURE_RULES = ("captured", "headroom")


class ReplayError(RuntimeError):
    """Replay was asked for a plan that was not admitted, or for a bucket that was never captured."""


@dataclass(frozen=True, eq=False)
class RunResult:
    """One batch's output [n, H] in packed order, the plan that produced it, and how it ran.

    ``mode`` is "cuda_graph" (a real graph replay), "emulation" (the static-buffer path run eagerly, no GPU),
    or "eager" (fallback without context parallelism; ``plan.fallback`` says why).
    """

    output: Tensor
    plan: Plan
    mode: str

    @property
    def reason(self) -> str | None:
        return None if self.plan.fallback is None else self.plan.fallback.value


class Dispatcher:
    """Alone knows which buckets were captured and with how many rows; decides replay or eager, once a batch."""

    def __init__(
        self,
        *,
        cp_size: int,
        align_size: int,
        strategy: str,
        max_padding_factor: int,
        capture_num_tokens: Sequence[int],
        captured: Mapping[int, int],
    ) -> None:
        self.cp_size = cp_size
        self.align_size = align_size
        self.strategy = strategy
        self.max_padding_factor = max_padding_factor
        # A bucket that failed to capture stays in the list with no capacity: never a fit.
        self.selector = Selector.build(capture_num_tokens, {b: captured.get(b) for b in capture_num_tokens})
        self.keys = {b: BucketKey(b, rows) for b, rows in captured.items()}

    def plan(self, extend_seq_lens: Sequence[int], num_tokens: int | None = None) -> Plan:
        lengths = check_lengths("extend_seq_lens", extend_seq_lens)
        n = check_num_tokens(sum(lengths) if num_tokens is None else num_tokens, lengths)
        return plan_batch(
            lengths,
            num_tokens=n,
            cp_size=self.cp_size,
            align_size=self.align_size,
            selector=self.selector,
            max_padding_factor=self.max_padding_factor,
            strategy=self.strategy,
        )

    def key(self, plan: Plan) -> BucketKey:
        """The captured key a plan replays; tripwires name what was asked and what exists."""
        if plan.bucket is None:
            raise ReplayError(
                f"replay called for a batch that was not admitted (fallback {plan.fallback}); run it eagerly"
            )
        key = self.keys.get(plan.bucket)
        if key is None or key.local_tokens != plan.bucket_local_tokens:
            raise ReplayError(
                f"plan asks for bucket {plan.bucket} with {plan.bucket_local_tokens} rows, but the captured "
                f"buckets are {sorted((k.num_tokens, k.local_tokens) for k in self.keys.values())}"
            )
        if plan.required_local_tokens > key.local_tokens:
            raise ReplayError(
                f"plan needs {plan.required_local_tokens} rows per rank but bucket {key.num_tokens} has "
                f"{key.local_tokens}; this plan was not made by this dispatcher"
            )
        return key


class PrefillGraphRunner:
    """Context-parallel prefill over CUDA graphs (or their emulation) with an eager fallback.

    Start-up drops buckets below 2P, captures every other bucket once (largest first) at the capacity its
    ``capture_rule`` gives ("captured": one request of B tokens, upstream's; "headroom": any batch of up to
    ``max_requests`` requests), records ``bucket_local_tokens`` from the captured buffers and checks it against
    the reference's rule. A bucket whose capture raises is dropped with a logged reason; serving continues.
    """

    def __init__(
        self,
        model: CPTransformer,
        *,
        cp_size: int,
        capture_num_tokens: Sequence[int],
        align_size: int | None = None,
        strategy: str = "zigzag",
        max_padding_factor: int = 2,
        capture_rule: str = "captured",
        max_requests: int = 1,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        use_cuda_graph: bool | None = None,
        placement: Placement | None = None,
        warmup_iters: int = 2,
    ) -> None:
        self.cp_size = check_int("cp_size", cp_size, minimum=1)
        self.strategy = check_strategy(strategy)
        self.align_size = (
            default_align_size(cp_size=self.cp_size, strategy=self.strategy)
            if align_size is None
            else check_int("align_size", align_size, minimum=1)
        )
        self.max_padding_factor = check_int("max_padding_factor", max_padding_factor, minimum=1)
        if capture_rule not in CAPTURE_RULES:
            raise ValueError(f"capture_rule must be one of {', '.join(CAPTURE_RULES)}; got {capture_rule!r}")
        if capture_rule == "headroom" and self.strategy != "zigzag":
            raise ValueError(f"capture_rule 'headroom' is defined for zigzag only, got strategy={self.strategy!r}")
        self.capture_rule = capture_rule
        self.max_requests = check_int("max_requests", max_requests, minimum=1)
        listed = check_capture_list("capture_num_tokens", capture_num_tokens)
        self.capture_num_tokens = tuple(b for b in listed if b >= 2 * self.cp_size)
        if not self.capture_num_tokens:
            raise ValueError(
                f"capture_num_tokens={listed!r} has no bucket >= 2*cp_size = {2 * self.cp_size}; "
                "a CP graph runner needs at least one"
            )
        if len(self.capture_num_tokens) < len(listed):
            below = sorted(set(listed) - set(self.capture_num_tokens))
            log.info("dropped buckets below 2P=%d: %s", 2 * self.cp_size, below)
        self.model = model
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        self.dtype = dtype
        cuda = self.device.type == "cuda"
        if use_cuda_graph is None:
            use_cuda_graph = cuda
        if use_cuda_graph and not cuda:
            raise ValueError(f"use_cuda_graph=True needs a CUDA device, got device={self.device}")
        self.placement = placement if placement is not None else Placement.one_device(self.cp_size)
        if self.placement.cp_size != self.cp_size:
            raise ValueError(f"placement is for cp_size={self.placement.cp_size}, runner for cp_size={self.cp_size}")
        rows = {b: self._rule_rows(b) for b in self.capture_num_tokens}
        before = torch.cuda.memory_allocated(self.device) if cuda else 0
        reserved_before = torch.cuda.memory_reserved(self.device) if cuda else 0
        self.graph_runner = GraphRunner(
            model,
            placement=self.placement,
            max_local_tokens=max(rows.values()),
            device=self.device,
            dtype=dtype,
            use_cuda_graph=use_cuda_graph,
            warmup_iters=warmup_iters,
        )
        self.bucket_local_tokens: dict[int, int] = {}
        self.dropped: dict[int, str] = {}
        self.capture_seconds: dict[int, float] = {}
        for b in reversed(self.capture_num_tokens):  # largest first: smaller graphs reuse the pool's blocks
            self._capture(b, rows[b])
        # Static inputs and captured outputs (allocated), and what the graphs' pool keeps reserved on top.
        self.static_bytes = (torch.cuda.memory_allocated(self.device) - before) if cuda else self._static_bytes()
        reserved = torch.cuda.memory_reserved(self.device) - reserved_before if cuda else self.static_bytes
        self.reserved_bytes = reserved
        self._check_against_reference()
        self.dispatcher = self._dispatcher()

    def _dispatcher(self) -> Dispatcher:
        return Dispatcher(
            cp_size=self.cp_size,
            align_size=self.align_size,
            strategy=self.strategy,
            max_padding_factor=self.max_padding_factor,
            capture_num_tokens=self.capture_num_tokens,
            captured=self.bucket_local_tokens,
        )

    def restrict_to(self, keep: Mapping[int, int], *, reason: str) -> None:
        """Drop every captured bucket not in ``keep`` (e.g. not captured alike on every rank), logging why."""
        for b in sorted(set(self.bucket_local_tokens) - set(keep)):
            key = BucketKey(b, self.bucket_local_tokens.pop(b))
            self.graph_runner.static_output.pop(key, None)
            self.graph_runner.graphs.pop(key, None)
            self.dropped[b] = reason
            log.warning("dropping bucket %d: %s", b, reason)
        self.dispatcher = self._dispatcher()

    @property
    def mode(self) -> str:
        """"cuda_graph" for real graphs; "emulation" when the static-buffer path runs eagerly (no GPU)."""
        return self.graph_runner.mode

    def _rule_rows(self, bucket: int) -> int:
        if self.capture_rule == "headroom":
            return headroom_local_tokens(
                bucket, cp_size=self.cp_size, align_size=self.align_size, max_requests=self.max_requests
            )
        # One request of B tokens, laid out: the busiest rank's rows, aligned (upstream's capture).
        single = build_torch_layout((bucket,), cp_size=self.cp_size, strategy=self.strategy)
        return align_up(max(single.loads), self.align_size)

    def _capture(self, bucket: int, rows: int) -> None:
        layout = build_torch_layout((bucket,), cp_size=self.cp_size, rows=rows, strategy=self.strategy)
        gen = torch.Generator().manual_seed(bucket)
        hidden = torch.randn(bucket, self.model.config.hidden, generator=gen).to(self.device)
        key = BucketKey(bucket, layout.rows)
        start = time.perf_counter()
        try:
            self.graph_runner.capture(key, layout, hidden)
        except Exception as exc:  # a failed capture drops this bucket only; the runner keeps serving
            reason = f"{type(exc).__name__}: {exc}"
            log.warning("dropping bucket %d (%d rows per rank): capture failed: %s", bucket, rows, reason)
            self.dropped[bucket] = reason
            self.graph_runner.static_output.pop(key, None)
            self.graph_runner.graphs.pop(key, None)
            return
        self.capture_seconds[bucket] = time.perf_counter() - start
        # Recorded from what was actually captured: the static output's rows per rank.
        self.bucket_local_tokens[bucket] = int(self.graph_runner.static_output[key].shape[1])

    def _static_bytes(self) -> int:
        g = self.graph_runner
        tensors = [g.static_hidden, g.static_request_id, g.static_position, *g.static_output.values()]
        return sum(t.numel() * t.element_size() for t in tensors)

    def _check_against_reference(self) -> None:
        """Tripwire: the recorded capacities must equal the reference's rule (reference/ is the oracle)."""
        from cpgraph import reference

        for b, rows in self.bucket_local_tokens.items():
            if self.capture_rule == "headroom":
                expected = reference.headroom_local_tokens(
                    b, cp_size=self.cp_size, align_size=self.align_size, max_requests=self.max_requests
                )
            else:
                expected = reference.capture_local_tokens(
                    b, cp_size=self.cp_size, align_size=self.align_size, strategy=self.strategy
                )
            if rows != expected:
                raise RuntimeError(
                    f"bucket {b} was captured with {rows} rows per rank but the reference's "
                    f"{self.capture_rule!r} rule gives {expected} (cp_size={self.cp_size}, align_size={self.align_size})"
                )

    # -- serving -------------------------------------------------------------------------------------------

    def plan(self, extend_seq_lens: Sequence[int], num_tokens: int | None = None) -> Plan:
        """The one decision for this batch (consumed by ``run``; not recomputed there)."""
        return self.dispatcher.plan(extend_seq_lens, num_tokens)

    def _check_hidden(self, hidden: Tensor, lengths: tuple[int, ...]) -> None:
        if not isinstance(hidden, Tensor):
            raise TypeError(f"hidden must be a torch.Tensor, got {type(hidden).__name__}")
        expected = (sum(lengths), self.model.config.hidden)
        if tuple(hidden.shape) != expected:
            raise ValueError(
                f"hidden has shape {tuple(hidden.shape)} but extend_seq_lens={lengths} needs {expected} "
                "(sum of lengths, hidden size)"
            )
        if hidden.dtype != self.dtype:
            raise TypeError(f"hidden has dtype {hidden.dtype}, the runner was built for {self.dtype}")
        if hidden.device != self.device:
            raise ValueError(f"hidden is on {hidden.device}, the runner on {self.device}")

    def run(
        self,
        hidden: Tensor,
        extend_seq_lens: Sequence[int],
        num_tokens: int | None = None,
        *,
        plan: Plan | None = None,
    ) -> RunResult:
        """Prefill one packed batch hidden [n, H]: replay the planned bucket, or run eagerly and say why."""
        if plan is None:
            plan = self.plan(extend_seq_lens, num_tokens)
        lengths = check_lengths("extend_seq_lens", extend_seq_lens)
        if plan.extend_seq_lens != lengths:
            raise ValueError(f"plan is for extend_seq_lens={plan.extend_seq_lens}, batch has {lengths}")
        self._check_hidden(hidden, lengths)
        if not plan.admitted:
            return RunResult(self.run_eager(hidden, lengths), plan, "eager")
        key = self.dispatcher.key(plan)
        # Built from the live lengths at the captured capacity; raises (never truncates) if it would not fit.
        layout = build_torch_layout(
            lengths, cp_size=self.cp_size, rows=key.local_tokens, strategy=self.strategy, device=self.device
        )
        return RunResult(self.graph_runner.replay(key, layout, hidden), plan, self.mode)

    @torch.no_grad()
    def run_eager(self, hidden: Tensor, extend_seq_lens: Sequence[int]) -> Tensor:
        """The model without context parallelism on the packed batch: the outputs' ground truth."""
        lengths = check_lengths("extend_seq_lens", extend_seq_lens)
        self._check_hidden(hidden, lengths)
        packed = packed_layout(lengths, device=self.device)
        out: Tensor = self.model(hidden[None], packed.request_id, packed.position)
        return out[0]

    def run_padded_eager(self, hidden: Tensor, plan: Plan) -> Tensor:
        """The admitted plan's padded CP computation, run eagerly through the same static buffers (no graph)."""
        self._check_hidden(hidden, plan.extend_seq_lens)
        key = self.dispatcher.key(plan)
        layout = build_torch_layout(
            plan.extend_seq_lens, cp_size=self.cp_size, rows=key.local_tokens, strategy=self.strategy, device=self.device
        )
        return self.graph_runner.eager(key, layout, hidden)

    # -- the policy protocol (``cpgraph check``), through the same plan_batch the dispatcher uses ----------

    def admit(self, **batch: Unpack[PolicyBatch]) -> bool:
        return policy.decide(strategy=self.strategy, **batch).admitted

    def replay_bucket(self, **batch: Unpack[PolicyBatch]) -> int:
        return policy.bucket_of(policy.decide(strategy=self.strategy, **batch))

    def local_rows(self, *, bucket: int, **batch: Unpack[PolicyBatch]) -> tuple[int, ...]:
        return policy.local_rows(bucket=bucket, strategy=self.strategy, **batch)

    def describe(self) -> dict[str, object]:
        """A JSON-ready summary of start-up: what was captured, with how many rows, how long it took."""
        return {
            "mode": self.mode,
            "cp_size": self.cp_size,
            "strategy": self.strategy,
            "align_size": self.align_size,
            "capture_rule": self.capture_rule,
            "max_requests": self.max_requests,
            "capture_num_tokens": list(self.capture_num_tokens),
            "bucket_local_tokens": {str(b): r for b, r in self.bucket_local_tokens.items()},
            "dropped": {str(b): r for b, r in self.dropped.items()},
            "capture_seconds": {str(b): s for b, s in self.capture_seconds.items()},
            "static_bytes": self.static_bytes,
            "reserved_bytes": self.reserved_bytes,
        }
