"""The graph runner: owns the ``static_*`` buffers, warms up, captures and replays; trusts the dispatcher.

Static inputs are allocated once at the largest capacity and every bucket uses a contiguous prefix view of
them, so buffer addresses never move between replays. On CUDA each bucket is a ``torch.cuda.CUDAGraph``
captured the way torch documents it (CUDA Graphs, "whole-network capture"): warm-up iterations on a side
stream that waits on the current stream, the current stream waiting on it in turn, then ``torch.cuda.graph``
on that same side stream, every graph in one memory pool (largest first, so smaller graphs reuse its blocks;
torch asks for the same explicit stream on every capture that shares a pool). Elsewhere the same
static-buffer path runs eagerly and is labelled "emulation".
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from cpgraph.impl.checks import check_cp_size, check_int
from cpgraph.impl.layout import TorchLayout
from cpgraph.impl.model import AllGather, CPTransformer, one_device_all_gather

# cudaStreamCaptureMode for every capture, chosen deliberately. "global" (torch's default) lets a
# capture-unsafe CUDA call from *any* thread of the process invalidate our capture: with a process group the
# NCCL watchdog and gloo threads run beside us, so a capture could fail for reasons unrelated to the model,
# and a failed capture now stops start-up. "relaxed" would let an unsafe call made by the capturing thread
# itself (a cudaMalloc outside the pool, a host sync) pass unreported and leave a wrong graph. "thread_local"
# reports exactly the unsafe calls made by the thread that issues the captured work: ours.
CAPTURE_ERROR_MODE = "thread_local"


def canonical_device(device: object) -> torch.device:
    """The device with its index made explicit, so that equal devices compare equal.

    ``"cpu"`` and ``"cpu:0"`` both become ``cpu`` (the form CPU tensors report); ``"cuda"`` becomes
    ``cuda:<current device>`` (torch's meaning of an index-less CUDA device; ``cuda:0`` unless
    ``torch.cuda.set_device`` chose another, and ``cuda:0`` where CUDA is absent). Raises TypeError for a
    value that is not a device or a device string, ValueError for another device type.
    """
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a torch.device or a string such as 'cuda:0', got {device!r}")
    try:
        d = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:<index>', got {device!r} ({exc})") from None
    if d.type == "cpu":
        return torch.device("cpu")
    if d.type == "cuda":
        if d.index is not None:
            return d
        return torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
    raise ValueError(f"device must be a cpu or cuda device, got {device!r}")


def same_device(a: object, b: object) -> bool:
    """True when ``a`` and ``b`` name one device (``cuda`` == ``cuda:0`` on device 0, ``cpu`` == ``cpu:0``)."""
    return canonical_device(a) == canonical_device(b)


class CaptureError(RuntimeError):
    """A CUDA graph capture raised. Torch leaves the stream and allocator state after a failed capture
    undefined, so the runner stops start-up instead of dropping the bucket and serving on."""


def explain(exc: BaseException) -> str:
    """``Type: message`` of ``exc``, preceded by the exceptions it interrupted (the original cause first).

    ``torch.cuda.graph.__exit__`` runs ``capture_end()`` while an exception from the captured code is
    propagating; if that raises too, the model's error survives only as ``__context__``: name both.
    """
    if isinstance(exc, CaptureError):  # its message already explains its causes
        return f"{type(exc).__name__}: {exc}"
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 4:
        chain.append(current)
        current = current.__cause__ or current.__context__
    first, *later = reversed(chain)
    text = f"{type(first).__name__}: {first}"
    for e in later:
        text += f" (then {type(e).__name__}: {e})"
    return text


@dataclass(frozen=True)
class BucketKey:
    """A captured shape: its key and the rows per rank its buffers hold. Under global keying the key is the
    global token bucket B (``num_tokens``) with its recorded rows; under local keying it is the size s of
    rank-local rows, and ``num_tokens`` == ``local_tokens`` == s (a size s holds s rows on every rank)."""

    num_tokens: int
    local_tokens: int
    keying: str = "global"


@dataclass(frozen=True)
class Placement:
    """Which ranks' rows this process holds: all P on one device, or one rank per process."""

    cp_size: int
    first_rank: int
    local_ranks: int
    all_gather: AllGather  # [G, C, ...] -> [P*C, ...], used inside the model and to collect outputs

    def __post_init__(self) -> None:
        check_cp_size("cp_size", self.cp_size)
        check_int("first_rank", self.first_rank, minimum=0)
        check_int("local_ranks", self.local_ranks, minimum=1)
        if self.first_rank + self.local_ranks > self.cp_size:
            raise ValueError(f"Placement holds ranks {self.first_rank}..{self.first_rank + self.local_ranks - 1} "
                             f"but cp_size={self.cp_size}")
        if not callable(self.all_gather):
            raise TypeError(f"Placement.all_gather must be callable, got {self.all_gather!r}")

    @staticmethod
    def one_device(cp_size: int) -> Placement:
        return Placement(cp_size, 0, cp_size, one_device_all_gather)


