"""The expert-parallel subject: a policy whose ranks that must agree are EP ranks, each with its own step
(Megatron-Core's dynamic inference engine: ``cpgraph.adapters.megatron:ep``, which offers ``ep_step_driver()``),
passed through the stages of cpgraph/check/subjects/ep_steps.py (generate EP steps over the configuration space
the release offers, run every rank through the release's own sync and matching, judge with
``reference.ep_graphs.judge``, minimise, report) and, where the release has it,
cpgraph/check/subjects/ep_admission.py (the CUDA-graph-aware admission).

Its part of the one report is the ``EpReport`` (key ``ep_steps``; sentences: the ``ep_step`` column), its findings
the one violation record (cpgraph/check/finding.py, an ``EpWitness``). The driver's calls run under the session's
per-call timeout like every other subject's (ep_calls.py); ``--max-cases`` bounds the EP steps (default 20,000),
``--seed`` seeds them, and the EP fields of the one options record (``ep_sizes``, ``ep_models``,
``ep_spec_tokens``, ``ep_idle``: the command line's ``--ep-sizes``, ...) say which part of the space is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from cpgraph.check.options import CheckOptions
from cpgraph.check.subjects.ep_admission import check_release
from cpgraph.check.subjects.ep_calls import supervised
from cpgraph.check.subjects.ep_steps import EpReport, EpSpace

DEFAULT_STEPS: Final = 20000


def space_of(options: CheckOptions) -> EpSpace:
    """The part of the EP configuration space ``options`` asks for."""
    return EpSpace(options.ep_sizes, options.ep_models, options.ep_spec_tokens, options.ep_idle)


class EpSubject:
    """The subject (cpgraph/check/subjects/__init__.py ``Subject``)."""

    key = "ep_steps"
    column = "ep_step"

    def offered(self, obj: object, options: CheckOptions) -> Sequence[Any] | None:
        driver = getattr(obj, "ep_step_driver", None)
        return [driver()] if callable(driver) else None

    def check(self, obj: object, offered: Sequence[Any], options: CheckOptions, name: str,
              progress: Callable[[str], None] | None) -> EpReport:
        return check_release(supervised(offered[0], name), target=name, cases=options.max_cases or DEFAULT_STEPS,
                             seed=options.seed, space=space_of(options), progress=progress)


EP_STEPS: Final = EpSubject()
