"""The one conformance harness: implementations against the spec on concrete inputs, in two forms.

One case at a time (``check_conformance``, proofs/conformance/compare.py): any object with the reference's
function API against the spec evaluated through Z3, under an explicit ``Mode``, on the spec's clause edges
drawn by Z3, exhaustive small domains and Hypothesis cases (proofs/conformance/cases.py).

At scale (``check_bulk``, this module): whole decision paths (the reference's and impl's,
proofs/conformance/paths.py) case by case against the spec's closed forms ("the mirror",
proofs/conformance/mirror.py), a million cases in well under a minute: P up to 64, capture lists of 32 to 48
buckets, n up to 10^6 and values past 2^53 (where float arithmetic is wrong), the CP-active gates, the
runner's plan with its fallback reason, replay, layout rows and the fitting set (the families:
proofs/conformance/families.py, invalid.py, runner.py; the draws:
draw.py; the report: report.py). Every bulk run first checks the mirror against the
spec's own terms evaluated on literals (``validate_mirror``).

Every public name of the harness is importable from here.
"""

from __future__ import annotations

import dataclasses
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cpgraph.proofs.conformance.cases import (
    boundary_conformance_cases,
    case_strategy,
    edge_cases,
    exhaustive_dual_chunk_swap_cases,
    exhaustive_layout_cases,
    exhaustive_selection_cases,
)
from cpgraph.proofs.conformance.compare import (
    FUNCTIONS,
    WHOLE_BATCH,
    Case,
    ConformanceError,
    Implementation,
    Mismatch,
    Mode,
    check_conformance,
    compare,
)
from cpgraph.proofs.conformance.draw import BIG, Draw
from cpgraph.proofs.conformance.families import (
    family_arith,
    family_capture,
    family_gates,
    family_headroom,
    family_rows,
    family_selection,
)
from cpgraph.proofs.conformance.invalid import family_errors
from cpgraph.proofs.conformance.mirror import (
    MIRROR_STRATEGIES,
    PlanTuple,
    RunnerArgs,
    mirror_active,
    mirror_align_up,
    mirror_fitting,
    mirror_headroom,
    mirror_plan,
    mirror_rank_loads,
    mirror_request_excess,
    mirror_required,
    mirror_select,
)
from cpgraph.proofs.conformance.paths import DecisionPath, Planner, Replayer, impl_path, reference_path, reference_planner
from cpgraph.proofs.conformance.report import BulkConformanceError, BulkMismatch, BulkReport, Family, FamilyReport
from cpgraph.proofs.conformance.runner import family_plan
from cpgraph.proofs.engine.evaluate import spec_headroom_local_tokens
from cpgraph.reference.lists import compact

__all__ = [
    "BIG", "FUNCTIONS", "WHOLE_BATCH", "MIRROR_STRATEGIES", "BulkConformanceError", "BulkMismatch", "BulkPlan", "BulkReport", "Case",
    "ConformanceError", "DecisionPath", "FamilyReport", "Implementation", "MirrorError", "Mismatch", "Mode",
    "PlanTuple", "Planner", "Replayer", "RunnerArgs", "boundary_conformance_cases", "case_strategy", "check_bulk",
    "check_conformance", "compare", "edge_cases", "exhaustive_dual_chunk_swap_cases", "exhaustive_layout_cases", "exhaustive_selection_cases", "impl_path",
    "mirror_active", "mirror_align_up", "mirror_fitting", "mirror_headroom", "mirror_plan", "mirror_rank_loads",
    "mirror_request_excess", "mirror_required", "mirror_select", "reference_path", "reference_planner", "run_bulk",
    "validate_mirror",
]

_reference_planner = reference_planner  # the name the bulk tests wrap to plant a bug in the reference's plan


@dataclass(frozen=True)
class BulkPlan:
    """How many cases each family draws (``scaled`` multiplies them all)."""

    align_up: int = 420_000
    cp_active: int = 300_000
    required_local_tokens: int = 45_000
    capture_local_tokens: int = 100_000
    select_replay_bucket: int = 90_000
    invalid_inputs: int = 20_000
    headroom_local_tokens: int = 40_000
    runner_configs: int = 250
    plans_per_config: int = 160
    replays_per_config: int = 12
    mirror_checks: int = 600

    def scaled(self, factor: float) -> BulkPlan:
        """Every count times ``factor`` (at least 1); replays per runner stay as they are (they are per runner)."""
        return BulkPlan(*(getattr(self, f.name) if f.name == "replays_per_config" else
                          max(1, round(getattr(self, f.name) * factor)) for f in dataclasses.fields(self)))


