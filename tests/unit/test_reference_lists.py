"""reference/lists.py: a long repetitive list printed short, still a Python expression equal to the list."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph.reference.lists import SHORT, compact

# runs of equal values (so that long repeats are common), flattened into one list
runs = st.lists(st.tuples(st.integers(-3, 10**6), st.integers(1, 40)), max_size=12)
lists_with_runs = runs.map(lambda rs: [v for v, k in rs for _ in range(k)])
any_lists = st.lists(st.integers(-(2**70), 2**70) | st.none(), max_size=60) | lists_with_runs


@given(any_lists, st.booleans(), st.integers(0, 200))
def test_the_compact_form_evaluates_to_the_same_list_or_tuple(values: list[int | None], as_tuple: bool, short: int) -> None:
    xs: list[int | None] | tuple[int | None, ...] = tuple(values) if as_tuple else values
    text = compact(xs, short=short)
    assert eval(text, {"__builtins__": {}}) == xs  # type and items: a tuple stays a tuple
    assert len(text) <= len(repr(xs))  # never longer than the plain form


@given(any_lists, st.booleans())
def test_a_short_list_is_written_as_it_is(values: list[int | None], as_tuple: bool) -> None:
    xs: list[int | None] | tuple[int | None, ...] = tuple(values) if as_tuple else values
    if len(repr(xs)) <= SHORT:
        assert compact(xs) == repr(xs)


@pytest.mark.parametrize(
    "values, text",
    [
        ([9] * 107 + [8], "[9] * 107 + [8]"),
        ([25] + [9] * 62, "[25] + [9] * 62"),
        ([9] * 43, "[9] * 43"),
        ([1534, 161, 353], "[1534, 161, 353]"),
        ([489, 9, 9], "[489, 9, 9]"),
        ((9,) * 107 + (8,), "(9,) * 107 + (8,)"),
        ((7,), "(7,)"),
        ((), "()"),
        ([], "[]"),
        ([512] * 64, "[512] * 64"),
        ([None] * 20 + [512] * 44, "[None] * 20 + [512] * 44"),
        ([1, 2, 3] + [5] * 30 + [6, 7], "[1, 2, 3] + [5] * 30 + [6, 7]"),
        (list(range(40)), repr(list(range(40)))),  # nothing repeats: the plain form
    ],
)
def test_known_forms(values: Any, text: str) -> None:
    assert compact(values) == text


@pytest.mark.parametrize(
    "values, kwargs, error, message",
    [
        ("999", {}, TypeError, "values must be a list or tuple of ints (or None), got '999' (str)"),
        (5, {}, TypeError, "values must be a list or tuple of ints (or None), got 5 (int)"),
        ([1, 2.0], {}, TypeError, "values[1] must be an int or None, got 2.0 (float)"),
        ([True], {}, TypeError, "values[0] must be an int or None, got True (bool)"),
        ([1], {"short": -1}, ValueError, "short must be an int >= 0 (characters of a list written as it is), got -1"),
        ([1], {"short": "60"}, TypeError, "short must be an int >= 0 (characters of a list written as it is), got '60' (str)"),
    ],
)
def test_bad_input_names_the_argument_the_value_and_what_is_allowed(values: Any, kwargs: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error) as info:
        compact(values, **kwargs)
    assert str(info.value) == message
