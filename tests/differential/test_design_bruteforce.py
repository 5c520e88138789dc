"""The review, the efficiency figures and the diff against brute force through the reference, on small designs.

Every safety break needs an admitted batch and every efficiency break a fitting bucket, so no batch above
the largest bucket breaks anything: enumerating every batch of at most that many tokens (every number of
requests, the last request apart, since a padded layout folds the pad into it) is complete. Under local
keying an admitted or fitting size is >= m (or >= n, admitted by n) and n <= P*m, so every batch of at most
P times the largest size, every length >= 1, is complete. The review must then say proved exactly when no
batch breaks the invariant, and refute it with the brute force's least (requests, tokens) otherwise; never
unknown.
"""

from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph.design.diff import DiffClass, diff_designs
from cpgraph.design.efficiency import crash_region, efficiency, runs
from cpgraph.design.evaluate import SAFETY, Outcome, evaluate
from cpgraph.design.review import review_invariants
from cpgraph.design.schema import Design, load_design, loads_design
from cpgraph.reference import ReferenceRunner


def multisets(total: int, shortest: int, smallest: int) -> Iterator[tuple[int, ...]]:
    """Non-increasing tuples of lengths >= max(shortest, smallest) summing to ``total``."""
    if total == 0:
        yield ()
        return
    for first in range(max(shortest, smallest), total + 1):
        for rest in multisets(total - first, shortest, first):
            yield (first,) + rest


def every_batch(top: int, shortest: int) -> Iterator[tuple[int, ...]]:
    """Every batch of at most ``top`` tokens, lengths >= shortest; the last request is any one of them."""
    for n in range(shortest, top + 1):
        for last in range(shortest, n + 1):
            for others in multisets(n - last, shortest, shortest):
                yield others + (last,)


def batches_of(design: Design) -> Iterator[tuple[int, ...]]:
    """Every batch the design could break an invariant on (module docstring)."""
    if design.keyed.windowed:
        yield from every_batch(max(design.buckets), 2 * design.cp_size)
        return
    for n in range(1, design.cp_size * max(design.buckets) + 1):
        yield from multisets(n, 1, 1)


def brute_force(design: Design) -> dict[str, tuple[int, int]]:
    """invariant -> least (requests, tokens) over every batch that breaks it."""
    least: dict[str, tuple[int, int]] = {}
    for lengths in batches_of(design):
        for invariant in evaluate(design, lengths).violated:
            key = (len(lengths), sum(lengths))
            least[invariant] = min(least.get(invariant, key), key)
    return least


