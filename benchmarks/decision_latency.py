"""Decision latency: impl's O(R + P) fast path vs the per-rank loop (reference), measured side by side.

Two rows per (R, P): ``required`` times required_local_tokens alone; ``plan`` times the whole decision for one
batch (rows needed + bucket selection): impl.policy.decide against reference.policy.replay-style selection.
Both sides get the same batches, interleaved in one run, so the ratios share machine conditions.

    .venv/bin/python benchmarks/decision_latency.py [--json PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cpgraph import reference  # noqa: E402
from cpgraph.impl import decision  # noqa: E402
from cpgraph.impl import policy as impl_policy  # noqa: E402
from cpgraph.reference import policy as reference_policy  # noqa: E402

REQUESTS = (1, 3, 16, 256, 1024)
CP_SIZES = (4, 8, 16)


def _batch(rng: random.Random, requests: int, cp_size: int) -> tuple[int, ...]:
    return tuple(rng.randint(2 * cp_size, 4096) for _ in range(requests))


def _side_by_side(slow: Callable[[], object], fast: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best-of microseconds per call for each side, the sides alternating round by round (ABAB...)."""
    slow_timer, fast_timer = timeit.Timer(slow), timeit.Timer(fast)
    number = 1
    while slow_timer.timeit(number) < 0.01:  # ~10 ms a round on the slow side
        number *= 2
    slow_best = fast_best = float("inf")
    for _ in range(repeat):
        slow_best = min(slow_best, slow_timer.timeit(number))
        fast_best = min(fast_best, fast_timer.timeit(number))
    return slow_best / number * 1e6, fast_best / number * 1e6


def measure(repeat: int) -> list[dict[str, object]]:
    rng = random.Random(0)
    rows: list[dict[str, object]] = []
    for p in CP_SIZES:
        for r in REQUESTS:
            lengths = _batch(rng, r, p)
            n = sum(lengths)
            a = 2 * p
            buckets = tuple(sorted({max(2 * p, int(n * f)) for f in (0.5, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0)}))
            caps = {b: reference.capture_local_tokens(b, cp_size=p, align_size=a) for b in buckets}
            batch = dict(cp_rank=0, cp_size=p, align_size=a, num_tokens=n, extend_seq_lens=lengths,
                         capture_num_tokens=buckets, bucket_local_tokens=caps, max_padding_factor=2)
            assert decision.required_local_tokens(lengths, cp_size=p, align_size=a) == reference.required_local_tokens(
                lengths, cp_size=p, align_size=a)
            assert impl_policy.admit(**batch) == reference_policy.admit(**batch)  # type: ignore[arg-type]
            cases = {
                "required": (
                    lambda: reference.required_local_tokens(lengths, cp_size=p, align_size=a),
                    lambda: decision.required_local_tokens(lengths, cp_size=p, align_size=a),
                ),
                "plan": (
                    lambda: reference_policy.admit(**batch),  # type: ignore[arg-type]
                    lambda: impl_policy.admit(**batch),  # type: ignore[arg-type]
                ),
            }
            for what, (slow, fast) in cases.items():
                loop_us, fast_us = _side_by_side(slow, fast, repeat)
                rows.append({"what": what, "R": r, "P": p, "loop_us": loop_us, "fast_us": fast_us,
                             "speedup": loop_us / fast_us})
    return rows


def table(rows: list[dict[str, object]]) -> str:
    out = ["| what | R | P | per-rank loop (us) | fast path (us) | speedup |", "|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        out.append(f"| {row['what']} | {row['R']} | {row['P']} | {row['loop_us']:.2f} | {row['fast_us']:.2f} | "
                   f"{row['speedup']:.1f}x |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--repeat", type=int, default=9, help="alternating rounds per side (best of)")
    args = parser.parse_args()
    rows = measure(args.repeat)
    print(f"decision latency on {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
