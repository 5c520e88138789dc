"""The bulk harness's per-function families: align_up, the CP-active gate, required rows, capture rows, headroom
capacities and the selection on long capture lists, each path's answer judged against the mirror's."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from cpgraph.proofs.theorems.claims import documented_align
from cpgraph.proofs.conformance.draw import BIG, Draw
from cpgraph.proofs.conformance.mirror import (
    MIRROR_STRATEGIES,
    mirror_active,
    mirror_align_up,
    mirror_fitting,
    mirror_headroom,
    mirror_rank_loads,
    mirror_required,
    mirror_select,
)
from cpgraph.proofs.conformance.paths import DecisionPath
from cpgraph.proofs.conformance.report import Family, attempt


def accepts(path: DecisionPath, strategy: str) -> bool:
    return not path.strategies or strategy in path.strategies


def family_arith(paths: Sequence[DecisionPath], draw: Draw, count: int) -> Family:
    fam = Family("align_up")
    rng = draw.rng
    for _ in range(count):
        value = draw.value()
        align = rng.choice((1, 2, 3, 4, 8, 16, 64, 128)) if rng.random() < 0.7 else rng.randint(1, 4096)
        expected = mirror_align_up(value, align)
        fam.cases += 1
        for path in paths:
            fam.judge(path.name, "align_up", expected, attempt(path.align_up, value, align),
                      lambda: f"align_up({value}, {align})")
    return fam


def family_gates(paths: Sequence[DecisionPath], draw: Draw, count: int) -> Family:
    fam = Family("cp_active")
    rng = draw.rng
    for _ in range(count):
        p = draw.cp_size()
        s = 2 * p
        k = rng.randint(1, 4)
        lengths = tuple(max(0, s + rng.choice((-1, 0, 0, 1, rng.randint(-s, 4 * s)))) for _ in range(k))
        total = sum(lengths)
        roll = rng.random()
        # n is the batch's token count, padded (n > total) or, for the bare gate, any count (n < total too).
        n = max(1, total + (rng.choice((0, 1, s - total if s > total else 0)) if roll < 0.3 else
                            -rng.randint(0, total) if roll < 0.4 else 0))
        expected = mirror_active(lengths, n, p)
        fam.cases += 1
        for path in paths:
            fam.judge(path.name, "is_cp_active", expected,
                      attempt(path.is_cp_active, lengths, num_tokens=n, cp_size=p),
                      lambda: f"is_cp_active({lengths}, num_tokens={n}, cp_size={p})")
    return fam


def align_for(draw: Draw, p: int, strategy: str) -> int:
    return documented_align(strategy, p) if draw.rng.random() < 0.8 else draw.rng.choice((1, 8, 3 * p))


def family_rows(paths: Sequence[DecisionPath], draw: Draw, count: int) -> Family:
    fam = Family("required_local_tokens")
    rng = draw.rng
    for _ in range(count):
        p = draw.cp_size()
        kind = rng.choice(MIRROR_STRATEGIES)
        a = align_for(draw, p, kind)
        lengths = draw.lengths(p, huge=rng.random() < 0.2)
        busiest = max(mirror_rank_loads(lengths, p, kind))
        expected = mirror_align_up(busiest, a)
        fam.cases += 1
        for path in paths:
            if accepts(path, kind):
                fam.judge(path.name, "required_local_tokens", expected,
                          attempt(path.required_local_tokens, lengths, cp_size=p, align_size=a, strategy=kind),
                          lambda: f"required_local_tokens({lengths}, cp_size={p}, align_size={a}, strategy={kind!r})")
                if path.busiest_load is not None:
                    fam.judge(path.name, "busiest load", busiest,
                              attempt(path.busiest_load, lengths, cp_size=p, strategy=kind),
                              lambda: f"max rank load of {lengths}, cp_size={p}, strategy={kind!r}")
    return fam


def family_capture(paths: Sequence[DecisionPath], draw: Draw, count: int) -> Family:
    fam = Family("capture_local_tokens")
    rng = draw.rng
    for _ in range(count):
        p = draw.cp_size()
        kind = rng.choice(MIRROR_STRATEGIES)
        a = align_for(draw, p, kind)
        bucket = max(1, draw.length(p, huge=rng.random() < 0.3))
        expected = mirror_required((bucket,), p, a, kind)
        fam.cases += 1
        for path in paths:
            if accepts(path, kind):
                fam.judge(path.name, "capture_local_tokens", expected,
                          attempt(path.capture_local_tokens, bucket, cp_size=p, align_size=a, strategy=kind),
                          lambda: f"capture_local_tokens({bucket}, cp_size={p}, align_size={a}, strategy={kind!r})")
    return fam




def family_headroom(paths: Sequence[DecisionPath], draw: Draw, count: int) -> Family:
    fam = Family("headroom_local_tokens")
    rng = draw.rng
    for path in paths:
        if path.headroom_local_tokens is None:
            fam.not_compared.append(f"{path.name}.headroom_local_tokens: not provided")
    for _ in range(count):
        p = draw.cp_size()
        kind = "zigzag" if rng.random() < 0.5 else rng.choice(MIRROR_STRATEGIES)
        a = align_for(draw, p, kind)
        n = max(1, draw.length(p, huge=rng.random() < 0.3))
        r = rng.choice((1, 2, 3, 4, 8, 64)) if rng.random() < 0.8 else rng.randint(1, 2 * n + 2)
        expected = mirror_headroom(n, p, a, r, kind)
        fam.cases += 1
        for path in paths:
            if path.headroom_local_tokens is not None and accepts(path, kind):
                # zigzag through the default argument (the reference's original signature), others by name
                call = {} if kind == "zigzag" else {"strategy": kind}
                fam.judge(path.name, "headroom_local_tokens", expected,
                          attempt(path.headroom_local_tokens, n, cp_size=p, align_size=a, max_requests=r, **call),
                          lambda: f"headroom_local_tokens({n}, cp_size={p}, align_size={a}, max_requests={r}, "
                                  f"strategy={kind!r})")
    return fam


def family_selection(paths: Sequence[DecisionPath], draw: Draw, count: int, per_list: int = 40) -> Family:
    """Capture lists of 32 to 48 buckets (a runner's list is fixed; batches vary), each asked ``per_list``
    selections with n and required on its edges: n at a bucket or one past it, F*n at a bucket or one short,
    required equal to a capacity or one above."""
    fam = Family("select_replay_bucket")
    rng = draw.rng
    for path in paths:
        if path.fitting_buckets is None:
            fam.not_compared.append(f"{path.name}.fitting_buckets: not provided")
    while fam.cases < count:
        center = rng.randint(64, 10**6) if rng.random() < 0.7 else rng.randint(BIG - 10**6, 2**62)
        factor = draw.factor()
        buckets, table = draw.capture_list(center, factor, max(1, center // 8), size=rng.randint(32, 48))
        caps = list(table.values()) or [0]
        for _ in range(min(per_list, count - fam.cases)):
            b = buckets[int(rng.random() * len(buckets))]
            roll = rng.random()
            if roll < 0.35:
                n = b + (roll < 0.1)
            elif roll < 0.7:
                n = max(1, math.ceil(b / Fraction(factor)) + (roll < 0.45) - (roll > 0.6))  # F*n at or next to b
            else:
                n = max(1, center + int((rng.random() - 0.5) * center))
            cap = caps[int(rng.random() * len(caps))]
            required = max(0, cap + (rng.random() < 0.3) - (rng.random() < 0.1))
            expected = mirror_select(n, required, buckets, table, factor)
            expected_set = mirror_fitting(n, required, buckets, table, factor)
            kwargs = dict(num_tokens=n, required_local_tokens=required, capture_num_tokens=buckets,
                          bucket_local_tokens=table, max_padding_factor=factor)

            def inputs(n: int = n, required: int = required) -> str:
                return (f"num_tokens={n}, required_local_tokens={required}, max_padding_factor={factor}, "
                        f"capture_num_tokens={buckets}, bucket_local_tokens={table}")

            fam.cases += 1
            for path in paths:
                fam.judge(path.name, "select_replay_bucket", expected, attempt(path.select_replay_bucket, **kwargs),
                          inputs)
                if path.fitting_buckets is not None:
                    fam.judge(path.name, "fitting_buckets", expected_set, attempt(path.fitting_buckets, **kwargs),
                              inputs)
    return fam
