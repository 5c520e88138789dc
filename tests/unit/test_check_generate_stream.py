"""The generator's random phase (cpgraph/check/randoms.py): a seed is fully deterministic (the same seed
and options give the same batches, in this process and in a fresh one), different seeds differ, every
record is a valid batch of the options it was drawn for, and a few thousand batches show every feature
``random_cases`` promises (each cp_size with weight about 1/P, each alignment, factor and table kind, the
length classes, padded n of each kind, the three capture-list kinds and the tempting edge buckets,
absent and nudged arbitrary rows)."""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from cpgraph.check.batch import Batch, captured_rows, parse_table
from cpgraph.check.options import SEARCHED_FACTORS, CheckOptions, make_options
from cpgraph.check.randoms import clamp, random_cases
from cpgraph.reference import headroom_local_tokens
from cpgraph.reference.judge import window_top
from cpgraph.reference.validate import check_capacities, check_capture_list, check_lengths, check_num_tokens

OPTION_SETS: list[dict[str, object]] = [
    {},
    {"seed": 11, "num_tokens": "padded", "strategy": "interleave"},
    {"seed": 5, "padding_factors": (1, Fraction(3, 2), 4), "capacities": ("arbitrary",), "context_len": 300},
    {"seed": 2, "num_tokens": "live", "cp_sizes": (1, 3, 16), "max_requests": 8, "max_tokens": 700, "align_sizes": ("P", "16")},
    {"seed": 9, "capacities": ("captured", "headroom:5"), "max_tokens": 20000, "strategy": "zigzag"},
    {"seed": 4, "cp_sizes": (2, 8), "align_sizes": ("P", "2P", "64"), "max_padding_factor": "5/4", "capacities": ("headroom:3", "arbitrary")},
]
IDS = ["defaults", "padded-interleave", "fixed-factors-arbitrary", "live-odd-sizes", "big-budget", "aligns-rational-F"]
COUNT = 4000


def _options(kw: dict[str, object]) -> CheckOptions:
    return make_options(boundary=False, **kw)  # type: ignore[arg-type]


@lru_cache(maxsize=None)
def _drawn(index: int) -> tuple[tuple[str, Batch], ...]:
    """The first COUNT batches of OPTION_SETS[index] (drawn once for all the tests below)."""
    return tuple(itertools.islice(random_cases(_options(OPTION_SETS[index])), COUNT))


def _batches(index: int) -> list[Batch]:
    return [b for _, b in _drawn(index)]


# What the stream draws for each batch (the rows themselves come from the reference's tables), hashed:
# run here and in a fresh interpreter.
_DIGEST = """
import hashlib, itertools
from cpgraph.check.options import make_options
from cpgraph.check.randoms import random_cases

def digest(options, count):
    parts = [
        (b.cp_size, b.align_size, b.num_tokens, b.extend_seq_lens, b.capture_num_tokens,
         tuple(k for k, _ in b.bucket_local_tokens), str(b.max_padding_factor), b.table, b.context_len)
        for _, b in itertools.islice(random_cases(make_options(boundary=False, **options)), count)
    ]
    return hashlib.sha256(repr(parts).encode()).hexdigest()
"""


# --- determinism -------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(OPTION_SETS)), ids=IDS)
def test_the_same_seed_draws_the_same_batches(index: int) -> None:
    again = tuple(itertools.islice(random_cases(_options(OPTION_SETS[index])), COUNT))
    assert again == _drawn(index)  # Batch equality: every field, rows included


def test_the_same_seed_draws_the_same_batches_in_a_fresh_process() -> None:
    """Another interpreter (another hash seed, fresh memos) draws the same stream."""
    options = {"seed": 3, "capacities": ("captured", "headroom:2", "arbitrary"), "padding_factors": (2, Fraction(3, 2))}
    here: dict[str, Any] = {}
    exec(_DIGEST, here)
    code = _DIGEST + f"\nfrom fractions import Fraction\nprint(digest({options!r}, 1500))"
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, check=True)
    assert out.stdout.strip() == here["digest"](options, 1500)


def test_different_seeds_draw_different_batches() -> None:
    streams = [tuple(itertools.islice(random_cases(_options({"seed": seed})), 200)) for seed in (0, 1, 2, 7919)]
    for a, b in itertools.combinations(streams, 2):
        assert sum(x != y for x, y in zip(a, b)) > 190  # not one stream shifted or mostly shared


