"""What a server would hand the Megatron-Core release, stood in for on a CPU: the EP process group, the
all-reduce MAX over it (simulated over every EP rank of one step, in one process), the int32 tensor the sync
builds, the torch names the driven code reads, and the context object the driven statements run on.

The collective is simulated by replay, not threads: every EP rank runs its own code up to the collective
(``Collective.all_reduce`` records the rank's tensor and stops the rank with ``AtCollective``); when every
rank is there, the elementwise MAX is the collective's result, and each rank runs again from the start, this
time given the result (the driven code is a pure function of the step up to there, so the second run
reaches the same collective with the same tensor). A rank that finishes without entering a collective the
others entered (or enters one they skipped) would hang NCCL: ``Hang`` says which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any


class AtCollective(Exception):
    """A rank reached a collective whose result is not known yet (its contribution is ``values``)."""

    def __init__(self, values: list[int]) -> None:
        super().__init__("at the EP collective")
        self.values = values


class Hang(Exception):
    """Some EP ranks entered a collective that others skipped: ``entered`` and ``skipped`` name them."""

    def __init__(self, entered: Sequence[int], skipped: Sequence[int]) -> None:
        super().__init__(f"EP ranks {list(entered)} wait in an all-reduce that ranks {list(skipped)} never enter")
        self.entered = tuple(entered)
        self.skipped = tuple(skipped)


class IntTensor:
    """The int32 sync tensor: its values, indexable (``.item()``), ``.cpu()`` itself."""

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = [int(v) for v in values]

    def __getitem__(self, index: int) -> _Scalar:
        return _Scalar(self.values[index])

    def cpu(self) -> IntTensor:
        return self

    def tolist(self) -> list[int]:
        return list(self.values)


class _Scalar:
    def __init__(self, value: int) -> None:
        self.value = value

    def item(self) -> int:
        return self.value

    def __int__(self) -> int:
        return self.value

    def __eq__(self, other: object) -> bool:
        return self.value == other

    def __hash__(self) -> int:
        return hash(self.value)


class EpGroup:
    """The EP process group: its ``size()``."""

    def __init__(self, size: int) -> None:
        self._size = size

    def size(self) -> int:
        return self._size


class Collective:
    """One rank's view of the step's collectives: ``known`` results of the collectives already agreed (in
    order); the next one stops the rank (``AtCollective``)."""

    def __init__(self, known: Sequence[list[int]]) -> None:
        self.known = list(known)
        self.entered = 0

    def all_reduce(self, tensor: IntTensor, op: object = None, group: object = None) -> None:
        if self.entered < len(self.known):
            tensor.values[:] = self.known[self.entered]
            self.entered += 1
            return
        raise AtCollective(list(tensor.values))


def torch_stand_in(collective: Callable[[], Collective]) -> SimpleNamespace:
    """The torch names the driven code reads: ``tensor`` (an ``IntTensor``), ``int32``, ``cuda.current_device``,
    ``distributed`` (initialised, ``ReduceOp.MAX``, ``all_reduce`` on the current rank's ``Collective``,
    ``ProcessGroup``)."""
    distributed = SimpleNamespace(
        is_initialized=lambda: True,
        ReduceOp=SimpleNamespace(MAX="max"),
        ProcessGroup=object,
        all_reduce=lambda tensor, op=None, group=None: collective().all_reduce(tensor, op, group),
    )
    return SimpleNamespace(
        tensor=lambda values, dtype=None, device=None: IntTensor(values),
        int32="int32", Tensor=IntTensor, cuda=SimpleNamespace(current_device=lambda: "cpu"), distributed=distributed,
    )


def agree(ranks: int, run: Callable[[int, Collective], Any], most: int = 4) -> tuple[list[Any], int]:
    """Run every rank to the end over the simulated collectives (the module docstring): each rank's result and
    how many collectives the step took. ``Hang`` when the ranks disagree on entering one."""
    known: list[list[int]] = []
    while True:
        results: list[Any] = []
        waiting: dict[int, list[int]] = {}
        done: list[int] = []
        for rank in range(ranks):
            try:
                results.append(run(rank, Collective(known)))
                done.append(rank)
            except AtCollective as at:
                results.append(None)
                waiting[rank] = at.values
        if not waiting:
            return results, len(known)
        if done or len({len(v) for v in waiting.values()}) > 1 or len(known) >= most:
            raise Hang(sorted(waiting), done)
        width = len(next(iter(waiting.values())))
        known.append([max(v[i] for v in waiting.values()) for i in range(width)])


class ContextStandIn:
    """The dynamic inference context the driven statements run on, holding what they read: the configured
    limits, the EP group, the model kind, and the step's counts. The release's own ``__init__`` slice, its
    ``num_decode_requests`` property and its ``add_dummy_requests_for_expert_parallel_step`` leading
    statements are attached per release (cpgraph/adapters/megatron/policy.py)."""

    paused_request_count = 0
    has_explicit_chunked_prefill_req = False
    chunked_prefill_request_id = -1
    _ep_zmq_communicator = None
    _using_cuda_graph_this_step = False
    kv_block_allocator = SimpleNamespace(dummy_block_idx=0)
    block_allocator = kv_block_allocator

    def _execute_pending_mamba_ops(self) -> None:
        """Mamba state zeroing on the GPU: nothing the graph decision reads."""

    def add_dummy_requests_for_cudagraph_capture(self, graph_dimensions: Any) -> None:
        """Megatron-Core 0.16's dummy step adds requests of exactly ``graph_dimensions`` (its
        add_dummy_requests_for_cudagraph_capture fills the request tensors to those counts)."""
        self.active_token_count = graph_dimensions.token_count
        self.num_prefill_requests = graph_dimensions.prefill_req_count
        self.total_request_count = graph_dimensions.prefill_req_count + graph_dimensions.decode_req_count
