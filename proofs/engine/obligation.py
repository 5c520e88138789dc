"""Proof obligations: named theorems that build solver queries over one parameter, with their scope.

Proof obligations: a theorem is a builder of solver queries over one parameter (cp_size, capture-list
length, or none); the registry (proofs/registry.py) lists them with their scope for the CLI and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from cpgraph.spec.logic import If
from cpgraph.proofs.engine.check import DEFAULT_RLIMIT, Value
from cpgraph.proofs.engine.parameters import MAX_LIST_LENGTH, SAMPLED_CP_SIZES, SMALL_CP_SIZES
from cpgraph.proofs.engine.scope import SCOPE, scope_of
from cpgraph.spec.terms import BoolTerm, IntTerm

OVER = ("cp_size", "cp_size_sampled", "cp_size_small", "list_length", "once")

Replay = Callable[[Mapping[str, Value]], str]


@dataclass(frozen=True)
class Query:
    """One solver call: ``hypotheses => claim``.

    ``part`` names the step of the argument (e.g. "request" lemma, induction "step", final "bound").
    ``size`` is what counterexample minimisation shrinks (tokens plus requests); ``shown`` are named terms
    a counterexample prints; ``replay`` turns a model into a concrete run of the reference and a
    paste-able regression test.
    """

    part: str
    claim: BoolTerm
    hypotheses: tuple[BoolTerm, ...]
    size: IntTerm | None = None
    shown: tuple[tuple[str, IntTerm], ...] = ()
    replay: Replay | None = None
    rlimit: int = DEFAULT_RLIMIT
    lemma: BoolTerm | None = None  # a guarded lemma step's own statement: the teeth pass checks it holds unguarded
    # Facts a chain's step leaves out to stay small (the sides' definitions; it is proved from earlier lemmas): a
    # refutation is checked again with them, so a counterexample is a run of the sides (proofs/engine/counterexample.py).
    definitions: tuple[BoolTerm, ...] = ()


Theorem = Callable[[int], tuple[Query, ...]]


def flag(fact: BoolTerm) -> IntTerm:
    """How a counterexample shows a verdict among its terms: 1 where ``fact`` holds, else 0."""
    return If(fact, 1, 0)


@dataclass(frozen=True)
class Obligation:
    """A named theorem with its scope; ``over`` says what its parameter ranges over."""

    name: str
    scope: str  # may mention {cp_max}
    doc: str
    over: str  # "cp_size" (1..cp_max), "cp_size_sampled" (SAMPLED_CP_SIZES <= cp_max), "cp_size_small"
    # (SMALL_CP_SIZES <= cp_max), "list_length" (1..32), "once"
    build: Theorem = field(repr=False)

    def __post_init__(self) -> None:
        if self.over not in OVER:
            raise ValueError(f"over must be one of {', '.join(OVER)}; got {self.over!r}")

    def parameters(self, cp_max: int) -> tuple[int, ...]:
        """The parameter values checked: cp_size 1..cp_max, list length 1..32, or the single 0."""
        if self.over == "cp_size":
            return tuple(range(1, cp_max + 1))
        if self.over == "cp_size_sampled":
            return tuple(p for p in SAMPLED_CP_SIZES if p <= cp_max)
        if self.over == "cp_size_small":
            return tuple(p for p in SMALL_CP_SIZES if p <= cp_max)
        if self.over == "list_length":
            return tuple(range(1, MAX_LIST_LENGTH + 1))
        return (0,)

    def scope_for(self, cp_max: int) -> str:
        """The scope as a sentence: the declared one (proofs/engine/scope.py) where the table has this theorem, else
        ``scope`` with {cp_max}, {sampled} and {small} filled in."""
        if self.name in SCOPE:
            return SCOPE[self.name].text(cp_max)
        sampled = ", ".join(str(p) for p in SAMPLED_CP_SIZES if p <= cp_max)
        small = ", ".join(str(p) for p in SMALL_CP_SIZES if p <= cp_max)
        return self.scope.format(cp_max=cp_max, sampled="{" + sampled + "}", small="{" + small + "}")

    def label(self, parameter: int) -> str:
        if self.over.startswith("cp_size"):
            return f"P={parameter}"
        return {"list_length": f"K={parameter}", "once": "symbolic"}[self.over]


def obligation(build: Theorem, *, scope: str | None = None, over: str) -> Obligation:
    """An obligation named and documented by its builder (the theorem's name is the function's); its scope is
    the one declared in proofs/engine/scope.py unless ``scope`` is given (a theorem the table does not have)."""
    if scope is None:
        scope = scope_of(build.__name__).text(None)
    doc = " ".join((build.__doc__ or "").split())
    if not doc:
        raise ValueError(f"theorem {build.__name__} needs a plain-English docstring")
    return Obligation(build.__name__, scope, doc, over, build)