# Held-out style: cp_size 2 and 3, every capacity rule, both selectors, both layout bases, sorted and unsorted
# lists, factors 1.5 to 4, every strategy.
DESIGNS = [
    "cp_size = 2\ncapture_num_tokens = [16, 24, 32, 40]\n",
    'cp_size = 2\ncapture_num_tokens = [16, 24, 32, 40]\nselector = "smallest"\n',
    'cp_size = 2\ncapture_num_tokens = [16, 24, 32, 40]\nlayout_basis = "padded"\nmax_padding_factor = 1.5\n',
    'cp_size = 2\ncapture_num_tokens = [32, 16, 40]\nmax_padding_factor = "5/2"\n',
    'cp_size = 2\ncapture_num_tokens = [24, 40]\nselector = "smallest"\nmax_padding_factor = 4\n'
    '[capacity]\nrule = "headroom"\nmax_requests = 2\n',
    'cp_size = 2\ncapture_num_tokens = [16, 24, 40]\nselector = "smallest"\nlayout_basis = "padded"\n'
    '[capacity]\nrule = "headroom"\nmax_requests = 3\n',
    'cp_size = 2\ncapture_num_tokens = [16, 24, 32]\n[capacity]\nrule = "table"\n'
    'table = { "16" = 4, "24" = [8, 6], "32" = 8 }\n',
    'cp_size = 2\ncapture_num_tokens = [16, 24, 32]\nselector = "smallest"\nmax_padding_factor = 3\n'
    '[capacity]\nrule = "table"\ntable = { "16" = 4, "32" = 8 }\n',
    'cp_size = 3\nalign_size = 3\ncapture_num_tokens = [18, 30, 42]\nselector = "smallest"\n',
    'cp_size = 3\ncapture_num_tokens = [24, 36, 48]\nlayout_basis = "padded"\n',
    'strategy = "interleave"\ncp_size = 2\ncapture_num_tokens = [16, 24, 32]\nlayout_basis = "padded"\n',
    'strategy = "contiguous"\ncp_size = 3\ncapture_num_tokens = [18, 24, 36]\nselector = "smallest"\n',
    'strategy = "dual_chunk_swap"\ncp_size = 2\ncapture_num_tokens = [16, 24, 32]\nselector = "smallest"\n'
    'max_padding_factor = "3/2"\n',
    'strategy = "dual_chunk_swap"\ncp_size = 2\ncapture_num_tokens = [16, 24, 40]\ncontext_len = 12\n'
    'selector = "smallest"\nlayout_basis = "padded"\n',
    'strategy = "dual_chunk_swap_dcp"\ncp_size = 2\ncapture_num_tokens = [12, 20, 28]\nalign_size = 1\n'
    'selector = "smallest"\n',
    'strategy = "dual_chunk_swap"\ncp_size = 3\nalign_size = 3\ncapture_num_tokens = [18, 30, 42]\nselector = "smallest"\n',
]
# Local keying (vLLM): every batch keyed, lengths >= 1, sizes s hold s rows; the 0.26-0.28 split; unsorted sizes.
LOCAL = [
    'strategy = "dual_chunk_swap"\nkeying = "local"\ncp_size = 2\ncapture_num_tokens = [1, 2, 4, 6, 8]\n',
    'strategy = "dual_chunk_swap_replicated"\nkeying = "local"\nadmission_key = "num_tokens"\ncp_size = 2\n'
    'capture_num_tokens = [1, 2, 4, 6, 8]\n',
    'strategy = "dual_chunk_swap"\nkeying = "local"\ncp_size = 3\ncapture_num_tokens = [4, 1, 6, 2]\n',
    'strategy = "dual_chunk_swap_dcp"\nkeying = "local"\ncp_size = 2\ncapture_num_tokens = [2, 5, 7]\n',
    'strategy = "zigzag"\nkeying = "local"\nadmission_key = "num_tokens"\ncp_size = 3\ncapture_num_tokens = [2, 3, 5, 6]\n'
    'selector = "smallest"\n',
    'strategy = "contiguous"\nkeying = "local"\ncp_size = 3\ncapture_num_tokens = [1, 3, 5]\n',
    'strategy = "interleave"\nkeying = "local"\nadmission_key = "num_tokens"\ncp_size = 2\ncapture_num_tokens = [2, 3, 8]\n',
]
DESIGNS += LOCAL


@pytest.mark.parametrize("text", DESIGNS)
def test_review_verdicts_and_least_witnesses_match_brute_force(text: str) -> None:
    design = loads_design(text, name="t")
    _, results = review_invariants(design)
    truth = brute_force(design)
    for r in results:
        assert r.status in ("proved", "refuted"), (text, r)
        if r.status == "proved":
            assert r.invariant not in truth, (text, r.invariant, truth[r.invariant])
        else:
            assert r.witness is not None and r.invariant in evaluate(design, r.witness.extend_seq_lens).violated
            got = (len(r.witness.extend_seq_lens), r.witness.num_tokens)
            assert truth.get(r.invariant) == got, (text, r.invariant, got, truth.get(r.invariant))


def brute_walk(design: Design, on_admitted: Callable[[int, Outcome], None]) -> tuple[list[int], list[int], list[int]]:
    """Over every batch: (n where some batch runs eagerly, n where every batch does, n where some batch
    crashes); ``on_admitted(n, outcome)`` sees each admitted batch."""
    some: set[int] = set()
    admitted: set[int] = set()
    crash: set[int] = set()
    for lengths in batches_of(design):
        outcome = evaluate(design, lengths)
        n = sum(lengths)
        if not outcome.admitted:
            some.add(n)
            continue
        admitted.add(n)
        on_admitted(n, outcome)
        if set(outcome.violated) & set(SAFETY):
            crash.add(n)
    return sorted(some), sorted(some - admitted), sorted(crash)


