"""The one checking helper: a claim under hypotheses gets one of three verdicts.

- proved: the hypotheses and the claim's negation are unsatisfiable;
- refuted: a model of the hypotheses that breaks the claim (every named variable, read back as ints/bools);
- unknown: the solver gave up, with its reason. Unknown is a failure, never a pass.

Limits are z3's deterministic ``rlimit`` (resource units), not wall-clock timeouts, so a verdict does not
depend on machine load. Every query runs in a fresh z3 context its terms are translated into
(``_isolated``): z3's search follows its terms' ids, and in a shared context those ids depend on every term
built before, so the same query could need more units after other work in the same process (a test
worker's history under pytest-xdist) and run out of its limit. Isolated, a query's cost is one number. A
run of queries that always runs in the same order (one theorem at one parameter) shares one fresh context
(``one_context``): still independent of the process's history, at one context's cost. Non-vacuity uses the same helper: ``check(False, hypotheses=h)`` must be refuted,
and the refuting model is a witness that ``h`` is satisfiable.

Second opinions (``cpgraph prove --cross-check cvc5 --seeds N``) run here too, so this module stays the only
place that runs a solver:
- ``check(..., seed=s)`` re-runs a query under z3's random seed ``s`` (smt.random_seed and sat.random_seed);
  a verdict that changes with the seed is unstable.
- ``cross_check`` decides the same query with cvc5. The z3 terms are translated node by node into cvc5's
  own term API (``to_cvc5``; no SMT-LIB text round trip, whose z3 printer emits forms such as a unary
  ``(+ x)`` that cvc5's strict parser rejects), quantifiers and uninterpreted functions included. Its limit
  is cvc5's deterministic ``rlimit-per`` (resource units, per check), never wall-clock. An operator the
  translator does not know is an ``unknown`` with the operator named, never a silent skip.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import importlib.util
import inspect
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from cpgraph.proofs.engine import cache
from cpgraph.spec.logic import Not, Or
from cpgraph.spec.terms import BoolTerm

DEFAULT_RLIMIT = 5_000_000  # the costliest proof here needs ~0.9M units (<0.1 s); a runaway query stops in ~1-4 s

Value = int | bool


class Status(str, enum.Enum):
    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


class _Block:
    """A ``one_context`` block's context, where its queries are solved (made on first use)."""

    def __init__(self) -> None:
        self.solve: z3.Context | None = None


_BLOCK: list[_Block] = []  # the innermost ``one_context`` block, if any


@contextlib.contextmanager
def one_context() -> Iterator[None]:
    """Inside the block, every query translates into one context made for the block instead of one of its
    own. For a run of queries that always runs in the same order (one theorem at one parameter, one family
    of checks): each query's ids then depend only on the queries before it in the block, never on what the
    process ran before, and the block pays for one context (a few ms each) instead of one per query. The
    context is made when the block's first query is solved: a block answered from the proof cache makes none
    (a query solved after others were reused then starts from a context they never touched: its rlimit, with
    its 5x headroom, is the same)."""
    _BLOCK.append(_Block())
    try:
        yield
    finally:
        _BLOCK.pop()


def _isolated(terms: Sequence[z3.ExprRef], probe: _Probe | None = None) -> tuple[z3.Context, list[z3.ExprRef]]:
    """A context of the query's own (or the enclosing ``one_context`` block's) and ``terms`` translated into it
    (node ids assigned in translation order): the solver's work on them no longer depends on what else this
    process built. ``probe``: its copy of ``terms``, when ``_probe`` printed them in the block's context already."""
    if probe is not None and probe.local:
        return probe.local[0].ctx, probe.local
    if not _BLOCK:
        ctx = z3.Context()
    else:
        block = _BLOCK[-1]
        if block.solve is None:
            block.solve = z3.Context()
        ctx = block.solve
    return ctx, [t.translate(ctx) for t in terms]


# -- the proof cache (proofs/engine/cache.py): every solver call below asks it first ----------------------------


def _smt2(terms: Sequence[z3.ExprRef]) -> str:
    """The SMT-LIB text of the conjunction of ``terms`` (declarations, then assertions), as z3 prints it."""
    if not terms:
        return "(assert true)"
    ctx = terms[-1].ctx
    head = (z3.Ast * max(1, len(terms) - 1))()
    for i, term in enumerate(terms[:-1]):
        head[i] = term.as_ast()
    return str(z3.Z3_benchmark_to_smtlib_string(ctx.ref(), "", "", "unknown", "", len(terms) - 1, head, terms[-1].as_ast()))


