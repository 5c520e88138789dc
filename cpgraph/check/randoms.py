"""The seeded random phase of the check's inputs (generate.py mixes it with the others): batches of every
cp_size, residue mod 2P, padded n, capture list and table kind, drawn from one seeded numpy PCG64 stream
per search process, a chunk of batches at a time.

The stream. ``numpy.random.Generator(numpy.random.PCG64(seed))`` (PCG64's SeedSequence spreads the seed,
any int >= 0); every draw is one float of its ``random()``, which is one PCG64 64-bit word's top 53 bits
times 2**-53 (tests/unit/test_check_generate_stream.py holds it to that formula, so a numpy whose float
sampler changed would fail there instead of silently changing the stream). A chunk of batches (1024,
fewer where max_requests is large: the chunk size depends on max_requests only) draws one block of floats
with a fixed number per batch, in fixed columns: the configuration, the factor, the request count, three
for each possible request, the pad's kind and size, the capture list's kind, step, count and values, the
edges' coins and the 'just above n' offset (a column a batch does not use is drawn all the same); then
one float per bucket of the chunk's capture lists, in order, for the arbitrary tables' nudges. The chunk
is worked out with numpy arrays: a coin is ``u < p``, an integer in [a, a + w) is ``a + floor(u * w)``
(w < 2**53), a choice indexes a precomputed table with such an integer; floor(F*n) is n * num // den in
int64, or in Python ints where the product could pass 2**62. Each batch's own Python work is slicing the
chunk's tuples and building its record. The integers are not exactly uniform: a float of 53 bits scaled
to w values favours some values by at most w / 2**53 (under 1e-11 for the widths drawn here), which
changes nothing the search looks for. The same seed and options give the same batches in every process
and on every platform (PCG64 and SeedSequence are fixed algorithms, the floats their words scaled, then
integer and IEEE double arithmetic in a fixed order; a test pins one stream's digest).

This stream (2026-12-01, second change that day) replaced one loop over one ``random.Random`` stream,
one C ``random()`` call a draw and one batch at a time, which had itself replaced one that reproduced
randint/choice/sample exactly. A seed meets different batches than it did before each change; the
distribution is the one ``random_cases`` documents, as before. Warm, a batch costs about half what it
did under the scalar loop (benchmarks/check_rate.py --generate-warm).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cpgraph.check.batch import Factor, parse_table, record, rows_table
from cpgraph.check.boundary import PhasedBatch
from cpgraph.check.options import SEARCHED_FACTORS, CheckOptions
from cpgraph.reference.judge import window_top

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Ints = npt.NDArray[np.int64]
    Bools = npt.NDArray[np.bool_]

_POWERS = tuple(1 << k for k in range(1, 16))

_COIN = 0.35  # each tempting edge bucket (n, F*n, just above n; for a padded n: sum, F*sum + 1) is added with this chance

_BASE = len(_POWERS)  # a capture list's first slots: a grid's 1..12 points, the powers of two or 1..8 scattered buckets
_EDGES = 5  # then the edges: n, floor(F*n), just above n, the sum, floor(F*sum) + 1
_ABSENT = -(1 << 62)  # an arbitrary row's nudge that says "no recorded capacity"
_FLOATS = 1 << 16  # about this many floats drawn per chunk: 1024 batches of up to 8 requests
_CHUNK = 1024  # batches per chunk (fewer where max_requests is large)
_DENSE = 1 << 21  # the dense caches' most entries (all tables together); past it, rows are looked up one by one

# One configuration of a batch, what the per-batch Python needs about it: cp_size, alignment, the table's
# label ('captured', 'headroom:R' or 'arbitrary') and the batch's context_len label.
_Config = tuple[int, int, str, int | None]


def clamp(x: Ints, r: Ints, budget: int) -> tuple[Ints, Ints]:
    """The budget's clamp on a chunk's raw lengths, in place: row i's first r[i] entries of ``x`` (the
    rest are set to 0) become what a request-by-request clamp makes of them: request j is cut to the
    room the later ones leave, budget - (the sum before it) - (r - j - 1), at least 1 token, and the
    batch ends once the sum reaches the budget. Returns each row's request count and sum.

    Vectorised: the clamp first bites at the first k whose prefix sum passes budget - (r-k-1); request k
    becomes that room (>= 1 when budget >= r) and every later one 1 token, so the lengths then sum to the
    budget exactly, reached at the last request. With budget < r every request is 1 token and the batch
    ends at the budget's count. (tests/unit/test_check_generate_stream.py holds this equal to the
    request-by-request clamp.)"""
    import numpy as np

    j = np.arange(x.shape[1], dtype=np.int64)[None, :]
    used = j < r[:, None]
    x[~used] = 0
    sums = np.cumsum(x, axis=1)
    over = (sums > budget - (r[:, None] - j - 1)) & used
    hit: Bools = np.any(over, axis=1)
    if hit.any():
        k = over.argmax(axis=1)
        rows = np.nonzero(hit)[0]
        kk = k[rows]
        room = budget - (sums[rows, kk] - x[rows, kk]) - (r[rows] - kk - 1)
        x[(j > k[:, None]) & used & hit[:, None]] = 1
        x[rows, kk] = np.maximum(room, 1)
    count: Ints = np.minimum(r, budget)
    live: Ints = np.minimum(x.sum(axis=1), budget)
    return count, live


def random_cases(options: CheckOptions) -> Iterator[PhasedBatch]:
    """Seeded random batches forever: sizes, residues mod 2P, padded n, capture lists and tables all varied.

    One batch: a cp_size (weights 1/P, 0.3 for P = 1), an alignment and a table spec (uniform among the
    configured ones), a factor (the fixed ones uniformly, else the configured F four times in five and
    one of 1..4 otherwise); 1..max_requests lengths (35% short ones of 2P..16P tokens, 25% whole
    rounds of 2P plus an awkward remainder P + 1, 2P - 1, 1 or P, 35% anywhere from 2P up to the
    budget's share, 5% shorter than 2P: not CP-active; none past the max_tokens budget: the first
    request that would leave too little room for the ones after it is cut to the room left, at least 1
    token, and each later one to 1 token); for half of them (all with num_tokens='padded', none with
    'live') a padded n: to the alignment, by 1..2P, or by up to a quarter of the sum; a capture list of
    one of three kinds: 40% a grid around n (1..12 points of a step 2P, 8P, 64, 128, 256 or n/8 from
    about n/2 up to F*n + F*64), 20% the powers of two up to there, 40% 1..8 buckets scattered over the
    same range; then each of n, F*n and a bucket just above n with chance 0.35 and, for a padded n, the
    edges a window taken from the lengths would meet (the sum, floor(F*sum) + 1), each with chance 0.35;
    buckets below 2P are dropped (none left: max(n, 2P)). The table: 'captured' and 'headroom:R' rows as
    recorded; 'arbitrary' rows are the captured ones, a fifth of them absent, the rest nudged by 0, 0,
    +A, -A, +1 or -1 (never below 0).

    Drawn a chunk of batches at a time from one seeded stream (module docstring): a chunk's draws and
    arithmetic are numpy array operations, the per-configuration work (tables, weights, factors'
    windows) done once before the first chunk, and each batch's own Python work is slicing the chunk's
    tuples and building its record."""
    import numpy as np

    ctx, strategy, budget = options.context_len, options.strategy, options.max_tokens
    cap = 4 * budget  # the capture lists' range ends here (the edges F*n and n + 8P may lie above)
    R = options.max_requests

    # One configuration per (cp_size, alignment, table spec), weighted so that a batch is drawn at cp_size
    # P with weight 1/P (equal policy time per cp_size rather than equal batch counts: a batch asks P
    # ranks), and the alignment and table uniformly among the configured ones: one draw picks all three.
    # Each configuration reads its rows from one of the rows memos (rows_table; an arbitrary table the
    # captured rows of its cp_size and alignment), and has its row of the nudge table: 6 of 30 entries
    # absent, 4 of 30 each of 0, 0, +A, -A, +1, -1 for an arbitrary table; all 0 otherwise.
    sizes = options.cp_sizes
    configs: list[_Config] = []
    weights: list[float] = []
    cfg_p: list[int] = []
    cfg_a: list[int] = []
    cfg_size: list[int] = []  # the configuration's index into the per-cp_size tables below
    cfg_table: list[int] = []  # the configuration's rows memo
    nudge_rows: list[list[int]] = []
    tables: list[dict[int, int]] = []
    for i, p in enumerate(sizes):
        aligns, specs = options.aligns(p), options.capacities
        share = (0.3 if p == 1 else 1.0 / p) / (len(aligns) * len(specs))
        for a in aligns:
            for spec in specs:
                arbitrary = parse_table(spec)[0] == "arbitrary"
                rows = rows_table("captured" if arbitrary else spec, cp_size=p, align_size=a, strategy=strategy, context_len=ctx)
                if not any(rows is t for t in tables):
                    tables.append(rows)
                cfg_table.append(next(k for k, t in enumerate(tables) if t is rows))
                configs.append((p, a, "arbitrary" if arbitrary else spec, ctx if spec == "captured" else None))
                nudge_rows.append([_ABSENT] * 6 + [0, 0, a, -a, 1, -1] * 4 if arbitrary else [0] * 30)
                weights.append(share)
                cfg_p.append(p)
                cfg_a.append(a)
                cfg_size.append(i)
    cum = np.array(list(itertools.accumulate(weights)), dtype=np.float64)
    total_weight, last = float(cum[-1]), len(cum) - 1
    cfg_p_a, cfg_a_a, cfg_size_a, cfg_table_a = (np.array(v, dtype=np.int64) for v in (cfg_p, cfg_a, cfg_size, cfg_table))
    nudge_of = np.array(nudge_rows, dtype=np.int64)

    # Per cp_size: the awkward remainders of a whole-rounds length, and per request count r how many rounds
    # of 2P fit the budget's share and the width of 2P..share.
    tails = np.array([(p + 1, 2 * p - 1, 1, p) for p in sizes], dtype=np.int64)
    rounds_of = np.array([[0] + [max(1, budget // (2 * p * r)) for r in range(1, R + 1)] for p in sizes], dtype=np.int64)
    wide_of = np.array([[0] + [max(2 * p, budget // r) - 2 * p + 1 for r in range(1, R + 1)] for p in sizes], dtype=np.int64)

    # The factor table: an index drawn uniformly into it gives F with the promised chances; each entry
    # carries F's numerator and denominator (floor(F*n) = n * num // den) and its window above 64 tokens.
    fs: tuple[Factor, ...]
    if options.padding_factors is not None:
        fs = options.padding_factors
    else:  # mostly the configured F; sometimes another, so a policy that ignores max_padding_factor shows
        fs = (options.max_padding_factor,) * 16 + SEARCHED_FACTORS  # 16/20 the configured F, 1/20 each of 1..4
    f_num = [f if type(f) is int else f.numerator for f in fs]
    f_num_a = np.array(f_num, dtype=np.int64)
    f_den_a = np.array([1 if type(f) is int else f.denominator for f in fs], dtype=np.int64)
    f_above = np.array([window_top(64, f) for f in fs], dtype=np.int64)
    n_factors = len(fs)
    # n stays below 2 * budget + the largest alignment (a pad is at most max(A, 2P, sum / 4)); where n times
    # a numerator could pass 2**62, floor(F*n) is worked out with Python ints instead
    exact_products = (2 * budget + max(max(cfg_a), 4 * max(sizes)) + 1) * max(f_num) >= 1 << 62

    # the padded-n draw: k = pad_off + floor(u * pad_width); k < 3 is a live n, 3..5 the three pads
    pad_width, pad_off = {"both": (6, 0), "padded": (3, 3), "live": (0, 0)}[options.num_tokens]

    # A chunk's draws: one row of floats per batch, its columns fixed slots (then one float per bucket of
    # the chunk's capture lists, for the arbitrary tables' nudges).
    col_len = 3  # each possible request's class, value and remainder: columns 3 + j, 3 + R + j, 3 + 2R + j
    col_pad = col_len + 3 * R  # the pad's kind and size
    col_kind = col_pad + 2  # the capture list's kind, a grid's step, the number of points
    col_values = col_kind + 3  # _BASE value slots
    col_coins = col_values + _BASE  # _EDGES coins, then the 'just above n' offset
    width = col_coins + _EDGES + 1
    chunk = max(16, min(_CHUNK, _FLOATS // width))

    rng = np.random.Generator(np.random.PCG64(options.seed))
    j_req = np.arange(R, dtype=np.int64)[None, :]
    slot = np.arange(_BASE, dtype=np.int64)[None, :]
    powers = np.array(_POWERS, dtype=np.int64)[None, :]
    sentinel = np.iinfo(np.int64).max
    fixed_steps = np.array([64, 128, 256], dtype=np.int64)
    batch_index = np.arange(chunk, dtype=np.int64)
    n_tables = len(tables)
    span = 1024 if n_tables * 1024 <= _DENSE else 0  # buckets a table the caches hold (0: no caches)
    dense = np.full(n_tables * span, -1, dtype=np.int64)  # table * span + bucket -> rows (-1: not looked up yet)
    made = np.empty(n_tables * span, dtype=object)  # table * span + bucket -> the pair (bucket, rows) once looked up

    def floor_times(u: Any, w: Any) -> Ints:
        """floor(u * w) for floats u in [0, 1) and int widths w (broadcast)."""
        out: Ints = (u * w).astype(np.int64)
        return out

    def window(n: Ints, num: Ints, den: Ints) -> Ints:
        """floor(F*n) for each row (exact: Python ints where the products could pass int64)."""
        if not exact_products:
            out: Ints = n * num // den
            return out
        return np.array([a * b // c for a, b, c in zip(n.tolist(), num.tolist(), den.tolist())], dtype=np.int64)

    while True:
        u = rng.random((chunk, width))
        ci = np.minimum(np.searchsorted(cum, u[:, 0] * total_weight, side="right"), last)
        fi = floor_times(u[:, 1], n_factors)
        r = 1 + floor_times(u[:, 2], R)
        low = 2 * cfg_p_a[ci]
        size = cfg_size_a[ci]
        num, den = f_num_a[fi], f_den_a[fi]

        # the lengths: each request's class and value, then the budget's clamp
        roll, v = u[:, col_len : col_len + R], u[:, col_len + R : col_len + 2 * R]
        low_c = low[:, None]
        x = np.where(
            roll < 0.35,
            low_c + floor_times(v, 7 * low_c + 1),  # 2P..16P
            np.where(
                roll < 0.6,  # whole rounds of 2P plus an awkward remainder
                low_c * (1 + floor_times(v, rounds_of[size, r][:, None])) + tails[size[:, None], floor_times(u[:, col_len + 2 * R : col_len + 3 * R], 4)],
                np.where(roll < 0.95, low_c + floor_times(v, wide_of[size, r][:, None]), 1 + floor_times(v, low_c)),  # 2P up to the share; under 2P
            ),
        )
        count, live = clamp(x, r, budget)

        # n: the sum, or padded (to the alignment, by 1..2P, or by up to a quarter of the sum)
        n = live
        if pad_width:
            align = cfg_a_a[ci]
            kind = pad_off + floor_times(u[:, col_pad], pad_width)
            size_u = u[:, col_pad + 1]
            to_align = (-live) % align
            n = live + np.where(
                kind == 3,
                np.where(to_align == 0, align, to_align),
                np.where(kind == 4, 1 + floor_times(size_u, low), np.where(kind == 5, 1 + floor_times(size_u, np.maximum(live // 4, 1)), 0)),
            )

        # the capture list, over [about n/2, F*n + F*64] (capped at 4 * max_tokens, at least 2P)
        top_n = window(n, num, den)  # floor(F*n)
        top = np.maximum(np.minimum(top_n + f_above[fi], cap), low)
        roll_k = u[:, col_kind]
        values = u[:, col_values : col_values + _BASE]
        many = u[:, col_kind + 2 : col_kind + 3]
        # 40% a grid around n: 1..12 of its points (drawn with replacement), a step of 2P, 8P, 64, 128, 256 or n/8
        step_k = floor_times(u[:, col_kind + 1], 6)
        step = np.where(step_k == 0, low, np.where(step_k == 1, 4 * low, np.where(step_k == 5, np.maximum(n // 8, 1), fixed_steps[np.clip(step_k - 2, 0, 2)])))
        start = step * np.maximum((n // 2) // step, 1)
        points = np.maximum((top - start) // step + 1, 1)
        grid_on = ((roll_k < 0.4) & (start <= top))[:, None] & (slot < 1 + floor_times(many, 12))
        # 40% 1..8 scattered buckets; 20% the powers of two up to top
        first = np.maximum(n // 2, 1)
        scattered_on = (roll_k >= 0.6)[:, None] & (slot < 1 + floor_times(many, 8))
        powers_on = ((roll_k >= 0.4) & (roll_k < 0.6))[:, None] & (powers <= top[:, None])
        buckets = np.empty((chunk, _BASE + _EDGES), dtype=np.int64)
        buckets[:, :_BASE] = np.where(
            grid_on,
            start[:, None] + step[:, None] * floor_times(values, points[:, None]),
            np.where(scattered_on, first[:, None] + floor_times(values, (top - first + 1)[:, None]), np.where(powers_on, powers, sentinel)),
        )
        # the tempting edges; for a padded n a window taken from the lengths (a bucket in [sum, n), one in (F*sum, F*n])
        coins = u[:, col_coins : col_coins + _EDGES] < _COIN
        padded = live < n
        coins[:, 3] &= padded
        coins[:, 4] &= padded
        edges = buckets[:, _BASE:]
        edges[:, 0] = n
        edges[:, 1] = top_n
        edges[:, 2] = n + 1 + floor_times(u[:, col_coins + _EDGES], 4 * low)
        edges[:, 3] = live
        edges[:, 4] = window(live, num, den) + 1
        edges[~coins] = sentinel
        # sorted, duplicates and buckets below 2P dropped; none left: max(n, 2P)
        buckets.sort(axis=1)
        keep = buckets >= low_c
        keep[:, 1:] &= buckets[:, 1:] != buckets[:, :-1]
        keep &= buckets != sentinel
        kept = keep.sum(axis=1)
        empty = kept == 0
        if empty.any():
            buckets[empty, 0] = np.maximum(n, low)[empty]
            keep[empty, 0] = True
            kept[empty] = 1
        flat = buckets[keep]  # the capture lists one after another, each ascending

        # the tables: the rows of each bucket from its configuration's rows memo, an arbitrary table's
        # nudged (never below 0) and absent ones dropped. While the dense cache stays small, rows come
        # from it and each (bucket, rows) pair from a cache of the pairs made so far (a table's pair of a
        # bucket is made once, not once per batch: made afresh for a whole chunk, the pairs outlive the
        # garbage collector's youngest generation and cost more than their making); a nudged pair is
        # made per chunk.
        owner = np.repeat(batch_index, kept)
        table = cfg_table_a[ci][owner]
        biggest = int(flat.max())
        if biggest >= span and n_tables * (biggest + 1) <= _DENSE:  # grow the caches (table-major, span buckets a table)
            wider = max(2 * span, biggest + 1)
            grown = np.full((n_tables, wider), -1, dtype=np.int64)
            grown[:, :span] = dense.reshape(n_tables, span)
            grown_pairs = np.empty((n_tables, wider), dtype=object)
            grown_pairs[:, :span] = made.reshape(n_tables, span)
            dense, made, span = grown.reshape(-1), grown_pairs.reshape(-1), wider
        nudge = nudge_of[ci[owner], floor_times(rng.random(len(flat)), 30)]
        present = nudge != _ABSENT
        if biggest < span:
            key = table * span + flat
            rows_at = dense[key]
            missing = rows_at < 0
            if missing.any():
                for k in set(key[missing].tolist()):
                    b = k % span
                    rows = tables[k // span][b]
                    dense[k] = rows
                    made[k] = (b, rows)
                rows_at = dense[key]
            pairs_l = made[key[present]].tolist()
            moved = (nudge != 0)[present]
            if moved.any():
                at = np.nonzero(moved)[0]
                changed = np.maximum(rows_at + nudge, 0)[present][at]
                for k, b, rows in zip(at.tolist(), flat[present][at].tolist(), changed.tolist()):
                    pairs_l[k] = (b, rows)
        else:
            rows_at = np.array([tables[t][b] for t, b in zip(table.tolist(), flat.tolist())], dtype=np.int64)
            pairs_l = list(zip(flat[present].tolist(), np.maximum(rows_at + nudge, 0)[present].tolist()))
        caps_kept = np.bincount(owner[present], minlength=chunk)

        # per batch: slices of the chunk's flat tuples (the lengths, the capture lists, the tables' pairs),
        # and the record
        x_t = tuple(x[j_req < count[:, None]].tolist())
        buckets_t = tuple(flat.tolist())
        pairs_t = tuple(pairs_l)
        x_end = np.cumsum(count).tolist()
        b_end = np.cumsum(kept).tolist()
        c_end = np.cumsum(caps_kept).tolist()
        x0 = b0 = c0 = 0
        for c, f, n_i, x1, b1, c1 in zip(ci.tolist(), fi.tolist(), n.tolist(), x_end, b_end, c_end):
            p_i, align_i, label, context = configs[c]
            yield ("random", record(p_i, align_i, n_i, x_t[x0:x1], buckets_t[b0:b1], pairs_t[c0:c1], fs[f], label, context))
            x0, b0, c0 = x1, b1, c1
