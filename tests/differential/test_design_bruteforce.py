"""The review, the efficiency figures and the diff against brute force through the reference, on small designs.

Every safety break needs an admitted batch and every efficiency break a fitting bucket, so no batch above
the largest bucket breaks anything: enumerating every batch of at most that many tokens (every number of
requests, the last request apart, since a padded layout folds the pad into it) is complete. The review must
then say proved exactly when no batch breaks the invariant, and refute it with the brute force's least
(requests, tokens) otherwise; never unknown.
"""

from collections.abc import Iterator
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpgraph.design.diff import diff_designs
from cpgraph.design.efficiency import crash_region, efficiency, runs
from cpgraph.design.evaluate import SAFETY, evaluate
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


def brute_force(design: Design) -> dict[str, tuple[int, int]]:
    """invariant -> least (requests, tokens) over every batch that breaks it."""
    least: dict[str, tuple[int, int]] = {}
    for lengths in every_batch(max(design.buckets), 2 * design.cp_size):
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
    'strategy = "zigzag_pad"\ncp_size = 2\ncapture_num_tokens = [16, 24, 32]\nselector = "smallest"\n'
    'max_padding_factor = "3/2"\n',
    'strategy = "zigzag_pad"\ncp_size = 2\ncapture_num_tokens = [16, 24, 40]\ncontext_len = 12\n'
    'selector = "smallest"\nlayout_basis = "padded"\n',
]


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


def brute_regions(design: Design) -> tuple[list[int], list[int], list[int], Fraction]:
    """(n where some batch runs eagerly, n where every batch does, n where some batch crashes, worst B/n)."""
    some: set[int] = set()
    admitted: set[int] = set()
    crash: set[int] = set()
    worst = Fraction(0)
    for lengths in every_batch(max(design.buckets), 2 * design.cp_size):
        outcome = evaluate(design, lengths)
        n = sum(lengths)
        if not outcome.admitted:
            some.add(n)
            continue
        admitted.add(n)
        worst = max(worst, Fraction(outcome.bucket or 0, n))
        if set(outcome.violated) & set(SAFETY):
            crash.add(n)
    every = sorted(some - admitted)
    return sorted(some), every, sorted(crash), worst


@pytest.mark.parametrize("text", [DESIGNS[0], DESIGNS[1], DESIGNS[3], DESIGNS[4], DESIGNS[8], DESIGNS[12]])
def test_efficiency_regions_and_worst_padding_match_brute_force(text: str) -> None:
    design = loads_design(text, name="t")
    some, every, crash, worst = brute_regions(design)
    e = efficiency(design)
    assert e.regions[0].some_eager == runs(some), text
    assert e.regions[0].all_eager == runs(every), text
    assert crash_region(design) == runs(crash), text
    assert e.worst_global is not None and Fraction(e.worst_global.bucket, e.worst_global.num_tokens) == worst
    assert e.worst_global.extend_seq_lens and evaluate(design, e.worst_global.extend_seq_lens).bucket == e.worst_global.bucket


@pytest.mark.parametrize(("old", "new"), [(DESIGNS[1], DESIGNS[0]), (DESIGNS[0], DESIGNS[3]), (DESIGNS[4], DESIGNS[0])])
def test_diff_ranges_match_brute_force(old: str, new: str) -> None:
    from cpgraph.design.diff import _kind, _summary

    before, after = loads_design(old, name="old"), loads_design(new, name="new")
    top = max(max(before.buckets), max(after.buckets))
    truth: dict[str, set[int]] = {"fixed": set(), "regressed": set(), "changed": set()}
    least: dict[str, tuple[int, int]] = {}
    for lengths in every_batch(top, 2 * before.cp_size):
        kind = _kind(_summary(evaluate(before, lengths)), _summary(evaluate(after, lengths)))
        if kind is not None:
            truth[kind].add(sum(lengths))
            key = (len(lengths), sum(lengths))
            least[kind] = min(least.get(kind, key), key)
    diff = diff_designs(before, after)
    for c in diff.classes:
        assert c.status in ("found", "none"), c
        if not truth[c.kind]:
            assert c.status == "none", (c.kind, c)
            continue
        assert c.status == "found" and dict(c.ranges)[0] == runs(sorted(truth[c.kind])), (c.kind, c.ranges)
        first = c.changes[0].extend_seq_lens
        assert (len(first), sum(first)) == least[c.kind]


@given(st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=6))
def test_upstream_design_decides_like_the_reference_runner(lengths: list[int]) -> None:
    design = load_design("upstream")
    runner = ReferenceRunner(cp_size=4, capture_num_tokens=design.capture_num_tokens, align_size=8)
    outcome = evaluate(design, lengths)
    assert outcome.bucket == runner.plan(lengths).bucket, (lengths, outcome, runner.plan(lengths))
    assert outcome.violated == ()
