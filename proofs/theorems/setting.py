"""The setting every end-to-end theorem (proofs/theorems/end_to_end.py, proofs/theorems/end_to_end_local.py) quantifies over:
the scope constants (capture-list length, padding factors, strategies per P, the resource limit), one
``Setting`` per (strategy, F, keying, batch form) with its batch and its capture state, and the two sides
built on it.

Batch forms (spec/batch.py): ``classes`` (ClassBatch: any number of requests, the class-encodable
strategies only: asking for another is a ValueError), ``any`` (AnyLayout: free per-rank loads, every
layout at once) and ``requests`` (RequestsBatch: a few requests of symbolic lengths, any strategy)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

import z3

from cpgraph.spec.logic import And, Implies, Not
from cpgraph.proofs.theorems.claims import documented_align, rows_needed, same_definitions
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.engine.parameters import EVERY_RANK_MAX_P as EVERY_RANK_MAX_P  # read by the teeth pass here: the value the run uses
from cpgraph.proofs.engine.replay_batch import any_layout_replay, class_batch_replay, requests_replay
from cpgraph.spec.admission import Admission, RankSetup
from cpgraph.spec.batch import LiveBatch, any_layout, class_batch, requests_batch
from cpgraph.spec.capacity import capture_local_tokens
from cpgraph.spec.keying import keying as keying_row
from cpgraph.spec.replay import Replay, ReplayLayout
from cpgraph.spec.selection import capture_list_is_sorted, symbolic_capture_list
from cpgraph.spec.strategies import CLASS_ENCODABLE, STRATEGIES, class_encodable
from cpgraph.spec.terms import BoolTerm, IntTerm, all_of

LIST_LENGTH = 3  # buckets per capture list here at every P; the scan itself is proved for every list length
LONG_LIST_LENGTH = 32  # and, end to end, lists this long at LONG_LIST_CP_SIZES (every chain of every theorem)
LONG_LIST_CP_SIZES = (2,)  # a 32-bucket chain costs about 10x a 3-bucket one, so not at every P
FACTORS = (Fraction(2), Fraction(3, 2))  # F for every theorem (F = 2 only above P = 8); padding_limit: PADDING_FACTORS
PADDING_FACTORS = (Fraction(1), Fraction(5, 4), Fraction(3, 2), Fraction(2), Fraction(4))
STRATEGIES_FULL_SCOPE = ("zigzag",)  # every P; the other class-encodable strategies up to OTHER_STRATEGIES_MAX_P
OTHER_STRATEGIES_MAX_P = 8
RLIMIT = 20_000_000  # z3 resource units per query (deterministic); the costliest here needs ~5M at P = 32
LONG_RLIMIT = 80_000_000  # on a 32-bucket list: the costliest step needs ~10M, and up to 2x that under other z3 seeds
BATCH_FORMS = ("classes", "any", "requests")
REQUESTS = 2  # requests (of any lengths, 0 = absent) in a ``requests`` batch

Admit = Callable[[LiveBatch, IntTerm, RankSetup, int, str], Admission]
ReplayFn = Callable[..., Replay]
Step = tuple[str, BoolTerm] | tuple[str, BoolTerm, Sequence[BoolTerm]]


def strategies_at(cp_size: int) -> tuple[str, ...]:
    """The strategies the class-batch end-to-end theorems cover at ``cp_size``: the class-encodable rows
    (spec/strategies.py ``CLASS_ENCODABLE``; the DualChunkSwap rows are not, and are covered under the
    local keying by proofs/theorems/end_to_end_local.py), all of them up to P = 8, zigzag above."""
    return CLASS_ENCODABLE if cp_size <= OTHER_STRATEGIES_MAX_P else STRATEGIES_FULL_SCOPE


def list_lengths_at(cp_size: int) -> tuple[int, ...]:
    """The capture-list lengths the end-to-end theorems are built with at ``cp_size``: ``LIST_LENGTH`` at every
    P, and ``LONG_LIST_LENGTH`` too at ``LONG_LIST_CP_SIZES``."""
    return (LIST_LENGTH, LONG_LIST_LENGTH) if cp_size in LONG_LIST_CP_SIZES else (LIST_LENGTH,)


def ranks_at(cp_size: int) -> tuple[int, ...]:
    """The deciding ranks the rank-consensus theorems compare with rank 0: every rank up to
    ``EVERY_RANK_MAX_P``; above it the first, the middle and the last one (0, P/2, P-1), so a rule that differs
    at the ends or in the middle cannot hide."""
    if cp_size < 1:
        raise ValueError(f"cp_size must be an int >= 1, got {cp_size}")
    if cp_size <= EVERY_RANK_MAX_P:
        return tuple(range(cp_size))
    return (0, cp_size // 2, cp_size - 1)


# -- built once per task ------------------------------------------------------------------------------------------

_SHARED: dict[tuple[Hashable, ...], Any] | None = None  # the innermost ``shared_settings`` block's builds, if any
T = TypeVar("T")


@contextlib.contextmanager
def shared_settings() -> Iterator[None]:
    """Inside the block, a setting and the sides built on it are built once per key and shared by every theorem
    built in the block (proofs/run.py: one worker task, every obligation at one parameter). Only Python's work
    is saved: z3 hash-conses terms, and the builders name their variables deterministically, so a shared term
    is the very term a rebuild gives. Outside any block nothing is shared, so a caller that patches a spec
    builder between two builds sees its patch."""
    global _SHARED
    outer, _SHARED = _SHARED, {}
    try:
        yield
    finally:
        _SHARED = outer


def _shared(key: tuple[Hashable, ...], build: Callable[[], T]) -> T:
    built = _SHARED
    if built is None:
        return build()
    if key not in built:
        built[key] = build()
    value: T = built[key]
    return value


def setting(
    cp_size: int, strategy: str, factor: Fraction, *, captured: bool = False, keying: str = "global", form: str = "classes",
    list_length: int = LIST_LENGTH,
) -> Setting:
    """``Setting(...)``, shared inside a ``shared_settings`` block."""
    return _shared(("setting", cp_size, strategy, factor, captured, keying, form, list_length),
                   lambda: Setting(cp_size, strategy, factor, captured=captured, keying=keying, form=form,
                                   list_length=list_length))


# -- the setting shared by every theorem ---------------------------------------------------------------------


class Setting:
    """One batch, one n, one capture list and a rank's setup, for P, a strategy, a factor, a keying
    (default global), a batch form (default classes; see the module docstring) and a capture-list length
    (default ``LIST_LENGTH``)."""

    def __init__(
        self, cp_size: int, strategy: str, factor: Fraction, *, captured: bool = False, keying: str = "global",
        form: str = "classes", list_length: int = LIST_LENGTH,
    ) -> None:
        p = cp_size
        if isinstance(list_length, bool) or not isinstance(list_length, int) or list_length < 1:
            raise ValueError(f"list_length must be an int >= 1 (buckets per capture list); got {list_length!r}")
        self.list_length = list_length
        keying_row(keying)  # an unknown keying is a ValueError here, before any term is built
        self.cp_size, self.strategy, self.factor, self.keying, self.form = p, strategy, factor, keying, form
        self.align = documented_align(strategy, p)  # the claim side's A
        spec_align = STRATEGIES[strategy].align_size(p)  # the runner's A, from the spec's table
        self.batch: LiveBatch
        if form not in BATCH_FORMS:
            raise ValueError(f"form must be one of {', '.join(BATCH_FORMS)}; got {form!r}")
        if form == "classes":
            class_encodable(strategy)  # a ValueError naming the class-encodable rows, never a silent skip
            self.batch = class_batch(p, "batch")
        elif form == "any":
            self.batch = any_layout(p, "batch")
        else:
            self.batch = requests_batch(p, REQUESTS, "batch")
        self.n = z3.Int("n")
        self.capture = symbolic_capture_list(list_length, "cap")
        self.setup = RankSetup(strategy, p, spec_align, factor, self.capture, keying)
        facts = [
            self.batch.holds,
            self.n >= self.batch.tokens,
            capture_list_is_sorted(self.capture),
            *[c >= 0 for c in self.capture.capacities],
        ]
        if captured:  # capacities recorded by the capture rule: each bucket's own capture layout
            for i, b in enumerate(self.capture.buckets):
                rule = capture_local_tokens(b, p, spec_align, f"capture{i}", strategy)
                facts += [rule.holds, self.capture.capacities[i] == rule.value, self.capture.recorded[i]]
        self.hypotheses: tuple[BoolTerm, ...] = tuple(facts)
        # What a counterexample is minimised on: fewest requests first, then fewest tokens (and, for the
        # requests and any-layout forms, n padded past the lengths' sum last: a batch with n = its tokens first).
        self.size = self.n + 4096 * self.batch.requests
        if form != "classes":
            self.size += 64 * (self.n - self.batch.tokens)

    @property
    def label(self) -> str:
        """How the chain's parts are labelled: "(strategy, F=...)" under global (classes), "(strategy,
        keying)" or "(any layout, keying)" otherwise (", F=..." after the keying under global); ", K=32" before
        the ")" on a list longer than ``LIST_LENGTH``."""
        longer = f", K={self.list_length}" if self.list_length != LIST_LENGTH else ""
        if self.keying == "global" and self.form == "classes":
            return f"({self.strategy}, F={self.factor}{longer})"
        what = "any layout" if self.form == "any" else self.strategy
        factor = f", F={self.factor}" if self.keying == "global" else ""  # the local keying reads no F
        return f"({what}, {self.keying}{factor}{longer})"

    def admitted(self, admit_fn: Admit, name: str = "admit") -> Admission:
        """``admit_fn`` on this setting's batch, n and setup at rank 0, under ``name`` (shared inside a
        ``shared_settings`` block)."""
        return _shared(("admit", self, admit_fn, name), lambda: admit_fn(self.batch, self.n, self.setup, 0, name))

    def replayed(self, replay_fn: ReplayFn, name: str = "replay", **how: Hashable) -> Replay:
        """``replay_fn`` on this setting's batch, n and setup at rank 0, under ``name``, ``how`` passed on (shared
        inside a ``shared_settings`` block)."""
        return _shared(("replay", self, replay_fn, name, *sorted(how.items())),
                       lambda: replay_fn(self.batch, self.n, self.setup, 0, name, **how))

    def layouts_agree(self, first: str, second: str) -> tuple[tuple[str, BoolTerm, tuple[BoolTerm, ...]], ...]:
        """The lemma steps of ``_layouts_agree``, shared inside a ``shared_settings`` block."""
        return _shared(("agree", self, first, second), lambda: self._layouts_agree(first, second))

    def _layouts_agree(self, first: str, second: str) -> tuple[tuple[str, BoolTerm, tuple[BoolTerm, ...]], ...]:
        """Lemma steps for a ``requests`` batch: the layouts two sides built of the same lengths under the names
        ``first`` and ``second`` (admission lays out under "{name}.live", replay under "{name}.layout", the claim
        side under its own name) agree: first every fresh variable they define for the same request (the same
        name past the prefix: a chunk size, a quotient), then rank by rank. Both are proved from the two sides'
        own facts (divmod uniqueness), not assumed; they keep the later steps small. None for the other forms
        (a class state's loads are small sums; any layout's loads are shared variables)."""
        if self.form != "requests":
            return ()
        a = self.batch.layout_loads(self.strategy, first)
        b = self.batch.layout_loads(self.strategy, second)
        own = (a.holds, b.holds)
        return (
            (f"definitions agree ({first}, {second})", same_definitions((*a.loads, a.holds), first, (*b.loads, b.holds), second), own),
            (f"layouts agree ({first}, {second})", all_of(x == y for x, y in zip(a.loads, b.loads)), own),
        )

    def rows_needed(self, name: str) -> tuple[IntTerm, BoolTerm]:
        """The claim side's own live loads and the rows they need, with their facts (under local: the key m,
        the largest load, which is the rows a size must hold); shared inside a ``shared_settings`` block."""
        return _shared(("rows", self, name), lambda: self._rows_needed(name))

    def _rows_needed(self, name: str) -> tuple[IntTerm, BoolTerm]:
        loads = self.batch.layout_loads(self.strategy, name)
        need, facts = rows_needed(loads.loads, self.align if self.keying == "global" else 1, name)
        return need, And(loads.holds, facts)

    def chain(
        self,
        theorem: str,
        steps: Sequence[tuple[str, BoolTerm] | tuple[str, BoolTerm, Sequence[BoolTerm]]],
        facts: Sequence[BoolTerm],
        shown: Sequence[tuple[str, IntTerm]],
        *,
        guarded: bool = True,
    ) -> tuple[Query, ...]:
        """One checked chain: step i is proved under the setting, every earlier step's claim, and ``facts``
        (or the step's own subset of facts, its third element: fewer hypotheses make a stronger lemma);
        the last step is the theorem's claim. A lemma is stated once (its builder) and used as proved."""
        shown_all = (("n", self.n), ("tokens", self.batch.tokens), ("requests", self.batch.requests), *shown)
        if self.form == "classes":
            replay_of = class_batch_replay(
                theorem=theorem, cp_size=self.cp_size, strategy=self.strategy, factor=self.factor,
                list_length=self.list_length, batch_name="batch",
            )
        elif self.form == "requests":
            replay_of = requests_replay(
                theorem=theorem, cp_size=self.cp_size, strategy=self.strategy, keying=self.keying,
                factor=self.factor, list_length=self.list_length, batch_name="batch", requests=REQUESTS,
            )
        else:
            replay_of = any_layout_replay(theorem=theorem, cp_size=self.cp_size, list_length=self.list_length, batch_name="batch")
        out: list[Query] = []
        proved: list[BoolTerm] = []
        *lemmas, last = steps
        final = last[1]
        # A lemma is proved where the theorem's claim fails (Not(final) => lemma): the chain proves the
        # same theorem, and a refuted lemma's model is a counterexample to the theorem itself. The last
        # step is the claim itself.
        # (``guarded`` False: each lemma as stated, a step of the theorem in its own right, so a refuted lemma
        # is a counterexample to the theorem all the same.)
        stated = [(step, Implies(Not(final), step[1]) if guarded else step[1]) for step in lemmas]
        for step, claim in (*stated, (last, final)):
            part, own_claim, *own = step  # a step may state its own facts: fewer hypotheses, a stronger lemma
            used = tuple(*own) if own else tuple(facts)
            ids = {f.get_id() for f in used}
            out.append(
                Query(
                    f"{part} {self.label}",
                    claim,
                    (*self.hypotheses, *used, *proved),
                    size=self.size,
                    shown=tuple(shown_all),
                    replay=replay_of,
                    rlimit=RLIMIT if self.list_length == LIST_LENGTH else LONG_RLIMIT,
                    lemma=own_claim if guarded and step is not last else None,
                    definitions=tuple(f for f in facts if f.get_id() not in ids),
                )
            )
            proved.append(claim)
        return tuple(out)


def _settings(
    cp_size: int, factors: Sequence[Fraction] | None = None, *, captured: bool = False, lengths: Sequence[int] | None = None
) -> list[Setting]:
    """The class-batch settings at ``cp_size``: every strategy and factor there, on every list length there
    (``lengths``, default ``list_lengths_at``)."""
    if factors is None:
        factors = FACTORS if cp_size <= OTHER_STRATEGIES_MAX_P else FACTORS[:1]
    return [setting(cp_size, s, f, captured=captured, list_length=k)
            for k in (list_lengths_at(cp_size) if lengths is None else lengths) for s in strategies_at(cp_size) for f in factors]


def _sides(s: Setting, admit_fn: Admit, replay_fn: ReplayFn, layout: ReplayLayout) -> tuple[Admission, Replay]:
    return s.admitted(admit_fn), s.replayed(replay_fn, layout=layout)


@dataclass(frozen=True)
class RankSides:
    """Admission and replay on rank 0 (under the setting's own capture state) and on other ranks (under the
    setup they were given), each built under its own names (``rank{r}``, ``replay{r}``): a rule that reads the
    rank gives its ranks different terms."""

    admission: Admission
    replay: Replay
    others: tuple[tuple[int, Admission, Replay], ...]

    @property
    def holds(self) -> tuple[BoolTerm, ...]:
        """Every side's defining facts."""
        return (self.admission.holds, self.replay.holds, *(x for _, a, r in self.others for x in (a.holds, r.holds)))


def rank_sides(
    s: Setting, admit_fn: Admit, replay_fn: ReplayFn, other: RankSetup, ranks: Sequence[int] | None = None, **how: object
) -> RankSides:
    """Rank 0's admission and replay under ``s.setup``, and every other rank of ``ranks`` (default
    ``ranks_at``; rank 0 again, under ``other``, at P = 1) under ``other``; ``how`` goes to every replay."""
    wanted = ranks_at(s.cp_size) if ranks is None else tuple(ranks)
    first = admit_fn(s.batch, s.n, s.setup, 0, "rank0")
    base = replay_fn(s.batch, s.n, s.setup, 0, "replay0", **how)
    others = []
    for rank in [r for r in wanted if r] or [0]:
        tag = _tag(rank)
        others.append((rank, admit_fn(s.batch, s.n, other, rank, tag), replay_fn(s.batch, s.n, other, rank, tag.replace("rank", "replay"), **how)))
    return RankSides(first, base, tuple(others))


def every_rank_alike(theorem: str, s: Setting, admit_fn: Admit, replay_fn: ReplayFn) -> tuple[Query, ...]:
    """Every rank of ``ranks_at`` admits and replays exactly as rank 0 does under the same capture state (the
    same rows, admit verdict and bucket, the same replay rows, verdict and bucket), one chain per rank: the
    rows, then the keys each selector call compared (both proved first, unguarded: steps of the theorem, not
    hints; the keys keep a long list's decision step small), then the decisions under them. ``s`` is an
    any-layout setting (a ValueError otherwise): the loads are free, so no layout or strategy hides a rule
    that reads the deciding rank."""
    if s.form != "any":
        raise ValueError(f"every_rank_alike needs an any-layout setting (form 'any'); got form {s.form!r}")
    sides = rank_sides(s, admit_fn, replay_fn, s.setup)
    first, base = sides.admission, sides.replay
    out: list[Query] = []
    for rank, a, r in sides.others:
        facts = (first.holds, base.holds, a.holds, r.holds)
        rows = And(first.required == a.required, base.required == r.required)
        keys = And(first.key == a.key, base.key == r.key)
        claim = And(  # the rows are the chain's first step, proved on their own (unguarded): part of the theorem
            first.selection.admitted == a.selection.admitted,
            Implies(first.selection.admitted, first.selection.bucket == a.selection.bucket),
            base.succeeded == r.succeeded,
            Implies(base.succeeded, base.selection.bucket == r.selection.bucket),
        )
        steps: tuple[Step, ...] = (
            (f"rows agree, rank {rank}", rows, facts),
            (f"keys agree, rank {rank}", keys, facts),  # the key each selector call compared (local: m)
            (f"rank_consensus, rank {rank}", claim),
        )
        out += s.chain(theorem, steps, facts, (("rank 0 bucket", first.selection.bucket), (f"rank {rank} bucket", a.selection.bucket),
                                               ("rank 0 replays", base.selection.bucket), (f"rank {rank} replays", r.selection.bucket)),
                       guarded=False)
    return tuple(out)


def _tag(rank: int) -> str:
    return f"rank{rank}" if rank else "rank0.again"
