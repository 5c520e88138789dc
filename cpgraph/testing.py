"""pytest helpers: assert that a policy keeps every invariant, with the counterexample in the message."""

from __future__ import annotations

from typing import Any

from cpgraph.check import CheckReport, check_all
from cpgraph.check.batch import Batch
from cpgraph.check.calls import PolicyStop
from cpgraph.check.judging import judge
from cpgraph.check.protocol import as_policy, ask, load_policy

__all__ = ["assert_batch_sound", "assert_policy_sound"]


def assert_policy_sound(
    policy: object, *, budget_s: float | None = None, call_timeout_s: float = 10.0, **options: Any
) -> CheckReport:
    """Run ``cpgraph check`` on ``policy`` (an object or 'MODULE:ATTR') on every subject it offers (the prefill
    batches, its graph paths, its EP steps) and fail with the minimised counterexamples as the failure message when an
    invariant breaks, or when a policy call hangs (``call_timeout_s``), exits or breaks the protocol. Options as
    ``cpgraph.check_all`` (``check_policy``'s, ``path_cases``, ``dp_sizes``, ... for graph paths, ``ep_sizes``,
    ``ep_models``, ... for EP steps): default budget 2 s,
    so a test suite stays fast (raise it in a nightly job), or ``max_cases=N`` to check N batches with
    no clock, the same batches on any machine. Returns the report when sound. pytest hides this
    helper's frames (``__tracebackhide__``): the failure points at the test that called it."""
    __tracebackhide__ = True
    if budget_s is None and options.get("max_cases") is None:
        budget_s = 2.0
    try:
        report = check_all(policy, budget_s=budget_s, call_timeout_s=call_timeout_s, **options)
    except PolicyStop as stopped:
        kind = ("breaks the protocol" if stopped.stop.protocol_error else
                "cannot be driven by its adapter" if stopped.stop.kind == "glue" else "stopped the check")
        raise AssertionError(f"policy {stopped.stop.policy} {kind}:\n{stopped.stop.text()}") from None
    if not report.ok:
        raise AssertionError(report.text())
    return report


def assert_batch_sound(
    policy: object, batch: Batch, *, strategy: str = "zigzag", safety_only: bool = False, keying: str = "global"
) -> None:
    """Ask every rank of ``policy`` about one batch (e.g. drawn from cpgraph.strategies.batches()) and
    fail naming each broken invariant and every rank's answer."""
    __tracebackhide__ = True
    resolved = load_policy(policy) if isinstance(policy, str) else as_policy(policy)
    answers = ask(resolved, batch)
    wanted = None
    if safety_only:
        from cpgraph.check.judging import SAFETY

        wanted = frozenset(SAFETY)
    found = judge(batch, answers, strategy=strategy, invariants=wanted, keying=keying)
    if found:
        ranks = "\n".join(f"  rank {a.rank}: {a.describe()}" for a in answers)
        broken = "\n".join(f"  {f.invariant}: {f.why}" for f in found)
        raise AssertionError(f"policy {resolved.name} breaks on {batch.literal()}:\n{broken}\n{ranks}")