def brute_regions(design: Design) -> tuple[list[int], list[int], list[int], Fraction]:
    """(n where some batch runs eagerly, n where every batch does, n where some batch crashes, worst B/n)."""
    worst = [Fraction(0)]

    def note(n: int, outcome: Outcome) -> None:
        worst[0] = max(worst[0], Fraction(outcome.bucket or 0, n))

    return (*brute_walk(design, note), worst[0])


@pytest.mark.parametrize("text", [DESIGNS[0], DESIGNS[1], DESIGNS[3], DESIGNS[4], DESIGNS[8], DESIGNS[12], DESIGNS[15]])
def test_efficiency_regions_and_worst_padding_match_brute_force(text: str) -> None:
    design = loads_design(text, name="t")
    some, every, crash, worst = brute_regions(design)
    e = efficiency(design)
    assert e.regions[0].some_eager == runs(some), text
    assert e.regions[0].all_eager == runs(every), text
    assert crash_region(design) == runs(crash), text
    assert e.worst_global is not None and Fraction(e.worst_global.bucket, e.worst_global.num_tokens) == worst
    assert e.worst_global.extend_seq_lens and evaluate(design, e.worst_global.extend_seq_lens).bucket == e.worst_global.bucket


def brute_diff(
    before: Design, after: Design, batches: Iterable[tuple[int, ...]]
) -> tuple[dict[str, set[int]], dict[str, tuple[int, int]]]:
    """Over ``batches``: for each diff class (fixed, regressed, changed) the n of its batches, and the least
    (requests, n) of them (the first change the diff must show)."""
    from cpgraph.design.diff import _kind, _summary

    truth: dict[str, set[int]] = {"fixed": set(), "regressed": set(), "changed": set()}
    least: dict[str, tuple[int, int]] = {}
    for lengths in batches:
        kind = _kind(_summary(evaluate(before, lengths)), _summary(evaluate(after, lengths)))
        if kind is not None:
            truth[kind].add(sum(lengths))
            key = (len(lengths), sum(lengths))
            least[kind] = min(least.get(kind, key), key)
    return truth, least


def found_as_brute_force(c: DiffClass, truth: dict[str, set[int]], least: dict[str, tuple[int, int]]) -> bool:
    """A diff class is found exactly when brute force has batches in it, and its first change is the least
    of them; True when found (the caller checks its ranges)."""
    assert c.status in ("found", "none"), c
    if not truth[c.kind]:
        assert c.status == "none", (c.kind, c)
        return False
    assert c.status == "found", (c.kind, c)
    first = c.changes[0].extend_seq_lens
    assert (len(first), sum(first)) == least[c.kind]
    return True


@pytest.mark.parametrize(("old", "new"), [(DESIGNS[1], DESIGNS[0]), (DESIGNS[0], DESIGNS[3]), (DESIGNS[4], DESIGNS[0])])
def test_diff_ranges_match_brute_force(old: str, new: str) -> None:
    before, after = loads_design(old, name="old"), loads_design(new, name="new")
    top = max(max(before.buckets), max(after.buckets))
    truth, least = brute_diff(before, after, every_batch(top, 2 * before.cp_size))
    for c in diff_designs(before, after).classes:
        if found_as_brute_force(c, truth, least):
            assert dict(c.ranges)[0] == runs(sorted(truth[c.kind])), (c.kind, c.ranges)


@given(st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=6))
def test_upstream_design_decides_like_the_reference_runner(lengths: list[int]) -> None:
    design = load_design("upstream")
    runner = ReferenceRunner(cp_size=4, capture_num_tokens=design.capture_num_tokens, align_size=8)
    outcome = evaluate(design, lengths)
    assert outcome.bucket == runner.plan(lengths).bucket, (lengths, outcome, runner.plan(lengths))
    assert outcome.violated == ()


