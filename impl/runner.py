"""The prefill runner: start-up (impl/startup.py) captures and checks every bucket, then ``run`` plans once and
replays (or runs eagerly, saying why) through the dispatcher (impl/dispatch.py) and the graph runner
(impl/graphs.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Unpack

import torch
from torch import Tensor

from cpgraph.impl import policy
from cpgraph.impl.checks import check_lengths
from cpgraph.impl.decision import Plan
from cpgraph.impl.dispatch import Dispatcher, ReplayError, RunResult
from cpgraph.impl.graphs import GraphRunner, Placement, same_device
from cpgraph.impl.layout import build_torch_layout, packed_layout
from cpgraph.impl.model import CPTransformer
from cpgraph.impl.agreement import Control, LocalControl
from cpgraph.impl.config import CAPTURE_RULES, RunnerConfig, agree_config
from cpgraph.impl.startup import StartupCheck, capacities, capture_buckets, verify_buckets
from cpgraph.reference.policy import PolicyBatch

__all__ = ["CAPTURE_RULES", "Dispatcher", "PrefillGraphRunner", "ReplayError", "RunResult"]

log = logging.getLogger("cpgraph.impl.runner")


class PrefillGraphRunner:
    """Context-parallel prefill over CUDA graphs (or their emulation) with an eager fallback.

    Start-up validates every argument (impl/config.py), drops buckets below 2P, checks impl's capacity rule
    against the reference's, captures every other bucket once (largest first) at the capacity its
    ``capture_rule`` gives ("captured": one request of B tokens, upstream's; "headroom": any batch of up to
    ``max_requests`` requests), then replays every graph once against eager before serving. A capture that
    fails on CUDA stops start-up naming the bucket; in emulation the bucket is dropped (``dropped`` says why);
    zero captured buckets is a StartupError. ``control`` agrees each step across ranks (impl/distributed.py).

    ``keying`` says what a graph is keyed by: "global" (the default, sglang's: buckets of global tokens, each with
    the rows its capture rule records, buckets below 2P dropped, only CP-active batches admitted) or "local"
    (vLLM 0.29's: ``capture_num_tokens`` are sizes of rank-local rows, a size s captured with s rows on every rank;
    a batch replays the least size >= its largest live rank-local rows, its layout padded to that size, and runs
    eagerly above the largest). ``is_prefilling`` on ``plan``/``run`` marks decodes (dual_chunk_swap rows).
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
        control: Control | None = None,
        keying: str = "global",
    ) -> None:
        control = LocalControl() if control is None else control
        config = agree_config(control, lambda: self._validate(
            model, placement, cp_size=cp_size, capture_num_tokens=capture_num_tokens, align_size=align_size,
            strategy=strategy, max_padding_factor=max_padding_factor, capture_rule=capture_rule,
            max_requests=max_requests, device=device, dtype=dtype, use_cuda_graph=use_cuda_graph,
            warmup_iters=warmup_iters, keying=keying))
        if config.below_2p:
            log.info("dropped buckets below 2P=%d: %s", 2 * config.cp_size, list(config.below_2p))
        self.config = config
        self.model = model
        self.cp_size, self.strategy, self.align_size = config.cp_size, config.strategy, config.align_size
        self.keying = config.keying
        self.max_padding_factor, self.capture_rule = config.max_padding_factor, config.capture_rule
        self.max_requests, self.capture_num_tokens = config.max_requests, config.capture_num_tokens
        self.device, self.dtype = config.device, config.dtype
        self.placement = placement if placement is not None else Placement.one_device(self.cp_size)
        rows = capacities(config)
        cuda = self.device.type == "cuda"
        before = torch.cuda.memory_allocated(self.device) if cuda else 0
        reserved_before = torch.cuda.memory_reserved(self.device) if cuda else 0
        self.graph_runner = GraphRunner(model, placement=self.placement, max_local_tokens=max(rows.values()),
                                        device=self.device, dtype=self.dtype, use_cuda_graph=config.use_cuda_graph,
                                        warmup_iters=config.warmup_iters)
        report = capture_buckets(config, self.graph_runner, control, rows)
        self.bucket_local_tokens: dict[int, int] = report.bucket_local_tokens
        self.dropped: dict[int, str] = report.dropped
        self.capture_seconds: dict[int, float] = report.capture_seconds
        # Static inputs and captured outputs (allocated), and what the graphs' pool keeps reserved on top.
        self.static_bytes = (torch.cuda.memory_allocated(self.device) - before) if cuda else self._static_bytes()
        self.reserved_bytes = torch.cuda.memory_reserved(self.device) - reserved_before if cuda else self.static_bytes
        self.dispatcher = Dispatcher(cp_size=self.cp_size, align_size=self.align_size, strategy=self.strategy,
                                     max_padding_factor=self.max_padding_factor,
                                     capture_num_tokens=self.capture_num_tokens, captured=self.bucket_local_tokens,
                                     keying=self.keying)
        self.startup_checks: dict[int, StartupCheck] = verify_buckets(
            config, self.graph_runner, control, self.bucket_local_tokens)

    @staticmethod
    def _validate(model: object, placement: object, **kwargs: object) -> RunnerConfig:
        config = RunnerConfig.validate(model, **kwargs)
        if placement is not None:
            if not isinstance(placement, Placement):
                raise TypeError(f"placement must be a Placement or None, got {type(placement).__name__}")
            if placement.cp_size != config.cp_size:
                raise ValueError(f"placement is for cp_size={placement.cp_size}, runner for cp_size={config.cp_size}")
        return config

    @property
    def mode(self) -> str:
        """"cuda_graph" for real graphs; "emulation" when the static-buffer path runs eagerly (no GPU)."""
        return self.graph_runner.mode

    def _static_bytes(self) -> int:
        g = self.graph_runner
        tensors = [g.static_hidden, g.static_request_id, g.static_position, *g.static_output.values()]
        return sum(t.numel() * t.element_size() for t in tensors)

    # -- serving -------------------------------------------------------------------------------------------

    def plan(
        self, extend_seq_lens: Sequence[int], num_tokens: int | None = None, is_prefilling: object = None
    ) -> Plan:
        """The one decision for this batch (consumed by ``run``; not recomputed there)."""
        return self.dispatcher.plan(extend_seq_lens, num_tokens, is_prefilling)

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
        if not same_device(hidden.device, self.device):
            raise ValueError(f"hidden is on {hidden.device}, the runner on {self.device}")

    def validate_batch(
        self, hidden: Tensor, extend_seq_lens: Sequence[int], plan: Plan, is_prefilling: object = None
    ) -> tuple[int, ...]:
        """Every check ``run`` makes before it touches a buffer or a collective; returns the lengths.

        Raises ValueError/TypeError for bad input, ReplayError for a plan this runner did not make (for an
        admitted plan, one whose rows are not this batch's: another ``is_prefilling``, say).
        """
        lengths = check_lengths("extend_seq_lens", extend_seq_lens)
        if plan.extend_seq_lens != lengths:
            raise ValueError(f"plan is for extend_seq_lens={plan.extend_seq_lens}, batch has {lengths}")
        self._check_hidden(hidden, lengths)
        if plan.admitted:
            self.dispatcher.key(plan)
            _, _, (required, _, _, _) = self.dispatcher.decide(lengths, plan.num_tokens, is_prefilling)
            if required != plan.required_local_tokens:
                raise ReplayError(
                    f"plan records {plan.required_local_tokens} rows per rank but this batch needs {required} "
                    f"(is_prefilling={is_prefilling!r}); the plan was made for another batch"
                )
        return lengths

    def run(
        self,
        hidden: Tensor,
        extend_seq_lens: Sequence[int],
        num_tokens: int | None = None,
        *,
        plan: Plan | None = None,
        is_prefilling: object = None,
    ) -> RunResult:
        """Prefill one packed batch hidden [n, H]: replay the planned bucket (global) or size (local), or run
        eagerly and say why. ``is_prefilling`` (one bool per request) marks decodes: copied whole to every rank or
        dealt round-robin, as the strategy's row says; eagerly they are ordinary requests."""
        if plan is None:
            plan = self.plan(extend_seq_lens, num_tokens, is_prefilling)  # validated once, at the boundary
            lengths = plan.extend_seq_lens
            self._check_hidden(hidden, lengths)
        else:
            lengths = self.validate_batch(hidden, extend_seq_lens, plan, is_prefilling)
        if not plan.admitted:
            return RunResult(self._eager(hidden, lengths), plan, "eager")
        key = self.dispatcher.key(plan)
        # Built from the live lengths, padded to the captured rows (under local keying the size s itself);
        # raises (never truncates) if it would not fit.
        layout = build_torch_layout(lengths, cp_size=self.cp_size, rows=key.local_tokens, strategy=self.strategy,
                                    device=self.device, is_prefilling=is_prefilling)
        return RunResult(self.graph_runner.replay(key, layout, hidden), plan, self.mode)

    def run_eager(self, hidden: Tensor, extend_seq_lens: Sequence[int]) -> Tensor:
        """The model without context parallelism on the packed batch: the outputs' ground truth (no collective)."""
        lengths = check_lengths("extend_seq_lens", extend_seq_lens)
        self._check_hidden(hidden, lengths)
        return self._eager(hidden, lengths)

    @torch.no_grad()
    def _eager(self, hidden: Tensor, lengths: tuple[int, ...]) -> Tensor:
        packed = packed_layout(lengths, device=self.device)
        out: Tensor = self.model(hidden[None], packed.request_id, packed.position)
        return out[0]

    def run_padded_eager(self, hidden: Tensor, plan: Plan, is_prefilling: object = None) -> Tensor:
        """The admitted plan's padded CP computation, run eagerly through the same static buffers (no graph)."""
        self._check_hidden(hidden, plan.extend_seq_lens)
        key = self.dispatcher.key(plan)
        layout = build_torch_layout(plan.extend_seq_lens, cp_size=self.cp_size, rows=key.local_tokens,
                                    strategy=self.strategy, device=self.device, is_prefilling=is_prefilling)
        return self.graph_runner.eager(key, layout, hidden)

    # -- the policy protocol (``cpgraph check``), through the same plan_batch the dispatcher uses ----------

    def admit(self, *, is_prefilling: object = None, **batch: Unpack[PolicyBatch]) -> bool:
        return policy.decide(strategy=self.strategy, keying=self.keying, is_prefilling=is_prefilling, **batch).admitted

    def replay_bucket(self, *, is_prefilling: object = None, **batch: Unpack[PolicyBatch]) -> int:
        return policy.bucket_of(policy.decide(strategy=self.strategy, keying=self.keying, is_prefilling=is_prefilling,
                                              **batch))

    def local_rows(self, *, bucket: int, is_prefilling: object = None, **batch: Unpack[PolicyBatch]) -> tuple[int, ...]:
        return policy.local_rows(bucket=bucket, strategy=self.strategy, keying=self.keying,
                                 is_prefilling=is_prefilling, **batch)

    def describe(self) -> dict[str, object]:
        """A JSON-ready summary of start-up: what was captured, with how many rows, how long it took, and the
        start-up replay check of every bucket."""
        return {
            "mode": self.mode,
            "device": str(self.device),
            "cp_size": self.cp_size,
            "strategy": self.strategy,
            "keying": self.keying,
            "align_size": self.align_size,
            "capture_rule": self.capture_rule,
            "max_requests": self.max_requests,
            "capture_num_tokens": list(self.capture_num_tokens),
            "bucket_local_tokens": {str(b): r for b, r in self.bucket_local_tokens.items()},
            "dropped": {str(b): r for b, r in self.dropped.items()},
            "capture_seconds": {str(b): s for b, s in self.capture_seconds.items()},
            "startup_checks": {str(b): {"extend_seq_lens": list(c.extend_seq_lens), "max_abs_error": c.max_abs_error,
                                        "bit_exact": c.bit_exact} for b, c in self.startup_checks.items()},
            "static_bytes": self.static_bytes,
            "reserved_bytes": self.reserved_bytes,
        }
