"""The graph runner: owns the ``static_*`` buffers, warms up, captures and replays; trusts the dispatcher.

Static inputs are allocated once at the largest capacity and every bucket uses a contiguous prefix view of
them, so buffer addresses never move between replays. On CUDA each bucket is a ``torch.cuda.CUDAGraph``
captured after warm-up on a side stream, all graphs in one memory pool (largest first, so smaller graphs
reuse its blocks). Elsewhere the same static-buffer path runs eagerly and is labelled "emulation".
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from cpgraph.impl.layout import TorchLayout
from cpgraph.impl.model import AllGather, CPTransformer, one_device_all_gather


@dataclass(frozen=True)
class BucketKey:
    """A captured shape: the global token bucket B and the rows per rank its buffers hold."""

    num_tokens: int
    local_tokens: int


@dataclass(frozen=True)
class Placement:
    """Which ranks' rows this process holds: all P on one device, or one rank per process."""

    cp_size: int
    first_rank: int
    local_ranks: int
    all_gather: AllGather  # [G, C, ...] -> [P*C, ...], used inside the model and to collect outputs

    @staticmethod
    def one_device(cp_size: int) -> Placement:
        return Placement(cp_size, 0, cp_size, one_device_all_gather)


class GraphRunner:
    """Static buffers [G, capacity, H] (G = local ranks) and one graph (or emulated graph) per bucket key."""

    def __init__(
        self,
        model: CPTransformer,
        *,
        placement: Placement,
        max_local_tokens: int,
        device: torch.device,
        dtype: torch.dtype,
        use_cuda_graph: bool,
        warmup_iters: int = 2,
    ) -> None:
        self.model = model
        self.placement = placement
        self.hidden = model.config.hidden
        self.device = device
        self.dtype = dtype
        self.use_cuda_graph = use_cuda_graph
        self.warmup_iters = warmup_iters
        self.max_local_tokens = max_local_tokens
        g = placement.local_ranks
        self.static_hidden = torch.zeros(g * max_local_tokens * self.hidden, device=device, dtype=dtype)
        self.static_request_id = torch.full((g * max_local_tokens,), -1, device=device, dtype=torch.long)
        self.static_position = torch.zeros(g * max_local_tokens, device=device, dtype=torch.long)
        self.static_output: dict[BucketKey, Tensor] = {}
        self.graphs: dict[BucketKey, torch.cuda.CUDAGraph] = {}
        self.pool = torch.cuda.graph_pool_handle() if use_cuda_graph else None

    @property
    def mode(self) -> str:
        return "cuda_graph" if self.use_cuda_graph else "emulation"

    def inputs(self, rows: int) -> tuple[Tensor, Tensor, Tensor]:
        """Prefix views of the static inputs for ``rows`` rows per rank: [G, rows, H], [G, rows], [G, rows]."""
        if rows > self.max_local_tokens:
            raise ValueError(
                f"{rows} rows per rank needed but the static buffers hold {self.max_local_tokens}; refused"
            )
        g, h = self.placement.local_ranks, self.hidden
        return (
            self.static_hidden[: g * rows * h].view(g, rows, h),
            self.static_request_id[: g * rows].view(g, rows),
            self.static_position[: g * rows].view(g, rows),
        )

    def fill(self, key: BucketKey, layout: TorchLayout, hidden: Tensor) -> None:
        """Copy the live batch into the static inputs in place; every padding row is rewritten (no stale rows)."""
        if layout.rows != key.local_tokens:
            raise ValueError(
                f"layout has {layout.rows} rows per rank but bucket {key.num_tokens} was captured with "
                f"{key.local_tokens}; lay the batch out at the captured capacity"
            )
        if layout.cp_size != self.placement.cp_size:
            raise ValueError(f"layout is for cp_size={layout.cp_size}, runner for {self.placement.cp_size}")
        static_hidden, static_request_id, static_position = self.inputs(key.local_tokens)
        first, g, rows = self.placement.first_rank, self.placement.local_ranks, key.local_tokens
        dest, src = layout.dest, hidden
        if g != layout.cp_size:  # this process holds a slice of the ranks
            mine = (dest >= first * rows) & (dest < (first + g) * rows)
            dest, src = dest[mine] - first * rows, hidden[mine]
        static_hidden.zero_()
        static_hidden.view(-1, self.hidden).index_copy_(0, dest, src.to(self.dtype))
        static_request_id.copy_(layout.request_id[first : first + g])
        static_position.copy_(layout.position[first : first + g])

    def _forward(self, rows: int) -> Tensor:
        static_hidden, static_request_id, static_position = self.inputs(rows)
        out: Tensor = self.model(static_hidden, static_request_id, static_position, self.placement.all_gather)
        return out

    @torch.no_grad()
    def capture(self, key: BucketKey, layout: TorchLayout, hidden: Tensor) -> None:
        """Warm up and capture ``key`` with ``layout`` in the static inputs. Raises on failure (caller drops it)."""
        self.fill(key, layout, hidden)
        if not self.use_cuda_graph:
            self.static_output[key] = self._forward(key.local_tokens)  # emulation: validate once
            return
        side = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(self.warmup_iters):
                self._forward(key.local_tokens)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            out = self._forward(key.local_tokens)
        self.graphs[key] = graph
        self.static_output[key] = out

    @torch.no_grad()
    def replay(self, key: BucketKey, layout: TorchLayout, hidden: Tensor) -> Tensor:
        """Fill the static inputs and replay; returns the packed [n, H] output (a new tensor)."""
        if key not in self.static_output:
            raise KeyError(f"bucket {key} was never captured; captured: {sorted(self.static_output, key=str)}")
        self.fill(key, layout, hidden)
        static_output = self.static_output[key]
        if self.use_cuda_graph:
            self.graphs[key].replay()
        else:
            static_output.copy_(self._forward(key.local_tokens))
        return self.collect(static_output).index_select(0, layout.dest)

    @torch.no_grad()
    def eager(self, key: BucketKey, layout: TorchLayout, hidden: Tensor) -> Tensor:
        """The same padded computation run eagerly (no graph): the bit-exact control for ``replay``."""
        self.fill(key, layout, hidden)
        return self.collect(self._forward(key.local_tokens)).index_select(0, layout.dest)

    def collect(self, local_out: Tensor) -> Tensor:
        """This process's output rows [G, C, H] -> every rank's rows [P*C, H]."""
        return self.placement.all_gather(local_out)
