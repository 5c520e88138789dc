"""`cpgraph check` throughput: batches per minute (every rank asked, judged against the reference) for
correct pure-Python policies, and time-to-catch for every mutant in proofs/mutants.

    .venv/bin/python benchmarks/check_rate.py [--budget-s 30] [--json PATH] [--skip-mutants]
    .venv/bin/python benchmarks/check_rate.py --breakdown [--budget-s 10] [--json PATH]
    .venv/bin/python benchmarks/check_rate.py --generate-warm | --random-catches [--json PATH]

``--breakdown`` runs the search loop of run.py in this one process (no fork, no boundary solver) for
each policy of BREAKDOWN and times its parts per batch: generating the batch, the reference's decision
(reference.judge.expected_bucket), the policy's own calls, asking beyond them (the protocol and the
per-call bound, calls.RankAsker), the judge's rules (only for a batch not every rank answered as the
reference), and the loop; the rate is batches per CPU-minute of this process (process_time), the
overhead the share of that time not spent in the policy.

``--generate-warm`` times the random phase alone once its memos are warm (generate_warm);
``--random-catches`` counts the batches the random phase alone needs to find each mutant with its own
invariant over 20 seeds (random_phase_catches).

Each policy runs through the CLI path's engine with the default options (cp_sizes 1,2,4,8, all three
capacity kinds, boundary models on), in this process, one after another. The wall rate depends on
what else the machine runs; the per-CPU-minute rate does not (on an idle 2-core machine the wall rate
is about twice it, since the search runs in two processes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
if "--root" in sys.argv:  # measure another checkout's cpgraph (e.g. the tree before a change) with this script
    _root = sys.argv[sys.argv.index("--root") + 1]
    sys.path.insert(0, str(Path(_root).resolve()))
    os.chdir(_root)

from typing import Any  # noqa: E402

from cpgraph import check_policy  # noqa: E402
from cpgraph.proofs.mutants import MUTANTS  # noqa: E402
from cpgraph.proofs.mutants._kit import correct_select  # noqa: E402

BREAKDOWN = ("benchmarks.check_rate:lean", "benchmarks.check_rate:plain", "cpgraph.proofs.mutants.correct:scan")


class _Lean:
    """A lean correct policy: the decision is made once per batch (every rank is asked the same batch,
    by the same tuple objects) and read by every rank, as a serving stack computes it once per step."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] = ()
        self._keep: tuple[object, ...] = ()
        self._bucket: int | None = None

    def _select(self, b: dict[str, Any]) -> int | None:
        lengths, buckets = b["extend_seq_lens"], b["capture_num_tokens"]
        key = (id(lengths), id(buckets), b["num_tokens"], b["cp_size"], b["align_size"], b["max_padding_factor"])
        if key != self._key:
            self._key, self._keep = key, (lengths, buckets)  # kept alive, so the ids stay theirs
            self._bucket = correct_select(**b)
        return self._bucket

    def admit(self, **b: Any) -> bool:
        return self._select(b) is not None

    def replay_bucket(self, **b: Any) -> int | None:
        return self._select(b)


lean = _Lean()


