"""One process per rank via torch.distributed (gloo on CPU, NCCL on GPU): the collective all-gather, the
control plane that agrees start-up and every batch across ranks, and ``DistributedPrefillRunner``.

Collective hygiene, the rule every function here keeps: a check that can fail on one rank runs before the
first collective of its step, and its outcome is itself exchanged in a collective of a fixed shape, so every
rank takes the same branch and runs the same collectives afterwards. Control messages travel on a gloo group
(the default group under gloo, a gloo subgroup under NCCL), never inside a CUDA graph.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch import Tensor

from cpgraph.impl.decision import Plan
from cpgraph.impl.dispatch import RunResult
from cpgraph.impl.graphs import GraphRunner, Placement, explain
from cpgraph.impl.launch import SpawnError, spawn
from cpgraph.impl.lengths import accept_is_prefilling
from cpgraph.impl.model import AllGather, CPTransformer, batch_hidden, build_model
from cpgraph.impl.runner import PrefillGraphRunner
from cpgraph.impl.agreement import ConsensusError, StartupError, StepResult, disagreement, where

__all__ = [
    "BatchRejectedError", "ConsensusError", "DistributedPrefillRunner", "GroupControl", "SpawnError", "StartupError",
    "agree_batch", "batch_hidden", "build_model", "plan_digest", "process_group_all_gather", "spawn",
]

T = TypeVar("T")

# torch 2.13 renamed all_gather_into_tensor (deprecated there); GPU machines may run an older torch.
_all_gather_single: Callable[..., Any] = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


class BatchRejectedError(ConsensusError):
    """Some rank's input failed its checks; the batch is refused on every rank and the next batch starts clean."""


class _PeerFailed(Exception):
    """Raised inside a guarded step on the ranks that did not fail, to unwind to the step's end."""


def process_group_all_gather(x: Tensor) -> Tensor:
    """This rank's rows [G, C, ...] -> every rank's rows [P*G*C, ...], rank-major (the layout's row order)."""
    local = x.reshape(x.shape[0] * x.shape[1], *x.shape[2:]).contiguous()
    out = local.new_empty((dist.get_world_size() * local.shape[0], *local.shape[1:]))
    _all_gather_single(out, local)
    return out


class GroupControl:
    """The control plane over a gloo group: object exchange, fixed-size int exchange and guarded steps."""

    def __init__(self, group: Any, rank: int, world_size: int) -> None:
        self.group = group
        self._rank = rank
        self._world_size = world_size

    @staticmethod
    def create(timeout_s: float | None = None) -> GroupControl:
        """Call on every rank after ``init_process_group``; under NCCL this creates a gloo subgroup (collective)."""
        group = None
        if dist.get_backend() != "gloo":
            timeout = None if timeout_s is None else timedelta(seconds=timeout_s)
            group = dist.new_group(backend="gloo", timeout=timeout)
        return GroupControl(group, dist.get_rank(), dist.get_world_size())

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world_size

    def all_gather_object(self, obj: object) -> list[Any]:
        out: list[Any] = [None] * self._world_size
        dist.all_gather_object(out, obj, group=self.group)
        return out

    def gather_ints(self, values: Sequence[int]) -> list[list[int]]:
        """Every rank's ``values`` (the same length on every rank; one fixed-size collective)."""
        mine = torch.tensor(list(values), dtype=torch.long)
        out = [torch.empty_like(mine) for _ in range(self._world_size)]
        dist.all_gather(out, mine, group=self.group)
        return [t.tolist() for t in out]

    def _guard(self, gather: AllGather) -> AllGather:
        def guarded(x: Tensor) -> Tensor:
            if not all(ok for (ok,) in self.gather_ints([1])):
                raise _PeerFailed
            return gather(x)

        return guarded

    def step(self, fn: Callable[[], T], graph_runner: GraphRunner) -> StepResult[T]:
        """Run ``fn`` on every rank so that one rank's exception cannot strand the others in a collective.

        Each all-gather outside graph capture is preceded by a one-flag exchange. A rank whose ``fn`` raises
        sends a 0 at its next exchange; the other ranks are waiting in an exchange (they cannot pass the next
        payload gather without it), see the 0, unwind with _PeerFailed, and every rank has then run the same
        collectives. A final exchange covers failures after the last gather. Then every rank learns who
        failed and why. Not covered: a failure inside a payload collective itself, or inside CUDA capture,
        where peers only enqueue work and reach the final exchange.
        """
        plain = graph_runner.all_gather
        graph_runner.all_gather = self._guard(plain)
        value: T | None = None
        local: Exception | None = None
        seen = False
        try:
            value = fn()
        except _PeerFailed:
            seen = True
        except Exception as exc:
            local = exc
        finally:
            graph_runner.all_gather = plain
        if not seen:
            seen = not all(ok for (ok,) in self.gather_ints([int(local is None)]))
        if not seen:
            return StepResult(value, {}, None)
        texts = self.all_gather_object(None if local is None else explain(local))
        return StepResult(None, {r: t for r, t in enumerate(texts) if t is not None}, local)


