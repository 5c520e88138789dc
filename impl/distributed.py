"""One process per rank via torch.distributed (gloo on CPU, NCCL on GPU): the collective all-gather, the
consensus guard, a runner wrapper and a spawn helper.

The consensus guard runs before every batch, replay or not: the ranks all-gather a fixed-size digest of their
plan, so a rank fed a different batch is named in an error instead of leaving the others hanging in a
collective of a different shape.
"""

from __future__ import annotations

import hashlib
import os
import socket
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import Tensor

from cpgraph.impl.decision import Plan
from cpgraph.impl.graphs import Placement
from cpgraph.impl.model import CPTransformer, ModelConfig
from cpgraph.impl.runner import PrefillGraphRunner, RunResult


# torch 2.13 renamed all_gather_into_tensor (deprecated there); GPU machines may run an older torch.
_all_gather_single: Callable[..., Any] = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


class ConsensusError(RuntimeError):
    """The ranks planned different things for what should have been one batch."""


def process_group_all_gather(x: Tensor) -> Tensor:
    """This rank's rows [G, C, ...] -> every rank's rows [P*G*C, ...], rank-major (the layout's row order)."""
    local = x.reshape(x.shape[0] * x.shape[1], *x.shape[2:]).contiguous()
    out = local.new_empty((dist.get_world_size() * local.shape[0], *local.shape[1:]))
    _all_gather_single(out, local)
    return out


def plan_digest(plan: Plan) -> int:
    """A signed 64-bit digest of everything a plan decides (fits an int64 tensor)."""
    fallback = None if plan.fallback is None else plan.fallback.value
    text = repr((plan.extend_seq_lens, plan.num_tokens, plan.required_local_tokens, plan.bucket,
                 plan.bucket_local_tokens, fallback))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def _describe(plan: Plan) -> str:
    decision = f"bucket {plan.bucket}" if plan.admitted else f"eager ({plan.fallback.value if plan.fallback else None})"
    return f"extend_seq_lens={plan.extend_seq_lens} num_tokens={plan.num_tokens} -> {decision}"


def check_consensus(plan: Plan, *, device: torch.device) -> None:
    """All-gather the plan's digest; raise ConsensusError naming the disagreeing ranks and their plans.

    Every rank reaches the same verdict (they all see every digest), so all of them raise together.
    """
    world = dist.get_world_size()
    mine = torch.tensor([plan_digest(plan)], dtype=torch.long, device=device)
    digests = torch.empty(world, dtype=torch.long, device=device)
    _all_gather_single(digests, mine)
    values = digests.tolist()
    if len(set(values)) == 1:
        return
    plans: list[Any] = [None] * world
    dist.all_gather_object(plans, plan)
    groups: dict[int, list[int]] = {}
    for rank, value in enumerate(values):
        groups.setdefault(value, []).append(rank)
    majority = max(groups.values(), key=len)  # ties: the group holding the lowest rank
    disagreeing = sorted(r for r in range(world) if r not in majority)
    lines = [f"ranks {ranks}: {_describe(plans[ranks[0]])}" for ranks in groups.values()]
    raise ConsensusError(
        f"ranks {disagreeing} disagree with ranks {majority} on the plan; refusing to replay "
        f"(every rank must be fed the same batch): " + "; ".join(lines)
    )


class DistributedPrefillRunner:
    """A PrefillGraphRunner holding this process's rank only, with the consensus guard before every batch.

    Call after ``dist.init_process_group``; cp_size is the world size. At start-up the ranks agree on the
    captured table: a bucket that failed to capture on any rank is dropped on all of them.
    """

    def __init__(self, model: CPTransformer, *, capture_num_tokens: Sequence[int], **kwargs: Any) -> None:
        rank, world = dist.get_rank(), dist.get_world_size()
        placement = Placement(world, rank, 1, process_group_all_gather)
        self.runner = PrefillGraphRunner(
            model, cp_size=world, capture_num_tokens=capture_num_tokens, placement=placement, **kwargs
        )
        tables: list[Any] = [None] * world
        dist.all_gather_object(tables, dict(self.runner.bucket_local_tokens))
        common = {b: r for b, r in self.runner.bucket_local_tokens.items() if all(t.get(b) == r for t in tables)}
        if common != self.runner.bucket_local_tokens:
            self.runner.restrict_to(common, reason="not captured identically on every rank")

    def run(self, hidden: Tensor, extend_seq_lens: Sequence[int], num_tokens: int | None = None) -> RunResult:
        plan = self.runner.plan(extend_seq_lens, num_tokens)
        check_consensus(plan, device=self.runner.device if self.runner.device.type == "cuda" else torch.device("cpu"))
        return self.runner.run(hidden, extend_seq_lens, plan=plan)


