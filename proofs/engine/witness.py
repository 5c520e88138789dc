"""The scope's witnesses: at every parameter a theorem ran, its hypotheses admit a model at the edges of the
scope proofs/engine/scope.py declares, and the parameters it ran are the ones declared.

A theorem whose hypotheses exclude part of its declared scope still proves: a hypothesis ``p <= 4`` makes
it vacuous above P = 4, ``n <= 4096`` makes "all lengths" a bounded claim, a sampled list cut to (1,) runs
it at one P. ``witness_checks`` runs inside the worker that has just built and proved the theorem's queries
at one parameter (proofs/run.py ``run_task``, so it reuses the built terms and the existing pool): for each
chain of queries (the queries sharing a label suffix, "(zigzag, F=2)"), one satisfiability check of the
union of their hypotheses with every declared edge that chain's variables carry (n past 2**62, the most
requests the batch form allows, the last bucket of the longest declared capture list chosen, a large
symbolic P). Only when that union has no model is each edge checked alone, to name the part of the scope
that is missing. ``scope_bites`` turns the recorded outcomes and the parameters run into the teeth pass's
bites (proofs/teeth/run.py), one per theorem and declared parameter and edge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import z3

from cpgraph.spec.logic import And, Implies
from cpgraph.proofs.engine.results import Bite
from cpgraph.proofs.engine.check import Status, satisfiable
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.engine.results import ObligationResult
from cpgraph.proofs.engine.scope import HUGE, LARGE_P, MANY, SCOPE, Edge, Scope, Witnessed, residue_form
from cpgraph.spec.terms import BoolTerm

SATISFIABLE = "hypotheses satisfiable (not vacuous)"
WITNESS_RLIMIT = 20_000_000


def occurs(name: str, term: BoolTerm) -> bool:
    """Whether the integer constant ``name`` occurs in ``term`` (z3's own substitution: no Python walk over the
    terms)."""
    return not z3.substitute(term, (z3.Int(name), z3.Int("scope_witness!fresh"))).eq(term)


def _suffix(part: str) -> str:
    """The chain a query belongs to: the "(...)" its part ends in ("" when none)."""
    return part[part.rindex("("):] if part.endswith(")") and "(" in part else ""


LIST_LABEL = re.compile(r", K=(\d+)\)$")  # a chain built on a longer list than the theorem's fixed length


def list_length(scope: Scope, parameter: int, label: str = "") -> int | None:
    """The capture-list length the chain ``label`` of the theorem runs at ``parameter``: the one its label names
    (", K=32)"), else the declared fixed length (or the parameter itself, for a list-length theorem); None
    without a capture list."""
    if scope.lists is None or scope.lists.most is None:
        return None
    named = LIST_LABEL.search(label)
    if named:
        return int(named.group(1))
    return scope.lists.lengths(parameter)[0]


def edge_term(edge: Edge, scope: Scope, parameter: int, k: int | None = None) -> tuple[BoolTerm, str]:
    """The witness ``edge`` asks for at ``parameter`` (on a capture list of ``k`` buckets; default the declared
    length there), and the constant whose occurrence says a query carries it."""
    if edge.kind == "past":
        return z3.Int(edge.var) > HUGE, edge.var
    if edge.kind == "large_p":
        return z3.Int(edge.var) == LARGE_P, edge.var
    if edge.kind == "residue":  # var = 2P*k + a*P + b for some k: the declared remainder class, "P+1" (a = 1, b = 1)
        a, b = residue_form(edge.form)
        p_term = z3.Int("P") if parameter == 0 else z3.IntVal(parameter)
        k = z3.Int(f"scope_witness!{edge.var}.k")
        return z3.Int(edge.var) == 2 * p_term * k + a * p_term + b, edge.var
    if edge.kind == "last_rank":  # r = P-1: of the parameter's P, or of the symbolic P
        return z3.Int(edge.var) == (z3.Int("P") - 1 if parameter == 0 else z3.IntVal(parameter - 1)), edge.var
    if edge.kind == "requests":
        if edge.form == "classes":  # a ClassBatch's counts: 2P long and 2P short remainder classes
            counts = [z3.Int(f"{edge.var}.{kind}{m}") for kind in "cs" for m in range(2 * parameter)]
            return And([x >= MANY for x in counts]), f"{edge.var}.c0"
        if edge.form == "any":  # any number of requests, and no rank's load bounded
            loads = [z3.Int(f"{edge.var}.l{r}") > HUGE for r in range(parameter)]
            return And(z3.Int(f"{edge.var}.R") >= MANY, *loads), f"{edge.var}.R"
        lengths = [z3.Int(f"{edge.var}.L{i}") for i in range(edge.count)]
        return And([x > HUGE for x in lengths]), f"{edge.var}.L{edge.count - 1}"
    k = list_length(scope, parameter) if k is None else k
    if k is None:
        raise ValueError(f"a {edge.kind} edge needs a capture-list length in the scope; got lists={scope.lists!r}")
    if edge.kind == "every_bucket":  # sorted buckets: the first past 2**62 puts every one there
        return (And(z3.Int(f"{edge.var}.b0") > HUGE, *(z3.Int(f"{edge.var}.c{i}") > HUGE for i in range(k))),
                f"{edge.var}.b0")
    last, key = z3.Int(f"{edge.var}.b{k - 1}"), z3.Int(edge.key)
    facts = [last > HUGE, key <= last, z3.Bool(f"{edge.var}.rec{k - 1}"), z3.Int(f"{edge.var}.c{k - 1}") > HUGE,
             Implies(z3.Bool("chosen.admitted"), z3.Int("chosen.bucket") == last)]
    if k >= 2:
        facts.append(key > z3.Int(f"{edge.var}.b{k - 2}"))
    return And(facts), f"{edge.var}.b{k - 1}"


def _sat(hypotheses: Sequence[BoolTerm], rlimit: int) -> str:
    """"sat", "unsat", or "unknown (reason)": proofs/engine/check.py ``satisfiable``."""
    return satisfiable(hypotheses, rlimit=rlimit)


def _applies(edge: Edge, label: str) -> bool:
    return edge.where in label


Group = tuple[str, tuple[Query, ...]]


def _names(token: str, part: str) -> bool:
    return re.search(rf"(^|[\s(]){re.escape(token)}($|[\s),])", part) is not None


def groups(queries: Sequence[Query], edges: Sequence[Edge], strategies: Sequence[str] = ()) -> list[Group]:
    """The queries checked together: each chain (the queries ending in one "(...)"), and the queries without
    such a suffix (one argument's lemmas, sharing their variables) by the strategy their labels name (two
    strategies' lemmas may give one fresh name two definitions) and the edges their labels let apply."""
    out: dict[str, list[Query]] = {}
    for q in queries:
        key = _suffix(q.part)
        if not key:
            named = [s for s in strategies if _names(s, q.part)]
            key = "the theorem's queries" + "".join(f" [{s}]" for s in named[:1])
            key += "".join(f" [{e.where}]" for e in edges if e.where and _applies(e, q.part))
        out.setdefault(key, []).append(q)
    return [(key, tuple(members)) for key, members in out.items()]


def _hypotheses(members: Sequence[Query]) -> tuple[BoolTerm, ...]:
    """The union of the members' hypotheses, less the claims of members proved before (a chain's lemmas: valid,
    so they change no model, and they make the check slower)."""
    proved = {q.claim.get_id() for q in members if isinstance(q.claim, z3.ExprRef)}  # one context: same term, same id
    return tuple(h for h in dict.fromkeys(h for q in members for h in q.hypotheses)
                 if not (isinstance(h, z3.ExprRef) and h.get_id() in proved))


def witness_checks(theorem: str, parameter: int, queries: Sequence[Query]) -> tuple[Witnessed, ...]:
    """Every scope check of ``theorem`` at ``parameter`` over its built, proved ``queries`` (module docstring):
    one satisfiability check per group (``groups``) of its hypotheses with every edge it carries; only when that
    has no model is each member, then each edge, checked alone, to name what is missing."""
    scope = SCOPE.get(theorem)
    if scope is None:
        return (Witnessed("declared scope", False, "no entry in proofs/engine/scope.py SCOPE"),)
    edges = [e for e in scope.edges if e.max_p is None or parameter <= e.max_p]
    lengths = () if scope.lists is None else scope.lists.lengths(parameter)
    by_length = {k: {e.name: edge_term(e, scope, parameter, k) for e in edges} for k in lengths or (None,)}
    rlimit = max((q.rlimit for q in queries), default=WITNESS_RLIMIT)
    applied: set[str] = set()
    failed: dict[str, str] = {}
    vacuous: list[str] = []
    longer: list[str] = []
    lists = [e.var for e in edges if e.kind == "last_bucket"]
    chains: dict[int, set[str]] = {k: set() for k in lengths}  # each length's chains, by their label less the length
    undeclared: list[str] = []
    shorter: list[str] = []
    counts = {e.var: e.count for e in edges if e.kind == "requests" and e.form == "requests"}
    more: dict[str, list[str]] = {var: [] for var in counts}  # the groups that carry one request more than declared
    for label, members in groups(queries, edges, [s.name for s in scope.strategies]):
        hypotheses = _hypotheses(members)
        union = And(list(hypotheses))
        k = list_length(scope, parameter, label)
        if k is not None and k not in lengths:
            undeclared.append(label)
            k = lengths[0] if lengths else None
        built = by_length[k]  # every declared length, or None without a capture list
        terms = {e.name: built[e.name][0] for e in edges if _applies(e, label) and occurs(built[e.name][1], union)}
        applied.update(terms)
        if k is not None and any(occurs(f"{var}.b{k}", union) for var in lists):
            longer.append(label)
        if k is not None and _suffix(label) and lists:
            chains[k].add(LIST_LABEL.sub(")", label))
            if not any(occurs(f"{var}.b{k - 1}", union) for var in lists):
                shorter.append(label)
        for var, count in counts.items():
            if occurs(f"{var}.L{count}", union):
                more[var].append(label)
        if _sat((*hypotheses, *terms.values()), rlimit) == "sat":
            continue
        # Which member, and which part of the scope: each member alone, then each edge alone.
        for q in members if len(members) > 1 and not _suffix(label) else (None,):
            own = hypotheses if q is None else _hypotheses((q,))
            where = label if q is None else q.part
            mine = {n: t for n, t in terms.items() if q is None or occurs(built[n][1], And(list(own)))}
            if _sat((*own, *mine.values()), rlimit) == "sat":
                continue
            alone = _sat(own, rlimit)
            if alone != "sat":
                vacuous.append(f"{where}: {alone}")
                continue
            blamed = [n for n, t in mine.items() if _sat((*own, t), rlimit) != "sat"]
            for n in blamed:
                failed.setdefault(n, f"{where}: no model")
            if not blamed:
                failed.setdefault("every edge at once", f"{where}: no model with all of them")
    out = [Witnessed(SATISFIABLE, not vacuous, "; ".join(vacuous))]
    carried = next(iter(by_length.values()))
    for e in edges:
        if e.name not in applied:
            out.append(Witnessed(e.name, False, f"no query of the theorem carries {carried[e.name][1]}"))
        else:
            out.append(Witnessed(e.name, e.name not in failed, failed.get(e.name, "")))
    if "every edge at once" in failed:
        out.append(Witnessed("every edge at once", False, failed["every edge at once"]))
    if lengths and lists:
        shown = " and ".join(map(str, lengths))
        wrong = [f"longer lists in: {', '.join(longer)}"] if longer else []
        wrong += [f"shorter lists in: {', '.join(shorter)}"] if shorter else []
        wrong += [f"lengths not declared at this P in: {', '.join(undeclared)}"] if undeclared else []
        out.append(Witnessed(f"capture lists of {shown} buckets, as declared", not wrong, "; ".join(wrong)))
        for k in lengths[1:]:  # every chain of the declared length is built on the longer list too
            missing = sorted(chains[lengths[0]] - chains[k])
            out.append(Witnessed(f"every chain on {k}-bucket lists too", not missing,
                                 "only on the shorter list: " + ", ".join(missing) if missing else ""))
    for var, count in counts.items():  # a requests batch of exactly the declared requests: one more is another scope
        out.append(Witnessed(f"requests batches of at most {count} requests, as declared", not more[var],
                             "more requests in: " + ", ".join(more[var]) if more[var] else ""))
    return (*out, *_labels(scope, parameter, queries), *_ranks(scope, parameter, queries))


RANK_LABEL = re.compile(r"\brank (\d+)\b")


def _ranks(scope: Scope, parameter: int, queries: Sequence[Query]) -> tuple[Witnessed, ...]:
    """A per-rank theorem compares exactly the ranks its scope declares at ``parameter`` with rank 0: each
    named by some query ("..., rank r"), and no other (a rank list cut to the ends, or widened, fails)."""
    declared = set(scope.ranks(parameter))
    if not declared:
        return ()
    ran = {int(m.group(1)) for q in queries for m in RANK_LABEL.finditer(q.part)}
    ok = ran == declared
    detail = "" if ok else (f"declared ranks {sorted(declared)}, queries name ranks {sorted(ran)}"
                            f" (missing {sorted(declared - ran)}, undeclared {sorted(ran - declared)})")
    return (Witnessed(f"ranks {_rank_text(sorted(declared))} compared with rank 0", ok, detail),)


def _rank_text(ranks: Sequence[int]) -> str:
    return f"{ranks[0]}..{ranks[-1]}" if len(ranks) > 2 and ranks[-1] - ranks[0] == len(ranks) - 1 else ", ".join(map(str, ranks))


FACTOR_LABEL = re.compile(r"(?:^|[\s(])F=(\d+(?:/\d+)?)(?=$|[\s),])")


def _labels(scope: Scope, parameter: int, queries: Sequence[Query]) -> tuple[Witnessed, ...]:
    """Each strategy, padding factor and part the scope declares at ``parameter`` names some query there, and no query
    names a factor the scope does not declare there (a run wider than its declaration is another statement)."""
    if not scope.labelled:
        return ()
    parts = [q.part for q in queries]
    out = []
    wanted = [(s.name, s.max_p, 1) for s in scope.strategies] + [(f"F={f.value}", f.max_p, 1) for f in scope.factors]
    wanted += [(part.name, part.max_p, part.min_p) for part in scope.parts]
    for token, max_p, min_p in wanted:
        if (max_p is not None and parameter > max_p) or parameter < min_p:
            continue
        found = any(_names(token, part) for part in parts)
        out.append(Witnessed(f"{token} in the queries", found, "" if found else "no query is labelled with it"))
    if scope.factors:
        declared = {f.value for f in scope.factors if f.max_p is None or parameter <= f.max_p}
        extra = sorted({m.group(1) for part in parts for m in FACTOR_LABEL.finditer(part)} - declared)
        out.append(Witnessed("no undeclared F in the queries", not extra,
                             "labelled with " + ", ".join(f"F={f}" for f in extra) if extra else ""))
    return tuple(out)


def _label(parameter: int, scope: Scope) -> str:
    if scope.cp.kind in ("every", "listed"):
        return f"P={parameter}"
    return f"K={parameter}" if parameter else "symbolic"


def scope_bites(results: Iterable[ObligationResult], cp_max: int) -> tuple[Bite, ...]:
    """The teeth pass's scope bites from a prove run's ``ObligationResult``s: each declared parameter was run and
    no other (a size missing or undeclared fails, naming it), and at each, every witness held."""
    out: list[Bite] = []
    for r in results:
        name, ran = r.name, r.parameters
        scope = SCOPE.get(name)
        if scope is None:
            out.append(Bite(name, "scope: declared", "the theorem has a declared scope in proofs/engine/scope.py", 0,
                            Status.PROVED, Status.REFUTED))
            continue
        declared = scope.parameters(cp_max)
        for p in sorted(set(declared) | set(ran)):
            where = _label(p, scope)
            if p not in ran:
                out.append(Bite(name, f"scope: ran at {where}", f"declared {where} (proofs/engine/scope.py) but not run",
                                p, Status.PROVED, Status.REFUTED))
            elif p not in declared:
                out.append(Bite(name, f"scope: declared {where}", f"run at {where} but not declared in proofs/engine/scope.py",
                                p, Status.PROVED, Status.REFUTED))
            else:
                out.append(Bite(name, f"scope: ran at {where}", f"declared {where} and run", p, Status.PROVED, Status.PROVED))
        for p, witnessed in r.witnesses:
            where = _label(p, scope)
            for w in witnessed:
                out.append(Bite(name, f"scope witness at {where}: {w.what}", w.detail or "a model at this edge of the "
                                "declared scope", p, Status.REFUTED, Status.REFUTED if w.ok else Status.PROVED))
    return tuple(out)
