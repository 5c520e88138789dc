"""``check_policy``: ask every rank about each generated batch, judge, minimise, report.

On a multi-core POSIX machine the search runs in two processes (this one and a fork), each taking a
share of the inputs; they share one stop time and the set of invariants already broken, so a bug found
by either ends both searches within the grace period. Under ``max_cases`` each checks its share of the
count (CheckOptions.share) and the first to finish waits for the other.
"""

from __future__ import annotations

import inspect
import multiprocessing
import os
import pickle
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from multiprocessing.connection import Connection
from typing import Any

from cpgraph.check.batch import Batch
from cpgraph.check.calls import PolicyStop, bound, session
from cpgraph.check.generate import cases
from cpgraph.check.judging import INVARIANTS, judge, spec_for, stepper
from cpgraph.check.minimize import Knobs, minimize, size
from cpgraph.check.options import CheckOptions, keyed_options, make_options
from cpgraph.check.protocol import Policy, RankAnswer, as_policy, ask, load_policy
from cpgraph.check.finding import Violation
from cpgraph.check.report import CheckReport, batch_violation

PROGRESS_EVERY_S = 5.0
_STOP = 0  # shared[0]: perf_counter time at which every worker stops; shared[1 + i]: INVARIANTS[i] broken


def breaks(
    policy: Policy, batch: Batch, invariant: str, strategy: str = "zigzag", ask_replay: str = "admitted", keying: str = "global"
) -> bool:
    """Does ``policy`` break ``invariant`` on ``batch`` (every rank asked)?"""
    answers = ask(policy, batch, ask_replay=ask_replay)
    found = judge(
        batch, answers, strategy=strategy, invariants=frozenset((invariant,)), replay_always=ask_replay == "always", keying=keying
    )
    return any(f.invariant == invariant for f in found)


def with_policy_knobs(opts: CheckOptions, policy: Policy) -> CheckOptions:
    """``opts`` with the fixed knobs ``policy`` declares (max_padding_factor, align_size, strategy) where
    no flag set them: a code base that hard-codes F = 2 is checked at F = 2 only."""
    factor = policy.knob("max_padding_factor")
    if factor is not None and opts.padding_factors is None:
        assert isinstance(factor, (int, Fraction))
        opts = replace(opts, padding_factors=(factor,), max_padding_factor=factor)
    align = policy.knob("align_size")
    if align is not None and opts.align_sizes is None:
        opts = replace(opts, align_sizes=(str(align),))
    strategy = policy.knob("strategy")
    if isinstance(strategy, str) and not opts.strategy_fixed:
        opts = replace(opts, strategy=strategy)
    keying = policy.knob("keying")
    if isinstance(keying, str) and not opts.keying_fixed:
        opts = replace(opts, keying=keying)
    if not policy.takes_prefilling:
        opts = replace(opts, decodes=False)
    return keyed_options(opts)


@dataclass
class _Partial:
    """One worker's share of the search."""

    count: int = 0
    phases: Counter[str] = field(default_factory=Counter)
    found: dict[str, Violation] = field(default_factory=dict)
    stopped: str = "exhausted"


def _violation(policy: Policy, batch: Batch, answers: tuple[RankAnswer, ...], why: str, inv: str, opts: CheckOptions, phase: str, count: int) -> Violation:
    """Minimise the batch for ``inv`` and build the Violation from a fresh ask of the minimised batch."""

    def fails(candidate: Batch) -> bool:
        return breaks(policy, candidate, inv, opts.strategy, opts.ask_replay, opts.keying)

    small, _ = minimize(batch, fails, cp_sizes=opts.cp_sizes, strategy=Knobs.of(opts), budget_s=opts.minimize_s)
    again = ask(policy, small, ask_replay=opts.ask_replay)
    always = opts.ask_replay == "always"
    for f in judge(small, again, strategy=opts.strategy, invariants=frozenset((inv,)), replay_always=always, keying=opts.keying):
        found = batch_violation(inv, small, again, spec_for(small, opts.strategy, opts.keying), f.why, phase, count, batch)
        return replace(found, decided_at=cited(policy, inv, small, again))
    # the policy answered differently the second time (it is not a function of the batch): keep it as found
    found = batch_violation(inv, batch, answers, spec_for(batch, opts.strategy, opts.keying), why, phase, count, batch)
    return replace(found, decided_at=cited(policy, inv, batch, answers))


