"""Replay vs eager: randomised correctness replays, latency per bucket, capture time and static memory.

For each P it builds one runner (all ranks on one device), then
1. replays ``--replays`` randomised batches in all (split over the P values) and compares each with the
   model without context parallelism (tolerance) and with the same padded computation run eagerly (bit-exact);
2. per captured bucket, times a full ``run`` (fill + replay + gather), the bare graph replay, the same padded
   forward run eagerly, and the non-CP eager model on a batch of B tokens;
3. records capture seconds per bucket, static bytes, and the runner's start-up replay check (every captured
   graph replayed once on a synthetic batch against eager before any traffic).
Writes <stem>.json and <stem>.md into --out-dir. On a machine without CUDA it runs the same static-buffer
path eagerly and labels every number "emulation" (useful only as a dry run of this script).

    python benchmarks/graph_latency.py --out-dir DIR [--replays 1040] [--cp-sizes 1,2,4,8] [--dtype bf16]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from cpgraph.impl.graphs import BucketKey  # noqa: E402
from cpgraph.impl.harness import compare_drawn_batch, random_batch  # noqa: E402
from cpgraph.impl.layout import build_torch_layout  # noqa: E402
from cpgraph.impl.model import ModelConfig, batch_hidden, build_model  # noqa: E402
from cpgraph.impl.runner import PrefillGraphRunner  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
TOLERANCE = {"bf16": (6e-2, 2e-2), "fp32": (1e-4, 1e-4)}


def _time_ms(fn: Callable[[], object], iters: int, cuda: bool) -> float:
    """Median milliseconds per call (CUDA events on GPU, perf_counter elsewhere), after warm-up."""
    for _ in range(3):
        fn()
    samples = []
    for _ in range(iters):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def run_p(p: int, args: argparse.Namespace, replays: int, device: torch.device) -> dict[str, Any]:
    dtype = DTYPES[args.dtype]
    atol, rtol = TOLERANCE[args.dtype]
    cuda = device.type == "cuda"
    config = ModelConfig(hidden=args.hidden, heads=args.heads, layers=args.layers)
    buckets = tuple(int(b) for b in args.buckets.split(","))
    model = build_model(config, seed=p, device=device).to(dtype)
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    # Built the way the tests build it: the device comes from the model ("cuda" there is cuda:<current>).
    runner = PrefillGraphRunner(model, cp_size=p, capture_num_tokens=buckets, capture_rule="headroom",
                                max_requests=16, dtype=dtype)
    startup_s = time.perf_counter() - t0
    rng = random.Random(p)
    stats = {"replays": 0, "eager_fallbacks": 0, "within_tolerance": 0, "bit_exact": 0, "max_abs_error": 0.0,
             "failures": []}
    for i in range(replays):
        lengths = random_batch(rng, cp_size=p, max_tokens=buckets[-1])
        hidden = batch_hidden(lengths, config.hidden, p, i).to(device, dtype)
        c = compare_drawn_batch(runner, lengths, hidden, atol=atol, rtol=rtol)
        if c is None:
            continue
        stats["max_abs_error"] = max(stats["max_abs_error"], c.max_abs_error)
        stats["within_tolerance"] += c.within_tolerance
        if c.bit_exact is None:
            stats["eager_fallbacks"] += 1
        else:
            stats["replays"] += 1
            stats["bit_exact"] += c.bit_exact
        if not c.within_tolerance or c.bit_exact is False:
            stats["failures"].append(c.message(atol, rtol))
    stats["failures"] = stats["failures"][:5]
    latency = []
    g = runner.graph_runner
    for b, rows in sorted(runner.bucket_local_tokens.items()):
        lengths = (b,)
        hidden = batch_hidden(lengths, config.hidden, p, -1).to(device, dtype)
        key = BucketKey(b, rows)
        layout = build_torch_layout(lengths, cp_size=p, rows=rows, device=device)
        g.fill(key, layout, hidden)
        row: dict[str, Any] = {"bucket": b, "rows_per_rank": rows}
        row["run_ms"] = _time_ms(lambda: g.replay(key, layout, hidden), args.iters, cuda)
        if cuda:
            row["graph_replay_ms"] = _time_ms(g.graphs[key].replay, args.iters, cuda)
        row["padded_eager_ms"] = _time_ms(lambda: g.eager(key, layout, hidden), args.iters, cuda)
        row["eager_no_cp_ms"] = _time_ms(lambda: runner.run_eager(hidden, lengths), args.iters, cuda)
        row["capture_s"] = runner.capture_seconds[b]
        latency.append(row)
    return {
        "cp_size": p,
        "mode": runner.mode,
        "startup_s": startup_s,
        "static_bytes": runner.static_bytes,
        "reserved_bytes": runner.reserved_bytes,
        "peak_bytes": torch.cuda.max_memory_allocated(device) if cuda else None,
        "dropped": runner.dropped,
        "startup_checks": runner.describe()["startup_checks"],
        "checks": stats,
        "latency": latency,
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# graph_latency: {report['device']} ({report['mode']})", "",
             f"{report['date']}, torch {report['torch']} (CUDA {report['cuda']}), dtype {report['dtype']}, "
             f"model {report['model']}, tolerance vs non-CP eager atol={report['atol']} rtol={report['rtol']}", "",
             "Start-up replay check (each captured graph replayed once on a synthetic batch vs eager at the same "
             "padded shape, before serving):", "", "| P | bucket | synthetic lengths | max abs err | bit-exact |",
             "|---:|---:|---|---:|---|"]
    for r in report["results"]:
        for b, c in r["startup_checks"].items():
            lines.append(f"| {r['cp_size']} | {b} | {tuple(c['extend_seq_lens'])} | {c['max_abs_error']:.3g} | "
                         f"{c['bit_exact']} |")
    lines += ["",
             "| P | replays | eager fallbacks | within tolerance | bit-exact vs padded eager | max abs err | "
             "static MiB | pool reserved MiB | start-up s |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["results"]:
        c = r["checks"]
        lines.append(f"| {r['cp_size']} | {c['replays']} | {c['eager_fallbacks']} | "
                     f"{c['within_tolerance']}/{c['replays'] + c['eager_fallbacks']} | {c['bit_exact']}/{c['replays']} | "
                     f"{c['max_abs_error']:.3g} | {r['static_bytes'] / 2**20:.1f} | {r['reserved_bytes'] / 2**20:.1f} | "
                     f"{r['startup_s']:.2f} |")
    lines += ["", "| P | bucket | rows/rank | run ms (fill+replay+gather) | graph replay ms | padded eager ms | "
              "eager no-CP ms | eager/run | capture s |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["results"]:
        for row in r["latency"]:
            replay = row.get("graph_replay_ms")
            lines.append(f"| {r['cp_size']} | {row['bucket']} | {row['rows_per_rank']} | {row['run_ms']:.3f} | "
                         f"{'-' if replay is None else f'{replay:.3f}'} | {row['padded_eager_ms']:.3f} | "
                         f"{row['eager_no_cp_ms']:.3f} | {row['padded_eager_ms'] / row['run_ms']:.2f}x | "
                         f"{row['capture_s']:.3f} |")
    failures = [f for r in report["results"] for f in r["checks"]["failures"]]
    lines += ["", f"ok: {report['ok']}"] + [f"- {f}" for f in failures]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--stem", default=None, help="file name stem (default <date>-<device>)")
    parser.add_argument("--replays", type=int, default=1040, help="randomised replays in all, split over P")
    parser.add_argument("--cp-sizes", default="1,2,4,8")
    parser.add_argument("--buckets", default="256,512,1024,2048,4096")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--iters", type=int, default=30)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    name = torch.cuda.get_device_name(device) if cuda else f"cpu-{platform.machine()}"
    cp_sizes = [int(p) for p in args.cp_sizes.split(",")]
    results = [run_p(p, args, -(-args.replays // len(cp_sizes)), device) for p in cp_sizes]
    ok = all(not r["checks"]["failures"] and not r["dropped"] for r in results)
    now = datetime.now(timezone.utc)
    report = {
        "date": now.isoformat(timespec="seconds"), "device": name, "mode": results[0]["mode"],
        "torch": torch.__version__, "cuda": torch.version.cuda, "dtype": args.dtype,
        "model": f"hidden={args.hidden} heads={args.heads} layers={args.layers}",
        "atol": TOLERANCE[args.dtype][0], "rtol": TOLERANCE[args.dtype][1], "ok": ok, "results": results,
    }
    stem = args.stem or f"{now:%Y-%m-%d}-{''.join(ch if ch.isalnum() else '-' for ch in name.lower())}"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{stem}.json").write_text(json.dumps(report, indent=2))
    (args.out_dir / f"{stem}.md").write_text(markdown(report))
    print(markdown(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
