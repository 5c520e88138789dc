"""Counterexamples replayed through the reference, rendered as a regression test one can paste.

A replay takes the (minimised) model of a refuted query, runs the concrete inputs through reference/, and
prints what the reference says, whether the reference satisfies the claim, and a pytest function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import cpgraph.reference as reference
from cpgraph.proofs.engine.check import Value
from cpgraph.proofs.engine.obligation import Replay
from cpgraph.reference.lists import compact

_SAFE_BUILTINS = {"sum": sum, "max": max, "min": min, "len": len, "all": all, "any": any, "enumerate": enumerate}


def _int(model: Mapping[str, Value], name: str, default: int = 0) -> int:
    value = model.get(name, default)
    return int(value)


def _test_name(theorem: str, cp_size: int | None) -> str:
    return f"test_regression_{theorem}" + (f"_p{cp_size}" if cp_size is not None else "")


def batch_replay(*, theorem: str, cp_size: int, strategy: str, length_names: Sequence[str], claim: str) -> Replay:
    """Replay a batch whose lengths are the model's ``length_names``; ``claim`` is a Python expression over
    ``loads`` (reference.rank_loads), ``lengths``, ``N`` (their sum), ``P`` and ``rank_loads``."""

    def replay(model: Mapping[str, Value]) -> str:
        lengths = tuple(_int(model, name) for name in length_names)
        if any(x < 0 for x in lengths) or not lengths:
            return f"lengths {lengths} are not a batch; nothing to replay"
        loads = reference.rank_loads(lengths, cp_size=cp_size, strategy=strategy)
        env = {"loads": loads, "lengths": lengths, "N": sum(lengths), "P": cp_size, "rank_loads": reference.rank_loads}
        shown = compact(lengths)
        holds = bool(eval(claim, {"__builtins__": _SAFE_BUILTINS, **env}))  # claim is our own literal text
        verdict = "the reference satisfies the claim (the spec or variant is wrong)" if holds else (
            "the reference violates the claim too"
        )
        return "\n".join(
            [
                f"cpgraph.reference.rank_loads({shown}, cp_size={cp_size}, strategy={strategy!r}) = {loads}",
                f"claim `{claim}` on the reference: {holds} -> {verdict}",
                "",
                "from cpgraph.reference import rank_loads",
                "",
                f"def {_test_name(theorem, cp_size)}() -> None:",
                f"    lengths, P = {shown}, {cp_size}",
                f"    loads = rank_loads(lengths, cp_size=P, strategy={strategy!r})",
                "    N = sum(lengths)",
                f"    assert {claim}, loads",
            ]
        )

    return replay


def selection_replay(*, theorem: str, length: int) -> Replay:
    """Replay a capture list of ``length`` buckets (model names cap.b{i}, cap.c{i}, cap.rec{i}, n, high,
    required) through reference.select_replay_bucket; F = high / n when that is an integer."""

    def replay(model: Mapping[str, Value]) -> str:
        buckets = tuple(_int(model, f"cap.b{i}") for i in range(length))
        capacities = {b: _int(model, f"cap.c{i}") for i, b in enumerate(buckets) if model.get(f"cap.rec{i}", False)}
        n, high, required = _int(model, "n"), _int(model, "high"), _int(model, "required")
        if n < 1 or high % n != 0:
            return f"window [{n}, {high}] is not [n, F*n] for an integer F; nothing to replay"
        factor = high // n
        try:
            def window(select: Callable[..., Any]) -> Any:
                return select(num_tokens=n, required_local_tokens=required, capture_num_tokens=buckets,
                              bucket_local_tokens=capacities, max_padding_factor=factor)

            chosen = window(reference.select_replay_bucket)
            fitting = window(reference.fitting_buckets)
        except (TypeError, ValueError) as exc:
            return f"the reference rejects these inputs: {exc}"
        expected = fitting[0] if fitting else None
        return "\n".join(
            [
                f"cpgraph.reference.select_replay_bucket(...) = {chosen}; least fitting bucket = {expected}",
                "",
                "from reference import select_replay_bucket",
                "",
                f"def {_test_name(theorem, None)}() -> None:",
                "    chosen = select_replay_bucket(",
                f"        num_tokens={n}, required_local_tokens={required}, capture_num_tokens={buckets},",
                f"        bucket_local_tokens={capacities}, max_padding_factor={factor},",
                "    )",
                f"    assert chosen == {expected}, chosen",
            ]
        )

    return replay
