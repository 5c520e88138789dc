"""``check_policy``: ask every rank about each generated batch, judge, minimise, report."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from cpgraph.check.batch import Batch
from cpgraph.check.generate import cases
from cpgraph.check.invariants import INVARIANTS, judge, spec_for
from cpgraph.check.minimize import minimize
from cpgraph.check.options import CheckOptions, make_options
from cpgraph.check.protocol import Policy, as_policy, ask, load_policy
from cpgraph.check.report import CheckReport, Violation

PROGRESS_EVERY_S = 5.0


def breaks(policy: Policy, batch: Batch, invariant: str, strategy: str = "zigzag") -> bool:
    """Does ``policy`` break ``invariant`` on ``batch`` (every rank asked)?"""
    return any(f.invariant == invariant for f in judge(batch, ask(policy, batch), strategy=strategy, invariants=frozenset((invariant,))))


def violation_on(policy: Policy, batch: Batch, invariant: str, strategy: str, *, phase: str, found_after: int, original: Batch) -> Violation | None:
    """The Violation of ``invariant`` on ``batch``, or None when the policy keeps it there."""
    answers = ask(policy, batch)
    for f in judge(batch, answers, strategy=strategy, invariants=frozenset((invariant,))):
        return Violation(invariant, batch, answers, spec_for(batch, strategy), f.why, phase, found_after, original)
    return None


def run_check(policy: Policy, opts: CheckOptions, progress: Callable[[str], None] | None = None) -> CheckReport:
    """The search loop behind ``check_policy`` (options already validated)."""
    start = time.perf_counter()
    stop_at = start + opts.budget_s
    next_note = start + PROGRESS_EVERY_S
    checked = opts.checked
    open_ = frozenset(checked)
    found: dict[str, Violation] = {}
    per_phase: Counter[str] = Counter()
    count = 0
    stopped = "exhausted"
    stream = cases(opts)
    for phase, batch in stream:
        now = time.perf_counter()
        if now >= stop_at:
            stopped = "grace after violation" if found and now < start + opts.budget_s else "budget"
            break
        if progress is not None and now >= next_note:
            next_note = now + PROGRESS_EVERY_S
            progress(
                f"cpgraph check {policy.name}: {count:,} batches in {now - start:.0f} s "
                f"({phase.split(':')[0]}); violated so far: {', '.join(found) or 'none'}"
            )
        answers = ask(policy, batch)
        count += 1
        per_phase[phase.split(":")[0]] += 1
        findings = judge(batch, answers, strategy=opts.strategy, invariants=open_)
        for finding in findings:
            inv = finding.invariant

            def fails(candidate: Batch, inv: str = inv) -> bool:
                return breaks(policy, candidate, inv, opts.strategy)

            small, _ = minimize(batch, fails, cp_sizes=opts.cp_sizes, strategy=opts.strategy, budget_s=opts.minimize_s)
            v = violation_on(policy, small, inv, opts.strategy, phase=phase, found_after=count, original=batch)
            if v is None:  # the policy answered differently the second time: keep the batch as found
                v = Violation(inv, batch, answers, spec_for(batch, opts.strategy), finding.why, phase, count, batch)
            found[inv] = v
            if progress is not None:
                progress(f"cpgraph check {policy.name}: {inv} violated after {count:,} batches ({phase})")
        if findings:
            open_ = open_ - found.keys()
            stop_at = min(stop_at, time.perf_counter() + opts.grace_s)
            if not open_:
                stopped = "all violated"
                break
    stream.close()  # stops the boundary solver if it is still running
    order = {inv: i for i, inv in enumerate(INVARIANTS)}
    return CheckReport(
        policy=policy.name,
        violations=tuple(sorted(found.values(), key=lambda v: order[v.invariant])),
        cases=count,
        seconds=time.perf_counter() - start,
        checked=tuple(i for i in INVARIANTS if i in checked),
        phases=tuple(per_phase.items()),
        stopped=stopped,
    )


def check_policy(policy: object, *, progress: Callable[[str], None] | None = None, **options: Any) -> CheckReport:
    """Check ``policy`` (a module, an instance, or a 'MODULE:ATTR' string) against every invariant.

    Options (see CheckOptions): cp_sizes=(1, 2, 4, 8), strategy='zigzag', max_requests=3,
    max_tokens=4096, capacities=('captured', 'headroom:2', 'arbitrary'), budget_s=30.0,
    safety_only=False, invariants=None (all), max_padding_factor=2, seed=0, grace_s=1.0,
    minimize_s=1.0, boundary=True. Raises TypeError/ValueError on bad options or a policy without
    the protocol, ImportError when a 'MODULE:ATTR' cannot be imported.
    """
    opts = make_options(**options)
    resolved = load_policy(policy) if isinstance(policy, str) else as_policy(policy)
    return run_check(resolved, opts, progress)
