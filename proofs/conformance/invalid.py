"""The bulk harness's invalid-inputs family: the contract every public function shares with the reference (an
empty batch, a negative or bool length, cp_size, align_size or num_tokens below 1, an unknown strategy, a
negative required count, an unsorted or repeated capture list, a negative capacity, a padding factor below 1)
raises the exception type the contract names: ValueError for a bad value, TypeError for a bad type."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from cpgraph.proofs.conformance.draw import Draw
from cpgraph.proofs.conformance.mirror import MIRROR_STRATEGIES
from cpgraph.proofs.conformance.paths import DecisionPath
from cpgraph.proofs.conformance.report import Family, attempt

_GOOD_LENGTHS = (16, 9)
_GOOD_SELECT: dict[str, Any] = dict(num_tokens=20, required_local_tokens=4, capture_num_tokens=(20, 40),
                                    bucket_local_tokens={20: 4, 40: 8}, max_padding_factor=2)
# Each row: the exception expected, the positional argument (where the function takes one), the keywords that
# replace the valid ones.
_ROW_CASES: tuple[tuple[str, Any, dict[str, Any]], ...] = (
    ("ValueError", (), {}), ("ValueError", (16, -1), {}), ("TypeError", (16, True), {}),
    ("TypeError", "16", {}), ("ValueError", _GOOD_LENGTHS, {"cp_size": 0}), ("TypeError", _GOOD_LENGTHS, {"cp_size": 2.0}),
    ("ValueError", _GOOD_LENGTHS, {"align_size": 0}), ("ValueError", _GOOD_LENGTHS, {"strategy": "ring"}),
    ("ValueError", _GOOD_LENGTHS, {"cp_size": 10**9}),
)
_CAPTURE_CASES: tuple[tuple[str, Any, dict[str, Any]], ...] = (
    ("ValueError", 0, {}), ("ValueError", -5, {}), ("TypeError", True, {}), ("ValueError", 64, {"cp_size": 0}),
    ("ValueError", 64, {"align_size": 0}), ("ValueError", 64, {"strategy": "ring"}), ("ValueError", 64, {"cp_size": 2**64}),
)
_SELECT_CASES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ValueError", {"num_tokens": 0}), ("ValueError", {"required_local_tokens": -1}),
    ("ValueError", {"capture_num_tokens": (40, 20)}), ("ValueError", {"capture_num_tokens": (20, 20, 40)}),
    ("ValueError", {"bucket_local_tokens": {20: -1, 40: 8}}), ("ValueError", {"max_padding_factor": 0}),
    ("TypeError", {"num_tokens": 20.0}),
)
_HEADROOM_CASES: tuple[tuple[str, Any, dict[str, Any]], ...] = (
    ("ValueError", 0, {}), ("ValueError", 64, {"cp_size": 0}), ("ValueError", 64, {"align_size": 0}),
    ("ValueError", 64, {"max_requests": 0}), ("TypeError", 64.0, {}),
)
_BUSIEST_CASES: tuple[tuple[str, Any, dict[str, Any]], ...] = (
    ("ValueError", _GOOD_LENGTHS, {"cp_size": 0}), ("ValueError", (), {}),
    ("ValueError", _GOOD_LENGTHS, {"strategy": "ring"}), ("TypeError", _GOOD_LENGTHS, {"cp_size": True}),
    ("ValueError", _GOOD_LENGTHS, {"cp_size": 10**9}),
)
_ALIGN_CASES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ValueError", {"cp_size": 0}), ("ValueError", {"strategy": "ring"}), ("TypeError", {"cp_size": 2.5}),
    ("ValueError", {"cp_size": 2**64}),
)
_ACTIVE_CASES: tuple[tuple[str, Any, dict[str, Any]], ...] = (
    ("ValueError", (), {}), ("ValueError", _GOOD_LENGTHS, {"num_tokens": 0}),
    ("ValueError", _GOOD_LENGTHS, {"cp_size": 0}), ("ValueError", (16, -2), {}),
)


def family_errors(paths: Sequence[DecisionPath], draw: Draw, count: int) -> Family:
    """Invalid inputs (see the module docstring): anything but the exception type the contract names is a
    mismatch."""
    fam = Family("invalid inputs")
    rng = draw.rng
    for _ in range(count):
        p = draw.cp_size()
        kind = rng.choice(MIRROR_STRATEGIES)
        expected, function, args, call = _bad_call(rng, rng.randrange(7), p, kind)
        text = f"{function}({', '.join(repr(a) for a in args)}{', ' if args else ''}**{call})"
        fam.cases += 1
        for path in paths:
            if getattr(path, function) is None:
                continue
            if "strategy" in call and path.strategies and call["strategy"] not in path.strategies:
                continue  # a path that does not take this strategy refuses it first (its own, valid, ValueError)
            actual = attempt(getattr(path, function), *args, **call)
            got = type(actual).__name__ if isinstance(actual, Exception) else f"returned {actual!r}"
            fam.judge(path.name, function, expected, got, lambda text=text: text)  # type: ignore[misc]
    return fam


def _bad_call(rng: random.Random, which: int, p: int, kind: str) -> tuple[str, str, tuple[Any, ...], dict[str, Any]]:
    """One invalid call of function ``which`` (drawn from its table): the exception expected, the function, its
    positional arguments and its keywords."""
    shape = dict(cp_size=p, align_size=2 * p, strategy=kind)
    args: tuple[Any, ...]
    if which == 0:
        expected, lengths, bad = _ROW_CASES[rng.randrange(len(_ROW_CASES))]
        function, args, call = "required_local_tokens", (lengths,), shape | bad
    elif which == 1:
        expected, bucket, bad = _CAPTURE_CASES[rng.randrange(len(_CAPTURE_CASES))]
        function, args, call = "capture_local_tokens", (bucket,), shape | bad
    elif which == 5:
        expected, lengths, bad = _BUSIEST_CASES[rng.randrange(len(_BUSIEST_CASES))]
        function, args, call = "busiest_load", (lengths,), dict(cp_size=p, strategy=kind) | bad
    elif which == 6:
        expected, bad = _ALIGN_CASES[rng.randrange(len(_ALIGN_CASES))]
        function, args, call = "default_align_size", (), dict(cp_size=p, strategy=kind) | bad
    elif which == 4:
        expected, bucket, bad = _HEADROOM_CASES[rng.randrange(len(_HEADROOM_CASES))]
        call = dict(cp_size=p, align_size=2 * p, max_requests=3) | bad
        function, args = "headroom_local_tokens", (bucket,)
    elif which == 2:
        expected, bad = _SELECT_CASES[rng.randrange(len(_SELECT_CASES))]
        function, args, call = "select_replay_bucket", (), _GOOD_SELECT | bad
    else:
        expected, lengths, bad = _ACTIVE_CASES[rng.randrange(len(_ACTIVE_CASES))]
        total = max(1, sum(x for x in lengths if x > 0))
        function, args, call = "is_cp_active", (lengths,), dict(num_tokens=total, cp_size=p) | bad
    return expected, function, args, call