class _Plain:
    """A plain correct policy, decided afresh on every call as a straightforward serving-stack selector would
    write it: not CP-active -> refuse; zigzag loads by a per-rank loop over the requests (L = 2Pq + m: rank r
    holds 2q + [r < m] + [2P-1-r < m]); rows = align_up(max load, A); the least captured bucket in [n, F*n]
    whose recorded rows hold them."""

    @staticmethod
    def _select(b: dict[str, Any]) -> int | None:
        lengths, p, n = b["extend_seq_lens"], b["cp_size"], b["num_tokens"]
        s = 2 * p
        if p == 1 or n < s or min(lengths) < s:
            return None
        loads = [0] * p
        for length in lengths:
            q, m = divmod(length, s)
            for r in range(p):
                loads[r] += 2 * q + (r < m) + (s - 1 - r < m)
        a = b["align_size"]
        need = -(-max(loads) // a) * a
        caps, limit = b["bucket_local_tokens"], b["max_padding_factor"] * n
        for bucket in b["capture_num_tokens"]:
            if bucket < n:
                continue
            if bucket > limit:
                return None
            rows = caps.get(bucket)
            if rows is not None and rows >= need:
                return bucket
        return None

    def admit(self, **b: Any) -> bool:
        return self._select(b) is not None

    def replay_bucket(self, **b: Any) -> int | None:
        return self._select(b)


plain = _Plain()


def _policy_floor(raw: Any, batches: list[Any], always: bool) -> None:
    """The policy's own calls on ``batches`` as a plain loop would make them (every rank by keyword from
    one dict per batch, replay after admission, rows for a named bucket), with no bound, no per-rank
    copies, records or judging: what the policy costs by itself."""
    admit, replay, rows = raw.admit, raw.replay_bucket, raw.local_rows
    for batch in batches:
        kw = batch.kwargs()
        for rank in range(batch.cp_size):
            kw["cp_rank"] = rank
            try:
                yes = bool(admit(**kw))
            except Exception:
                yes = False
            if yes or always:
                try:
                    bucket = replay(**kw)
                except Exception:
                    bucket = None
                if rows is not None and bucket is not None:
                    try:
                        rows(bucket=bucket, **kw)
                    except Exception:
                        pass


def breakdown(target: str, seconds: float, seed: int = 0, chunk: int = 100) -> dict[str, Any]:
    """The rate of run.py's search loop for ``target`` (one process, boundary models off: run_check with
    one worker, uninstrumented, in a forked child so that it starts as cold as the parts after it; a
    later target of the same run inherits the memos the earlier ones filled), then where its time goes:
    the same batches in the same order, in chunks
    of ``chunk``, each part timed over a whole chunk (no timer inside the loop: a thread_time() call costs
    about 1 us, as much as a policy call): generating; asking every rank (the policy plus the bound);
    judging (the reference's expectation and the rules); and the policy alone in a plain loop over the
    same batches (_policy_floor); "ask beyond the policy" is asking less that floor, "loop rest" the
    loop's total less the parts. On a tree with judging.ask_judge (--root may name an older checkout)
    the step is timed as ask_judge runs it: the decision (reference.judge.expected_bucket), the asker
    (calls.RankAsker, no records when every rank gave that decision), the rules for the other batches."""
    import itertools

    from cpgraph.check.calls import bound, session
    from cpgraph.check.generate import cases
    from cpgraph.check.judging import judge
    from cpgraph.check.options import make_options
    from cpgraph.check.protocol import ask, load_policy
    from cpgraph.check.run import run_check, with_policy_knobs

    import cpgraph.reference.judge as reference_judge

    expected_bucket: Any = getattr(reference_judge, "expected_bucket", None)  # None: a tree before the fused step

    raw = load_policy(target)
    policy = bound(raw)
    asker: Any = getattr(policy, "asker", None)
    fused = expected_bucket is not None and asker is not None
    opts = with_policy_knobs(make_options(boundary=False, seed=seed, budget_s=seconds), policy)
    always = opts.ask_replay == "always"
    clock = time.process_time
    def loop() -> tuple[int, float, dict[str, int]]:
        with session(10.0):
            cpu0 = clock()
            report = run_check(policy, opts, workers=1)
            loop_cpu = clock() - cpu0
        assert report.ok, report
        return report.cases, loop_cpu, dict(report.phases)

    # The loop runs in a forked child, so that it and the parts below both start cold (no memo filled
    # yet, the exhaustive phase first): the parts then measure what the loop met, not a warmed-up rerun.
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the uninstrumented loop, its figures back through the pipe
        try:
            os.write(write, json.dumps(loop()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        loop_cases, loop_cpu, phases = json.loads(pipe.read())
    os.waitpid(pid, 0)

    parts = dict.fromkeys(("generate", "expectation", "ask", "judge", "policy_alone"), 0.0)
    count = kept = 0
    stream = cases(opts)
    with session(10.0):
        while count < loop_cases:  # the batches the loop met, in its order
            t0 = clock()
            batches = [b for _, b in itertools.islice(stream, chunk)]
            t1 = clock()
            if fused:
                wants = [expected_bucket(b, opts.strategy) for b in batches]
                t2 = clock()
                answered = [asker(b, None, always, *w) for b, w in zip(batches, wants)]
            else:
                t2 = t1
                answered = [ask(policy, b, ask_replay=opts.ask_replay) for b in batches]
            t3 = clock()
            for b, a in zip(batches, answered):
                if a is not None:
                    assert not judge(b, a, strategy=opts.strategy, invariants=opts.checked, replay_always=always)
            t4 = clock()
            _policy_floor(raw, batches, always)
            t5 = clock()
            for name, dt in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                parts[name] += dt
            count += len(batches)
            kept += sum(a is None for a in answered)
    stream.close()
    us = 1e6 / count
    total = loop_cpu / loop_cases * 1e6
    policy_us = parts["policy_alone"] * us
    step = sum(parts[k] for k in ("generate", "expectation", "ask", "judge")) * us  # the parts' own total
    return {
        "loop_batches": loop_cases,
        "phases": phases,
        "per_cpu_minute": round(loop_cases / loop_cpu * 60),
        "us_per_batch_loop": round(total, 2),
        "overhead_share": round(1 - policy_us / total, 3),
        "us_per_batch_parts_total": round(step, 2),
        "overhead_share_parts": round(1 - policy_us / step, 3),
        "parts_batches": count,
        "kept_without_records_share": round(kept / count, 3),
        "us_per_batch_parts": {
            "generate": round(parts["generate"] * us, 2),
            "ask_beyond_policy": round((parts["ask"] - parts["policy_alone"]) * us, 2),
            "judge_expectation": round(parts["expectation"] * us, 2) if fused else "in judge_rules",
            "judge_rules": round(parts["judge"] * us, 2),
            "policy_alone": round(policy_us, 2),
            "loop_rest": round(total - step, 2),
        },
        "clock": "process_time; the loop in a forked child, the parts in whole chunks in the parent, both cold; "
        "overhead_share against the loop's total, overhead_share_parts against the parts' own total (one "
        "process, so the machine's drift between the two runs does not enter it); loop_rest = the loop's "
        "total less the parts",
    }


def generate_warm(warm: int = 300_000, timed: int = 200_000, seed: int = 0) -> dict[str, Any]:
    """The random phase alone (random_cases, default options, boundary off), warm: ``warm`` batches
    consumed first (rows memos filled), then ``timed`` batches consumed (not kept: a list of them would
    set off the garbage collector) under process_time; us per batch."""
    import itertools

    from cpgraph.check.options import make_options
    from cpgraph.check.randoms import random_cases

    stream = random_cases(make_options(boundary=False, seed=seed))
    for _ in itertools.islice(stream, warm):
        pass
    t0 = time.process_time()
    for _ in itertools.islice(stream, timed):
        pass
    return {"us_per_batch": round((time.process_time() - t0) / timed * 1e6, 3), "warm": warm, "timed": timed, "loadavg": os.getloadavg()}


def random_phase_catches(seeds: int = 20, cap: int = 20_000, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The random phase alone finds every mutant: for each mutant of proofs/mutants, random_cases (default
    options and the mutant's declared knobs, boundary and exhaustive phases off), every rank asked and
    judged as the search loop does (judging.stepper), the number of batches until the first finding of
    the mutant's own invariant, over seeds 0..seeds-1 (None past ``cap``)."""
    from cpgraph.check.calls import bound, session
    from cpgraph.check.judging import stepper
    from cpgraph.check.options import make_options
    from cpgraph.check.protocol import load_policy
    from cpgraph.check.randoms import random_cases
    from cpgraph.check.run import with_policy_knobs

    out: dict[str, Any] = {}
    with session(10.0):
        for name, invariant in MUTANTS.items():
            if names is not None and name not in names:
                continue
            policy = bound(load_policy(f"cpgraph.proofs.mutants.{name}"))
            wanted = frozenset((invariant,))
            firsts: list[int | None] = []
            for seed in range(seeds):
                opts = with_policy_knobs(make_options(boundary=False, seed=seed), policy)
                step = stepper(policy, strategy=opts.strategy, ask_replay=opts.ask_replay)
                first = None
                for count, (_, batch) in enumerate(random_cases(opts), 1):
                    _, findings = step(batch, wanted)
                    if any(f.invariant == invariant for f in findings):
                        first = count
                        break
                    if count >= cap:
                        break
                firsts.append(first)
            found = sorted(x for x in firsts if x is not None)
            median = None
            if found:
                mid = len(found) // 2
                median = found[mid] if len(found) % 2 else (found[mid - 1] + found[mid]) / 2
            out[name] = {"invariant": invariant, "found": f"{len(found)}/{seeds}", "median": median, "max": found[-1] if found else None}
            print(f"{name:20s} {invariant:22s} found {len(found)}/{seeds} median {median} max {out[name]['max']}", flush=True)
    return out


CORRECT = ("benchmarks.check_rate:lean", "benchmarks.check_rate:plain", "cpgraph.reference.policy", "cpgraph.impl.policy", "cpgraph.proofs.mutants.correct:scan", "cpgraph.proofs.mutants.correct:with_rows")


def _cpu_seconds() -> float:
    """CPU time of this process and its reaped children (the forked search worker, the Z3 solver)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=30.0, help="budget per correct policy (default 30, the CLI default)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--skip-mutants", action="store_true")
    parser.add_argument("--targets", help="comma-separated policies instead of the correct ones (and the breakdown's)")
    parser.add_argument("--breakdown", action="store_true", help="time the parts of the search loop per batch instead")
    parser.add_argument("--root", help="import cpgraph from this checkout instead (read before the imports)")
    parser.add_argument("--adapter-root", help="an unpacked release for adapter targets (cpgraph.adapters.vllm:pcp), as the CLI's")
    parser.add_argument("--generate-warm", action="store_true", help="time the random phase alone, warm (us per batch) instead")
    parser.add_argument("--random-catches", action="store_true", help="batches the random phase alone needs to find each mutant instead")
    parser.add_argument("--seeds", type=int, default=20, help="--random-catches: seeds 0..SEEDS-1 (default 20)")
    parser.add_argument("--mutants", help="--random-catches: comma-separated mutants instead of all")
    args = parser.parse_args()
    if args.generate_warm or args.random_catches:
        names = tuple(args.mutants.split(",")) if args.mutants else None
        found = generate_warm() if args.generate_warm else {"random_phase_catches": random_phase_catches(args.seeds, names=names)}
        print(json.dumps(found))
        if args.json:
            Path(args.json).write_text(json.dumps(found, indent=2) + "\n")
        return 0
    if args.breakdown:
        out: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count(), "loadavg_before": os.getloadavg()}
        for target in args.targets.split(",") if args.targets else BREAKDOWN:
            out[target] = breakdown(target, args.budget_s)
            print(target, json.dumps(out[target]))
        out["loadavg_after"] = os.getloadavg()
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
        return 0
    results: dict[str, object] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg_before": os.getloadavg()[0],
    }
    rates = {}
    for target in args.targets.split(",") if args.targets else CORRECT:
        cpu_before = _cpu_seconds()
        if args.adapter_root:  # an adapter's policy of the release unpacked there, as `cpgraph check --adapter-root`
            from cpgraph.adapters import policy_at

            report = check_policy(policy_at(target, args.adapter_root), budget_s=args.budget_s)
        else:
            report = check_policy(target, budget_s=args.budget_s)
        cpu = _cpu_seconds() - cpu_before
        per_cpu_minute = report.cases / cpu * 60 if cpu > 0 else 0.0
        rates[target] = {
            "ok": report.ok,
            "cases": report.cases,
            "seconds": round(report.seconds, 2),
            "per_minute": round(report.rate_per_minute),
            "cpu_seconds": round(cpu, 2),
            "per_cpu_minute": round(per_cpu_minute),
        }
        print(
            f"{target:36s} ok={report.ok} {report.cases:>8,} batches in {report.seconds:5.1f} s = "
            f"{report.rate_per_minute:>9,.0f} batches/min wall, {per_cpu_minute:>9,.0f} per CPU-minute "
            f"({cpu:.1f} CPU s over all processes)"
        )
    results["rates"] = rates
    if args.adapter_root:
        results["adapter_root"] = args.adapter_root
    if not args.skip_mutants:
        catches = {}
        for name, invariant in MUTANTS.items():
            start = time.perf_counter()
            report = check_policy(f"cpgraph.proofs.mutants.{name}", budget_s=10.0)
            v = report.violation(invariant)
            wall = time.perf_counter() - start
            first = v.found_after if v else None
            size = f"R={len(v.batch.extend_seq_lens)} n={v.batch.num_tokens} P={v.batch.cp_size}" if v else "-"
            catches[name] = {"invariant": invariant, "caught": v is not None, "wall_s": round(wall, 2), "after_batches": first, "counterexample": size}
            print(f"{name:20s} {invariant:22s} caught={v is not None} wall={wall:4.2f} s after {first} batches; minimised {size}")
        results["mutants"] = catches
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
