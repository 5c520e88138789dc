"""impl/'s decision path as a policy (the protocol of ``cpgraph check``): admit, replay_bucket, local_rows.

Every function builds the same frozen ``Plan`` the runner's dispatcher builds (``decision.plan_batch``), so
admission and replay cannot disagree. ``cp_rank`` is accepted and deliberately unused: the decision is
rank-invariant.
"""

from __future__ import annotations

from typing import Unpack

from cpgraph.impl.checks import check_int, check_lengths, check_strategy
from cpgraph.impl.decision import Plan, Selector, plan_batch, required_local_tokens
from cpgraph.reference.policy import PolicyBatch, check_batch_keywords


def decide(*, strategy: str = "zigzag", **batch: Unpack[PolicyBatch]) -> Plan:
    """The one plan for this batch under the given capture table."""
    check_batch_keywords("decide", batch)
    lengths = check_lengths("extend_seq_lens", batch["extend_seq_lens"])
    check_int("cp_rank", batch["cp_rank"], minimum=0)
    return plan_batch(
        lengths,
        num_tokens=check_int("num_tokens", batch["num_tokens"], minimum=1),
        cp_size=check_int("cp_size", batch["cp_size"], minimum=1),
        align_size=check_int("align_size", batch["align_size"], minimum=1),
        selector=Selector.build(batch["capture_num_tokens"], batch["bucket_local_tokens"]),
        max_padding_factor=check_int("max_padding_factor", batch["max_padding_factor"], minimum=1),
        strategy=check_strategy(strategy),
    )


def bucket_of(plan: Plan) -> int:
    """The plan's bucket; raises LookupError (naming the fallback reason) when the plan falls back."""
    if plan.bucket is None:
        assert plan.fallback is not None
        raise LookupError(
            f"no captured bucket fits num_tokens={plan.num_tokens}, extend_seq_lens={plan.extend_seq_lens} "
            f"({plan.fallback.value}); run eagerly"
        )
    return plan.bucket


def admit(**batch: Unpack[PolicyBatch]) -> bool:
    """Would this rank replay a graph for this batch?"""
    return decide(**batch).admitted


def replay_bucket(**batch: Unpack[PolicyBatch]) -> int:
    """The bucket this rank pads to; raises LookupError (naming the fallback reason) when not admitted."""
    return bucket_of(decide(**batch))


def local_rows(*, bucket: int, strategy: str = "zigzag", **batch: Unpack[PolicyBatch]) -> tuple[int, ...]:
    """Physical rows per rank the live layout needs at ``bucket``: every rank pads to align_up(max load, A).

    Built from the live lengths (never the padded count); ``bucket`` only selects which buffer they go into.
    """
    check_batch_keywords("local_rows", batch)
    check_int("bucket", bucket, minimum=1)
    p = check_int("cp_size", batch["cp_size"], minimum=1)
    rows = required_local_tokens(
        batch["extend_seq_lens"], cp_size=p, align_size=batch["align_size"], strategy=check_strategy(strategy)
    )
    return (rows,) * p