# The stream's first 1500 batches of that option set, pinned (the rows left out: they are the reference's).
# A change of the drawing (or of numpy's PCG64, SeedSequence or Generator.random) shows here first; a
# deliberate change of the stream updates it and says so.
PINNED = ({"seed": 3, "capacities": ("captured", "headroom:2", "arbitrary"), "padding_factors": (2, Fraction(3, 2))}, 1500)
PINNED_DIGEST = "c4be7d5ea1e76a102cfa5d1669bd096915a75a3a5e2890cf5ecc1b7702cb97fd"


def test_the_stream_is_pinned() -> None:
    here: dict[str, Any] = {}
    exec(_DIGEST, here)
    assert here["digest"](*PINNED) == PINNED_DIGEST


def test_the_floats_are_pcg64_words_scaled() -> None:
    """Generator.random's floats are PCG64's 64-bit words' top 53 bits times 2**-53 (what the module
    docstring promises, so the stream does not hang on numpy's float sampler staying as it is)."""
    import numpy as np

    for seed in (0, 3, 7919, 2**70 + 1):
        words = np.random.PCG64(seed).random_raw(4096)
        floats = np.random.Generator(np.random.PCG64(seed)).random(4096)
        assert np.array_equal(floats, (words >> np.uint64(11)).astype(np.float64) * 2.0**-53)


def _clamp_one_by_one(raw: list[int], budget: int) -> list[int]:
    """The budget's clamp request by request (the generator's scalar loop before 2026-12-01's chunks)."""
    out: list[int] = []
    live = 0
    for i, length in enumerate(raw):
        room = budget - live - (len(raw) - i - 1)
        if length > room:
            length = room if room > 1 else 1
        out.append(length)
        live += length
        if live >= budget:
            break
    return out


def _clamp_rows(rows: list[list[int]], budget: int) -> list[list[int]]:
    import numpy as np

    width = max(map(len, rows))
    x = np.array([row + [7] * (width - len(row)) for row in rows], dtype=np.int64)  # 7: past r, must not count
    count, live = clamp(x, np.array([len(row) for row in rows], dtype=np.int64), budget)
    out = [x[i, : count[i]].tolist() for i in range(len(rows))]
    assert live.tolist() == [sum(row) for row in out]
    return out


def test_the_vectorised_clamp_is_the_request_by_request_clamp() -> None:
    """clamp() on whole chunks equals the scalar clamp: every raw length vector of 1..4 requests with
    lengths 1..budget + 3 at budgets 1..9, and random ones of up to 40 requests at larger budgets. No
    batch with r <= budget is cut short (the scalar loop's early stop only fires at its last request)."""
    import random

    for budget in range(1, 10):
        rows = [list(t) for r in range(1, 5) for t in itertools.product(range(1, budget + 4), repeat=r)]
        got = _clamp_rows(rows, budget)
        for raw, out in zip(rows, got):
            assert out == _clamp_one_by_one(raw, budget), (raw, budget)
            if len(raw) <= budget:
                assert len(out) == len(raw)
    rnd = random.Random(5)
    for budget in (10, 37, 700, 4096, 1 << 20):
        rows = [[1 + int(rnd.random() ** 3 * budget * 1.5) for _ in range(rnd.randint(1, 40))] for _ in range(3000)]
        for raw, out in zip(rows, _clamp_rows(rows, budget)):
            assert out == _clamp_one_by_one(raw, budget), (raw, budget)


