"""Counterexamples of the end-to-end theorems, realised as a concrete batch and replayed through reference/.

A model of a ClassBatch names request counts per remainder class, not lengths; ``realise``
turns it into concrete lengths (every ClassBatch is realised by some batch), and the reference runner
plans and replays that batch against the model's capture table. A model of a RequestsBatch names the
lengths themselves (``realise_requests``); under the local keying it is replayed through the reference's
layout (``rank_loads``, ``build_layout``) and keying table (``reference.keying``: the key, the capacities):
the least captured size at or above the key is what admission and replay must both take. A model of an
AnyLayout is a load vector, not a batch: its replay says so and prints the loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import cpgraph.reference as reference
from cpgraph.reference.keying import keying_row
from cpgraph.proofs.engine.check import Value
from cpgraph.proofs.engine.obligation import Replay
from cpgraph.reference.lists import compact


def _int(model: Mapping[str, Value], name: str, default: int = 0) -> int:
    return int(model.get(name, default))


def _runner_story(
    theorem: str, cp_size: int, strategy: str, factor: Fraction, list_length: int, lengths: tuple[int, ...],
    model: Mapping[str, Value],
) -> str:
    """Plan and replay ``lengths`` with the model's ``n`` and capture table (``cap.b{i}``, ``cap.c{i}``,
    ``cap.rec{i}``) through the reference runner (the global keying), and print a pytest function."""
    n = _int(model, "n", sum(lengths))
    buckets = tuple(_int(model, f"cap.b{i}") for i in range(list_length))
    table = {b: _int(model, f"cap.c{i}") for i, b in enumerate(buckets) if model.get(f"cap.rec{i}", True)}
    f = factor.numerator if factor.denominator == 1 else factor
    shown = compact(tuple(lengths))  # [9] * 107 + [8]: a long realised batch stays readable and pastes
    try:
        runner = reference.ReferenceRunner(
            cp_size=cp_size, capture_num_tokens=buckets, strategy=strategy, max_padding_factor=f,
            capture_rule=reference.CaptureRule("table", table=table),
        )
        plan = runner.plan(lengths, n)
        outcome = f"replay rows {runner.replay(plan).rows}" if plan.admitted else f"fallback {plan.fallback}"
    except (TypeError, ValueError, reference.ReplayError) as exc:
        return f"batch {shown}, n={n}, buckets {buckets}, capacities {table}: the reference refuses ({exc})"
    name = f"test_regression_{theorem}_p{cp_size}"
    return "\n".join(
        [
            f"reference plan for {shown} (n={n}) at P={cp_size} ({strategy}, F={factor}), buckets {buckets}, "
            f"capacities {table}: bucket {plan.bucket}, required {plan.required_local_tokens}; {outcome}",
            "",
            "from fractions import Fraction",
            "from cpgraph.reference import CaptureRule, ReferenceRunner",
            "",
            f"def {name}() -> None:",
            f"    runner = ReferenceRunner(cp_size={cp_size}, capture_num_tokens={buckets}, strategy={strategy!r},",
            f"                             max_padding_factor={f!r}, capture_rule=CaptureRule('table', table={table}))",
            f"    plan = runner.plan({shown}, {n})",
            "    if plan.admitted:",
            "        assert runner.replay(plan).rows == plan.bucket_local_tokens >= plan.required_local_tokens",
        ]
    )


def class_batch_replay(
    *, theorem: str, cp_size: int, strategy: str, factor: Fraction, list_length: int, batch_name: str
) -> Replay:
    """Replay the model's batch (``{batch_name}.*`` counts), its ``n`` and its capture table (``cap.b{i}``,
    ``cap.c{i}``, ``cap.rec{i}``) through the reference runner, and print a pytest function to paste."""

    def replay(model: Mapping[str, Value]) -> str:
        return _runner_story(theorem, cp_size, strategy, factor, list_length, realise(model, cp_size, batch_name), model)

    return replay


def realise(model: Mapping[str, Value], cp_size: int, name: str) -> tuple[int, ...]:
    """Concrete lengths of the batch a model of ``class_batch(cp_size, name)`` describes: each long request
    of class m is 2P + m (the first takes the spare quotients), each short one is m."""
    s = 2 * cp_size

    def value(key: str) -> int:
        v = model.get(key, 0)
        return int(v)

    longs = [m for m in range(s) for _ in range(value(f"{name}.c{m}"))]
    shorts = [m for m in range(s) for _ in range(value(f"{name}.s{m}"))]
    spare = value(f"{name}.Q") - len(longs)
    lengths = [s + m for m in longs]
    if lengths:
        lengths[0] += s * spare
    return tuple(lengths + shorts)


def realise_requests(model: Mapping[str, Value], requests: int, name: str) -> tuple[int, ...]:
    """The non-empty lengths of a model of ``requests_batch(cp_size, requests, name)`` (a length 0 is no request)."""
    lengths = (_int(model, f"{name}.L{i}") for i in range(requests))
    return tuple(x for x in lengths if x > 0)


def _local_story(theorem: str, lengths: tuple[int, ...], n: int, sizes: tuple[int, ...], cp_size: int, strategy: str) -> str:
    """What the reference says of a batch under the local keying, and a pytest function holding it."""
    row = keying_row("local")
    loads = reference.rank_loads(lengths, cp_size=cp_size, strategy=strategy)
    key = row.key(n, loads)
    size = next((s for s in sizes if s >= key), None)
    dispatched = next((s for s in sizes if s >= keying_row("global").key(n, loads)), None)
    if size is not None:
        laid = f"build_layout at {size} rows holds loads {reference.build_layout(lengths, cp_size=cp_size, rows=size, strategy=strategy).loads}"
    else:
        laid = "no size holds it: eager"
    return "\n".join([
        f"reference at P={cp_size} ({strategy}, local keying): lengths {lengths}, n={n}, sizes {sizes}: rank_loads {loads}; "
        f"key m = {key} (the global count n = {n}); least size >= m: {size} ({laid}); vLLM 0.26-0.28 would "
        f"dispatch {dispatched} (the least size >= n) and replay the graph keyed {key} "
        f"({'captured' if key in sizes else 'never captured'})",
        "",
        "from cpgraph.reference import build_layout, rank_loads",
        "from cpgraph.reference.keying import keying_row",
        "",
        f"def test_regression_{theorem}_p{cp_size}() -> None:",
        f"    lengths, n, sizes, P, strategy = {lengths}, {n}, {sizes}, {cp_size}, {strategy!r}",
        "    loads = rank_loads(lengths, cp_size=P, strategy=strategy)",
        "    key = keying_row('local').key(n, loads)",
        "    capacities = keying_row('local').capacities(sizes, {})",
        "    size = next((s for s in sizes if s >= key), None)  # what admission and replay must both take",
        f"    assert (loads, key, size) == ({loads}, {key}, {size})",
        "    if size is not None:",
        "        assert capacities[size] >= max(loads)",
        "        assert build_layout(lengths, cp_size=P, rows=size, strategy=strategy).loads == loads",
    ])


def requests_replay(
    *, theorem: str, cp_size: int, strategy: str, keying: str, factor: Fraction, list_length: int, batch_name: str,
    requests: int,
) -> Replay:
    """Replay the model's lengths (``{batch_name}.L{i}``), its ``n`` and its capture list (``cap.b{i}``; under
    the global keying also ``cap.c{i}``, ``cap.rec{i}``) through the reference, and print a pytest function."""

    def replay(model: Mapping[str, Value]) -> str:
        lengths = realise_requests(model, requests, batch_name)
        if keying == "global":
            return _runner_story(theorem, cp_size, strategy, factor, list_length, lengths, model)
        n = _int(model, "n", sum(lengths))
        sizes = tuple(_int(model, f"cap.b{i}") for i in range(list_length))
        try:
            return _local_story(theorem, lengths, n, sizes, cp_size, strategy)
        except (TypeError, ValueError) as exc:
            return f"batch {lengths}, n={n}, sizes {sizes}: the reference refuses ({exc})"

    return replay


def any_layout_replay(*, theorem: str, cp_size: int, list_length: int, batch_name: str) -> Replay:
    """A model of an AnyLayout: per-rank loads, not a batch of any strategy (nothing to replay)."""

    def replay(model: Mapping[str, Value]) -> str:
        loads = tuple(_int(model, f"{batch_name}.l{r}") for r in range(cp_size))
        sizes = tuple(_int(model, f"cap.b{i}") for i in range(list_length))
        return (f"{theorem} at P={cp_size}: any layout with per-rank loads {loads}, n={_int(model, 'n')}, sizes {sizes}: "
                "a load vector, not a batch of a strategy (a strategy's own instance of the theorem replays its batches)")

    return replay
