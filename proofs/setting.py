"""The setting every end-to-end theorem (proofs/end_to_end.py) quantifies over: the scope constants
(capture-list length, padding factors, strategies per P, the resource limit), one ``Setting`` per
(strategy, F) with its batch of any size and its capture state, and the two sides built on it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import z3

from cpgraph.proofs.claims import ALIGN_FACTOR, rows_needed
from cpgraph.proofs.obligation import Query
from cpgraph.proofs.replay_batch import class_batch_replay
from cpgraph.spec.admission import Admission, RankSetup
from cpgraph.spec.batch import ClassBatch, class_batch, class_loads
from cpgraph.spec.capacity import capture_local_tokens
from cpgraph.spec.replay import Replay, ReplayLayout
from cpgraph.spec.selection import capture_list_is_sorted, symbolic_capture_list
from cpgraph.spec.strategies import STRATEGIES
from cpgraph.spec.terms import BoolTerm, IntTerm

LIST_LENGTH = 3  # buckets per capture list here; the scan itself is proved for every list length
FACTORS = (Fraction(2), Fraction(3, 2))  # F for every theorem (F = 2 only above P = 8); padding_limit: PADDING_FACTORS
PADDING_FACTORS = (Fraction(1), Fraction(5, 4), Fraction(3, 2), Fraction(2), Fraction(4))
STRATEGIES_FULL_SCOPE = ("zigzag", "zigzag_pad")  # every P; the other strategies up to OTHER_STRATEGIES_MAX_P
OTHER_STRATEGIES_MAX_P = 8
RLIMIT = 20_000_000  # z3 resource units per query (deterministic); the costliest here needs ~5M at P = 32

Admit = Callable[[ClassBatch, IntTerm, RankSetup, int, str], Admission]
ReplayFn = Callable[..., Replay]


def strategies_at(cp_size: int) -> tuple[str, ...]:
    """The strategies each end-to-end theorem covers at ``cp_size``."""
    return tuple(STRATEGIES) if cp_size <= OTHER_STRATEGIES_MAX_P else STRATEGIES_FULL_SCOPE


# -- the setting shared by every theorem ---------------------------------------------------------------------


class Setting:
    """One batch, one n, one capture list and a rank's setup, for P, a strategy and a factor."""

    def __init__(self, cp_size: int, strategy: str, factor: Fraction, *, captured: bool = False) -> None:
        p = cp_size
        self.cp_size, self.strategy, self.factor = p, strategy, factor
        self.align = ALIGN_FACTOR[strategy] * p  # the claim side's A
        spec_align = STRATEGIES[strategy].align_size(p)  # the runner's A, from the spec's table
        self.batch = class_batch(p, "batch")
        self.n = z3.Int("n")
        self.capture = symbolic_capture_list(LIST_LENGTH, "cap")
        self.setup = RankSetup(strategy, p, spec_align, factor, self.capture)
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
        self.size = self.n + 4096 * self.batch.requests  # fewest requests first, then fewest tokens

    def rows_needed(self, name: str) -> tuple[IntTerm, BoolTerm]:
        """The claim side's own live loads (the class formula) and the rows they need, with their facts."""
        loads = class_loads(self.batch, self.strategy, name)
        need, facts = rows_needed(loads.loads, self.align, name)
        return need, z3.And(loads.holds, facts)

    def chain(
        self,
        theorem: str,
        steps: Sequence[tuple[str, BoolTerm] | tuple[str, BoolTerm, Sequence[BoolTerm]]],
        facts: Sequence[BoolTerm],
        shown: Sequence[tuple[str, IntTerm]],
    ) -> tuple[Query, ...]:
        """One checked chain: step i is proved under the setting, every earlier step's claim, and ``facts``
        (or the step's own subset of facts, its third element: fewer hypotheses make a stronger lemma);
        the last step is the theorem's claim. A lemma is stated once (its builder) and used as proved."""
        shown_all = (("n", self.n), ("requests", self.batch.requests), *shown)
        replay_of = class_batch_replay(
            theorem=theorem, cp_size=self.cp_size, strategy=self.strategy, factor=self.factor,
            list_length=LIST_LENGTH, batch_name="batch",
        )
        out: list[Query] = []
        proved: list[BoolTerm] = []
        *lemmas, last = steps
        final = last[1]
        # A lemma is proved where the theorem's claim fails (Not(final) => lemma): the chain proves the
        # same theorem, and a refuted lemma's model is a counterexample to the theorem itself. The last
        # step is the claim itself.
        guarded = [(step, z3.Implies(z3.Not(final), step[1])) for step in lemmas]
        for step, claim in (*guarded, (last, final)):
            part = step[0]
            own = tuple(step[2]) if len(step) == 3 else tuple(facts)
            out.append(
                Query(
                    f"{part} ({self.strategy}, F={self.factor})",
                    claim,
                    (*self.hypotheses, *own, *proved),
                    size=self.size,
                    shown=tuple(shown_all),
                    replay=replay_of,
                    rlimit=RLIMIT,
                )
            )
            proved.append(claim)
        return tuple(out)


def _settings(cp_size: int, factors: Sequence[Fraction] | None = None, *, captured: bool = False) -> list[Setting]:
    if factors is None:
        factors = FACTORS if cp_size <= OTHER_STRATEGIES_MAX_P else FACTORS[:1]
    return [Setting(cp_size, s, f, captured=captured) for s in strategies_at(cp_size) for f in factors]


def _sides(s: Setting, admit_fn: Admit, replay_fn: ReplayFn, layout: ReplayLayout) -> tuple[Admission, Replay]:
    a = admit_fn(s.batch, s.n, s.setup, 0, "admit")
    r = replay_fn(s.batch, s.n, s.setup, 0, "replay", layout=layout)
    return a, r
