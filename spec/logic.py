"""z3's Boolean and arithmetic constructors (And, Or, Not, Implies, If, Sum) without their per-call overhead.

z3's Python constructors coerce every argument through sort objects before they call the C API: an ``And``
of ten comparisons costs about 30 times what the C call does, and building terms, not solving them, is most
of what ``cpgraph prove`` spends. Each function here takes the common case, where every argument is already
a z3 term of the right sort in one context, straight to the same C call, and hands anything else (Python
bools or ints it cannot place, other sorts, mixed contexts, no arguments) to z3's own constructor. Both
paths build the same term, of the same Python class, as z3's function of the same name
(tests/unit/test_spec_logic.py checks it); only the time differs.

The names are z3's, so a reader (and the mutation harness's operators) reads them as z3's.
"""

from __future__ import annotations

from typing import Any

import z3
from z3 import z3core

_BOOL = z3.BoolRef
_ARITH = z3.ArithRef
_INT_SORT = z3.Z3_INT_SORT


def _items(args: tuple[Any, ...]) -> tuple[Any, ...] | list[Any]:
    """z3's argument convention: one list or tuple argument stands for its elements."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return args[0]
    return args


def _bool_array(items: tuple[Any, ...] | list[Any]) -> tuple[Any, Any] | None:
    """(context, C array) when every item is a plain Boolean term of one context, else None."""
    if not items:
        return None
    ctx = None
    array = (z3.Ast * len(items))()
    for i, item in enumerate(items):
        if type(item) is not _BOOL:
            return None
        if ctx is None:
            ctx = item.ctx
        elif item.ctx is not ctx:
            return None
        array[i] = item.ast
    return ctx, array


def _is_int(term: Any) -> bool:
    """``term`` is an integer-sorted z3 term."""
    ref = term.ctx.ref()
    return bool(z3core.Z3_get_sort_kind(ref, z3core.Z3_get_sort(ref, term.ast)) == _INT_SORT)


def _nary(args: tuple[Any, ...], make: Any, fallback: Any) -> Any:
    """An n-ary Boolean connective: ``make`` (the C constructor) on plain Boolean terms, else ``fallback``."""
    items = _items(args)
    found = _bool_array(items)
    if found is None:
        return fallback(*args)
    ctx, array = found
    return _BOOL(make(ctx.ref(), len(items), array), ctx)


def And(*args: Any) -> Any:
    """z3.And."""
    return _nary(args, z3core.Z3_mk_and, z3.And)


def Or(*args: Any) -> Any:
    """z3.Or."""
    return _nary(args, z3core.Z3_mk_or, z3.Or)


def Not(a: Any) -> Any:
    """z3.Not."""
    if type(a) is not _BOOL:
        return z3.Not(a)
    return _BOOL(z3core.Z3_mk_not(a.ctx.ref(), a.ast), a.ctx)


def Implies(a: Any, b: Any) -> Any:
    """z3.Implies."""
    if type(a) is not _BOOL or type(b) is not _BOOL or a.ctx is not b.ctx:
        return z3.Implies(a, b)
    return _BOOL(z3core.Z3_mk_implies(a.ctx.ref(), a.ast, b.ast), a.ctx)


def If(a: Any, b: Any, c: Any) -> Any:
    """z3.If: a Boolean condition over two Boolean branches, or over two integer ones (a Python int branch
    becomes a numeral, as z3's coercion makes it)."""
    if type(a) is not _BOOL:
        return z3.If(a, b, c)
    ctx = a.ctx
    if type(b) is _BOOL and type(c) is _BOOL:
        if b.ctx is not ctx or c.ctx is not ctx:
            return z3.If(a, b, c)
        return _BOOL(z3core.Z3_mk_ite(ctx.ref(), a.ast, b.ast, c.ast), ctx)
    b_int = isinstance(b, _ARITH) and b.ctx is ctx and _is_int(b)
    c_int = isinstance(c, _ARITH) and c.ctx is ctx and _is_int(c)
    if b_int and type(c) is int:
        c, c_int = z3.IntVal(c, ctx), True
    elif c_int and type(b) is int:
        b, b_int = z3.IntVal(b, ctx), True
    if not (b_int and c_int):
        return z3.If(a, b, c)
    return _ARITH(z3core.Z3_mk_ite(ctx.ref(), a.ast, b.ast, c.ast), ctx)


def Sum(*args: Any) -> Any:
    """z3.Sum of integer terms."""
    items = _items(args)
    if not items or not isinstance(items[0], _ARITH):
        return z3.Sum(*args)
    ctx = items[0].ctx
    array = (z3.Ast * len(items))()
    for i, item in enumerate(items):
        if not isinstance(item, _ARITH) or item.ctx is not ctx or not _is_int(item):
            return z3.Sum(*args)
        array[i] = item.ast
    return _ARITH(z3core.Z3_mk_add(ctx.ref(), len(items), array), ctx)