def brute_local(design: Design) -> tuple[list[int], list[int], list[int], Fraction, Fraction]:
    """Under local keying, over every batch: (n where some batch runs eagerly, n where every batch does,
    n where some batch crashes, the worst size over key s/m, the worst P*s/n)."""
    worst = [Fraction(0), Fraction(0)]  # key, rows

    def note(n: int, outcome: Outcome) -> None:
        assert outcome.bucket is not None and outcome.key is not None
        worst[0] = max(worst[0], Fraction(outcome.bucket, outcome.key))
        worst[1] = max(worst[1], Fraction(design.cp_size * outcome.bucket, n))

    return (*brute_walk(design, note), worst[0], worst[1])


@pytest.mark.parametrize("text", [t for t in LOCAL if "dual_chunk_swap_dcp" not in t])
def test_local_efficiency_regions_and_worst_padding_match_brute_force(text: str) -> None:
    design = loads_design(text, name="t")
    some, every, crash, worst_key, worst_rows = brute_local(design)
    e = efficiency(design)
    assert e.computed and e.keyed_locally
    # n above e.top always runs eagerly (said in the report's header); the regions cover n up to it
    assert all(n in every for n in range(e.top + 1, design.cp_size * max(design.buckets) + 1)), text
    assert e.regions[0].some_eager == runs([n for n in some if n <= e.top]), text
    assert e.regions[0].all_eager == runs([n for n in every if n <= e.top]), text
    assert crash_region(design) == runs(crash), text
    assert e.worst_global is not None and e.worst_local is not None
    for extreme, worst, key in ((e.worst_global, worst_key, "key"), (e.worst_local, worst_rows, "rows")):
        outcome = evaluate(design, extreme.extend_seq_lens)  # the batch shown attains the figure
        assert outcome.bucket == extreme.bucket and outcome.key is not None
        got = Fraction(extreme.bucket, outcome.key) if key == "key" else Fraction(design.cp_size * extreme.bucket, extreme.num_tokens)
        assert got == worst and abs(extreme.ratio - float(worst)) < 1e-9, (text, key, got, worst)


def test_the_dcp_row_gets_no_local_figures_and_says_why() -> None:
    e = efficiency(loads_design(LOCAL[3], name="t"))
    assert not e.computed and "not computed" in e.note and "one-token request" in e.note


@pytest.mark.parametrize("strategy", ["dual_chunk_swap", "dual_chunk_swap_dcp"])
def test_dual_chunk_swap_busiest_range_matches_brute_force(strategy: str) -> None:
    from cpgraph.design.busiest import busiest_range
    from cpgraph.reference import rank_loads

    for p, top in ((2, 40), (3, 42), (4, 48)):
        rng = busiest_range(strategy, p, top)
        assert not rng.lo_exact  # said in the report: lo is the least over one request plus 2P-token requests
        for n in range(2 * p, top + 1):
            seen = {max(rank_loads(b, cp_size=p, strategy=strategy)) for b in multisets(n, 2 * p, 2 * p)}
            assert (min(seen), max(seen)) == (rng.lo[n], rng.hi[n]), (strategy, p, n)


MIXED = "cp_size = 2\ncapture_num_tokens = [8, 12, 16]\n"  # global, n <= 16: the same enumeration covers it


@pytest.mark.parametrize(("old", "new"), [(LOCAL[1], LOCAL[0]), (LOCAL[0], LOCAL[1]), (MIXED, LOCAL[0])])
def test_local_diff_classes_and_envelopes_match_brute_force(old: str, new: str) -> None:
    before, after = loads_design(old, name="old"), loads_design(new, name="new")
    top = max(d.cp_size * max(d.buckets) if not d.keyed.windowed else max(d.buckets) for d in (before, after))
    truth, least = brute_diff(before, after, (lengths for n in range(1, top + 1) for lengths in multisets(n, 1, 1)))
    for c in diff_designs(before, after).classes:
        if found_as_brute_force(c, truth, least):
            assert c.region == (min(truth[c.kind]), max(truth[c.kind])), (c.kind, c.region)
