"""spec/logic.py builds exactly z3's terms: the same AST and the same Python class as z3's function of the same
name, on its fast path and on every fallback; and proofs/engine/constants.py names the constants z3's own walk finds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import z3

from cpgraph.proofs.engine.constants import constant_names
from cpgraph.spec import logic

x, y = z3.Int("x"), z3.Int("y")
p, q = z3.Bool("p"), z3.Bool("q")
r = z3.Real("r")
other = z3.Context()
p_other = z3.Bool("p", other)


def _same(fast: Any, slow: Any) -> None:
    assert type(fast) is type(slow)
    if isinstance(slow, z3.ExprRef):
        assert fast.eq(slow), f"{fast} != {slow}"
        assert fast.ctx is slow.ctx
    else:
        assert fast == slow


BOOLEAN_ARGUMENTS: list[tuple[Any, ...]] = [
    (p,), (p, q), (p, x >= 1, q), ([p, q],), ((p, q, x == y),), (p, True), (False, q), (),
    ([],), (z3.BoolVal(True),), (z3.ForAll([x], x >= x), p),
]


@pytest.mark.parametrize("name", ["And", "Or"])
@pytest.mark.parametrize("args", BOOLEAN_ARGUMENTS, ids=repr)
def test_and_or_build_z3s_term(name: str, args: tuple[Any, ...]) -> None:
    _same(getattr(logic, name)(*args), getattr(z3, name)(*args))


@pytest.mark.parametrize("name", ["And", "Or"])
def test_and_or_refuse_what_z3_refuses(name: str) -> None:
    for args in ((p, x), (p, p_other), (x + 1,)):
        with pytest.raises(z3.Z3Exception):
            getattr(z3, name)(*args)
        with pytest.raises(z3.Z3Exception):
            getattr(logic, name)(*args)


@pytest.mark.parametrize("args", [(p, q), (p, True), (x >= 1, p), (False, p)], ids=repr)
def test_implies_builds_z3s_term(args: tuple[Any, Any]) -> None:
    _same(logic.Implies(*args), z3.Implies(*args))


@pytest.mark.parametrize("a", [p, x >= y, True, z3.BoolVal(False)], ids=repr)
def test_not_builds_z3s_term(a: Any) -> None:
    _same(logic.Not(a), z3.Not(a))


IF_ARGUMENTS: list[tuple[Any, Any, Any]] = [
    (p, x, y), (p, x + 1, 0), (p, 0, y), (p, 1, 0), (p, q, p), (p, True, q), (p, x, r), (p, r, 2),
    (True, x, y), (p, z3.IntVal(3), z3.IntVal(4)), (x >= 0, x, -x), (p, x, True),
]


@pytest.mark.parametrize("args", IF_ARGUMENTS, ids=repr)
def test_if_builds_z3s_term(args: tuple[Any, Any, Any]) -> None:
    _same(logic.If(*args), z3.If(*args))


def test_if_refuses_what_z3_refuses() -> None:
    for args in ((x, y, x), (p, x, p_other)):
        with pytest.raises(z3.Z3Exception):
            z3.If(*args)
        with pytest.raises(z3.Z3Exception):
            logic.If(*args)


@pytest.mark.parametrize("args", [(x,), (x, y), ([x, y, 3],), ((x, y),), (x, 1), (1, x), (r, x), (), ([],), (1, 2)],
                         ids=repr)
def test_sum_builds_z3s_term(args: tuple[Any, ...]) -> None:
    _same(logic.Sum(*args), z3.Sum(*args))


def _z3_walk(terms: list[Any], ints_only: bool) -> set[str]:
    found: set[str] = set()
    todo = list(terms)
    while todo:
        t = todo.pop()
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            if not ints_only or z3.is_int(t):
                found.add(t.decl().name())
        elif z3.is_app(t):
            todo.extend(t.children())
        elif z3.is_quantifier(t):
            todo.append(t.body())
    return found


TERM_SETS: list[Callable[[], list[Any]]] = [
    lambda: [x + y >= 3, p],
    lambda: [z3.If(p, x, y) == z3.Int("z"), z3.Bool("flag"), r > 1],
    lambda: [z3.ForAll([x], z3.Implies(x >= 0, x + z3.Int("w") >= 0))],
    lambda: [z3.IntVal(3) > 2, z3.BoolVal(True)],
    lambda: [z3.Function("f", z3.IntSort(), z3.IntSort())(x) == y],
]


@pytest.mark.parametrize("ints_only", [False, True])
@pytest.mark.parametrize("build", TERM_SETS)
def test_constant_names_are_z3s(build: Callable[[], list[Any]], ints_only: bool) -> None:
    terms = build()
    assert constant_names(terms, ints_only=ints_only) == _z3_walk(terms, ints_only)


def test_constant_names_memo_is_per_top_level_term_and_skips_python_values() -> None:
    memo: dict[int, frozenset[str]] = {}
    first, second = x >= 1, y + z3.Int("z") == 0
    assert constant_names([first, True, second], memo=memo) == {"x", "y", "z"}
    assert memo == {first.get_id(): frozenset({"x"}), second.get_id(): frozenset({"y", "z"})}
    assert constant_names([second], memo=memo) == {"y", "z"}