class GraphRunner:
    """Static buffers [G, capacity, H] (G = local ranks) and one graph (or emulated graph) per bucket key.

    ``all_gather`` is the collective used outside graph capture; start-up may swap in a guarded one (see
    impl/distributed.py). Inside ``torch.cuda.graph`` the placement's own all-gather is captured.
    """

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
        self.all_gather: AllGather = placement.all_gather
        self.hidden = model.config.hidden
        self.device = canonical_device(device)
        if not isinstance(use_cuda_graph, bool):
            raise TypeError(f"use_cuda_graph must be True or False, got {use_cuda_graph!r}")
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
        if use_cuda_graph and self.device.type != "cuda":
            raise ValueError(f"use_cuda_graph=True needs a CUDA device, got device={self.device}")
        self.dtype = dtype
        self.use_cuda_graph = use_cuda_graph
        # >= 1: cuBLAS handles, NCCL communicators and autotuning must initialise before capture, not in it.
        self.warmup_iters = check_int("warmup_iters", warmup_iters, minimum=1)
        self.max_local_tokens = check_int("max_local_tokens", max_local_tokens, minimum=1)
        g = placement.local_ranks
        self.static_hidden = torch.zeros(g * max_local_tokens * self.hidden, device=self.device, dtype=dtype)
        self.static_request_id = torch.full((g * max_local_tokens,), -1, device=self.device, dtype=torch.long)
        self.static_position = torch.zeros(g * max_local_tokens, device=self.device, dtype=torch.long)
        self.static_output: dict[BucketKey, Tensor] = {}
        self.graphs: dict[BucketKey, torch.cuda.CUDAGraph] = {}
        # One pool and one capture stream for every graph (torch: a shared pool wants the same stream).
        self.pool = torch.cuda.graph_pool_handle() if use_cuda_graph else None
        self.capture_stream = torch.cuda.Stream(self.device) if use_cuda_graph else None  # type: ignore[no-untyped-call]

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
        static_hidden.zero_()
        flat = static_hidden.view(-1, self.hidden)
        dest, src = layout.dest, hidden
        if g != layout.cp_size:  # this process holds a slice of the ranks
            mine = (dest >= first * rows) & (dest < (first + g) * rows)
            dest, src = dest[mine] - first * rows, hidden[mine]
        flat.index_copy_(0, dest, src.to(self.dtype))
        if layout.copies:  # a replicated request's further copies (its first copy is in ``dest``)
            dest, src = layout.copy_dest, hidden.index_select(0, layout.copy_token)
            if g != layout.cp_size:
                mine = (dest >= first * rows) & (dest < (first + g) * rows)
                dest, src = dest[mine] - first * rows, src[mine]
            flat.index_copy_(0, dest, src.to(self.dtype))
        static_request_id.copy_(layout.request_id[first : first + g])
        static_position.copy_(layout.position[first : first + g])

    def _forward(self, rows: int, all_gather: AllGather | None = None) -> Tensor:
        static_hidden, static_request_id, static_position = self.inputs(rows)
        gather = self.all_gather if all_gather is None else all_gather
        out: Tensor = self.model(static_hidden, static_request_id, static_position, gather)
        return out

    @torch.no_grad()
    def capture(self, key: BucketKey, layout: TorchLayout, hidden: Tensor) -> None:
        """Warm up and capture ``key`` with ``layout`` in the static inputs.

        Raises what the warm-up raised, or CaptureError (naming the bucket and the original error) when the
        capture itself failed; the caller decides what a failure means. Emulation validates one forward.
        """
        self.fill(key, layout, hidden)
        if not self.use_cuda_graph:
            self.static_output[key] = self._forward(key.local_tokens)
            return
        with torch.cuda.device(self.device):  # capture and replay happen on the current device's streams
            self.graphs[key], self.static_output[key] = self._capture_cuda(key)

    def _capture_cuda(self, key: BucketKey) -> tuple[torch.cuda.CUDAGraph, Tensor]:
        stream = self.capture_stream
        assert stream is not None
        origin = torch.cuda.current_stream(self.device)
        stream.wait_stream(origin)
        with torch.cuda.stream(stream):  # warm-up outside capture: cuBLAS, NCCL and allocator settle here
            for _ in range(self.warmup_iters):
                self._forward(key.local_tokens)
        origin.wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, pool=self.pool, stream=stream, capture_error_mode=CAPTURE_ERROR_MODE):
                out = self._forward(key.local_tokens, self.placement.all_gather)
        except Exception as exc:
            # __exit__ may raise in capture_end() before it restores the stream: restore it ourselves.
            torch.cuda.set_stream(origin)
            raise CaptureError(
                f"CUDA graph capture of bucket {key.num_tokens} ({key.local_tokens} rows per rank) failed: "
                f"{explain(exc)}"
            ) from exc
        return graph, out

    def discard(self, key: BucketKey) -> None:
        """Forget a bucket (emulation only: a failed CUDA capture is never recovered from)."""
        self.static_output.pop(key, None)
        self.graphs.pop(key, None)

    @torch.no_grad()
    def replay(self, key: BucketKey, layout: TorchLayout, hidden: Tensor) -> Tensor:
        """Fill the static inputs and replay; returns the packed [n, H] output (a new tensor)."""
        if key not in self.static_output:
            raise KeyError(f"bucket {key} was never captured; captured: {sorted(self.static_output, key=str)}")
        self.fill(key, layout, hidden)
        static_output = self.static_output[key]
        if self.use_cuda_graph:
            with torch.cuda.device(self.device):
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
        return self.all_gather(local_out)
