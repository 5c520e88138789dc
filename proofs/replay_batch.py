"""Counterexamples of the end-to-end theorems, realised as a concrete batch and replayed through reference/.

A model of a ClassBatch names request counts per remainder class, not lengths; ``realise``
turns it into concrete lengths (every ClassBatch is realised by some batch), and the reference runner
plans and replays that batch against the model's capture table.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from cpgraph import reference
from cpgraph.proofs.check import Value
from cpgraph.proofs.obligation import Replay
from cpgraph.reference.lists import compact


def _int(model: Mapping[str, Value], name: str, default: int = 0) -> int:
    return int(model.get(name, default))


def class_batch_replay(
    *, theorem: str, cp_size: int, strategy: str, factor: Fraction, list_length: int, batch_name: str
) -> Replay:
    """Replay the model's batch (``{batch_name}.*`` counts), its ``n`` and its capture table (``cap.b{i}``,
    ``cap.c{i}``, ``cap.rec{i}``) through the reference runner, and print a pytest function to paste."""

    def replay(model: Mapping[str, Value]) -> str:
        lengths = realise(model, cp_size, batch_name)
        shown = compact(tuple(lengths))  # [9] * 107 + [8]: a long realised batch stays readable and pastes
        n = _int(model, "n", sum(lengths))
        buckets = tuple(_int(model, f"cap.b{i}") for i in range(list_length))
        table = {b: _int(model, f"cap.c{i}") for i, b in enumerate(buckets) if model.get(f"cap.rec{i}", True)}
        f = factor.numerator if factor.denominator == 1 else factor
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
