"""Design review and evaluation against brute force through the reference, on small domains."""

from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from cpgraph.design.evaluate import evaluate
from cpgraph.design.loads import busiest_loads
from cpgraph.design.review import review_invariants
from cpgraph.design.schema import load_design, loads_design
from cpgraph.reference import ReferenceRunner, rank_loads

SMALL = "cp_size = 2\ncapture_num_tokens = [16, 24, 32, 48, 64]\n"


def batches(requests: int, budget: int, shortest: int = 4) -> Iterator[tuple[int, ...]]:
    """Every batch of ``requests`` lengths >= ``shortest`` with at most ``budget`` tokens, in order."""
    if requests == 0:
        yield ()
        return
    for first in range(shortest, budget - shortest * (requests - 1) + 1):
        for rest in batches(requests - 1, budget - first, shortest):
            yield (first,) + rest


def brute_force_violations(text: str, max_requests: int, max_tokens: int) -> dict[str, tuple[int, int]]:
    """invariant -> least (requests, tokens) over every batch in the domain that breaks it."""
    design = loads_design(text, name="t")
    least: dict[str, tuple[int, int]] = {}
    for requests in range(1, max_requests + 1):
        for lengths in batches(requests, max_tokens):
            for invariant in evaluate(design, lengths).violated:
                key = (requests, sum(lengths))
                least[invariant] = min(least.get(invariant, key), key)
    return least


def test_review_verdicts_match_brute_force_on_small_designs() -> None:
    for extra in ("", 'selector = "smallest"\n', 'layout_basis = "padded"\n'):
        text = SMALL + extra
        _, results = review_invariants(loads_design(text, name="t"))
        truth = brute_force_violations(text, max_requests=3, max_tokens=64)
        for r in results:
            if r.status == "proved":
                assert r.invariant not in truth, (extra, r.invariant, truth[r.invariant])
            if r.status == "refuted":
                assert r.witness is not None
                got = (len(r.witness.extend_seq_lens), r.witness.num_tokens)
                assert truth.get(r.invariant) == got, (extra, r.invariant, got, truth.get(r.invariant))


@given(st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=6))
def test_upstream_design_decides_like_the_reference_runner(lengths: list[int]) -> None:
    design = load_design("upstream")
    runner = ReferenceRunner(cp_size=4, capture_num_tokens=design.capture_num_tokens, align_size=8)
    outcome = evaluate(design, lengths)
    assert outcome.bucket == runner.plan(lengths).bucket, (lengths, outcome, runner.plan(lengths))
    assert outcome.violated == ()


@given(st.lists(st.integers(min_value=8, max_value=400), min_size=1, max_size=3))
def test_enumerated_busiest_loads_contain_every_drawn_batch(lengths: list[int]) -> None:
    busiest = max(rank_loads(lengths, cp_size=4))
    assert busiest in busiest_loads(sum(lengths), len(lengths), cp_size=4)


def test_z3_exact_model_and_load_enumeration_find_the_same_least_witness() -> None:
    from cpgraph.design.review import enumerated_witness, exact_witness, spec_of

    for text in (SMALL + 'selector = "smallest"\n', "cp_size = 4\ncapture_num_tokens = [64, 96, 128]\nalign_size = 4\n"
                 'selector = "smallest"\n'):
        design = loads_design(text, name="t")
        for requests in (2, 3):
            by_z3, reason = exact_witness(spec_of(design), "capacity_fit", requests)
            by_enumeration = enumerated_witness(design, "capacity_fit", requests)
            assert reason == ""
            assert (by_z3 is None) == (by_enumeration is None), (text, requests, by_z3, by_enumeration)
            if by_z3 is not None and by_enumeration is not None:
                assert sum(by_z3) == sum(by_enumeration), (text, requests, by_z3, by_enumeration)