@dataclass(frozen=True)
class _Probe:
    """A query's cache key, its renaming to canonical names (``cache.canonical``), the stored entry, if any, and
    the terms as printed, when they were printed in the block's solver context (``_isolated`` solves them there)."""

    key: str
    names: Mapping[str, str]
    entry: cache.Entry | None
    local: list[z3.ExprRef] = field(default_factory=list)

    def model(self, values: Mapping[str, Value]) -> dict[str, Value]:
        """Stored (canonical) names back to this query's names."""
        back = {new: old for old, new in self.names.items()}
        return {back.get(name, name): value for name, value in values.items()}

    def keep(self, status: str, model: Mapping[str, Value] | None = None, shown: Mapping[str, Value] | None = None) -> None:
        """Store ``status`` under the key: unsat as it is; sat (and determined) with the solver's ``model`` (every
        reuse replays it on the query first: one that does not replay is solved again), stored with the caller's
        ``shown`` part of it."""
        if not cache.current().writes:
            return
        assignment = {}
        if status != "unsat":
            if not model:
                return
            assignment = {self.names.get(k, k): v for k, v in model.items()}
        kept = {self.names.get(k, k): v for k, v in (shown or {}).items()}
        cache.store(cache.Entry(self.key, status, kept, assignment))


_TEXT: list[z3.Context] = []  # this process's printing context (``_probe``), made on first use


def _probe(terms: Sequence[z3.ExprRef], solver: str, version: str, options: str, *, solving: bool = False) -> _Probe:
    """Look ``terms`` up (the text alone when the cache is written but not read: ``--rebuild-cache``).

    The text is printed from a copy of the terms in this process's printing context, which holds nothing else
    between two probes (the copy is dropped once printed), never from the terms themselves: z3's printer binds
    a shared subterm to a ``let`` by how many references it has, and in the main context other live terms (a
    parameter's cached sides, another theorem's queries) add references, so the same query printed there reads
    differently from task to task. One context for the whole process, not one per query or per block: making a
    context costs ~2.7 ms of CPU (most of the cache's cold overhead when each block made one), and the printed
    text is the same either way (measured on the 6,451 queries of ``cpgraph prove --cp-max 8``, in order and
    shuffled: not one differs from the text printed in a fresh context). Were a text ever to differ, it would
    only be a miss: the key is the text itself, so an entry is only ever reused for the very query it was
    stored for.

    With ``solving`` (the caller solves these very terms on a miss: ``check``, ``satisfiable``), inside a block
    whose solver context exists (a query of the block was solved), the terms are printed there instead and kept
    for the solver: one translation, not two, in a cold run. The text is the same: solving leaves no live term
    behind (measured on the same 6,451 queries, each printed in its block's context after the block's queries
    before it were solved as ``check`` solves them: not one differs from the fresh context's text)."""
    setting = cache.current()
    if not setting.writes:
        return _Probe("", {}, None)
    block = _BLOCK[-1] if _BLOCK else None
    if solving and block is not None and block.solve is not None and terms:
        local = [t.translate(block.solve) for t in terms]
        text, names = cache.canonical(_smt2(local))
        name = cache.key(text, solver, version, options)
        return _Probe(name, names, cache.load(name, setting), local)
    if not _TEXT:
        _TEXT.append(z3.Context())
    local = [t.translate(_TEXT[0]) for t in terms]
    text, names = cache.canonical(_smt2(local))
    del local
    name = cache.key(text, solver, version, options)
    return _Probe(name, names, cache.load(name, setting))


def _replays(terms: Sequence[z3.ExprRef], model: Mapping[str, Value]) -> bool:
    """Whether ``model`` (constant names to values) makes every one of ``terms`` true: each, with the values
    put in, simplifies to ``true`` (a term it leaves open, a quantifier or a function, is not replayed)."""
    return all(z3.is_true(value) for value in _put(terms, model))