def plan_digest(plan: Plan, is_prefilling: tuple[bool, ...] | None = None) -> int:
    """A signed 64-bit digest of everything a plan decides, and of the batch's decodes (fits an int64 tensor)."""
    fallback = None if plan.fallback is None else plan.fallback.value
    text = repr((plan.extend_seq_lens, plan.num_tokens, plan.required_local_tokens, plan.bucket,
                 plan.bucket_local_tokens, fallback) + (() if is_prefilling is None else (is_prefilling,)))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def _describe(plan: Plan) -> str:
    decision = f"bucket {plan.bucket}" if plan.admitted else f"eager ({plan.fallback.value if plan.fallback else None})"
    return f"extend_seq_lens={plan.extend_seq_lens} num_tokens={plan.num_tokens} -> {decision}"


def agree_batch(control: GroupControl, plan: Plan | None, error: Exception | None,
                is_prefilling: tuple[bool, ...] | None = None) -> None:
    """The per-batch guard, one fixed-size collective: (input ok, plan digest) from every rank.

    Raises on every rank alike: BatchRejectedError naming each rank whose input failed its checks (with
    why), else ConsensusError naming who planned differently (a strict minority, or "ranks disagree" with
    every rank's plan on a tie). Returns on every rank when all agree.
    """
    ok = error is None and plan is not None
    rows = control.gather_ints([int(ok), plan_digest(plan, is_prefilling) if ok and plan is not None else 0])
    if not all(flag for flag, _ in rows):
        texts = control.all_gather_object(None if ok else explain(error) if error else "no plan")
        bad = {r: t for r, t in enumerate(texts) if t is not None}
        raise BatchRejectedError(
            f"batch refused on every rank: input rejected on {where(bad, control.world_size)}; "
            "no collective of this batch ran, the next batch starts clean"
        ) from error
    if len({digest for _, digest in rows}) > 1:
        plans = control.all_gather_object(plan)
        raise ConsensusError(disagreement("the plan", [_describe(p) for p in plans])
                             + "; refusing to replay (every rank must be fed the same batch)")


class DistributedPrefillRunner:
    """A PrefillGraphRunner holding this process's rank only, with start-up and every batch agreed.

    Call after ``dist.init_process_group``; cp_size is the world size. Start-up agrees the configuration, each
    bucket's capture and the final table on every rank (impl/startup.py); ``run`` checks its input locally,
    then passes the one-collective guard (``agree_batch``) before any collective of the batch.
    """

    def __init__(self, model: CPTransformer, *, capture_num_tokens: Sequence[int],
                 control_timeout_s: float | None = None, **kwargs: Any) -> None:
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError("DistributedPrefillRunner needs torch.distributed.init_process_group(...) first")
        if control_timeout_s is not None and (isinstance(control_timeout_s, bool) or not isinstance(
                control_timeout_s, (int, float)) or not 0 < control_timeout_s < float("inf")):
            raise ValueError(f"control_timeout_s must be None or a finite number of seconds > 0, got {control_timeout_s!r}")
        for name in ("cp_size", "placement", "control"):
            if name in kwargs:
                raise TypeError(f"DistributedPrefillRunner sets {name} itself (from the process group); got {name}=")
        self.control = GroupControl.create(control_timeout_s)
        rank, world = self.control.rank, self.control.world_size
        placement = Placement(world, rank, 1, process_group_all_gather)
        self.runner = PrefillGraphRunner(model, cp_size=world, capture_num_tokens=capture_num_tokens,
                                         placement=placement, control=self.control, **kwargs)

    def run(self, hidden: Tensor, extend_seq_lens: Sequence[int], num_tokens: int | None = None,
            is_prefilling: object = None) -> RunResult:
        plan: Plan | None = None
        error: Exception | None = None
        flags: tuple[bool, ...] | None = None
        try:
            plan = self.runner.plan(extend_seq_lens, num_tokens, is_prefilling)
            flags = accept_is_prefilling(is_prefilling, len(plan.extend_seq_lens))
            self.runner.validate_batch(hidden, extend_seq_lens, plan, flags)
        except Exception as exc:  # any local failure is agreed below, never raised alone
            error = exc
        agree_batch(self.control, plan, error, flags)
        assert plan is not None
        return self.runner.run(hidden, extend_seq_lens, plan=plan, is_prefilling=flags)
