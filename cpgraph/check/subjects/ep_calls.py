"""The EP subject's calls under supervision: an EP driver whose ``graphs``, ``answers`` and ``chunk`` run through
calls.py's bounded call, as a prefill policy's ``admit`` and a path driver's ``answers_dp`` do.

So on every subject a call that does not return within ``--call-timeout-s``, a driver that exits or raises
KeyboardInterrupt, stops the check as a finding (exit 1), and an answer of the wrong shape is a protocol error
naming the call, what it returned and what the protocol requires (exit 2). A ValueError is the release refusing
the configuration (the subject skips it); an adapter's GlueError stops the check as a usage error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpgraph.check.asking import _call, _stop
from cpgraph.check.stops import PROTOCOL_REQUIRES, _short
from cpgraph.check.timer import _METHODS
from cpgraph.reference.ep_graphs import EpAnswer, EpConfig, GraphDims, RankStep

_GRAPHS, _ANSWERS, _CHUNK = (_METHODS.index(m) for m in ("graphs", "answers", "chunk"))


class SupervisedEpDriver:
    """``driver`` with its calls bounded and their answers' shapes checked (module docstring); every other
    attribute (``version``, the knobs it offers, ``admission``, ``decided_at``) is the driver's own."""

    def __init__(self, driver: Any, name: str) -> None:
        self._driver, self._name = driver, name
        self._signed = [False] * len(_METHODS)
        self.version: str = str(getattr(driver, "version", name))

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "_driver":
            raise AttributeError(attr)
        return getattr(self._driver, attr)

    def graphs(self, config: EpConfig) -> tuple[GraphDims, ...]:
        kw: dict[str, Any] = {"config": config}
        value = _call(self._name, _GRAPHS, self._driver.graphs, kw, None, self._signed)
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not all(isinstance(g, GraphDims) for g in value):
            raise self._wrong("graphs", kw, value)
        return tuple(value)

    def answers(self, config: EpConfig, steps: Sequence[RankStep]) -> tuple[EpAnswer, ...]:
        kw: dict[str, Any] = {"config": config, "steps": tuple(steps)}
        value = _call(self._name, _ANSWERS, self._driver.answers, kw, None, self._signed)
        if (isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != len(steps)
                or not all(isinstance(a, EpAnswer) for a in value)):
            raise self._wrong("answers", kw, value, f"{len(steps)} EpAnswer records for a step of ep_size={len(steps)}")
        return tuple(value)

    def chunk(self, config: EpConfig, active: GraphDims, budget: int) -> tuple[bool, int | None]:
        kw: dict[str, Any] = {"config": config, "active": active, "budget": budget}
        value = _call(self._name, _CHUNK, self._driver.chunk, kw, None, self._signed)
        if (not isinstance(value, (tuple, list)) or len(value) != 2 or not isinstance(value[0], bool)
                or not (value[1] is None or isinstance(value[1], int) and not isinstance(value[1], bool))):
            raise self._wrong("chunk", kw, value)
        return value[0], value[1]

    def _wrong(self, method: str, kw: dict[str, Any], value: object, needed: str = "") -> BaseException:
        said = f"returned {_short(value)} ({type(value).__name__}){f', not {needed}' if needed else ''}"
        return _stop(self._name, method, None, kw, "protocol", f"{said}; the protocol requires {PROTOCOL_REQUIRES[method]}")


def supervised(driver: Any, name: str) -> SupervisedEpDriver:
    """``driver`` supervised (idempotent), its calls named after the policy ``name``."""
    return driver if isinstance(driver, SupervisedEpDriver) else SupervisedEpDriver(driver, name)