def cited(policy: Policy, invariant: str, batch: Batch, answers: tuple[RankAnswer, ...]) -> tuple[str, ...]:
    """Where the policy's code decided ``batch`` for ``invariant``, when it offers ``decided_at``
    (cpgraph/adapters/contract.py): ``decided_at(invariant, batch=...)`` on the rank whose answer is
    first to stand out (an error, a refusal or a bucket unlike rank 0's; else rank 0), or the one-argument
    form ``decided_at(invariant)``. Anything else, or an exception from it, cites nothing."""
    fn = policy.decided_at
    if fn is None:
        return ()
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    first = answers[0] if answers else None
    odd = next((a for a in answers if a.admit_error or a.replay_error or a.rows_error or a.admit is not True
                or (first is not None and a.decision != first.decision)), first)
    try:
        if "batch" in params:
            kw = dict(batch.kwargs(), cp_rank=odd.rank if odd is not None else 0)
            lines = fn(invariant, batch=kw)
        elif len([p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) >= 1:
            lines = fn(invariant)
        else:
            return ()
        return tuple(str(line) for line in lines)
    except Exception:
        return ()


def _search(
    policy: Policy,
    opts: CheckOptions,
    *,
    start: float,
    shared: Any,
    shard: int,
    shards: int,
    progress: Callable[[str], None] | None,
) -> _Partial:
    out = _Partial()
    checked = opts.checked
    kinds: dict[str, str] = {}  # phase -> its kind ('boundary:...' -> 'boundary'), split once
    open_ = frozenset(checked)
    next_note = start + PROGRESS_EVERY_S
    step = stepper(policy, strategy=opts.strategy, ask_replay=opts.ask_replay, keying=opts.keying)  # judging.ask_judge, per batch
    stream = cases(opts, shard=shard, shards=shards)
    quota = opts.share(shard, shards)
    for phase, batch in stream:
        if quota is not None and out.count >= quota:
            out.stopped = "cases"
            break
        now = time.perf_counter()
        if now >= shared[_STOP]:
            out.stopped = "budget" if now >= start + opts.budget_s else "grace after violation"
            break
        if out.count % 32 == 0 and shards > 1:  # invariants another worker already broke are not sought here
            open_ = frozenset(i for i in open_ if not shared[1 + INVARIANTS.index(i)])
            if not open_:
                out.stopped = "all violated"
                break
        if progress is not None and now >= next_note:
            next_note = now + PROGRESS_EVERY_S
            progress(
                f"cpgraph check {policy.name}: {out.count * shards:,} batches in {now - start:.0f} s "
                f"({phase.split(':')[0]}); violated so far: {', '.join(out.found) or 'none'}"
            )
        answers, findings = step(batch, open_)
        out.count += 1
        kind = kinds.get(phase)
        if kind is None:
            kind = kinds[phase] = phase.split(":")[0]
        out.phases[kind] += 1
        for finding in findings:
            assert answers is not None  # a finding comes with the answers it was judged on
            inv = finding.invariant
            shared[1 + INVARIANTS.index(inv)] = 1.0
            out.found[inv] = _violation(policy, batch, answers, finding.why, inv, opts, phase, out.count)
            if progress is not None:
                progress(f"cpgraph check {policy.name}: {inv} violated after {out.count * shards:,} batches ({phase})")
        if findings:
            open_ = open_ - out.found.keys()
            shared[_STOP] = min(shared[_STOP], time.perf_counter() + opts.grace_s)
            if not open_:
                out.stopped = "all violated"
                break
    stream.close()  # stops the boundary solver if it is still running
    return out


def _portable(partial: _Partial) -> _Partial:
    """Answers that cannot be pickled (odd objects a policy returned) become their repr."""
    try:
        pickle.dumps(partial)
        return partial
    except Exception:
        pass

    def clean(a: RankAnswer) -> RankAnswer:
        bucket = a.bucket if a.bucket is None or isinstance(a.bucket, int) else repr(a.bucket)
        rows = None if a.rows is None else tuple(r if isinstance(r, int) else repr(r) for r in a.rows)
        return replace(a, bucket=bucket, rows=rows)

    found = {k: replace(v, witness=replace(v.witness, answers=tuple(clean(a) for a in v.answers))) for k, v in partial.found.items()}
    return _Partial(partial.count, partial.phases, found, partial.stopped)


def _child(policy: Policy, opts: CheckOptions, start: float, shared: Any, conn: Connection) -> None:
    try:
        partial = _search(policy, opts, start=start, shared=shared, shard=1, shards=2, progress=None)
        conn.send(_portable(partial))
    except PolicyStop as stop:  # a hung or misbehaving call: end the parent's search too, and tell it why
        shared[_STOP] = 0.0
        conn.send(stop)
    except BaseException:  # the parent keeps its own share; nothing to report from here
        pass
    finally:
        conn.close()


def _can_fork() -> bool:
    # A fork must not inherit a busy thread pool (torch/OpenMP) the policy might call into.
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and (os.cpu_count() or 1) >= 2
        and "torch" not in sys.modules
    )