def _put(terms: Sequence[z3.ExprRef], model: Mapping[str, Value]) -> list[z3.ExprRef]:
    """Each of ``terms`` with ``model``'s values put in for its constants, simplified (z3's C API: z3py's
    ``substitute`` checks every pair's sorts in Python on every call, most of a warm run's time)."""
    if not terms:
        return []
    ctx = terms[0].ctx
    size = len(model)
    froms, tos, alive = (z3.Ast * max(1, size))(), (z3.Ast * max(1, size))(), []
    for i, (name, value) in enumerate(model.items()):
        if isinstance(value, bool):
            constant, literal = z3.Bool(name, ctx), z3.BoolVal(value, ctx)
        else:
            constant, literal = z3.Int(name, ctx), z3.IntVal(value, ctx)
        alive += [constant, literal]  # the arrays hold bare pointers: keep their terms referenced
        froms[i], tos[i] = constant.as_ast(), literal.as_ast()
    out = []
    for term in terms:
        put = z3.Z3_substitute(ctx.ref(), term.as_ast(), size, froms, tos) if size else term.as_ast()
        out.append(z3.simplify(z3.ExprRef(put, ctx)))  # simplify gives back the typed term
    return out


def _reused(probe: _Probe, terms: Sequence[z3.ExprRef]) -> str:
    """The stored status when it may stand for this query ("unsat"; "sat" or "determined" once their model
    replays on ``terms``), else "" (solve it); a reuse is counted."""
    entry = probe.entry
    if entry is None:
        return ""
    if entry.status == "unsat" or _replays(terms, probe.model(entry.assignment)):
        cache.count(reused=True)
        return entry.status
    return ""


_Z3 = "z3 " + str(z3.get_full_version())


def _bool(claim: BoolTerm | bool) -> BoolTerm:
    return z3.BoolVal(claim) if isinstance(claim, bool) else claim


@dataclass(frozen=True)
class Verdict:
    """The outcome of one ``check``: ``model`` for refuted, ``reason`` for unknown, ``seconds`` of solver time."""

    status: Status
    seconds: float
    model: Mapping[str, Value] = field(default_factory=dict)
    reason: str = ""

    @property
    def proved(self) -> bool:
        return self.status is Status.PROVED


def model_values(model: z3.ModelRef) -> dict[str, Value]:
    """Every constant the model assigns, by name, as a Python int or bool (sorted by name)."""
    out: dict[str, Value] = {}
    for decl in model.decls():
        if decl.arity() != 0:
            continue
        value = model[decl]
        if z3.is_int_value(value):
            out[decl.name()] = value.as_long()
        elif z3.is_true(value) or z3.is_false(value):
            out[decl.name()] = z3.is_true(value)
    return dict(sorted(out.items()))


_DEFINE = re.compile(r"\(define-fun ([^\s()|]+) \(\) (Int|Bool)\s+(\(- \d+\)|\d+|true|false)\)")


def _model_text_values(model: z3.ModelRef) -> dict[str, Value]:
    """``model_values`` read from the model's SMT-LIB text in one call (per-constant z3py calls cost more than
    the solving they would be stored for); a constant it does not read is left out, so its entry fails to
    replay and the query is solved again, never trusted."""
    out: dict[str, Value] = {}
    for name, sort, value in _DEFINE.findall(model.sexpr()):
        if sort == "Bool":
            out[name] = value == "true"
        else:
            out[name] = -int(value[3:-1]) if value.startswith("(") else int(value)
    return out


