"""A small CPU runner to hand to ``cpgraph check impl.checkable:runner`` (the runner as a policy).

Its own capture list is irrelevant to the check: the policy protocol passes the table with every batch, and the
runner answers through the same ``plan_batch`` its dispatcher uses.
"""

from __future__ import annotations

from cpgraph.impl.distributed import build_model
from cpgraph.impl.model import ModelConfig
from cpgraph.impl.runner import PrefillGraphRunner

runner = PrefillGraphRunner(build_model(ModelConfig(hidden=16, heads=2), seed=0), cp_size=2, capture_num_tokens=(8, 16))
