"""``cpgraph check``: one checker of any policy's CUDA-graph selection on every subject it offers (prefill
batches, graph-path steps with DP ranks, EP steps), with minimal counterexamples, each one ``Violation`` record; ``check_all`` (the API) and ``check_one`` (the command line) are its entry points."""

from cpgraph.check.batch import Batch, make_batch
from cpgraph.check.judging import EFFICIENCY, INVARIANTS, SAFETY, Finding, Spec, judge, spec_for
from cpgraph.check.options import CheckOptions, make_options
from cpgraph.check.pipeline import check_all, check_one
from cpgraph.check.protocol import Policy, RankAnswer, as_policy, ask, load_policy
from cpgraph.check.finding import Violation, Witness
from cpgraph.check.report import BatchWitness, CheckReport
from cpgraph.check.run import breaks, check_policy
from cpgraph.check.subjects.path_violation import PathRun, PathsRun, PathViolation, PathWitness
from cpgraph.check.subjects.paths import PathDriver, check_paths

__all__ = [
    "EFFICIENCY",
    "INVARIANTS",
    "SAFETY",
    "Batch",
    "BatchWitness",
    "CheckOptions",
    "CheckReport",
    "Finding",
    "PathDriver",
    "PathRun",
    "PathViolation",
    "PathWitness",
    "PathsRun",
    "Policy",
    "RankAnswer",
    "Spec",
    "Violation",
    "Witness",
    "as_policy",
    "ask",
    "breaks",
    "check_all",
    "check_one",
    "check_paths",
    "check_policy",
    "judge",
    "load_policy",
    "make_batch",
    "make_options",
    "spec_for",
]