PIPELINE = ("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "smt")  # z3 tactics, in order
PIPELINE_RLIMIT = 8_000_000  # the pipeline's own cap: twice the most any proof query of the registry needs there


def _pipeline(ctx: z3.Context, rlimit: int) -> z3.Solver:
    """z3's light preprocessing and its SMT core (``PIPELINE``), under ``rlimit`` capped at ``PIPELINE_RLIMIT``."""
    solver = z3.Then(*PIPELINE, ctx=ctx).solver()
    solver.set("rlimit", min(rlimit, PIPELINE_RLIMIT))
    return solver


def check(
    claim: BoolTerm | bool,
    *,
    hypotheses: Sequence[BoolTerm] = (),
    rlimit: int = DEFAULT_RLIMIT,
    seed: int | None = None,
    pipeline_first: bool = False,
    model: bool = True,
) -> Verdict:
    """Decide ``hypotheses => claim`` for every value of its free variables (under z3's random ``seed`` when
    given; None is z3's default seed 0).

    z3's default solver decides, under ``rlimit``. With ``pipeline_first`` (and no seed), ``PIPELINE`` tries
    first, under at most ``PIPELINE_RLIMIT``: its unsat is a proof, and with ``model`` False its sat is a
    refutation (the caller needs no model); anything else goes on to the default solver, whose verdict, model
    and reason are returned. So a verdict is never weaker than the default solver's, and a model always comes
    from the default solver (the pipeline's eliminations leave constants out of its models). On this
    project's proof queries (proofs/run.py) the pipeline takes half the default solver's time and proves every
    one of them; on some other queries (a design lemma at P = 64) it is far slower, hence opt-in and capped.
    With a ``seed`` the default solver alone decides, under that seed: the seed sweep asks whether z3's verdict
    depends on its seed."""
    if rlimit < 1:
        raise ValueError(f"rlimit must be an int >= 1 (z3 resource units), got {rlimit}")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise ValueError(f"seed must be None or an int >= 0, got {seed!r}")
    start = time.perf_counter()
    query = [*hypotheses, Not(_bool(claim))]
    quick_first = pipeline_first and seed is None
    options = (f"check rlimit={rlimit} seed={seed} model={model} "
               f"pipeline={'+'.join(PIPELINE) + f' rlimit<={PIPELINE_RLIMIT}' if quick_first else 'none'}")
    probe = _probe(query, "z3", _Z3, options, solving=True)
    stored = _reused(probe, query)
    if stored == "unsat":
        return Verdict(Status.PROVED, time.perf_counter() - start)
    if stored == "sat":
        return Verdict(Status.REFUTED, time.perf_counter() - start, model=probe.model(probe.entry.model if probe.entry else {}))
    cache.count(reused=False)
    ctx, terms = _isolated(query, probe)
    if quick_first:
        quick = _pipeline(ctx, rlimit)
        quick.add(*terms)
        first = quick.check()
        if first == z3.unsat:
            probe.keep("unsat")
            return Verdict(Status.PROVED, time.perf_counter() - start)
        if first == z3.sat and not model:
            probe.keep("sat", _model_text_values(quick.model()) if probe.key else None)
            return Verdict(Status.REFUTED, time.perf_counter() - start)
    if seed is not None:
        z3.set_param("sat.random_seed", seed)  # the SAT core's seed is global: set before the solver, restored below
    try:
        solver = z3.Solver(ctx=ctx)
        solver.set("rlimit", rlimit)
        if seed is not None:
            solver.set("random_seed", seed)  # the SMT core's seed (smt.random_seed)
        solver.add(*terms)
        result = solver.check()
    finally:
        if seed is not None:
            z3.set_param("sat.random_seed", 0)
    seconds = time.perf_counter() - start
    if result == z3.unsat:
        probe.keep("unsat")
        return Verdict(Status.PROVED, seconds)
    if result == z3.sat:
        values = model_values(solver.model())
        probe.keep("sat", values, values)
        return Verdict(Status.REFUTED, seconds, model=values)
    return Verdict(Status.UNKNOWN, seconds, reason=f"{solver.reason_unknown()} (rlimit={rlimit})")


def determined_values(
    terms: Sequence[z3.ExprRef], facts: BoolTerm, *, rlimit: int = DEFAULT_RLIMIT
) -> tuple[tuple[z3.ExprRef, ...] | None, str]:
    """The values ``terms`` take in a model of ``facts``, and that no other model of ``facts`` changes any of
    them, in two solver calls: (values, "") or (None, why: "unsatisfiable", "undecided" or "not determined")."""
    if rlimit < 1:
        raise ValueError(f"rlimit must be an int >= 1 (z3 resource units), got {rlimit}")
    probe = _probe([facts, *(t == t for t in terms)], "z3", _Z3, f"determined_values rlimit={rlimit}")
    entry = probe.entry
    if entry is not None and entry.status == "unsat":
        cache.count(reused=True)
        return None, "unsatisfiable"
    if entry is not None and entry.status == "determined" and _replays([facts], probe.model(entry.assignment)):
        put = _put(terms, probe.model(entry.assignment))
        if all(z3.is_int_value(v) or z3.is_true(v) or z3.is_false(v) for v in put):
            cache.count(reused=True)  # the facts' model replayed; that no other model moves the values: the proof stored
            return tuple(put), ""
    cache.count(reused=False)
    ctx, (local_facts, *local) = _isolated([facts, *terms])
    solver = z3.Solver(ctx=ctx)
    solver.set("rlimit", rlimit)
    solver.add(local_facts)
    first = solver.check()
    if first != z3.sat:
        if first == z3.unsat:
            probe.keep("unsat")
        return None, "unsatisfiable" if first == z3.unsat else "undecided"
    model = solver.model()
    values = tuple(model.eval(t, model_completion=True) for t in local)
    assignment = model_values(model)
    solver.add(Or([t != v for t, v in zip(local, values)], ctx))
    if solver.check() != z3.unsat:
        return None, "not determined"
    home = terms[0].ctx if terms else z3.main_ctx()
    found = tuple(v.translate(home) for v in values)
    if [str(v) for v in _put(terms, assignment)] == [str(v) for v in found]:
        probe.keep("determined", assignment)  # stored only when its model gives these very values
    return found, ""


def satisfiable(hypotheses: Sequence[BoolTerm], *, rlimit: int = DEFAULT_RLIMIT) -> str:
    """"sat", "unsat", or "unknown (reason)" for the conjunction of ``hypotheses``. A solver made of z3's
    simplifier and its SMT core: on witness problems (proofs/engine/witness.py) a third of the default solver's
    cost (its preprocessing), and never the incremental core's blow-ups."""
    if rlimit < 1:
        raise ValueError(f"rlimit must be an int >= 1 (z3 resource units), got {rlimit}")
    probe = _probe(hypotheses, "z3", _Z3, f"satisfiable rlimit={rlimit} tactic=simplify+smt", solving=True)
    stored = _reused(probe, hypotheses)
    if stored:
        return stored
    cache.count(reused=False)
    ctx, terms = _isolated(hypotheses, probe)
    solver = z3.Then("simplify", "smt", ctx=ctx).solver()  # measured: cheaper here than ``PIPELINE``
    solver.set("rlimit", rlimit)
    solver.add(*terms)
    result = solver.check()
    if result == z3.sat:
        probe.keep("sat", _model_text_values(solver.model()) if probe.key else None)
        return "sat"
    if result == z3.unsat:
        probe.keep("unsat")
        return "unsat"
    return f"unknown ({solver.reason_unknown()})"


# -- least models (z3's Optimize): the boundary cases' draw ----------------------------------------------------


@dataclass(frozen=True)
class Least:
    """The outcome of ``least_model``: ``values`` of the asked terms at the optimum (sat), None when the
    facts are unsatisfiable; ``reason`` is set when the solver gave up (unknown, never read as unsat)."""

    values: tuple[int, ...] | None
    reason: str = ""


def least_model(
    facts: Sequence[BoolTerm], objectives: Sequence[z3.ArithRef], read: Sequence[z3.ArithRef], *, rlimit: int
) -> Least:
    """The model of ``facts`` minimising ``objectives`` lexicographically (z3's Optimize, deterministic
    ``rlimit``), read back as the values of ``read``."""
    if rlimit < 1:
        raise ValueError(f"rlimit must be an int >= 1 (z3 resource units), got {rlimit}")
    cache.count(reused=False)  # never cached: no stored model could show it is the least
    ctx, local = _isolated([*facts, *objectives, *read])
    local_facts = local[: len(facts)]
    local_objectives = local[len(facts) : len(facts) + len(objectives)]
    local_read = local[len(facts) + len(objectives) :]
    solver = z3.Optimize(ctx=ctx)
    solver.set("rlimit", rlimit)
    solver.add(*local_facts)
    for objective in local_objectives:
        solver.minimize(objective)
    result = solver.check()
    if result == z3.unsat:
        return Least(None)
    if result != z3.sat:
        return Least(None, f"{solver.reason_unknown()} (rlimit={rlimit})")
    model = solver.model()
    return Least(tuple(model.eval(x, model_completion=True).as_long() for x in local_read))


# -- the second solver: cvc5 ----------------------------------------------------------------------------------

DEFAULT_CVC5_RLIMIT = 2_000_000  # cvc5 resource units per check; a query it cannot decide within them is not cross-checked


@functools.cache
def _cvc5_version() -> str:
    """cvc5's version and a fingerprint of the translation into it (``_ToCvc5``'s source): the cross-check's
    cache key changes with either."""
    made = _cvc5().Solver(_cvc5().TermManager())
    version = made.getVersion()
    text = version.decode() if isinstance(version, bytes) else str(version)
    return f"cvc5 {text} translation {hashlib.sha256(inspect.getsource(_ToCvc5).encode()).hexdigest()[:16]}"


def solver_versions(cvc5: bool = False) -> str:
    """z3's version, and with ``cvc5`` cvc5's and its translation's fingerprint: what a run's answers depend on
    besides the queries (cpgraph prove's run record keys on it)."""
    return _Z3 + (f"; {_cvc5_version()}" if cvc5 else "")


class TranslationError(ValueError):
    """A z3 term uses an operator or sort the cvc5 translation does not cover (named in the message)."""


def cvc5_available() -> bool:
    """Whether the cvc5 Python package is installed (it is a dev dependency, not a runtime one)."""
    return importlib.util.find_spec("cvc5") is not None


def _cvc5() -> Any:
    """The cvc5 module (imported on first use: ``cpgraph prove`` without --cross-check never needs it)."""
    try:
        import cvc5  # type: ignore[import-untyped]
    except ImportError as exc:
        raise RuntimeError("the cvc5 cross-check needs the cvc5 package (pip install cvc5; a dev dependency)") from exc
    return cvc5


class _ToCvc5:
    """z3 terms to cvc5 terms over one cvc5 TermManager: constants and uninterpreted functions by name and
    sort, bound variables by de Bruijn index, operators by a fixed table (no SMT-LIB text in between)."""

    def __init__(self, tm: Any) -> None:
        self.tm = tm
        kind = _cvc5().Kind
        self.kind = kind
        self.ops: dict[int, Any] = {
            z3.Z3_OP_AND: kind.AND,
            z3.Z3_OP_OR: kind.OR,
            z3.Z3_OP_NOT: kind.NOT,
            z3.Z3_OP_IMPLIES: kind.IMPLIES,
            z3.Z3_OP_XOR: kind.XOR,
            z3.Z3_OP_EQ: kind.EQUAL,
            z3.Z3_OP_IFF: kind.EQUAL,
            z3.Z3_OP_DISTINCT: kind.DISTINCT,
            z3.Z3_OP_ITE: kind.ITE,
            z3.Z3_OP_ADD: kind.ADD,
            z3.Z3_OP_SUB: kind.SUB,
            z3.Z3_OP_UMINUS: kind.NEG,
            z3.Z3_OP_MUL: kind.MULT,
            z3.Z3_OP_IDIV: kind.INTS_DIVISION,
            z3.Z3_OP_MOD: kind.INTS_MODULUS,
            z3.Z3_OP_ABS: kind.ABS,
            z3.Z3_OP_LE: kind.LEQ,
            z3.Z3_OP_LT: kind.LT,
            z3.Z3_OP_GE: kind.GEQ,
            z3.Z3_OP_GT: kind.GT,
        }
        self.constants: dict[tuple[str, str], Any] = {}

    def sort(self, sort: z3.SortRef) -> Any:
        if sort.kind() == z3.Z3_INT_SORT:
            return self.tm.getIntegerSort()
        if sort.kind() == z3.Z3_BOOL_SORT:
            return self.tm.getBooleanSort()
        raise TranslationError(f"cvc5 cross-check: sort {sort} is not translated (Int and Bool are)")

    def symbol(self, decl: z3.FuncDeclRef) -> Any:
        domain = [decl.domain(i) for i in range(decl.arity())]
        key = (decl.name(), " ".join(str(s) for s in (*domain, decl.range())))
        if key not in self.constants:
            result = self.sort(decl.range())
            sort = self.tm.mkFunctionSort([self.sort(s) for s in domain], result) if domain else result
            self.constants[key] = self.tm.mkConst(sort, decl.name())
        return self.constants[key]

    def term(self, expr: z3.ExprRef, bound: tuple[Any, ...] = (), memo: dict[int, Any] | None = None) -> Any:
        memo = {} if memo is None else memo  # one memo per binder scope: z3 shares subterms by id
        key = expr.get_id()
        if key in memo:
            return memo[key]
        out = self._term(expr, bound, memo)
        memo[key] = out
        return out

    def _term(self, expr: z3.ExprRef, bound: tuple[Any, ...], memo: dict[int, Any]) -> Any:
        tm, kind = self.tm, self.kind
        if z3.is_quantifier(expr):
            assert isinstance(expr, z3.QuantifierRef)
            if expr.is_lambda():
                raise TranslationError("cvc5 cross-check: lambda terms are not translated")
            names = [expr.var_name(i) for i in range(expr.num_vars())]
            variables = tuple(tm.mkVar(self.sort(expr.var_sort(i)), names[i]) for i in range(expr.num_vars()))
            body = self.term(expr.body(), bound + variables, {})
            which = kind.FORALL if expr.is_forall() else kind.EXISTS
            return tm.mkTerm(which, tm.mkTerm(kind.VARIABLE_LIST, *variables), body)
        if z3.is_var(expr):
            index = z3.get_var_index(expr)
            if index >= len(bound):
                raise TranslationError(f"cvc5 cross-check: free de Bruijn variable {index} outside any quantifier")
            return bound[len(bound) - 1 - index]
        if z3.is_int_value(expr):
            return tm.mkInteger(expr.as_long())
        if z3.is_true(expr):
            return tm.mkTrue()
        if z3.is_false(expr):
            return tm.mkFalse()
        assert isinstance(expr, z3.ExprRef)
        decl = expr.decl()
        op = decl.kind()
        args = [self.term(child, bound, memo) for child in expr.children()]
        if op == z3.Z3_OP_UNINTERPRETED:
            symbol = self.symbol(decl)
            return tm.mkTerm(kind.APPLY_UF, symbol, *args) if args else symbol
        if op not in self.ops:
            raise TranslationError(f"cvc5 cross-check: operator {decl.name()!r} (z3 kind {op}) is not translated")
        if op in (z3.Z3_OP_ADD, z3.Z3_OP_MUL, z3.Z3_OP_AND, z3.Z3_OP_OR) and len(args) == 1:
            return args[0]  # z3 allows a unary sum or conjunction; cvc5 needs two children
        if op in (z3.Z3_OP_AND, z3.Z3_OP_OR) and not args:
            return tm.mkTrue() if op == z3.Z3_OP_AND else tm.mkFalse()
        return tm.mkTerm(self.ops[op], *args)


def cross_check(
    claim: BoolTerm | bool, *, hypotheses: Sequence[BoolTerm] = (), rlimit: int = DEFAULT_CVC5_RLIMIT
) -> Verdict:
    """Decide ``hypotheses => claim`` with cvc5 (the second solver): proved, refuted (no model is read) or
    unknown with cvc5's reason. Deterministic: cvc5's default seed and its ``rlimit-per`` resource limit."""
    if rlimit < 1:
        raise ValueError(f"rlimit must be an int >= 1 (cvc5 resource units), got {rlimit}")
    start = time.perf_counter()
    negated = Not(_bool(claim))
    probe = _probe([*hypotheses, negated], "cvc5", _cvc5_version(), f"cross_check rlimit-per={rlimit} logic=ALL")
    if probe.entry is not None and probe.entry.status == "unsat":  # only proofs are stored for cvc5
        cache.count(reused=True)
        return Verdict(Status.PROVED, time.perf_counter() - start)
    cache.count(reused=False)
    cvc5 = _cvc5()
    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setOption("rlimit-per", str(rlimit))
    solver.setLogic("ALL")
    translate = _ToCvc5(tm)
    try:
        memo: dict[int, Any] = {}
        for hypothesis in hypotheses:
            solver.assertFormula(translate.term(hypothesis, (), memo))
        solver.assertFormula(translate.term(negated, (), memo))
    except TranslationError as exc:
        return Verdict(Status.UNKNOWN, time.perf_counter() - start, reason=str(exc))
    result = solver.checkSat()
    seconds = time.perf_counter() - start
    if result.isUnsat():
        probe.keep("unsat")
        return Verdict(Status.PROVED, seconds)
    if result.isSat():
        return Verdict(Status.REFUTED, seconds, reason="cvc5: sat (a counterexample exists)")
    explanation = result.getUnknownExplanation()
    why = getattr(explanation, "name", str(explanation)).lower()  # e.g. "resourceout", "incomplete"
    return Verdict(Status.UNKNOWN, seconds, reason=f"cvc5: {why} (rlimit-per={rlimit})")
