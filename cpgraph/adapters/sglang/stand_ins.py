"""Stand-ins for what a server hands sglang's forward path and a CPU process cannot have: the captured graph
backend (its ``replay`` is where the driven path ends, naming the bucket), the eager runner (where the path
ends when the graph is refused), the model runner's attention backend (its own prefill-graph check accepts
every batch), the static token buffers and their registry, the KV location plan, and the tensor work of the
CP split. Each is listed in ``STOOD_IN`` (cpgraph/adapters/sglang/__init__.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cpgraph.adapters.sglang.helpers import Helper


@dataclass
class Replayed(Exception):
    """The captured backend's ``replay`` was called: the driven path replays the graph of ``bucket``, with the
    forward batch handed to it carrying ``metadata`` (its ``attn_cp_metadata``: the CP layout the release built
    for the replay, which its gather after the replay reads; None when it carries none)."""

    bucket: object
    metadata: object = None


class TookEager(Exception):
    """The model runner handed the batch to its eager runner: no graph is replayed."""


class Rows:
    """A tensor that is only its row count: token ids, positions, a static buffer. Slicing keeps the count
    honest; in-place writes do nothing; anything else is not provided (an AttributeError the check cites)."""

    def __init__(self, rows: int) -> None:
        self.rows = int(rows)

    def __repr__(self) -> str:
        return f"Rows({self.rows})"

    def __len__(self) -> int:
        return self.rows

    @property
    def shape(self) -> tuple[int]:
        return (self.rows,)

    def __getitem__(self, key: object) -> Rows:
        if isinstance(key, slice):
            return Rows(len(range(self.rows)[key]))
        raise TypeError(f"a stand-in tensor of {self.rows} rows is indexed with {key!r}; only slices are provided")

    def zero_(self) -> Rows:
        return self

    def copy_(self, other: object) -> Rows:
        return self

    def fill_(self, value: object) -> Rows:
        return self


class EagerRunner:
    """The model runner's eager runner (and the class its ``isinstance`` check names): ``execute`` ends the
    driven path with TookEager."""

    def execute(self, *args: object, **kwargs: object) -> None:
        raise TookEager()


def backend_class(base: type) -> type:
    """The captured CUDA-graph backend, a subclass of the release's backend class ``base`` (so the release's
    ``isinstance`` checks on its backend hold): ``replay(shape_key, forward_batch, ...)`` ends the path with
    Replayed, noting the CP metadata on the forward batch it is handed (every release 0.5.17-0.5.23 hands it the
    static forward batch its CP input's ``prepare`` laid out)."""

    def replay(self: object, shape_key: Any, *args: object, **kwargs: object) -> None:
        batch = args[0] if args else kwargs.get("forward_batch")
        raise Replayed(shape_key.size, getattr(batch, "attn_cp_metadata", None))

    def replay_session(self: object) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    return type("CapturedBackend", (base,), {"replay": replay, "replay_session": replay_session, "__init__": object.__init__})


class AttentionBackend(Helper):
    """The model runner's attention backend (``model_runner.attn_backend``: the server builds it from the model
    and ``--attention-backend``), as the release's prefill graph runner asks it:

    - ``can_run_prefill_cuda_graph(forward_batch)``, the backend's own prefill-graph check, accepts every batch
      (as DeepSeek-V4's does for a batch within its sequence limit without bounded SWA replay). The release's
      handling of it runs: ``PrefillCudaGraphRunner.__init__``'s own statements read it into
      ``_backend_can_run_prefill_cuda_graph`` (state.py ``RUNNER_INIT``; 0.5.21 on) and ``can_run_graph`` calls
      it (a release that drops or inverts that call is judged by what it does with a check that says yes);
    - ``dllm_attention`` is None: not a dLLM model (the release's ``AttentionBackend`` default);
    - no ``vote_prefill_cuda_graph``: like a flash-attention backend it has no schedule-time DP vote, so the
      release's ``getattr(..., None)`` takes its default (0.5.23 reads the vote only in the DP-attention
      scheduler, which the configuration keeps off).

    Anything else it is asked is a strict helper (helpers.py): calls and attributes pass through (the replay's
    metadata refresh), a branch on one is refused."""

    ABSENT = frozenset({"vote_prefill_cuda_graph"})
    dllm_attention = None

    def __init__(self, name: str = "model_runner.attn_backend") -> None:
        super().__init__(name)

    def can_run_prefill_cuda_graph(self, forward_batch: object) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        if name in AttentionBackend.ABSENT:
            raise AttributeError(f"the stand-in attention backend has no {name} (a flash-attention-like backend)")
        return super().__getattr__(name)


class Slot:
    """One static buffer of the registry: a slice for a batch is a stand-in tensor of the bucket's rows."""

    def __init__(self, name: str) -> None:
        self.name = name

    def slice_for(self, batch_size: int, num_tokens: int) -> Rows:
        return Rows(num_tokens)


class BufferRegistry:
    """The static buffers the runner captured with: a text model's ``input_ids``, ``positions`` and
    ``out_cache_loc`` (no mamba, mrope or input-embedding slots); filling them copies nothing."""

    SLOTS = ("input_ids", "positions", "out_cache_loc")

    def fill_from(self, *args: object, **kwargs: object) -> None:
        return None

    def has_slot(self, name: str) -> bool:
        return name in self.SLOTS

    def get_slot(self, name: str) -> Slot:
        if name not in self.SLOTS:
            raise KeyError(f"the stand-in buffer registry has no slot {name!r} (it holds {', '.join(self.SLOTS)})")
        return Slot(name)


class KvLocPlan:
    """The forward batch's KV-cache location plan: binding the replay's slots moves no token count."""

    def bind_replay(self, *args: object, **kwargs: object) -> None:
        return None


def cp_split(rank: Callable[[], int]) -> Callable[..., tuple[Rows, Rows]]:
    """``cp_split_before_forward``'s tensor work (torch is stubbed): this rank's rows of the release's own CP
    metadata (``per_rank_logical_token``, else ``per_rank_actual_token``), as embeddings and positions."""

    def cp_split_before_forward(embeddings: object, positions: object, forward_batch: Any) -> tuple[Rows, Rows]:
        metadata = forward_batch.attn_cp_metadata
        rows = metadata.per_rank_logical_token or metadata.per_rank_actual_token
        return Rows(rows[rank()]), Rows(rows[rank()])

    return cp_split_before_forward


def cp_interleave_input_ids(input_ids: Rows, forward_batch: object) -> Rows:
    """``cp_interleave_input_ids``'s tensor work (the interleave order of the batch's ids): as many rows."""
    return Rows(len(input_ids))


TENSOR_WORK: dict[str, Callable[..., object]] = {"cp_interleave_input_ids": cp_interleave_input_ids}


@contextlib.contextmanager
def no_override(**kwargs: object) -> Iterator[None]:
    """``get_model().override(...)``: the model's layout for this runner (nothing to switch on a CPU)."""
    yield
