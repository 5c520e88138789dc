"""The admit/replay runner model: one ``plan`` per batch, consumed by both admission and replay.

The runner takes either graph keying of reference/keying.py: ``global`` (sglang: buckets of n tokens with
recorded capacities, the [n, F*n] window, CP-active batches only) or ``local`` (vLLM 0.29 on: sizes of
rank-local rows, the key m = the largest live rank-local rows, the least size s >= m, s rows on every
rank, every batch)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from fractions import Fraction
from dataclasses import dataclass, field

from cpgraph.reference.capacity import (
    align_up,
    capture_local_tokens,
    default_align_size,
    headroom_local_tokens,
    required_local_tokens,
)
from cpgraph.reference.keying import keying_row
from cpgraph.reference.layout import Layout, build_layout, rank_loads
from cpgraph.reference.selection import select_replay_bucket
from cpgraph.reference.strategies import strategy_row
from cpgraph.reference.validate import (
    check_cp_size,
    check_capacities,
    check_capture_list,
    check_int,
    check_is_prefilling,
    check_lengths,
    check_num_tokens,
    check_padding_factor,
    check_strategy,
)


class FallbackReason(str, enum.Enum):
    """Why a batch runs eagerly instead of replaying a graph (checked in this order)."""

    CP_DISABLED = "cp_disabled"  # cp_size == 1: not CP-active
    TOO_FEW_TOKENS = "too_few_tokens"  # n < 2P (interleave: the lengths' sum < P): not CP-active
    SHORT_REQUEST = "short_request"  # some length < 2P: not CP-active (not under interleave)
    TOO_MANY_TOKENS = "too_many_tokens"  # n above the largest captured bucket
    NO_BUCKET_WITHIN_PADDING_LIMIT = "no_bucket_within_padding_limit"  # no captured B in [n, F*n]
    NO_CAPACITY_WITHIN_PADDING_LIMIT = "no_capacity_within_padding_limit"  # none there has room
    TOO_MANY_ROWS = "too_many_rows"  # local keying: the key m is above the largest captured size


@dataclass(frozen=True)
class CaptureRule:
    """How ``bucket_local_tokens`` is recorded: 'captured' (one request of B tokens, upstream's),
    'headroom' (fits every batch of at most ``max_requests`` requests), or an explicit 'table'."""

    kind: str = "captured"
    max_requests: int = 1
    table: Mapping[int, int | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in ("captured", "headroom", "table"):
            raise ValueError(f"CaptureRule.kind must be one of captured, headroom, table; got {self.kind!r}")
        check_int("max_requests", self.max_requests, minimum=1)
        check_capacities("table", self.table)

    def capacities(
        self, capture_num_tokens: Sequence[int], *, cp_size: int, align_size: int, strategy: str = "zigzag"
    ) -> dict[int, int]:
        """``bucket_local_tokens`` for every bucket this rule records (a table may leave some absent)."""
        buckets = check_capture_list("capture_num_tokens", capture_num_tokens)
        if self.kind == "table":
            table = check_capacities("table", self.table)
            return {b: table[b] for b in buckets if b in table}
        if self.kind == "headroom":
            return {
                b: headroom_local_tokens(
                    b, cp_size=cp_size, align_size=align_size, max_requests=self.max_requests, strategy=strategy
                )
                for b in buckets
            }
        return {b: capture_local_tokens(b, cp_size=cp_size, align_size=align_size, strategy=strategy) for b in buckets}


@dataclass(frozen=True)
class Plan:
    """The one decision for a batch: replay ``bucket`` (capacity ``bucket_local_tokens``) or fall back."""

    extend_seq_lens: tuple[int, ...]
    num_tokens: int
    required_local_tokens: int
    bucket: int | None
    bucket_local_tokens: int | None
    fallback: FallbackReason | None
    is_prefilling: tuple[bool, ...] | None = None  # None: every request a prefill
    key: int | None = None  # local keying: the largest rank-local rows m it compared (None under global: n)

    @property
    def admitted(self) -> bool:
        return self.bucket is not None


class ReplayError(RuntimeError):
    """Replay was asked for a batch that admission did not admit, for a plan this runner did not make, or
    for a bucket that was never captured (impl/'s runner raises the same type)."""


class ReferenceRunner:
    """Captured buckets with their capacities; ``plan`` decides once, ``replay`` trusts the plan."""

    def __init__(
        self,
        *,
        cp_size: int,
        capture_num_tokens: Sequence[int],
        align_size: int | None = None,
        strategy: str = "zigzag",
        max_padding_factor: int | Fraction = 2,
        capture_rule: CaptureRule | None = None,
        keying: str = "global",
    ) -> None:
        self.cp_size = check_cp_size("cp_size", cp_size)
        self.strategy = check_strategy(strategy)
        self.keying = keying_row(keying).id
        self.align_size = (
            default_align_size(cp_size=self.cp_size, strategy=self.strategy)
            if align_size is None
            else check_int("align_size", align_size, minimum=1)
        )
        self.max_padding_factor = check_padding_factor("max_padding_factor", max_padding_factor)
        listed = check_capture_list("capture_num_tokens", capture_num_tokens)
        if self.keying == "local":  # every size is kept: a size s holds s rows, whatever the batch
            if capture_rule is not None:
                raise ValueError(
                    f"capture_rule={capture_rule!r} applies to keying 'global' only; under keying 'local' a size s "
                    "holds s rows on every rank"
                )
            self.capture_num_tokens = listed
            self.capture_rule = CaptureRule()
            self.bucket_local_tokens: dict[int, int] = {s: s for s in listed}
            return
        # Buckets below 2P can never hold a CP-active batch; upstream drops them at start-up.
        self.capture_num_tokens = tuple(b for b in listed if b >= 2 * self.cp_size)
        if not self.capture_num_tokens:
            raise ValueError(
                f"capture_num_tokens={listed!r} has no bucket >= 2*cp_size = {2 * self.cp_size}; "
                "a CP graph runner needs at least one"
            )
        self.capture_rule = capture_rule if capture_rule is not None else CaptureRule()
        self.bucket_local_tokens = self.capture_rule.capacities(
            self.capture_num_tokens, cp_size=self.cp_size, align_size=self.align_size, strategy=self.strategy
        )

    def plan(
        self, extend_seq_lens: Sequence[int], num_tokens: int | None = None, is_prefilling: Sequence[bool] | None = None
    ) -> Plan:
        """Decide once for this batch. ``num_tokens`` defaults to sum(extend_seq_lens); ``is_prefilling``
        (one bool per request, default all True) marks decodes, for a strategy that places them."""
        lengths = check_lengths("extend_seq_lens", extend_seq_lens)
        n = check_num_tokens(sum(lengths) if num_tokens is None else num_tokens, lengths)
        flags = check_is_prefilling("is_prefilling", is_prefilling, requests=len(lengths))
        if self.keying == "local":
            return self._plan_local(lengths, n, flags)
        if flags is not None:
            raise ValueError(
                f"is_prefilling={flags!r}: the global keying models sglang's prefill-only batches; "
                "a batch with decodes is planned under keying 'local'"
            )
        p = self.cp_size
        required = required_local_tokens(lengths, cp_size=p, align_size=self.align_size, strategy=self.strategy)

        def fallback(reason: FallbackReason) -> Plan:
            return Plan(lengths, n, required, None, None, reason)

        inactive = strategy_row(self.strategy).inactive_reason(lengths, n, p)  # the strategy's CP-activity gate
        if inactive is not None:
            return fallback(FallbackReason(inactive))
        if n > self.capture_num_tokens[-1]:
            return fallback(FallbackReason.TOO_MANY_TOKENS)
        if not any(n <= b <= self.max_padding_factor * n for b in self.capture_num_tokens):
            return fallback(FallbackReason.NO_BUCKET_WITHIN_PADDING_LIMIT)
        bucket = select_replay_bucket(
            num_tokens=n,
            required_local_tokens=required,
            capture_num_tokens=self.capture_num_tokens,
            bucket_local_tokens=self.bucket_local_tokens,
            max_padding_factor=self.max_padding_factor,
        )
        if bucket is None:
            return fallback(FallbackReason.NO_CAPACITY_WITHIN_PADDING_LIMIT)
        return Plan(lengths, n, required, bucket, self.bucket_local_tokens[bucket], None)

    def _plan_local(self, lengths: tuple[int, ...], n: int, flags: tuple[bool, ...] | None) -> Plan:
        loads = rank_loads(lengths, cp_size=self.cp_size, strategy=self.strategy, is_prefilling=flags)
        key = max(loads)
        required = align_up(key, self.align_size)
        size = next((s for s in self.capture_num_tokens if s >= required), None)
        if size is None:
            return Plan(lengths, n, required, None, None, FallbackReason.TOO_MANY_ROWS, flags, key)
        return Plan(lengths, n, required, size, size, None, flags, key)

    def admit(
        self, extend_seq_lens: Sequence[int], num_tokens: int | None = None, is_prefilling: Sequence[bool] | None = None
    ) -> bool:
        """Admission is the plan's verdict; there is no second selector."""
        return self.plan(extend_seq_lens, num_tokens, is_prefilling).admitted

    def replay(self, plan: Plan) -> Layout:
        """The live layout padded to the admitted bucket's capacity. Raises ReplayError if admission was
        bypassed; ValueError (from build_layout) if the live layout would exceed the capacity."""
        if not plan.admitted or plan.bucket is None:
            raise ReplayError(
                f"replay called for a batch that was not admitted (fallback {plan.fallback}); "
                "call plan() and run eagerly when it falls back"
            )
        if plan != self.plan(plan.extend_seq_lens, plan.num_tokens, plan.is_prefilling):
            raise ReplayError(f"plan {plan} was not made by this runner")
        return build_layout(
            plan.extend_seq_lens, cp_size=self.cp_size, rows=plan.bucket_local_tokens, strategy=self.strategy,
            is_prefilling=plan.is_prefilling,
        )
