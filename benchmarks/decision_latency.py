"""Decision latency: impl's whole decision against its floors and a plain per-rank loop, measured side by side.

For every (R requests, P ranks, K captured buckets) the same batch is timed on every side, the sides interleaved
round by round (ABC.. ABC..), each side's figure the minimum over the rounds of the per-call thread CPU time
(``time.thread_time_ns``: another process on the machine does not count, a preempted round does not win).
The machine's load average (``os.getloadavg``) is recorded with every row.

Sides (all zigzag):
- ``sum_list``: one ``sum()`` over the Python list (the floor for a list);
  ``sum_array`` / ``sum_tensor``: one vectorised ``.sum()`` over the int64 numpy array / CPU tensor.
- ``plain_rows``: a plain per-rank loop (no validation) computing the rows; ``plain_policy``: the same loop plus a
  linear scan of the capture list, called through the policy protocol (``**batch``).
- ``impl_rows``: ``decision.required_local_tokens`` (validation + rows) from the list.
- ``impl_list`` / ``impl_array`` / ``impl_tensor``: the whole decision (validation + rows + bucket choice) from
  the list / array / tensor as the runner's dispatcher makes it: its ``decide`` (``decision.decider``, the
  configuration bound once) where the tree has one, else ``decision.decide_lengths`` with its prebuilt selector.
- ``dispatcher``: the runner's ``Dispatcher.plan`` as the runner calls it (builds the frozen ``Plan``).
- ``policy``: ``impl.policy.admit(**batch)``, what ``cpgraph check`` calls.
- ``work_list`` / ``work_array``: only the calls an exact vectorised zigzag decision makes here, with no glue,
  no histogram tail and no bucket choice: for a list ``sum()`` (its type check and exact total), one ``struct``
  pack into int64, ``frombuffer``, the minimum (``argmin``), then the remainder histogram (``bincount`` of
  L & (2P-1)); for an array the minimum and maximum (``argmin``/``argmax``: validation, the short-request rule and
  the bound that keeps the int64 sum from wrapping), one int64 sum and the same histogram (none at P = 1). A lower
  bound of this design, printed so that a ratio target below it is visible as such.

Targets (issue 14): for R >= 256, impl_list <= 8x sum_list and impl_array / impl_tensor <= 3x their sums; at
R = 1, impl_rows <= plain_rows and policy <= plain_policy; policy <= 1.2x dispatcher at every R.

    .venv/bin/python benchmarks/decision_latency.py [--json PATH] [--md PATH] [--repeat N] [--before REV] [--quick]

``--before REV`` times the impl/decision.py and impl/policy.py of git revision REV instead (lists only: that code
took no arrays), with the dispatcher of that revision (check_lengths + check_num_tokens + plan_batch).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.util
import json
import os
import platform
import random
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from cpgraph import reference  # noqa: E402
from cpgraph.impl import decision  # noqa: E402
from cpgraph.impl import policy as impl_policy  # noqa: E402

REQUESTS = (1, 16, 256, 1024, 4096)
CP_SIZES = (1, 4, 16, 64)
BUCKETS = (8, 128)
QUICK: dict[str, tuple[int, ...]] = dict(requests=(1, 256, 4096), cp_sizes=(4, 64), buckets=(8, 128))


def plain_rows(lengths: Sequence[int], p: int, a: int) -> int:
    """docs/semantics.md's zigzag loads, a plain per-rank loop over every request, no validation."""
    s = 2 * p
    loads = [0] * p
    for length in lengths:
        q, m = divmod(length, s)
        for r in range(p):
            loads[r] += 2 * q + (r < m) + (s - 1 - r < m)
    return -(-max(loads) // a) * a


_PACK: dict[int, struct.Struct] = {}


def work_list(lengths: list[int], p: int) -> object:
    """The primitive calls of the list path (see the module docstring), nothing else."""
    total = sum(lengths)
    pack = _PACK.get(len(lengths)) or _PACK.setdefault(len(lengths), struct.Struct(f"{len(lengths)}q"))
    vec = np.frombuffer(pack.pack(*lengths), np.int64)
    lo = vec.item(vec.argmin())
    return (total, lo, np.bincount(np.bitwise_and(vec, 2 * p - 1), minlength=2 * p)) if p > 1 else (total, lo)


def work_array(arr: Any, p: int) -> object:
    """The primitive calls of the array path (see the module docstring), nothing else."""
    lo, hi, total = arr.item(arr.argmin()), arr.item(arr.argmax()), np.add.reduce(arr)
    return (total, lo, hi, np.bincount(np.bitwise_and(arr, 2 * p - 1), minlength=2 * p)) if p > 1 else (total, lo, hi)


def plain_admit(**batch: Any) -> bool:
    """A plain policy: the per-rank loop, then a linear scan of the sorted capture list."""
    lengths, p, n = batch["extend_seq_lens"], batch["cp_size"], batch["num_tokens"]
    if p == 1 or n < 2 * p or min(lengths) < 2 * p:
        return False
    required = plain_rows(lengths, p, batch["align_size"])
    caps, limit = batch["bucket_local_tokens"], batch["max_padding_factor"] * n
    for b in batch["capture_num_tokens"]:
        if b < n:
            continue
        if b > limit:
            break
        rows = caps.get(b)
        if rows is not None and rows >= required:
            return True
    return False


def load_before(rev: str) -> tuple[ModuleType, ModuleType]:
    """impl/decision.py and impl/policy.py as they were at ``rev``, importable side by side with today's."""
    modules: dict[str, ModuleType] = {}
    for name in ("checks", "decision", "policy"):
        source = subprocess.run(["git", "show", f"{rev}:impl/{name}.py"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout
        for dep in ("checks", "decision"):
            source = source.replace(f"cpgraph.impl.{dep}", f"cpgraph_before_{dep}")
        spec = importlib.util.spec_from_loader(f"cpgraph_before_{name}", loader=None)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        exec(compile(source, f"{rev}:impl/{name}.py", "exec"), module.__dict__)
        modules[name] = module
    return modules["decision"], modules["policy"]


def timed(sides: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Microseconds per call of each side: min over ``repeat`` interleaved rounds of thread CPU time."""
    calls = {}
    for name, fn in sides.items():
        number = 1
        while True:
            start = time.thread_time_ns()
            for _ in range(number):
                fn()
            if time.thread_time_ns() - start > 2_000_000 or number >= 1 << 16:  # about 2 ms a round
                break
            number *= 2
        calls[name] = number
    best = {name: float("inf") for name in sides}
    for _ in range(repeat):
        for name, fn in sides.items():
            number = calls[name]
            start = time.thread_time_ns()
            for _ in range(number):
                fn()
            best[name] = min(best[name], (time.thread_time_ns() - start) / number / 1000)
    return best


def case(r: int, p: int, k: int, rng: random.Random) -> dict[str, Any]:
    lengths = [rng.randint(2 * p, 4096) for _ in range(r)]
    n = sum(lengths)
    a = 2 * p
    buckets = tuple(sorted({max(2 * p, round(n * (0.5 + 2.5 * i / k))) for i in range(k)} | {n}))
    caps = {b: reference.capture_local_tokens(b, cp_size=p, align_size=a) for b in buckets}
    return dict(cp_rank=0, cp_size=p, align_size=a, num_tokens=n, extend_seq_lens=lengths,
                capture_num_tokens=buckets, bucket_local_tokens=caps, max_padding_factor=2)


def dispatcher_for(batch: dict[str, Any]) -> Any:
    """The runner's Dispatcher, built as the runner builds it."""
    try:  # the runner moved it to its own module; older trees keep it in runner.py
        module = importlib.import_module("cpgraph.impl.dispatch")
    except ImportError:
        module = importlib.import_module("cpgraph.impl.runner")
    d = module.Dispatcher(cp_size=batch["cp_size"], align_size=batch["align_size"], strategy="zigzag",
                   max_padding_factor=2, capture_num_tokens=batch["capture_num_tokens"],
                   captured=batch["bucket_local_tokens"])
    return d


def measure(repeat: int, before: str | None, grid: dict[str, tuple[int, ...]]) -> list[dict[str, Any]]:
    old = load_before(before) if before else None
    rng = random.Random(0)
    rows: list[dict[str, Any]] = []
    for k in grid["buckets"]:
        for p in grid["cp_sizes"]:
            for r in grid["requests"]:
                batch = case(r, p, k, rng)
                lengths, a, n = batch["extend_seq_lens"], batch["align_size"], batch["num_tokens"]
                arr, ten = np.array(lengths, dtype=np.int64), torch.tensor(lengths, dtype=torch.int64)
                want = reference.policy.admit(**batch)
                sides: dict[str, Callable[[], object]] = {
                    "sum_list": lambda: sum(lengths),
                    "plain_rows": lambda: plain_rows(lengths, p, a),
                    "plain_policy": lambda: plain_admit(**batch),
                }
                if old is None:
                    selector = decision.Selector.build(batch["capture_num_tokens"], batch["bucket_local_tokens"])
                    dispatcher = dispatcher_for(batch)
                    dispatch = dispatcher.plan

                    def decide_lengths(x: object) -> Any:
                        return decision.decide_lengths(x, cp_size=p, align_size=a, selector=selector,
                                                       max_padding_factor=2)

                    decide = getattr(dispatcher, "decide", decide_lengths)
                    assert decide(lengths)[1:] == decide_lengths(lengths)[1:]

                    assert impl_policy.admit(**batch) == want and (decide(arr)[2][1] is not None) == want
                    assert decide(ten)[1:] == decide(lengths)[1:]
                    sides |= {
                        "sum_array": lambda: arr.sum(),
                        "sum_tensor": lambda: ten.sum(),
                        "work_list": lambda: work_list(lengths, p),
                        "work_array": lambda: work_array(arr, p),
                        "impl_rows": lambda: decision.required_local_tokens(lengths, cp_size=p, align_size=a),
                        "impl_list": lambda: decide(lengths),
                        "impl_array": lambda: decide(arr),
                        "impl_tensor": lambda: decide(ten),
                        "dispatcher": lambda: dispatch(lengths),
                        "policy": lambda: impl_policy.admit(**batch),
                    }
                else:
                    old_decision, old_policy = old
                    old_checks = sys.modules["cpgraph_before_checks"]
                    old_selector = old_decision.Selector.build(batch["capture_num_tokens"], batch["bucket_local_tokens"])

                    def old_dispatch() -> object:  # the Dispatcher.plan of that revision
                        checked = old_decision.check_lengths("extend_seq_lens", lengths)
                        total = old_checks.check_num_tokens(sum(checked), checked)
                        return old_decision.plan_batch(checked, num_tokens=total, cp_size=p, align_size=a,
                                                       selector=old_selector, max_padding_factor=2)

                    assert old_policy.admit(**batch) == want
                    sides |= {
                        "impl_rows": lambda: old_decision.required_local_tokens(lengths, cp_size=p, align_size=a),
                        "impl_list": old_dispatch,
                        "dispatcher": old_dispatch,
                        "policy": lambda: old_policy.admit(**batch),
                    }
                load_before_row = os.getloadavg()
                us = timed(sides, repeat)
                rows.append({"R": r, "P": p, "K": len(batch["capture_num_tokens"]), "us": us,
                             "ratios": ratios(us), "loadavg": [load_before_row, os.getloadavg()]})
                print(line(rows[-1]), flush=True)
    return rows


def ratios(us: dict[str, float]) -> dict[str, float]:
    out = {
        "list/sum": us["impl_list"] / us["sum_list"],
        "rows/plain_rows": us["impl_rows"] / us["plain_rows"],
        "policy/plain_policy": us["policy"] / us["plain_policy"],
        "policy/dispatcher": us["policy"] / us["dispatcher"],
    }
    if "impl_array" in us:
        out["array/sum"] = us["impl_array"] / us["sum_array"]
        out["tensor/sum"] = us["impl_tensor"] / us["sum_tensor"]
        out["work_list/sum"] = us["work_list"] / us["sum_list"]
        out["work_array/sum"] = us["work_array"] / us["sum_array"]
    return out


COLUMNS = ("list/sum", "array/sum", "tensor/sum", "rows/plain_rows", "policy/plain_policy", "policy/dispatcher",
           "work_list/sum", "work_array/sum")


def line(row: dict[str, Any]) -> str:
    cells = [f"{row['ratios'][c]:.2f}" if c in row["ratios"] else "-" for c in COLUMNS]
    us = row["us"]
    return (f"| {row['R']} | {row['P']} | {row['K']} | {us['sum_list']:.2f} | {us['impl_list']:.2f} | "
            f"{us.get('impl_array', float('nan')):.2f} | {us['policy']:.2f} | {us['dispatcher']:.2f} | "
            + " | ".join(cells) + f" | {row['loadavg'][0][0]:.2f}-{row['loadavg'][1][0]:.2f} |")


HEADER = ("| R | P | K | sum list (us) | impl list (us) | impl array (us) | policy (us) | dispatcher (us) | "
          + " | ".join(COLUMNS) + " | load 1-min |\n|" + "---:|" * (9 + len(COLUMNS)))


TARGETS = (("list/sum", 8.0, "R >= 256"), ("array/sum", 3.0, "R >= 256"), ("tensor/sum", 3.0, "R >= 256"),
           ("rows/plain_rows", 1.0, "R = 1"), ("policy/plain_policy", 1.0, "R = 1"),
           ("policy/dispatcher", 1.2, "every R"))


def compare(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Markdown: every (R, P, K) with its ratios before and after, then each target's worst case after."""
    old = {(r["R"], r["P"], r["K"]): r for r in before["rows"]}
    out = [f"before: {before['title']}", "", f"after: {after['title']}", "",
           "| R | P | K | " + " | ".join(f"{c} before -> after" for c in COLUMNS) + " | load 1-min before / after |",
           "|" + "---:|" * (4 + len(COLUMNS))]
    for row in after["rows"]:
        prev = old.get((row["R"], row["P"], row["K"]))
        cells = []
        for c in COLUMNS:
            was = f"{prev['ratios'][c]:.2f}" if prev and c in prev["ratios"] else "-"
            now = f"{row['ratios'][c]:.2f}" if c in row["ratios"] else "-"
            cells.append(f"{was} -> {now}")
        load = f"{prev['loadavg'][0][0]:.1f}" if prev else "-"
        out.append(f"| {row['R']} | {row['P']} | {row['K']} | " + " | ".join(cells) + f" | {load} / {row['loadavg'][0][0]:.1f} |")
    return "\n".join(out) + "\n\n" + targets(after["rows"])


def targets(rows: list[dict[str, Any]]) -> str:
    """Markdown: each target's measured range over the rows it covers, its worst case, and whether it holds."""
    out = ["| target | where | limit | measured range | worst (R, P, K) | met |", "|---|---|---:|---:|---|---|"]
    for column, limit, where in TARGETS:
        covered = [r for r in rows if column in r["ratios"]
                   and (r["R"] >= 256 if where == "R >= 256" else r["R"] == 1 if where == "R = 1" else True)]
        if not covered:
            continue
        values = [r["ratios"][column] for r in covered]
        worst = max(covered, key=lambda r: r["ratios"][column])
        out.append(f"| {column} | {where} | {limit}x | {min(values):.2f}-{max(values):.2f}x | "
                   f"({worst['R']}, {worst['P']}, {worst['K']}) | {'yes' if max(values) <= limit else 'no'} |")
    return "\n".join(out) + "\n"


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--md", type=Path, help="also write the table as Markdown here")
    parser.add_argument("--repeat", type=int, default=9, help="interleaved rounds per side (minimum taken)")
    parser.add_argument("--before", help="time the decision path of this git revision instead")
    parser.add_argument("--quick", action="store_true", help="a smaller grid")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE_JSON", "AFTER_JSON"),
                        help="measure nothing: print (and with --md write) the two runs' ratios side by side")
    args = parser.parse_args()
    if args.compare:
        text = compare(*(json.loads(path.read_text()) for path in args.compare))
        print(text)
        if args.md:
            args.md.write_text(text)
        return 0
    grid: dict[str, tuple[int, ...]] = QUICK if args.quick else dict(requests=REQUESTS, cp_sizes=CP_SIZES, buckets=BUCKETS)
    title = (f"decision latency ({'revision ' + args.before if args.before else 'working tree'}) on "
             f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
             f"numpy {np.__version__}, torch {torch.__version__}; "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(title)
    start = uptime()
    print(f"uptime at start: {start}")
    print(HEADER)
    rows = measure(args.repeat, args.before, grid)
    end = uptime()
    summary = targets(rows)
    print(f"uptime at end: {end}\n\n{summary}")
    if args.json:
        args.json.write_text(json.dumps({"title": title, "uptime": [start, end], "rows": rows}, indent=1))
    if args.md:
        args.md.write_text(f"{title}\n\nuptime at start: {start}\n\nuptime at end: {end}\n\n{HEADER}\n"
                           + "\n".join(line(r) for r in rows) + f"\n\n{summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