def test_the_caches_change_no_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dense rows and pairs caches are only caches: with them off (every row looked up one by one,
    every pair made afresh) the same seed draws the same batches, rows included."""
    import cpgraph.check.randoms as randoms

    for kw in (OPTION_SETS[0], OPTION_SETS[2], OPTION_SETS[5]):
        cached = tuple(itertools.islice(random_cases(_options(kw)), 3000))
        with monkeypatch.context() as patch:
            patch.setattr(randoms, "_DENSE", 0)
            assert tuple(itertools.islice(random_cases(_options(kw)), 3000)) == cached


@pytest.mark.parametrize(
    "kw",
    [
        {"seed": 1, "max_tokens": 1 << 22, "padding_factors": (Fraction(2**41 + 1, 2**40),), "cp_sizes": (2, 64)},  # n * numerator past 2**63
        {"seed": 2, "max_tokens": 5, "max_requests": 9, "cp_sizes": (1, 2, 3)},  # more requests than tokens
        {"seed": 3, "max_requests": 300, "max_tokens": 100000, "cp_sizes": (1, 7), "capacities": ("arbitrary",)},  # wide rows, small chunks
    ],
    ids=["huge-products", "budget-below-requests", "many-requests"],
)
def test_edge_options_draw_valid_batches(kw: dict[str, object]) -> None:
    """Options far from the defaults (products past int64, which take the Python-int path; a budget
    below max_requests; hundreds of requests) draw valid batches with their edges where promised."""
    opts = _options(kw)
    factors = set(opts.padding_factors) if opts.padding_factors is not None else {opts.max_padding_factor, *SEARCHED_FACTORS}
    batches = [b for _, b in itertools.islice(random_cases(opts), 400)]
    for batch in batches:
        p, n, lengths, buckets = batch.cp_size, batch.num_tokens, batch.extend_seq_lens, batch.capture_num_tokens
        assert check_lengths("lengths", lengths) == lengths and 1 <= len(lengths) <= opts.max_requests and sum(lengths) <= opts.max_tokens
        assert check_num_tokens(n, lengths) == n and batch.max_padding_factor in factors
        assert check_capture_list("buckets", buckets) == buckets and buckets[0] >= 2 * p
        assert buckets[-1] <= max(4 * opts.max_tokens, window_top(n, batch.max_padding_factor), n + 8 * p), batch
        keys = [b for b, _ in batch.bucket_local_tokens]
        assert keys == sorted(set(keys)) and set(keys) <= set(buckets)
        assert check_capacities("rows", batch.capacities) == batch.capacities
    assert sum(window_top(b.num_tokens, b.max_padding_factor) in b.capture_num_tokens for b in batches) > 0.25 * len(batches)
    if opts.max_tokens < opts.max_requests:  # the clamp: every request 1 token, the batch ends at the budget's count
        assert all(set(b.extend_seq_lens) == {1} for b in batches if len(b.extend_seq_lens) == opts.max_tokens)


# --- every record is valid -----------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(OPTION_SETS)), ids=IDS)
def test_every_record_is_a_valid_batch_of_its_options(index: int) -> None:
    opts = _options(OPTION_SETS[index])
    factors = set(opts.padding_factors) if opts.padding_factors is not None else {opts.max_padding_factor, *SEARCHED_FACTORS}
    kinds = {parse_table(t)[0]: t for t in opts.capacities}
    for phase, batch in _drawn(index):
        assert phase == "random" and type(batch) is Batch
        p, a, n, lengths, buckets = batch.cp_size, batch.align_size, batch.num_tokens, batch.extend_seq_lens, batch.capture_num_tokens
        assert p in opts.cp_sizes and a in opts.aligns(p), batch
        # lengths: 1..max_requests requests, each >= 1, none past the budget
        assert type(lengths) is tuple and check_lengths("lengths", lengths) == lengths
        assert 1 <= len(lengths) <= opts.max_requests and min(lengths) >= 1 and sum(lengths) <= opts.max_tokens, batch
        # n: >= the sum; the sum itself for 'live', above it for 'padded'
        assert check_num_tokens(n, lengths) == n
        if opts.num_tokens == "live":
            assert n == sum(lengths)
        elif opts.num_tokens == "padded":
            assert n > sum(lengths)
        # the capture list: strictly increasing, every bucket >= 2P and at most 4 * max_tokens (or an edge: F*n, n + 8P)
        assert type(buckets) is tuple and check_capture_list("buckets", buckets) == buckets
        top = max(4 * opts.max_tokens, window_top(n, batch.max_padding_factor), n + 8 * p)
        assert buckets[0] >= 2 * p and buckets[-1] <= top, batch
        assert batch.max_padding_factor in factors
        # the table: rows for a subset of the buckets, in their order, ints >= 0
        keys = [b for b, _ in batch.bucket_local_tokens]
        assert keys == sorted(set(keys)) and set(keys) <= set(buckets), batch
        assert check_capacities("rows", batch.capacities) == batch.capacities
        if batch.table == "arbitrary":
            assert "arbitrary" in kinds and batch.context_len is None
            for b, rows in batch.bucket_local_tokens:
                base = captured_rows(b, p, a, opts.strategy, opts.context_len)
                assert rows - base in (0, a, -a, 1, -1) or (rows == 0 and base - max(a, 1) < 0), (batch, b)  # nudged, never below 0
        else:
            kind, r = parse_table(batch.table)
            assert batch.table in opts.capacities and keys == list(buckets), batch
            assert batch.context_len == (opts.context_len if kind == "captured" else None)
            for b, rows in batch.bucket_local_tokens:
                if kind == "captured":
                    assert rows == captured_rows(b, p, a, opts.strategy, opts.context_len)
                else:
                    assert rows == headroom_local_tokens(b, cp_size=p, align_size=a, max_requests=r, strategy=opts.strategy)


# --- every promised feature shows ----------------------------------------------------------------------


def _edges(batch: Batch) -> set[int]:
    n, f, live = batch.num_tokens, batch.max_padding_factor, sum(batch.extend_seq_lens)
    return {n, window_top(n, f), live, window_top(live, f) + 1}


def _capture_kinds(batch: Batch) -> set[str]:
    """Which kinds of capture list this batch's buckets show (the edges and the 'just above n' range left out)."""
    p, n = batch.cp_size, batch.num_tokens
    rest = sorted(b for b in batch.capture_num_tokens if b not in _edges(batch) and not n < b <= n + 8 * p)
    powers = [1 << k for k in range(1, 16) if 2 * p <= 1 << k <= n]
    shown = set()
    if len(powers) >= 4 and set(powers) <= set(batch.capture_num_tokens):
        shown.add("powers")
    if len(rest) >= 4 and n >= 64:
        step = math.gcd(*(b - rest[0] for b in rest[1:]))
        if step >= 64 and not all(b & (b - 1) == 0 for b in rest):
            shown.add("grid")  # >= 4 points of a step >= 64 that are not the powers of two
        if step == 1:
            shown.add("scattered")  # no grid (every grid step is >= 2 once n >= 64) and no powers
    return shown


