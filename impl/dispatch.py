"""The dispatcher: alone knows which buckets were captured and with how many rows; maps a batch to one ``Plan``
and an admitted plan to the captured ``BucketKey``, with tripwires naming what was asked and what exists.

Under global keying a bucket is a count of global tokens with its recorded rows per rank; under local keying
(vLLM's) it is a size s of rank-local rows holding s rows on every rank, chosen as the least captured s >= the
batch's largest live rows, so admission and replay read one key: the size the plan names is the graph replayed.

The three parts (STYLE.md): ``BucketKey`` (impl/graphs.py) is the frozen key; ``Dispatcher`` (here) maps a batch
to a ``Plan`` and a plan to a key; ``GraphRunner`` (impl/graphs.py) owns the static buffers and trusts both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from torch import Tensor

from cpgraph.impl.checks import check_keying
from cpgraph.impl.decision import Plan, Selector, decider, make_plan
from cpgraph.impl.lengths import lengths_tuple
from cpgraph.impl.graphs import BucketKey
from cpgraph.reference.runner import ReplayError as ReplayError  # one error type for both runners (a shared record, like Plan)


@dataclass(frozen=True, eq=False)
class RunResult:
    """One batch's output [n, H] in packed order, the plan that produced it, and how it ran.

    ``mode`` is "cuda_graph" (a real graph replay), "emulation" (the static-buffer path run eagerly, no GPU),
    or "eager" (fallback without context parallelism; ``plan.fallback`` says why).
    """

    output: Tensor
    plan: Plan
    mode: str

    @property
    def reason(self) -> str | None:
        return None if self.plan.fallback is None else self.plan.fallback.value


class Dispatcher:
    """Alone knows which buckets were captured and with how many rows; decides replay or eager, once a batch."""

    def __init__(
        self,
        *,
        cp_size: int,
        align_size: int,
        strategy: str,
        max_padding_factor: int,
        capture_num_tokens: Sequence[int],
        captured: Mapping[int, int],
        keying: str = "global",
    ) -> None:
        self.cp_size = cp_size
        self.align_size = align_size
        self.strategy = strategy
        self.max_padding_factor = max_padding_factor
        self.keying = check_keying(keying)
        if self.keying == "local":
            wrong = {s: rows for s, rows in captured.items() if rows != s}
            if wrong:
                raise ValueError(f"under local keying a size s holds s rows per rank; captured has {wrong}")
        # A bucket that failed to capture stays in the list with no capacity: never a fit.
        self.selector = Selector.build(capture_num_tokens, {b: captured.get(b) for b in capture_num_tokens})
        self.keys = {b: BucketKey(b, rows, self.keying) for b, rows in captured.items()}
        # The configuration bound once; every batch is still validated once, at this boundary.
        self.decide = decider(cp_size=cp_size, align_size=align_size, selector=self.selector,
                              max_padding_factor=max_padding_factor, strategy=strategy, keying=self.keying)

    def plan(self, extend_seq_lens: Sequence[int], num_tokens: int | None = None, is_prefilling: object = None) -> Plan:
        # Validated once, at this boundary (a list, tuple, integer numpy array or CPU tensor), then planned.
        lengths, n, (required, bucket, capacity, reason) = self.decide(extend_seq_lens, num_tokens, is_prefilling)
        return make_plan(lengths_tuple(lengths), n, required, bucket, capacity, reason)

    def key(self, plan: Plan) -> BucketKey:
        """The captured key a plan replays; tripwires name what was asked and what exists."""
        if plan.bucket is None:
            raise ReplayError(
                f"replay called for a batch that was not admitted (fallback {plan.fallback}); run it eagerly"
            )
        key = self.keys.get(plan.bucket)
        if key is None or key.local_tokens != plan.bucket_local_tokens:
            raise ReplayError(
                f"plan asks for bucket {plan.bucket} with {plan.bucket_local_tokens} rows, but the captured "
                f"buckets are {sorted((k.num_tokens, k.local_tokens) for k in self.keys.values())}"
            )
        if plan.required_local_tokens > key.local_tokens:
            raise ReplayError(
                f"plan needs {plan.required_local_tokens} rows per rank but bucket {key.num_tokens} has "
                f"{key.local_tokens}; this plan was not made by this dispatcher"
            )
        return key