def run_bulk(paths: Sequence[DecisionPath], *, plan: BulkPlan = BulkPlan(), seed: int = 0,
             validate: bool = True) -> BulkReport:
    """Compare every path against the spec's mirror on every family's cases (deterministic for a seed); the
    mirror itself is first checked against the spec's own terms (``validate_mirror``). Never raises for a
    mismatch: see ``check_bulk``."""
    checks = validate_mirror(plan.mirror_checks, seed=seed) if validate else 0
    families: list[FamilyReport] = []
    steps: list[tuple[str, Callable[[Draw], tuple[Family, ...]]]] = [
        ("align_up", lambda d: (family_arith(paths, d, plan.align_up),)),
        ("cp_active", lambda d: (family_gates(paths, d, plan.cp_active),)),
        ("required", lambda d: (family_rows(paths, d, plan.required_local_tokens),)),
        ("capture", lambda d: (family_capture(paths, d, plan.capture_local_tokens),)),
        ("headroom", lambda d: (family_headroom(paths, d, plan.headroom_local_tokens),)),
        ("selection", lambda d: (family_selection(paths, d, plan.select_replay_bucket),)),
        ("errors", lambda d: (family_errors(paths, d, plan.invalid_inputs),)),
        ("plan", lambda d: family_plan(paths, d, plan.runner_configs, plan.plans_per_config, plan.replays_per_config)),
    ]
    for name, step in steps:
        start = time.perf_counter()
        produced = step(Draw(seed * 1_000_003 + zlib.crc32(name.encode())))  # by name: adding a family moves no other
        seconds = (time.perf_counter() - start) / len(produced)
        families.extend(f.report(seconds) for f in produced)
    return BulkReport(tuple(families), checks)


def check_bulk(paths: Sequence[DecisionPath], *, plan: BulkPlan = BulkPlan(), seed: int = 0) -> BulkReport:
    """``run_bulk``, raising BulkConformanceError (every family's first mismatches, inputs shown) on any."""
    report = run_bulk(paths, plan=plan, seed=seed)
    if report.mismatches:
        raise BulkConformanceError(report)
    return report


class MirrorError(AssertionError):
    """The mirror's closed forms disagree with the spec's own terms: the bulk harness's expected side is wrong."""


