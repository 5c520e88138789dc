"""``cpgraph check``: invariant checking of any bucket-selection policy, with minimal counterexamples."""

from cpgraph.check.batch import Batch, make_batch
from cpgraph.check.judging import EFFICIENCY, INVARIANTS, SAFETY, Finding, Spec, judge, spec_for
from cpgraph.check.options import CheckOptions, make_options
from cpgraph.check.protocol import Policy, RankAnswer, as_policy, ask, load_policy
from cpgraph.check.report import CheckReport, Violation
from cpgraph.check.run import breaks, check_policy

__all__ = [
    "EFFICIENCY",
    "INVARIANTS",
    "SAFETY",
    "Batch",
    "CheckOptions",
    "CheckReport",
    "Finding",
    "Policy",
    "RankAnswer",
    "Spec",
    "Violation",
    "as_policy",
    "ask",
    "breaks",
    "check_policy",
    "judge",
    "load_policy",
    "make_batch",
    "make_options",
    "spec_for",
]