def _answered(conn: Connection, proc: Any, opts: CheckOptions, start: float) -> bool:
    """Has the other search process sent its share? Under a time budget it has the minimiser's time and
    5 s more to send it; under ``max_cases`` it has until its own share is done (or it ends), and no
    longer than that past a budget given too."""
    if opts.max_cases is None:
        return conn.poll(opts.minimize_s + 5.0)
    until = start + opts.budget_s + opts.minimize_s + 5.0  # inf without a budget
    while not conn.poll(0.1):
        if not proc.is_alive() or time.perf_counter() > until:
            return conn.poll(0)
    return True


def run_check(policy: Policy, opts: CheckOptions, progress: Callable[[str], None] | None = None, *, workers: int | None = None) -> CheckReport:
    """The search behind ``check_policy`` (options already validated)."""
    start = time.perf_counter()
    policy = bound(policy)  # every policy call bounded and judged (cpgraph/check/calls.py)
    opts = with_policy_knobs(opts, policy)
    if workers is None:
        shards = 2 if _can_fork() else 1
    else:
        shards = 2 if workers == 2 and "fork" in multiprocessing.get_all_start_methods() else 1
    ctx = multiprocessing.get_context("fork") if shards > 1 else None
    shared: Any = (ctx.RawArray("d", 1 + len(INVARIANTS)) if ctx is not None else [0.0] * (1 + len(INVARIANTS)))
    shared[_STOP] = start + opts.budget_s
    proc = conn = None
    if ctx is not None:
        conn, child_conn = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(policy, opts, start, shared, child_conn), daemon=True)
        proc.start()
        child_conn.close()
    try:
        mine = _search(policy, opts, start=start, shared=shared, shard=0, shards=shards, progress=progress)
    except BaseException:  # a PolicyStop or an interrupt: the other search ends with this one
        if proc is not None:
            proc.terminate()
        raise
    parts = [mine]
    if proc is not None and conn is not None:
        if opts.max_cases is None:
            shared[_STOP] = min(shared[_STOP], time.perf_counter())  # this share is done: end the other one
        if _answered(conn, proc, opts, start):
            try:
                received = conn.recv()
            except (EOFError, OSError, pickle.UnpicklingError):
                received = None
            if isinstance(received, PolicyStop):
                proc.join(timeout=2)
                raise received
            if received is not None:
                parts.append(received)
        conn.close()
        if proc.is_alive():
            proc.terminate()
        proc.join(timeout=2)
    found: dict[str, Violation] = {}
    for part in parts:
        for inv, v in part.found.items():
            if inv not in found or size(v.batch) < size(found[inv].batch):
                found[inv] = v
    order = {inv: i for i, inv in enumerate(INVARIANTS)}
    stopped = "all violated" if any(p.stopped == "all violated" for p in parts) else mine.stopped
    return CheckReport(
        policy=policy.name,
        violations=tuple(sorted(found.values(), key=lambda v: order[v.invariant])),
        cases=sum(p.count for p in parts),
        seconds=time.perf_counter() - start,
        checked=tuple(i for i in INVARIANTS if i in opts.checked),
        phases=tuple(sum((p.phases for p in parts), Counter()).items()),
        stopped=stopped,
        seed=opts.seed,
        knobs=tuple(opts.knobs().items()),
    )


def check_policy(
    policy: object,
    *,
    progress: Callable[[str], None] | None = None,
    workers: int | None = None,
    call_timeout_s: float = 10.0,
    **options: Any,
) -> CheckReport:
    """Check ``policy`` (a module, an instance, or a 'MODULE:ATTR' string) against every invariant.

    Options (see CheckOptions): cp_sizes=(1, 2, 4, 8), strategy='zigzag', max_requests=3,
    max_tokens=4096, capacities=('captured', 'headroom:2', 'arbitrary'), budget_s=30.0,
    safety_only=False, invariants=None (all), max_padding_factor=2, seed=0, grace_s=1.0,
    minimize_s=1.0, boundary=True, max_cases=None. ``max_cases=N`` checks N batches, with no clock
    unless a time is given too: the same work on any machine (what a test should assert on).
    ``workers``: 1 or 2 search processes (default 2 where fork is safe).
    Raises TypeError/ValueError on bad options or a policy without the protocol, ImportError when a
    'MODULE:ATTR' cannot be imported. Each policy call runs under ``call_timeout_s`` (main thread); a
    hung or misbehaving call raises cpgraph.check.calls.PolicyStop naming the call and the batch.
    """
    opts = make_options(**options)
    if workers is not None and workers not in (1, 2):
        raise ValueError(f"workers must be 1 or 2 (search processes), got {workers!r}")
    resolved = load_policy(policy) if isinstance(policy, str) else as_policy(policy)
    with session(call_timeout_s):
        return run_check(resolved, opts, progress, workers=workers)