def validate_mirror(count: int, *, seed: int = 0) -> int:
    """Compare the mirror with the spec's terms evaluated on literals (the spec folds literal inputs to numerals:
    no solver call) for loads, required rows, capture rows and align_up, P up to 64 and values past 2^53; and with
    the spec's scan (proofs.engine.evaluate) on capture lists of 32+ buckets; and its whole-batch plan with the spec's
    admission and replay at every rank (``_validate_plans``). Raises MirrorError; returns the checks made."""
    import z3

    from cpgraph.proofs.engine.evaluate import value_of
    from cpgraph.spec.arith import align_up as spec_align_up
    from cpgraph.spec.selection import concrete_capture_list, padding_window, scan_select
    from cpgraph.spec.strategies import rank_loads as spec_loads

    def literal(term: object, what: str) -> int:
        folded = z3.simplify(term)
        if not z3.is_int_value(folded):
            raise MirrorError(f"the spec's {what} does not fold to a numeral on literal inputs: {folded}")
        return int(folded.as_long())

    draw = Draw(seed + 7919)
    rng = draw.rng
    checks = 0
    for i in range(count):
        p = draw.cp_size() if i % 4 else rng.randint(1, 8)
        kind = MIRROR_STRATEGIES[i % len(MIRROR_STRATEGIES)]
        lengths = draw.lengths(p, huge=i % 3 == 0)[:4]
        spec = spec_loads(lengths, p, "mirror", kind)
        got = [literal(x, f"{kind} load") for x in spec.loads]
        if not z3.is_true(z3.simplify(spec.holds)):
            raise MirrorError(f"the spec's {kind} loads carry facts on literal inputs: {spec.holds}")
        if got != mirror_rank_loads(lengths, p, kind):
            raise MirrorError(f"{kind} loads of {lengths} at P={p}: spec {got}, mirror {mirror_rank_loads(lengths, p, kind)}")
        if i % 5 == 0:  # the spec's headroom term keeps a min(R, N) and a quotient: one small solver call each
            n, r = max(1, draw.length(p, huge=i % 3 == 0)), rng.randint(1, 70)
            spec_room = spec_headroom_local_tokens(n, cp_size=p, align_size=2 * p, max_requests=r)
            if spec_room != mirror_headroom(n, p, 2 * p, r):
                raise MirrorError(f"headroom_local_tokens({n}, P={p}, R={r}): spec {spec_room}, mirror "
                                  f"{mirror_headroom(n, p, 2 * p, r)}")
            checks += 1
        value, align = draw.value(), rng.randint(1, 256)
        spec_up = literal(spec_align_up(value, align, "mirror").value, "align_up")
        if spec_up != mirror_align_up(value, align):
            raise MirrorError(f"align_up({value}, {align}): spec {spec_up}, mirror {mirror_align_up(value, align)}")
        checks += 2
    for i in range(max(1, count // 50)):
        n = rng.randint(1, 10**6) if i % 2 else rng.randint(BIG, 2**62)
        factor = draw.factor()
        required = rng.randint(0, max(1, n // 4))
        buckets, table = draw.capture_list(n, factor, required, size=rng.randint(32, 40))
        # The spec's scan over the concrete list, with the window's facts (a rational F has a quotient).
        window = padding_window(n, factor)
        chosen = scan_select(concrete_capture_list(buckets, table), window, required)
        spec_bucket = value_of(chosen.bucket, window.holds) if value_of(chosen.admitted, window.holds) else None
        if spec_bucket != mirror_select(n, required, buckets, table, factor):
            raise MirrorError(f"selection n={n}, required={required}, F={factor}, buckets={buckets}, table={table}: "
                              f"spec {spec_bucket}, mirror {mirror_select(n, required, buckets, table, factor)}")
        checks += 1
    return checks + _validate_plans(max(4, count // 50), draw)


def _validate_plans(count: int, draw: Draw) -> int:
    """The mirror's whole-batch plan (its gates in order, then the selection) against the spec's admission and
    replay at every rank (proofs.engine.evaluate ``spec_plan``) on the gate's edges (proofs.teeth.agreement.stage
    ``gate_batches``: n at 2P-1 and 2P, short requests mixed into long ones, a padded n) and on ranks whose
    loads differ, every strategy row in turn, P 2..5 and 1. Raises MirrorError; returns the checks made."""
    from cpgraph.proofs.teeth.agreement.stage import gate_batches, rank_batches, rank_table
    from cpgraph.proofs.engine.evaluate import spec_plan
    from cpgraph.reference import default_align_size

    rng = draw.rng
    checks = 0
    for i in range(count):
        p = 1 if i % 9 == 8 else 2 + i % 4
        kind = MIRROR_STRATEGIES[i % len(MIRROR_STRATEGIES)]
        if p >= 3 and i % 3 == 2:
            lengths = rng.choice(rank_batches(p))
            n = sum(lengths)
            buckets, rows = rank_table(lengths, p, kind)
            config = RunnerArgs(p, 1, kind, 2, buckets, dict(rows))
        else:
            lengths, n = rng.choice(gate_batches(p))
            a = default_align_size(cp_size=p, strategy=kind)
            listed = tuple(sorted({x for x in (2 * p, n - 1, n, n + 1, 2 * n, 2 * n + 1) if x >= 1}))
            config = RunnerArgs(p, a, kind, 2, listed, {b: mirror_required((b,), p, a, kind) for b in listed})
        expected = mirror_plan(config, lengths, n)[1]
        got = spec_plan(lengths, num_tokens=n, cp_size=p, align_size=config.align_size, strategy=kind,
                        max_padding_factor=2, capture_num_tokens=config.capture_num_tokens,
                        bucket_local_tokens=config.bucket_local_tokens)
        decided = got if isinstance(got, str) else {(r.admitted, r.replayed) for r in got}
        if decided != {(expected, expected)}:
            raise MirrorError(f"plan of extend_seq_lens={compact(lengths)}, num_tokens={n} on {config}: mirror "
                              f"{expected}, spec (admitted, replayed) at ranks 0..{p - 1}: {decided}")
        checks += 1
    return checks