# -- launching ---------------------------------------------------------------------------------------------


_DEFAULT_START = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _entry(rank: int, world: int, port: int, backend: str, fn: Callable[..., Any], args: tuple[Any, ...],
           queue: Any) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=timedelta(seconds=60))
        queue.put((rank, True, fn(rank, world, *args)))
    except BaseException:
        queue.put((rank, False, traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def spawn(fn: Callable[..., Any], world_size: int, *args: Any, backend: str = "gloo",
          timeout_s: float = 120.0, start_method: str = _DEFAULT_START) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` in one fresh process per rank; return the results by rank.

    The default start method is "forkserver" where available (torch is imported once per session, by the
    server, instead of once per rank), else "spawn"; never "fork" (unsafe after threads or CUDA).

    ``fn`` must be importable (module level) and return picklable values (prefer lists over tensors). Raises
    RuntimeError carrying each failed rank's traceback.
    """
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be gloo or nccl, got {backend!r}")
    if start_method not in mp.get_all_start_methods():
        raise ValueError(f"start_method must be one of {mp.get_all_start_methods()}, got {start_method!r}")
    ctx: Any = mp.get_context(start_method)
    if start_method == "forkserver":
        # The server imports torch once, before any thread or CUDA context exists; every rank forks from it.
        ctx.set_forkserver_preload(["cpgraph.impl.distributed", fn.__module__])
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_entry, args=(r, world_size, port, backend, fn, args, queue)) for r in range(world_size)]
    for proc in procs:
        proc.start()
    results: dict[int, Any] = {}
    errors: dict[int, str] = {}
    try:
        for _ in range(world_size):
            rank, ok, value = queue.get(timeout=timeout_s)
            (results if ok else errors)[rank] = value
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    if errors:
        raise RuntimeError("; ".join(f"rank {r} failed:\n{tb}" for r, tb in sorted(errors.items())))
    return [results[r] for r in range(world_size)]


# -- a ready-made worker: the same batches through the distributed runner ---------------------------------


@dataclass(frozen=True)
class PrefillJob:
    """What each rank runs: a model built from ``seed``, the capture list, and batches of lengths.

    ``overrides`` maps (batch index, rank) to the lengths that rank is fed instead (to exercise the guard).
    """

    config: ModelConfig
    seed: int
    capture_num_tokens: tuple[int, ...]
    batches: tuple[tuple[int, ...], ...]
    overrides: tuple[tuple[int, int, tuple[int, ...]], ...] = ()
    capture_rule: str = "captured"
    max_requests: int = 1
    device: str = "cpu"  # "cuda": rank r uses cuda:r (NCCL)


def build_model(config: ModelConfig, seed: int, device: torch.device | str = "cpu") -> CPTransformer:
    """The same weights in every process: seeded construction, eval mode."""
    torch.manual_seed(seed)
    return CPTransformer(config).to(device).eval()


def batch_hidden(lengths: Sequence[int], hidden: int, seed: int, index: int) -> Tensor:
    """Deterministic packed inputs [n, hidden] for batch ``index`` (identical in every process)."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + index)
    return torch.randn(sum(lengths), hidden, generator=gen)


def prefill_worker(rank: int, world: int, job: PrefillJob) -> list[dict[str, Any]]:
    """Run ``job`` on this rank; one record per batch: outputs (as lists) and the decision, or the refusal."""
    device = torch.device(f"cuda:{rank}" if job.device == "cuda" else "cpu")
    model = build_model(job.config, job.seed, device)
    runner = DistributedPrefillRunner(
        model, capture_num_tokens=job.capture_num_tokens, capture_rule=job.capture_rule,
        max_requests=job.max_requests,
    )
    overrides = {(i, r): lens for i, r, lens in job.overrides}
    records: list[dict[str, Any]] = []
    for i, lengths in enumerate(job.batches):
        mine = overrides.get((i, rank), lengths)
        hidden = batch_hidden(mine, job.config.hidden, job.seed, i).to(device)
        try:
            result = runner.run(hidden, mine)
        except ConsensusError as exc:
            records.append({"error": str(exc)})
            continue
        records.append({"mode": result.mode, "reason": result.reason, "bucket": result.plan.bucket,
                        "output": result.output.cpu().tolist()})
    return records
