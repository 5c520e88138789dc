"""Agreement: the spec's terms, evaluated on concrete edge cases, against the reference, run by the teeth pass.

The theorems speak about the spec; nothing in them says the spec is the design the reference (and so
`cpgraph check`, impl/ and the adapters) implements. A change that keeps every theorem true and its claim in
step (the CP-active gate's short-request condition dropped from the spec and from the claim together, a
capture capacity taken as the mean rows, the scan stopped after 8 buckets) proves; it is caught here, where
the spec's own terms are evaluated concretely (proofs/engine/evaluate.py ``values_of`` and ``spec_plan``) on a
fixed, deterministic set of edge cases and compared with the reference, one family per teeth-pass task
(``FAMILIES``):

- ``tables``: the strategy table (ids, alignment at P 1..8, where decodes go, loads from the total or per
  request) and the keying table (ids, the key on sample loads, window, capacity and gate columns).
- ``loads and rows``: rank_loads and required_local_tokens, every strategy at P in ``CP_SIZES``
  (``load_batches``: every length 1..2P+2 and 4P-2..4P+1, DualChunkSwap's thresholds, lengths past 2**40,
  short requests mixed into long batches).
- ``capture capacities``: capture_local_tokens on every bucket 2P..2P + P*A (every residue of B mod P*A),
  A = the row's, 1 and 3; headroom_local_tokens (zigzag) with R up to 2B.
- ``selection``: the scan on a list of ``LONG_LIST`` buckets (n below, at and past the 1st, 8th, 9th, 21st
  and last bucket, above the last) and the window's edges (a bucket at n, at floor(F*n), one past it, one
  below n; F in ``FACTORS``), missing capacities, room one row short (``selection_cases``).
- ``graph paths``: spec/graph_paths.py against reference/graph_paths.py (proofs/teeth/agreement/graph_paths.py: the
  mode and placement tables, a uniform decode step's per-rank rows and requests, ``fits``, the release's dispatch
  against a restatement of its rule and the local dispatch against the reference's ``expected``).
- ``whole batches``: spec/admission.py's ``admit`` and spec/replay.py's ``replay`` at every rank against
  ``ReferenceRunner.plan``, under each keying (``batch_cases``): the gate's edges, ranks whose loads differ
  (P = 3, 4, 5), a padded batch on a tight bucket, the window through the runner, ``LONG_LIST``-bucket
  lists, the local key's sizes below, at and past F times it.

Each disagreement is one failing ``Bite`` naming the function, the inputs (lists written by
reference.lists.compact, so they paste), the reference's value (expected) and the spec's (actual); each
function that agrees on every case is one passing ``Bite`` with its case count. The local keying is compared
at A = 1 (vLLM aligns nothing) and, for dual_chunk_swap at P = 3, at A = 2 and 3 (both round the key m up to A).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import z3

from cpgraph.spec.logic import If
from cpgraph.proofs.teeth.agreement.claims import claim_builders
from cpgraph.proofs.teeth.agreement.forms import batch_forms
from cpgraph.proofs.teeth.agreement.graph_paths import graph_paths
from cpgraph.proofs.teeth.agreement.tally import BIG, Outcome, Tally, spec_values
from cpgraph.proofs.engine.results import Bite
from cpgraph.proofs.engine.check import Status, one_context
from cpgraph.proofs.engine.evaluate import spec_plan
from cpgraph.reference import keying as ref_keying
from cpgraph.reference import selection as ref_selection
from cpgraph.reference import strategies as ref_strategies
from cpgraph.reference.capacity import capture_local_tokens as ref_capture
from cpgraph.reference.capacity import headroom_local_tokens as ref_headroom
from cpgraph.reference.capacity import required_local_tokens as ref_required
from cpgraph.reference.layout import rank_loads as ref_rank_loads
from cpgraph.reference.lists import compact
from cpgraph.reference.runner import CaptureRule, ReferenceRunner
from cpgraph.spec import capacity as spec_capacity
from cpgraph.spec import keying as spec_keying
from cpgraph.spec import selection as spec_selection
from cpgraph.spec import strategies as spec_strategies
from cpgraph.spec.terms import BoolTerm, IntTerm, Loads

# The spec is read through its modules' attributes (spec_capacity.capture_local_tokens, not a name bound here
# at import), so what is evaluated is what those modules hold when the stage runs.

THEOREM = "spec agrees with reference"
CP_SIZES = (1, 2, 3, 4, 5, 8)  # loads, rows and capacities
LONG_LIST = 40  # buckets in the long capture lists (issue 21: 32 or more)
FACTORS: tuple[int | Fraction, ...] = (Fraction(1), Fraction(5, 4), Fraction(3, 2), Fraction(2), 2)  # an int F too: its own window branch
SHOWN = 3  # disagreements shown per function; the rest are counted in one more bite


def _call(name: str, *args: object, **kwargs: object) -> str:
    shown = [compact(a) if isinstance(a, (tuple, list)) else repr(a) for a in args]
    shown += [f"{k}={compact(v) if isinstance(v, (tuple, list)) else repr(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(shown)})"


# -- tables ------------------------------------------------------------------------------------------------------


def tables() -> Outcome:
    """The strategy and keying tables, row for row and column for column."""
    tally = Tally()
    spec_rows, ref_rows = spec_strategies.STRATEGIES, ref_strategies.STRATEGY_TABLE
    tally.compare("strategy table", lambda: "strategy ids", 0, sorted(ref_rows), sorted(spec_rows))
    for sid in sorted(set(spec_rows) & set(ref_rows)):
        spec_row, ref_row = spec_rows[sid], ref_rows[sid]
        tally.compare("strategy table", lambda: f"decodes of {sid!r}", 0, ref_row.decodes, spec_row.decodes)
        tally.compare("strategy table", lambda: f"request_loads of {sid!r} is None", 0,
                      ref_row.request_loads is None, spec_row.request_loads is None)
        for p in range(1, 9):
            tally.compare("strategy table", lambda: f"align_size of {sid!r} at cp_size={p}", p,
                          ref_row.align_size(p), spec_row.align_size(p))
    tally.compare("keying table", lambda: "keying ids", 0, sorted(ref_keying.KEYING_TABLE), sorted(spec_keying.KEYINGS))
    for kid in sorted(set(ref_keying.KEYING_TABLE) & set(spec_keying.KEYINGS)):
        ref_k, spec_k = ref_keying.KEYING_TABLE[kid], spec_keying.KEYINGS[kid]
        for column in ("windowed", "recorded_capacity", "gated"):
            tally.compare("keying table", lambda: f"{column} of {kid!r}", 0, getattr(ref_k, column), getattr(spec_k, column))
        for n, loads in ((20, (3, 5, 4)), (7, (7,)), (9, (0, 4))):
            busiest = spec_capacity.busiest_load(Loads(tuple(z3.IntVal(x) for x in loads), z3.BoolVal(True)), f"agree.key.{kid}")
            key = spec_k.key(n, busiest)
            got = spec_values([key.value], [key.holds])
            tally.compare("keying table", lambda: f"key of {kid!r} at num_tokens={n}, loads={loads}", 0,
                          ref_k.key(n, loads), got if isinstance(got, str) else got[0])
    return tally.outcome()


# -- loads, rows, capacities -------------------------------------------------------------------------------------


def load_batches(p: int) -> tuple[tuple[int, ...], ...]:
    """Every length 1..2P+2 alone (every remainder mod 2P, with quotient 0 and 1) and 4P-2..4P+1, the
    DualChunkSwap thresholds (q = 2P-2, 2P-1; the dcp copy rule (2P-1)*c >= L on both sides for chunk sizes
    c = 1, 2, 3, 2P-1, 2P), lengths past 2**40, short requests mixed into long batches."""
    s = 2 * p
    lengths = [*range(1, s + 3), 2 * s - 2, 2 * s - 1, 2 * s, 2 * s + 1]
    lengths += [s * q + m for q in (s - 2, s - 1) for m in (0, 1, s - 1)]
    lengths += [(s - 1) * c + d for c in (1, 2, 3, s - 1, s) for d in (0, 1)]
    single = [(length,) for length in sorted(set(lengths)) if length > 0]
    single += [(BIG + 1,), (BIG + s - 1,)]
    mixed = [(s - 1, 4 * s + 1), (s, s - 1, 4 * s + 3), (1,) * 3 + (8 * s + 3,), (s + 1,) * (s + 1), (BIG, s - 1)]
    return (*single, *mixed)


def loads_and_rows(strategies: Iterable[str] | None = None, cp_sizes: Iterable[int] = CP_SIZES) -> Outcome:
    """rank_loads and required_local_tokens (the strategy's default A and A = 3) on ``load_batches``."""
    tally = Tally()
    for kind in strategies or tuple(ref_strategies.STRATEGY_TABLE):
        for p in cp_sizes:
            batches = load_batches(p)
            aligns = sorted({ref_strategies.strategy_row(kind).align_size(p), 3})
            terms: list[IntTerm | BoolTerm] = []
            facts: list[BoolTerm] = []
            for i, lengths in enumerate(batches):
                loads = spec_strategies.rank_loads(tuple(z3.IntVal(x) for x in lengths), p, f"agree.loads{i}", kind)
                terms += loads.loads
                facts.append(loads.holds)
                for a in aligns:
                    rows = spec_capacity.required_local_tokens(loads, a, f"agree.rows{i}.{a}")
                    terms.append(rows.value)
                    facts.append(rows.holds)
            got = spec_values(terms, facts)
            at = 0
            for lengths in batches:
                expected_loads = ref_rank_loads(lengths, cp_size=p, strategy=kind)
                actual: object = got if isinstance(got, str) else tuple(got[at:at + p])
                at += p
                tally.compare("rank_loads", lambda: _call("rank_loads", lengths, cp_size=p, strategy=kind), p,
                              expected_loads, actual)
                for a in aligns:
                    expected_rows = ref_required(lengths, cp_size=p, align_size=a, strategy=kind)
                    actual = got if isinstance(got, str) else got[at]
                    at += 1
                    tally.compare("required_local_tokens",
                                  lambda: _call("required_local_tokens", lengths, cp_size=p, align_size=a, strategy=kind),
                                  p, expected_rows, actual)
    return tally.outcome()


def capture_buckets(p: int, align_size: int) -> tuple[int, ...]:
    """2P..2P + P*A (every residue of B mod P*A), and two past 2**40."""
    s = 2 * p
    return tuple(sorted({*range(s, s + p * align_size + 1), BIG + 1, BIG + p * align_size - 1}))


def capture_capacities(strategies: Iterable[str] | None = None, cp_sizes: Iterable[int] = CP_SIZES) -> Outcome:
    """capture_local_tokens: the capacity recorded for a bucket (one request of B tokens); and (zigzag, the
    spec's only headroom row) headroom_local_tokens for R = 1, 2, B, B+P, 2B requests on every 5th bucket."""
    tally = Tally()
    for p in cp_sizes if strategies is None or "zigzag" in strategies else ():
        a = 2 * p
        cases = [(b, r) for b in capture_buckets(p, a)[::5] for r in (1, 2, b, b + p, 2 * b)]
        built = [spec_capacity.headroom_local_tokens(b, p, a, r, f"agree.headroom{b}.{r}") for b, r in cases]
        got = spec_values([c.value for c in built], [c.holds for c in built])
        for i, (b, r) in enumerate(cases):
            tally.compare("headroom_local_tokens",
                          lambda: _call("headroom_local_tokens", b, cp_size=p, align_size=a, max_requests=r), p,
                          ref_headroom(b, cp_size=p, align_size=a, max_requests=r),
                          got if isinstance(got, str) else got[i])
    for kind in strategies or tuple(ref_strategies.STRATEGY_TABLE):
        for p in cp_sizes:
            for a in sorted({ref_strategies.strategy_row(kind).align_size(p), 1, 3}):
                buckets = capture_buckets(p, a)
                built = [spec_capacity.capture_local_tokens(b, p, a, f"agree.capture{b}", kind) for b in buckets]
                got = spec_values([c.value for c in built], [c.holds for c in built])
                for i, b in enumerate(buckets):
                    tally.compare("capture_local_tokens",
                                  lambda: _call("capture_local_tokens", b, cp_size=p, align_size=a, strategy=kind), p,
                                  ref_capture(b, cp_size=p, align_size=a, strategy=kind),
                                  got if isinstance(got, str) else got[i])
    return tally.outcome()


# -- selection ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SelectionCase:
    """One call of the selector."""

    num_tokens: int
    required: int
    buckets: tuple[int, ...]
    capacities: tuple[tuple[int, int], ...]  # (bucket, capacity); a bucket absent has no recorded capacity
    factor: int | Fraction

    def call(self) -> str:
        return _call("select_replay_bucket", num_tokens=self.num_tokens, required_local_tokens=self.required,
                     capture_num_tokens=self.buckets, bucket_local_tokens=dict(self.capacities),
                     max_padding_factor=self.factor)


def _top(n: int, factor: int | Fraction) -> int:
    f = Fraction(factor)
    return (f.numerator * n) // f.denominator


def selection_cases() -> tuple[SelectionCase, ...]:
    """The long list's ends and middle, the window's edges, a missing capacity, room one row short."""
    cases: list[SelectionCase] = []
    step = 4
    long = tuple(step * k for k in range(1, LONG_LIST + 1))
    room = tuple((b, b // 2) for b in long)
    long_factors: tuple[int | Fraction, ...] = (Fraction(2), Fraction(3, 2))
    for factor in long_factors:
        for i in (0, 7, 8, 20, LONG_LIST - 1):
            b = long[i]
            for n in (b - 1, b, b + 1):
                cases.append(SelectionCase(n, b // 2, long, room, factor))  # room exactly at b: b is chosen
            cases.append(SelectionCase(b, b // 2 + 1, long, room, factor))  # one row short at b: the next
        cases.append(SelectionCase(long[-1] + 1, 0, long, room, factor))  # n above the last bucket
        cases.append(SelectionCase(1, 0, long, room, factor))  # n below the first
    missing = tuple((b, c) for b, c in room if b not in (long[8], long[9]))
    cases.append(SelectionCase(long[8], 0, long, missing, Fraction(2)))  # two missing capacities past index 8
    for factor in FACTORS:
        for n in (7, 10, 13, 1001):
            top = _top(n, factor)
            for bucket in {n, top, top + 1, n - 1}:
                if bucket < 1:
                    continue
                listed = tuple(sorted({max(1, n - 1), bucket}))
                caps = tuple((b, 10**6) for b in listed)
                cases.append(SelectionCase(n, 1, listed, caps, factor))
                cases.append(SelectionCase(n, 10**6 + 1, listed, caps, factor))  # no room anywhere
            listed = tuple(sorted({n, top, top + 1}))
            cases.append(SelectionCase(n, 5, listed, ((top, 5), (top + 1, 5)), factor))  # n listed without capacity
    return tuple(cases)


def selections(cases: Sequence[SelectionCase] | None = None) -> Outcome:
    """spec.selection.scan_select over [n, F*n] against reference.selection.select_replay_bucket."""
    tally = Tally()
    chosen = cases if cases is not None else selection_cases()
    terms: list[IntTerm | BoolTerm] = []
    facts: list[BoolTerm] = []
    for i, case in enumerate(chosen):
        window = spec_selection.padding_window(case.num_tokens, case.factor, f"agree.window{i}")
        picked = spec_selection.scan_select(spec_selection.concrete_capture_list(case.buckets, dict(case.capacities)), window, case.required)
        terms += [picked.admitted, If(picked.admitted, picked.bucket, 0)]  # an eager decision has no bucket
        facts.append(window.holds)
    got = spec_values(terms, facts)
    for i, case in enumerate(chosen):
        expected = ref_selection.select_replay_bucket(
            num_tokens=case.num_tokens, required_local_tokens=case.required, capture_num_tokens=case.buckets,
            bucket_local_tokens=dict(case.capacities), max_padding_factor=case.factor,
        )
        actual: object = got if isinstance(got, str) else (got[2 * i + 1] if got[2 * i] else None)
        tally.compare("select_replay_bucket", case.call, 0, expected, actual)
    return tally.outcome()


# -- whole batches: admission and replay at every rank -----------------------------------------------------------


@dataclass(frozen=True)
class BatchCase:
    """One runner and one batch; ``ranks``: the ranks whose admission and replay are evaluated; ``table``: an
    explicit capacity table (None: each bucket's capture rows, the spec's on the spec's side)."""

    keying: str
    strategy: str
    cp_size: int
    align_size: int
    factor: Fraction
    buckets: tuple[int, ...]
    lengths: tuple[int, ...]
    num_tokens: int
    ranks: tuple[int, ...]
    table: tuple[tuple[int, int], ...] | None = None

    def call(self) -> str:
        rule = "" if self.table is None else f", capture_rule=CaptureRule('table', table={dict(self.table)})"
        return (
            f"ReferenceRunner(cp_size={self.cp_size}, capture_num_tokens={compact(self.buckets)}, "
            f"align_size={self.align_size}, strategy={self.strategy!r}, max_padding_factor={self.factor!r}, "
            f"keying={self.keying!r}{rule}).plan({compact(self.lengths)}, num_tokens={self.num_tokens})"
        )


def _runner(case: BatchCase) -> ReferenceRunner:
    rule = None if case.table is None else CaptureRule("table", table=dict(case.table))
    return ReferenceRunner(cp_size=case.cp_size, capture_num_tokens=case.buckets, align_size=case.align_size,
                           strategy=case.strategy, max_padding_factor=case.factor, keying=case.keying,
                           capture_rule=rule)


def _around(n: int, p: int) -> tuple[int, ...]:
    """A short capture list around n: 2P, n-1, n, n+1, 2n, 2n+1 (the window's edges at F = 2)."""
    return tuple(sorted({x for x in (2 * p, n - 1, n, n + 1, 2 * n, 2 * n + 1) if x >= 1}))


def gate_batches(p: int) -> tuple[tuple[tuple[int, ...], int], ...]:
    """(lengths, n) at the CP-active gate's edges: n = 2P-1 and 2P, one request of 2P-1 and of 2P, a short
    request mixed into long ones (first, middle, last), n padded past a short batch's sum and past a long
    one's."""
    s = 2 * p
    return (
        ((s - 1,), s - 1), ((s,), s), ((s - 1,), s), ((s - 1,), s + 1), ((1,), s),
        ((s - 1, 4 * s), 5 * s - 1), ((s, 4 * s), 5 * s), ((4 * s, s - 1, 4 * s), 9 * s - 1),
        ((4 * s, s - 1), 5 * s - 1), ((1, 5 * s), 5 * s + 1), ((s, s), 2 * s), ((s + 1,) * 3, 3 * s + 5),
    )


def rank_batches(p: int) -> tuple[tuple[int, ...], ...]:
    """CP-active batches whose ranks' loads differ (the busiest rank is first, last or in the middle)."""
    s = 2 * p
    return ((s + 1,) * 3, (2 * s - 1,) * 3, (s + p,) * 2, (s + 1, 3 * s + 2), (5 * s - 1,))


def rank_table(lengths: tuple[int, ...], p: int, kind: str) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """Buckets n, n+1, ... with capacities every rank's own load in ascending order (A = 1), the busiest
    last: a rank that decided from its own load would pick an earlier bucket than the busiest rank's."""
    n = sum(lengths)
    rows = sorted(set(ref_rank_loads(lengths, cp_size=p, strategy=kind)))
    buckets = tuple(n + i for i in range(len(rows)))
    return buckets, tuple(zip(buckets, rows))


def _global_cases(kind: str, p: int, gates: tuple[int, ...] | None = None, ranked: int | None = None) -> list[BatchCase]:
    """``gates``: which of ``gate_batches`` (all: None); ``ranked``: how many of ``rank_batches`` (all: None)."""
    a = ref_strategies.strategy_row(kind).align_size(p)
    every = tuple(range(p))
    drawn = gate_batches(p)
    out = [BatchCase("global", kind, p, a, Fraction(2), _around(n, p), lengths, n, every)
           for lengths, n in (drawn if gates is None else tuple(drawn[i] for i in gates))]
    for lengths in rank_batches(p)[:ranked] if p >= 3 else ():
        buckets, table = rank_table(lengths, p, kind)
        out.append(BatchCase("global", kind, p, 1, Fraction(2), buckets, lengths, sum(lengths), every, table))
    if p >= 2:  # n padded past the lengths, bucket n holding exactly the live rows: replay lays out the live lengths
        lengths = (2 * p + 1,) * 3
        n = sum(lengths) + 2 * p + 1
        tight = (n, max(ref_rank_loads(lengths, cp_size=p, strategy=kind))), (n + 1, 10**6)
        out.append(BatchCase("global", kind, p, 1, Fraction(2), (n, n + 1), lengths, n, every, tight))
    return out


def _local_cases(kind: str, p: int, batches: int | None = None, aligns: tuple[int, ...] = (1,)) -> list[BatchCase]:
    """The first ``batches`` (all: None) of: one request of 1, of 2P+1 thrice, of 2P-1, a short one mixed into
    a long one, one long one; each with sizes below the key m only, at m, and past F*m only; at each A of
    ``aligns`` above 1, sizes at m and at align_up(m, A) (the rows a size must hold), one below it, one past."""
    every = tuple(range(p))
    out = []
    drawn = ((1,), (2 * p + 1,) * 3, (2 * p - 1,), (2 * p - 1, 6 * p + 1), (9 * p + 2,))
    for lengths in drawn[:batches]:
        m = max(ref_rank_loads(lengths, cp_size=p, strategy=kind))
        n = sum(lengths)
        for a in aligns:
            up = -(-m // a) * a
            lists = ((m - 1,), (m - 1, m, m + 1), (m - 1, 2 * m + 1, n + 1)) if a == 1 else ((m, up), (up - 1, up + 1), (up - 1,))
            for sizes in lists:  # none; at the key; past F*m (A = 1); at the aligned rows, around them (A > 1)
                listed = tuple(sorted({x for x in sizes if x >= 1}))
                if listed:
                    out.append(BatchCase("local", kind, p, a, Fraction(2), listed, lengths, n, every))
    return out


def _window_cases() -> list[BatchCase]:
    """The window's edges through the whole runner (zigzag, P = 2): a list of n-1 and floor(F*n), or n-1 and
    floor(F*n)+1, for F = 3/2 and 2 and odd n."""
    p, s = 2, 4
    out = []
    for factor in (Fraction(3, 2), Fraction(2)):
        for lengths in ((3 * s + 1,), (2 * s + 1, 2 * s + 1)):
            n = sum(lengths)
            top = (factor.numerator * n) // factor.denominator
            for listed in ((n - 1, top), (n - 1, top + 1)):
                out.append(BatchCase("global", "zigzag", p, s, factor, listed, lengths, n, (0, 1)))
    return out


def _long_cases() -> list[BatchCase]:
    """Lists of ``LONG_LIST`` buckets, both keyings at P = 2 (both ranks): the admitted bucket past the 8th,
    the last, n above the last."""
    p, s = 2, 4
    long = tuple(s * k for k in range(1, LONG_LIST + 1))
    out = [BatchCase("global", "zigzag", p, s, Fraction(2), long, lengths, sum(lengths), (0, 1))
           for lengths in ((s * 10 + 1,), (s - 1, s * 20), (s * LONG_LIST,), (s * LONG_LIST + 1,))]
    sizes = tuple(range(1, LONG_LIST + 1))
    out += [BatchCase("local", "dual_chunk_swap", p, 1, Fraction(2), sizes, lengths, sum(lengths), (0, 1))
            for lengths in ((37,), (2 * LONG_LIST,), (2 * LONG_LIST + 5,))]
    return out


WIDE_CP_SIZES = (1, 2, 4)  # zigzag (global) and dual_chunk_swap (local) here too; every row at P = 3
MIXED_GATES = (7,)  # the gate batch every row gets: a short request in the middle of long ones
RANKED = 2  # the rank batches every row other than zigzag gets
LOCAL_ALIGNS = (1, 2, 3)  # A for dual_chunk_swap's local cases at P = 3 (vLLM's is 1; the keying rounds m up to A)


def batch_cases(keying: str | None = None) -> tuple[BatchCase, ...]:
    """Every strategy row under both keyings at P = 3 (every rank; the rows other than zigzag get the gate's
    ``MIXED_GATES`` batches and ``RANKED`` rank batches, those other than dual_chunk_swap two local batches),
    zigzag (global) and dual_chunk_swap (local) at P in ``WIDE_CP_SIZES`` too (at P = 4 the rank batches and
    two local batches), two of zigzag's rank batches at P = 5, the window's edges and the long lists;
    ``keying``: only that keying's."""
    out: list[BatchCase] = []
    for kind in ref_strategies.STRATEGY_TABLE:
        zigzag = kind == "zigzag"
        out += _global_cases(kind, 3, None if zigzag else MIXED_GATES, None if zigzag else RANKED)
        out += _local_cases(kind, 3, None if kind == "dual_chunk_swap" else 2, LOCAL_ALIGNS if kind == "dual_chunk_swap" else (1,))
    for p in WIDE_CP_SIZES:
        out += _global_cases("zigzag", p, None if p < 3 else ()) + _local_cases("dual_chunk_swap", p, None if p < 3 else 2)
    out += _global_cases("zigzag", 5, (), 2)  # every rank of P = 5 on two rank batches
    out += _window_cases() + _long_cases()
    return tuple(c for c in out if keying is None or c.keying == keying)


def _spec_capacities(case: BatchCase) -> dict[int, int | None] | str:
    """The spec's own capacity table for the case's capture list (global: each bucket's capture rows, or the
    case's table; local: none recorded, as a size holds itself whatever is recorded: a local keying that read
    recorded capacities would fall back)."""
    if case.keying == "local":
        return {}
    if case.table is not None:
        return dict(case.table)
    built = [spec_capacity.capture_local_tokens(b, case.cp_size, case.align_size, f"agree.cap{b}", case.strategy) for b in case.buckets]
    got = spec_values([c.value for c in built], [c.holds for c in built])
    if isinstance(got, str):
        return got
    return {b: int(v) for b, v in zip(case.buckets, got)}


def whole_batches(cases: Sequence[BatchCase] | None = None) -> Outcome:
    """spec admission and replay at each of the case's ranks (proofs/engine/evaluate.py ``spec_plan``) against the
    reference runner's plan: the bucket, or None for a fallback; replay must run exactly the admitted bucket."""
    tally = Tally()
    for case in cases if cases is not None else batch_cases():
        expected = _runner(case).plan(case.lengths, case.num_tokens).bucket
        capacities = _spec_capacities(case)
        if isinstance(capacities, str):
            tally.compare("admission", case.call, case.cp_size, expected, capacities)
            continue
        got = spec_plan(case.lengths, num_tokens=case.num_tokens, cp_size=case.cp_size, align_size=case.align_size,
                        strategy=case.strategy, max_padding_factor=case.factor, capture_num_tokens=case.buckets,
                        bucket_local_tokens=capacities, keying=case.keying, ranks=case.ranks)
        for j, r in enumerate(case.ranks):
            for side in ("admission", "replay"):
                actual: object = got if isinstance(got, str) else (got[j].admitted if side == "admission" else got[j].replayed)
                tally.compare(side, lambda: f"{case.call()} at rank {r}", case.cp_size, expected, actual)
    return tally.outcome()


# -- the stage ---------------------------------------------------------------------------------------------------

FAMILIES: dict[str, Callable[[], Outcome]] = {
    "tables": tables,
    "loads and rows": loads_and_rows,
    "capture capacities": capture_capacities,
    "selection": selections,
    "whole batches, global keying": lambda: whole_batches(batch_cases("global")),
    "whole batches, local keying": lambda: whole_batches(batch_cases("local")),
    "batch forms and term helpers": batch_forms,
    "claim builders": claim_builders,
    "graph paths": graph_paths,
}


def bites_of(outcome: Outcome) -> tuple[Bite, ...]:
    """One passing bite per function that agreed on every case; one failing bite per disagreement (``SHOWN``
    per function, the rest counted in one more)."""
    out: list[Bite] = []
    for function, count in outcome.checked.items():
        found = [d for d in outcome.disagreements if d.function == function]
        if not found:
            out.append(Bite(THEOREM, function, f"the spec agrees with the reference on {count} edge cases", 0,
                            Status.PROVED, Status.PROVED))
            continue
        for d in found[:SHOWN]:
            out.append(Bite(THEOREM, function, f"DISAGREES: {d.inputs}: reference (expected) {d.expected!r}, spec "
                            f"(actual) {d.actual!r}", d.cp_size, Status.PROVED, Status.REFUTED))
        if len(found) > SHOWN:
            out.append(Bite(THEOREM, function, f"DISAGREES on {len(found) - SHOWN} more of {count} edge cases", 0,
                            Status.PROVED, Status.REFUTED))
    return tuple(out)


def agreement(family: str) -> tuple[Bite, ...]:
    """One family's bites (a name of ``FAMILIES``; ValueError names them)."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}; got {family!r}")
    with one_context():  # the family's evaluations, always in this order, in one fresh context
        return bites_of(FAMILIES[family]())