@pytest.mark.parametrize("index", range(len(OPTION_SETS)), ids=IDS)
def test_every_cp_size_alignment_factor_and_table_shows_with_its_weight(index: int) -> None:
    opts = _options(OPTION_SETS[index])
    batches = _batches(index)
    sizes = Counter(b.cp_size for b in batches)
    weight = {p: 0.3 if p == 1 else 1 / p for p in opts.cp_sizes}
    for p in opts.cp_sizes:  # weights 1/P (0.3 for P = 1): within 20% of the expected count
        expected = COUNT * weight[p] / sum(weight.values())
        assert abs(sizes[p] - expected) < 0.2 * expected + 10, (p, sizes, expected)
        assert {b.align_size for b in batches if b.cp_size == p} == set(opts.aligns(p))
    factors = Counter(b.max_padding_factor for b in batches)
    if opts.padding_factors is not None:
        assert set(factors) == set(opts.padding_factors)
    else:  # the configured F four times in five, another of 1..4 in one batch of five
        assert set(factors) == {opts.max_padding_factor, *SEARCHED_FACTORS}
        configured = 0.8 + (0.05 if opts.max_padding_factor in SEARCHED_FACTORS else 0)
        assert abs(factors[opts.max_padding_factor] / COUNT - configured) < 0.04, factors
    tables = Counter(b.table for b in batches)
    named = {t if parse_table(t)[0] != "arbitrary" else "arbitrary" for t in opts.capacities}
    assert set(tables) == named
    for t in named:  # uniform among the configured specs
        assert abs(tables[t] / COUNT - 1 / len(named)) < 0.05, tables


@pytest.mark.parametrize("index", range(len(OPTION_SETS)), ids=IDS)
def test_every_length_class_shows(index: int) -> None:
    opts = _options(OPTION_SETS[index])
    batches = _batches(index)
    for p in opts.cp_sizes:
        low = 2 * p
        lengths = [x for b in batches if b.cp_size == p for x in b.extend_seq_lens]
        assert any(x < low for x in lengths), p  # short requests: not CP-active
        assert any(low <= x <= 8 * low for x in lengths), p  # short multiples of 2P
        if opts.max_tokens > 16 * low:
            assert any(x > 8 * low for x in lengths), p  # anywhere up to the budget's share
        # whole rounds of 2P plus each awkward remainder: every residue mod 2P among them
        assert {x % low for x in lengths if x > low} >= {(p + 1) % low, low - 1, 1 % low, p % low}, p
    counts = Counter(len(b.extend_seq_lens) for b in batches)
    assert 1 in counts and opts.max_requests in counts


