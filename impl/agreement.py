"""Agreement across ranks, shared by start-up and serving: the error types, who-disagrees messages, and the
``Control`` protocol a start-up step runs under (``LocalControl`` for one process; the process-group one is
``impl.distributed.GroupControl``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from cpgraph.impl.graphs import explain

if TYPE_CHECKING:
    from cpgraph.impl.graphs import GraphRunner

T = TypeVar("T")


class StartupError(RuntimeError):
    """The runner refuses to start: capture failed on a CUDA device, no bucket was captured, the start-up
    replay check failed, or (across ranks) some rank's configuration was invalid."""


class ConsensusError(RuntimeError):
    """The ranks disagree on what should be one value (the configuration, the captured table, a batch's plan)."""


def disagreement(what: str, labels: Sequence[str]) -> str:
    """Name who disagrees. With a strict majority: the other ranks are named against it, group by group.
    Without one (a tie, e.g. 1 vs 1 or 2 vs 2) no rank is blamed: "ranks disagree", then every rank's value."""
    groups: dict[str, list[int]] = {}
    for rank, label in enumerate(labels):
        groups.setdefault(label, []).append(rank)
    sizes = sorted((len(ranks) for ranks in groups.values()), reverse=True)
    if len(sizes) > 1 and sizes[0] > sizes[1]:
        majority = max(groups.values(), key=len)
        others = [r for r in range(len(labels)) if r not in majority]
        detail = "; ".join(f"ranks {ranks}: {label}" for label, ranks in groups.items())
        return f"ranks {others} disagree with ranks {majority} on {what}: {detail}"
    detail = "; ".join(f"rank {rank}: {label}" for rank, label in enumerate(labels))
    return f"ranks disagree on {what} (no majority, so no rank is blamed): {detail}"


@dataclass(frozen=True)
class StepResult(Generic[T]):
    """One start-up step run on every rank: its value, or every rank's failure (rank -> ``Type: message``)."""

    value: T | None
    failures: Mapping[int, str]
    local_error: BaseException | None


class Control(Protocol):
    """How start-up agrees across ranks. ``LocalControl`` is the one-process case; impl/distributed.py has
    the process-group one."""

    @property
    def rank(self) -> int: ...

    @property
    def world_size(self) -> int: ...

    def all_gather_object(self, obj: object) -> list[Any]: ...

    def step(self, fn: Callable[[], T], graph_runner: GraphRunner) -> StepResult[T]: ...


class LocalControl:
    """One process holds every rank: nothing to agree on."""

    rank = 0
    world_size = 1

    def all_gather_object(self, obj: object) -> list[Any]:
        return [obj]

    def step(self, fn: Callable[[], T], graph_runner: GraphRunner) -> StepResult[T]:
        try:
            return StepResult(fn(), {}, None)
        except Exception as exc:  # the caller decides whether this bucket is dropped or start-up stops
            return StepResult(None, {0: explain(exc)}, exc)


def where(failures: Mapping[int, str], world_size: int) -> str:
    """The failures of one step: the message alone in one process, ``rank r: message`` across ranks."""
    if world_size == 1:
        return "; ".join(failures.values())
    return "; ".join(f"rank {r}: {text}" for r, text in sorted(failures.items()))
