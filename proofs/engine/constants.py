"""The uninterpreted constants a set of z3 terms mentions, by name.

The coverage checks ask which variables a query's hypotheses mention, and the layout lemmas which fresh
variables two builds share. Walking a term through z3's Python wrappers makes an object (and a reference
count) per node visited; this walk reads the same facts through z3's C API on the term's own DAG, each
shared node once, and makes no objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import z3
from z3 import z3core


def constant_names(terms: Iterable[Any], *, ints_only: bool = False,
                   memo: dict[int, frozenset[str]] | None = None) -> set[str]:
    """Names of the uninterpreted constants in ``terms`` (integer-sorted ones only with ``ints_only``);
    anything in ``terms`` that is not a z3 expression (a Python bool) mentions none. ``memo`` caches each
    top-level term's names by its id: pass one dict per set of terms that stay alive while it is used (an
    id is reused once its term is freed)."""
    out: set[str] = set()
    for term in terms:
        if not isinstance(term, z3.ExprRef):
            continue
        key = term.get_id()
        names = memo.get(key) if memo is not None else None
        if names is None:
            names = _walk(term, ints_only)
            if memo is not None:
                memo[key] = names
        out |= names
    return out


def _walk(term: Any, ints_only: bool) -> frozenset[str]:
    ref = term.ctx.ref()
    seen: set[int] = set()
    names: set[str] = set()
    todo = [term.as_ast()]
    while todo:
        ast = todo.pop()
        key = z3core.Z3_get_ast_id(ref, ast)
        if key in seen:
            continue
        seen.add(key)
        kind = z3core.Z3_get_ast_kind(ref, ast)
        if kind == z3.Z3_APP_AST:
            count = z3core.Z3_get_app_num_args(ref, ast)
            if count:
                todo.extend(z3core.Z3_get_app_arg(ref, ast, i) for i in range(count))
                continue
            decl = z3core.Z3_get_app_decl(ref, ast)
            if z3core.Z3_get_decl_kind(ref, decl) != z3.Z3_OP_UNINTERPRETED:
                continue
            if ints_only and z3core.Z3_get_sort_kind(ref, z3core.Z3_get_sort(ref, ast)) != z3.Z3_INT_SORT:
                continue
            names.add(z3core.Z3_get_symbol_string(ref, z3core.Z3_get_decl_name(ref, decl)))
        elif kind == z3.Z3_QUANTIFIER_AST:
            todo.append(z3core.Z3_get_quantifier_body(ref, ast))
    return frozenset(names)