@pytest.mark.parametrize("index", range(len(OPTION_SETS)), ids=IDS)
def test_padded_n_of_each_kind_shows(index: int) -> None:
    opts = _options(OPTION_SETS[index])
    batches = _batches(index)
    pads = [(b, b.num_tokens - sum(b.extend_seq_lens)) for b in batches]
    padded = [(b, pad) for b, pad in pads if pad]
    if opts.num_tokens == "live":
        assert not padded
        return
    if opts.num_tokens == "both":
        assert abs(len(padded) / COUNT - 0.5) < 0.05
    wide = [(b, pad) for b, pad in padded if b.align_size >= 8]  # where a pad lands on the alignment by chance 1/8 or less
    assert sum(b.num_tokens % b.align_size == 0 for b, _ in wide) > 0.3 * len(wide) > 10  # to the alignment (a third of pads)
    assert any(pad <= 2 * b.cp_size and b.num_tokens % b.align_size for b, pad in padded)  # by 1..2P
    assert any(pad > max(2 * b.cp_size, b.align_size) for b, pad in padded)  # by up to a quarter of the sum
    assert all(pad <= max(b.align_size, 2 * b.cp_size, sum(b.extend_seq_lens) // 4) for b, pad in padded)


@pytest.mark.parametrize("index", range(len(OPTION_SETS)), ids=IDS)
def test_each_capture_list_kind_and_the_tempting_edges_show(index: int) -> None:
    opts = _options(OPTION_SETS[index])
    batches = _batches(index)
    kinds = Counter(k for b in batches for k in _capture_kinds(b))
    assert set(kinds) == {"powers", "grid", "scattered"}, kinds
    def share(hits: int, of: list[Batch]) -> float:
        return hits / max(1, len(of))

    # each edge with chance 0.35 (more where another kind drew it too)
    assert share(sum(b.num_tokens in b.capture_num_tokens for b in batches), batches) > 0.3  # a bucket equal to n
    assert share(sum(window_top(b.num_tokens, b.max_padding_factor) in b.capture_num_tokens for b in batches), batches) > 0.3  # F*n
    assert any(b.num_tokens < x <= b.num_tokens + 8 * b.cp_size for b in batches for x in b.capture_num_tokens)  # just above n
    assert any(x < b.num_tokens for b in batches for x in b.capture_num_tokens)  # below n (the grid and scatter start near n/2)
    padded = [b for b in batches if b.pad]
    if padded:  # a window taken from the lengths meets a bucket in [sum, n) and one in (F*sum, F*n]
        assert share(sum(sum(b.extend_seq_lens) in b.capture_num_tokens for b in padded), padded) > 0.3
        assert share(sum(window_top(sum(b.extend_seq_lens), b.max_padding_factor) + 1 in b.capture_num_tokens for b in padded), padded) > 0.3


@pytest.mark.parametrize("index", [i for i, kw in enumerate(OPTION_SETS) if "arbitrary" in kw.get("capacities", ("arbitrary",))], ids=str)
def test_arbitrary_tables_have_absent_and_nudged_rows(index: int) -> None:
    opts = _options(OPTION_SETS[index])
    arbitrary = [b for b in _batches(index) if b.table == "arbitrary"]
    slots = sum(len(b.capture_num_tokens) for b in arbitrary)
    absent = sum(len(b.capture_num_tokens) - len(b.bucket_local_tokens) for b in arbitrary)
    assert abs(absent / slots - 0.2) < 0.03, (absent, slots)  # a fifth of the rows absent
    nudges: Counter[object] = Counter()
    for b in arbitrary:
        for bucket, rows in b.bucket_local_tokens:
            delta = rows - captured_rows(bucket, b.cp_size, b.align_size, opts.strategy, opts.context_len)
            nudges["+A" if delta == b.align_size else "-A" if delta == -b.align_size else delta] += 1
    assert {"+A", "-A", 1, -1, 0} <= set(nudges), nudges  # every nudge (A may equal 1 nowhere here)
    assert abs(nudges[0] / (slots - absent) - 1 / 3) < 0.05, nudges  # unchanged: two nudges in six


@pytest.mark.parametrize("shards", [2, 3])
def test_the_exhaustive_shards_together_are_the_whole_domain(shards: int) -> None:
    from cpgraph.check.generate import exhaustive

    opts = make_options(boundary=False, cp_sizes=(1, 2, 4), max_tokens=160)
    whole = Counter(b for _, b in exhaustive(opts))
    parts = [Counter(b for _, b in exhaustive(opts, shard=k, shards=shards)) for k in range(shards)]
    assert sum(parts, Counter()) == whole and all(parts)


def test_record_is_the_constructors_frozen_batch() -> None:
    """batch.record (the generator's fast constructor) sets every field of Batch, and nothing else: equal,
    equally hashed and as frozen as Batch(...)."""
    import dataclasses

    from cpgraph.check.batch import record

    fields = (4, 8, 100, (50, 50), (100, 200), ((100, 30), (200, 60)), Fraction(3, 2), "captured", 64)
    made, built = record(*fields), Batch(*fields)
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert set(vars(made)) == {f.name for f in dataclasses.fields(Batch)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.cp_size = 2  # type: ignore[misc]
