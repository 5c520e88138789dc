"""The graph-path subject's calls under supervision: a path driver whose ``captured`` and ``answers_dp`` run
through calls.py's bounded call, as a prefill policy's ``admit`` and ``replay_bucket`` do.

So on both subjects a call that does not return within ``--call-timeout-s``, a driver that exits or raises
KeyboardInterrupt, stops the check as a finding (exit 1), and an answer of the wrong shape is a protocol error
naming the call, what it returned and what the protocol requires (exit 2). An exception is an answer (the path
subject judges it), its trimmed traceback kept; an adapter's GlueError stops the check as a usage error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpgraph.check.asking import _call, _stop
from cpgraph.check.stops import PROTOCOL_REQUIRES, _short
from cpgraph.check.timer import _METHODS
from cpgraph.reference.graph_paths import Graph, GraphConfig, GraphStep, PathAnswer

_CAPTURED, _ANSWERS = _METHODS.index("captured"), _METHODS.index("answers_dp")


class SupervisedDriver:
    """``driver`` with its two calls bounded and their answers' shapes checked (module docstring); every other
    attribute is the driver's own."""

    def __init__(self, driver: Any, name: str) -> None:
        self._driver, self._name = driver, name
        self._signed = [False] * len(_METHODS)
        self.version: str = str(getattr(driver, "version", name))
        self.modes: tuple[str, ...] = tuple(driver.modes)
        self.dcp_size: int = int(getattr(driver, "dcp_size", 1))

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._driver, attr)

    def placement(self, cp_size: int) -> str:
        placed: str = self._driver.placement(cp_size)
        return placed

    def captured(self, config: GraphConfig) -> tuple[Graph, ...]:
        kw: dict[str, Any] = {"config": config}
        value = _call(self._name, _CAPTURED, self._driver.captured, kw, None, self._signed)
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not all(isinstance(g, Graph) for g in value):
            raise self._wrong("captured", kw, value)
        return tuple(value)

    def answers_dp(self, steps: Sequence[GraphStep], config: GraphConfig) -> tuple[tuple[PathAnswer, ...], ...]:
        kw: dict[str, Any] = {"steps": tuple(steps), "config": config}
        value = _call(self._name, _ANSWERS, self._driver.answers_dp, kw, None, self._signed)
        if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or len(value) != len(steps):
            raise self._wrong("answers_dp", kw, value, f"{len(steps)} DP ranks' answers")
        out = []
        for step, group in zip(steps, value):
            if not isinstance(group, Sequence) or len(group) != step.cp_size or not all(isinstance(a, PathAnswer) for a in group):
                raise self._wrong("answers_dp", kw, value, f"{step.cp_size} PathAnswer records for a step of cp_size={step.cp_size}")
            out.append(tuple(group))
        return tuple(out)

    def _wrong(self, method: str, kw: dict[str, Any], value: object, needed: str = "") -> BaseException:
        said = f"returned {_short(value)} ({type(value).__name__}){f', not {needed}' if needed else ''}"
        return _stop(self._name, method, None, kw, "protocol", f"{said}; the protocol requires {PROTOCOL_REQUIRES[method]}")


def supervised(drivers: Sequence[Any], name: str) -> tuple[SupervisedDriver, ...]:
    """Every driver of ``drivers`` supervised (idempotent), its calls named after the policy ``name``."""
    return tuple(d if isinstance(d, SupervisedDriver) else SupervisedDriver(d, name) for d in drivers)
