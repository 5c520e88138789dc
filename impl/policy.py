"""impl/'s decision path as a policy (the protocol of ``cpgraph check``): admit, replay_bucket, local_rows.

Every function builds the same frozen ``Plan`` the runner's dispatcher builds (``decision.plan_batch``), so
admission and replay cannot disagree. ``cp_rank`` is accepted and deliberately unused: the decision is
rank-invariant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from impl.checks import check_int, check_lengths, check_strategy
from impl.decision import Plan, Selector, plan_batch, required_local_tokens


def decide(
    *,
    cp_rank: int,
    cp_size: int,
    align_size: int,
    num_tokens: int,
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int,
    strategy: str = "zigzag",
) -> Plan:
    """The one plan for this batch under the given capture table."""
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    check_int("cp_rank", cp_rank, minimum=0)
    return plan_batch(
        lengths,
        num_tokens=check_int("num_tokens", num_tokens, minimum=1),
        cp_size=check_int("cp_size", cp_size, minimum=1),
        align_size=check_int("align_size", align_size, minimum=1),
        selector=Selector.build(capture_num_tokens, bucket_local_tokens),
        max_padding_factor=check_int("max_padding_factor", max_padding_factor, minimum=1),
        strategy=check_strategy(strategy),
    )


def admit(
    *,
    cp_rank: int,
    cp_size: int,
    align_size: int,
    num_tokens: int,
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int,
) -> bool:
    """Would this rank replay a graph for this batch?"""
    return decide(
        cp_rank=cp_rank,
        cp_size=cp_size,
        align_size=align_size,
        num_tokens=num_tokens,
        extend_seq_lens=extend_seq_lens,
        capture_num_tokens=capture_num_tokens,
        bucket_local_tokens=bucket_local_tokens,
        max_padding_factor=max_padding_factor,
    ).admitted


def replay_bucket(
    *,
    cp_rank: int,
    cp_size: int,
    align_size: int,
    num_tokens: int,
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int,
) -> int:
    """The bucket this rank pads to; raises LookupError (naming the fallback reason) when not admitted."""
    plan = decide(
        cp_rank=cp_rank,
        cp_size=cp_size,
        align_size=align_size,
        num_tokens=num_tokens,
        extend_seq_lens=extend_seq_lens,
        capture_num_tokens=capture_num_tokens,
        bucket_local_tokens=bucket_local_tokens,
        max_padding_factor=max_padding_factor,
    )
    if plan.bucket is None:
        assert plan.fallback is not None
        raise LookupError(
            f"no captured bucket fits num_tokens={num_tokens}, extend_seq_lens={tuple(extend_seq_lens)} "
            f"({plan.fallback.value}); run eagerly"
        )
    return plan.bucket


def local_rows(
    *,
    bucket: int,
    cp_rank: int,
    cp_size: int,
    align_size: int,
    num_tokens: int,
    extend_seq_lens: Sequence[int],
    capture_num_tokens: Sequence[int],
    bucket_local_tokens: Mapping[int, int | None],
    max_padding_factor: int,
) -> tuple[int, ...]:
    """Physical rows per rank the live layout needs at ``bucket``: every rank pads to align_up(max load, A).

    Built from the live lengths (never the padded count); ``bucket`` only selects which buffer they go into.
    """
    check_int("bucket", bucket, minimum=1)
    p = check_int("cp_size", cp_size, minimum=1)
    rows = required_local_tokens(extend_seq_lens, cp_size=p, align_size=align_size)
    return (rows,) * p
