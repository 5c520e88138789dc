"""The expert-parallel subject: a policy whose ranks that must agree are EP ranks, each with its own step
(Megatron-Core's dynamic inference engine: ``cpgraph.adapters.megatron:ep``, which offers ``ep_step_driver()``),
passed through the stages of cpgraph/check/subjects/ep_steps.py (generate EP steps over the configuration space the release
offers, run every rank through the release's own sync and matching, judge with ``reference.ep_graphs.judge``,
minimise, report) and, where the release has it, cpgraph/check/subjects/ep_admission.py (the CUDA-graph-aware admission).

Its part of the one report is the ``EpReport`` (key ``ep_steps``; sentences: the ``ep_step`` column). The driver
runs a release's code through the adapter, not a user's policy, so its calls are not put under the per-call
timeout; ``--max-cases`` bounds the EP steps (default 20,000) and ``--seed`` seeds them. The command line's
EP flags (``--ep-sizes``, ``--ep-models``, ...) are read by cpgraph/commands/check_ep.py, which runs the same
stages with them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from cpgraph.check.subjects.ep_admission import check_release
from cpgraph.check.subjects.ep_steps import EpReport
from cpgraph.check.options import CheckOptions

DEFAULT_STEPS: Final = 20000


class EpSubject:
    """The subject (cpgraph/check/subjects/__init__.py ``Subject``)."""

    key = "ep_steps"
    column = "ep_step"

    def offered(self, obj: object, options: CheckOptions) -> Sequence[Any] | None:
        driver = getattr(obj, "ep_step_driver", None)
        return [driver()] if callable(driver) else None

    def check(self, obj: object, offered: Sequence[Any], options: CheckOptions, name: str,
              progress: Callable[[str], None] | None) -> EpReport:
        return check_release(offered[0], target=name, cases=options.max_cases or DEFAULT_STEPS, seed=options.seed, progress=progress)


EP_STEPS: Final = EpSubject()
