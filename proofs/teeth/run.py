"""Teeth: a theorem counts as proved only if its deliberately wrong variants still get their verdicts.

A theorem whose statement has been weakened (a dropped conjunct, a loosened bound, a claim that holds by
construction) still proves; what gives it away is that the wrong formulas it used to refute now prove
too. ``cpgraph prove`` therefore runs, after the proofs, every variant of proofs/teeth/variants/catalogue.py for the
theorems it checked, and fails (exit 1) when one gets the wrong verdict: that theorem has lost its
teeth. It also checks each theorem's declared scope (proofs/engine/scope.py) against what the proofs ran and what
their hypotheses reach (proofs/engine/witness.py: ``scope_bites``). Variants run at their own small
parameter. Its tasks (each variant, each theorem's coverage, each agreement family) are independent: ``cpgraph
prove`` runs them in the proofs' own pool of workers (``prove_with_teeth``), after the proof tasks; ``teeth``
runs them alone, in a pool of ``jobs`` spawned workers.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterable, Sequence

from cpgraph.proofs.teeth.agreement.stage import FAMILIES as AGREEMENT, agreement as agreement
from cpgraph.proofs.engine.results import Bite as Bite
from cpgraph.proofs.teeth.bite import bite as bite
from cpgraph.proofs.teeth.coverage import BOUNDARIES as BOUNDARIES, SCOPES as SCOPES, coverage as coverage, scope_edges as scope_edges
from cpgraph.proofs.teeth.guards import guards as guards, induction_base as induction_base
from cpgraph.proofs.teeth.minimal import PINNED, minimal_bite
from cpgraph.proofs.engine import cache
from cpgraph.proofs.engine.obligation import Obligation
from cpgraph.proofs.registry import BY_NAME
from cpgraph.proofs.engine.results import ObligationResult, TaskResult
from cpgraph.proofs.run import NO_OPINIONS, Opinions, run_with
from cpgraph.proofs.engine.witness import scope_bites
from cpgraph.proofs.teeth.variants.catalogue import VARIANTS


Task = tuple[str, int, str]  # ("variant", index into VARIANTS, ""), ("coverage", 0, theorem), ("agreement", 0, family)
# or ("minimal", index into proofs/teeth/minimal.py PINNED, "")


def teeth_task(task: Task) -> tuple[Bite, ...]:
    """One independent piece of the pass: a variant's bite, one theorem's coverage checks, or one family of
    the spec-vs-reference agreement (proofs/teeth/agreement/stage.py)."""
    kind, index, theorem = task
    if kind == "agreement":
        return agreement(theorem)
    if kind == "minimal":
        return (minimal_bite(PINNED[index]),)
    return (bite(VARIANTS[index]),) if kind == "variant" else coverage(theorem)


def teeth_tasks(theorems: Sequence[str]) -> list[Task]:
    """The pass's independent tasks for ``theorems``, in the order their bites are reported."""
    wanted = set(theorems)
    tasks: list[Task] = [("variant", i, "") for i, v in enumerate(VARIANTS) if v.theorem in wanted]
    tasks += [("coverage", 0, t) for t in theorems if t in BY_NAME]
    tasks += [("minimal", i, "") for i, pinned in enumerate(PINNED) if pinned.theorem in wanted]
    if set(BY_NAME) <= wanted:  # the whole spec is claimed: it must also be the reference's design
        tasks += [("agreement", 0, family) for family in AGREEMENT]
    return tasks


def _long_first(tasks: Sequence[Task]) -> list[int]:
    """The tasks' indices, the long ones (coverage, agreement) first: handed out in this order, a pool ends
    evenly."""
    return sorted(range(len(tasks)), key=lambda i: tasks[i][0] in ("variant", "minimal"))


def _in_task_order(order: Sequence[int], done: Sequence[tuple[Bite, ...]]) -> list[tuple[Bite, ...]]:
    """The results of tasks handed out in ``order`` (``_long_first``), put back in task order."""
    results: list[tuple[Bite, ...]] = [()] * len(order)
    for i, found in zip(order, done):
        results[i] = found
    return results


def teeth(
    theorems: Iterable[str], *, jobs: int = 1, proved: Iterable[ObligationResult] | None = None, cp_max: int = 64
) -> tuple[tuple[Bite, ...], float]:
    """Every variant of ``theorems``, their coverage (non-vacuity and boundary points) and the spec's domain
    guards, with the seconds it took; with ``jobs`` > 1 the tasks run in that many spawned workers (the bites
    come back in the same order either way). With a prove run's results (``proved``: ObligationResults, run
    with witnesses), also their scope: every declared parameter up to ``cp_max`` ran and no other, and the
    scope's witnesses held at each (proofs/engine/witness.py). ``prove_with_teeth`` runs the proofs and this
    pass in one pool."""
    wanted = list(dict.fromkeys(theorems))
    start = time.perf_counter()
    tasks = teeth_tasks(wanted)
    if jobs > 1 and len(tasks) > 1:
        order = _long_first(tasks)
        spawn = multiprocessing.get_context("spawn")
        with spawn.Pool(min(jobs, len(tasks)), initializer=cache.configure, initargs=(cache.current(),)) as pool:
            results = _in_task_order(order, pool.map(teeth_task, [tasks[i] for i in order], chunksize=1))
    else:
        results = [teeth_task(t) for t in tasks]
    return finish(wanted, results, proved, cp_max), time.perf_counter() - start


def finish(
    theorems: Sequence[str], results: Sequence[tuple[Bite, ...]], proved: Iterable[ObligationResult] | None, cp_max: int
) -> tuple[Bite, ...]:
    """The pass's bites: the tasks' ``results`` (``teeth_tasks``' order), the scope's edges, the proved run's
    scope (when ``proved``), the domain guards and the induction base."""
    checked = tuple(b for found in results for b in found)
    edges = scope_edges() if any(t in SCOPES and t in BY_NAME and BY_NAME[t].over == "cp_size_sampled" for t in theorems) else ()
    scoped = scope_bites(proved, cp_max) if proved is not None else ()
    return (*checked, *edges, *scoped, *guards(), induction_base())


def prove_with_teeth(
    obligations: Sequence[Obligation],
    *,
    cp_max: int,
    jobs: int | None = None,
    progress: Callable[[int, int, TaskResult], None] | None = None,
    opinions: Opinions = NO_OPINIONS,
) -> tuple[list[ObligationResult], tuple[Bite, ...]]:
    """The proofs (with the scope's witnesses) and, in the same pool of workers, the teeth pass: its tasks fill
    the proofs' tail. The bites are empty when some obligation was not proved (the pass reads a proved run)."""
    names = list(dict.fromkeys(o.name for o in obligations))
    tasks = teeth_tasks(names)
    order = _long_first(tasks)
    results, done = run_with(
        obligations, cp_max=cp_max, jobs=jobs, progress=progress, opinions=opinions, witnesses=True,
        after=[(teeth_task, tasks[i]) for i in order],
    )
    if done is None:
        return results, ()
    return results, finish(names, _in_task_order(order, done), results, cp_max)


def toothless(bites: Iterable[Bite]) -> tuple[Bite, ...]:
    """The variants that got the wrong verdict (a refuted variant that now proves, or the reverse)."""
    return tuple(b for b in bites if not b.ok)
