"""The review proves safe designs and refutes unsafe edits with the right invariant and a replayed witness."""

import pytest

from cpgraph.design.evaluate import evaluate
from cpgraph.design.report import Review
from cpgraph.design.review import review_invariants
from cpgraph.design.schema import load_design, loads_design

SMALL = "cp_size = 4\ncapture_num_tokens = [256, 384, 512, 768, 1024]\n"


def verdicts(text: str) -> dict[str, str]:
    _, results = review_invariants(loads_design(text, name="t"))
    for r in results:
        assert r.status != "unknown", r
        if r.witness is not None:  # every witness is replayed and really breaks the invariant
            assert r.invariant in evaluate(loads_design(text, name="t"), r.witness.extend_seq_lens).violated
    return {r.invariant: r.status for r in results}


def test_upstream_design_is_proved_for_any_number_of_requests(default_review: Review) -> None:
    lemmas, results = default_review.lemmas, default_review.invariants  # review_invariants(upstream), shared
    assert all(lemma.status == "proved" for lemma in lemmas)
    assert all(r.status == "proved" for r in results), results
    assert all("any number of requests" in r.scope for r in results)


def test_prefix_design_is_refuted_on_capacity_fit_with_a_minimal_crash(prefix_review: Review) -> None:
    results = prefix_review.invariants  # review_invariants(prefix), shared
    fit = next(r for r in results if r.invariant == "capacity_fit")
    assert fit.status == "refuted" and fit.witness is not None
    outcome = fit.witness.outcome
    assert len(fit.witness.extend_seq_lens) == 3 and fit.witness.num_tokens == 507  # fewest requests, then tokens
    assert outcome.bucket == 512 and outcome.capacity[0] == 128 and outcome.required_local_tokens == 136
    assert "refuses" in fit.witness.replay


def test_headroom_16_with_the_pre_fix_selector_needs_23_requests_to_overflow() -> None:
    # the issue's case: no request-count bound, one query, the witness replayed through the reference
    text = load_design("headroom").source
    design = load_design("headroom")
    from dataclasses import replace

    unsafe = replace(design, selector="smallest", name="headroom-smallest")
    _, results = review_invariants(unsafe)
    fit = next(r for r in results if r.invariant == "capacity_fit")
    assert fit.status == "refuted" and fit.witness is not None, (text, fit)
    assert len(fit.witness.extend_seq_lens) == 23
    assert "capacity_fit" in evaluate(unsafe, fit.witness.extend_seq_lens).violated


def test_headroom_with_smallest_selector_is_safe_up_to_r_and_refuted_beyond() -> None:
    # align_size = 1 leaves no alignment slack, so the first overflow needs exactly R + 1 requests
    text = SMALL + 'align_size = 1\nselector = "smallest"\n[capacity]\nrule = "headroom"\nmax_requests = 2\n'
    _, results = review_invariants(loads_design(text, name="t"))
    fit = next(r for r in results if r.invariant == "capacity_fit")
    assert fit.status == "refuted" and fit.witness is not None
    assert len(fit.witness.extend_seq_lens) == 3  # two requests always fit the headroom


def test_padded_layout_basis_is_refuted_on_replay() -> None:
    got = verdicts(SMALL + 'layout_basis = "padded"\n')
    assert got["admission_replay"] == "refuted" and got["capacity_fit"] == "refuted"
    assert got["minimal_bucket"] == "proved"


def test_padded_headroom_overflow_beyond_the_captured_requests_is_found_exactly() -> None:
    design = loads_design(
        'cp_size = 4\ncapture_num_tokens = [512, 768, 1024]\nlayout_basis = "padded"\n'
        '[capacity]\nrule = "headroom"\nmax_requests = 4\n',
        name="hp",
    )
    _, results = review_invariants(design)
    fit = next(r for r in results if r.invariant == "capacity_fit")
    assert fit.status == "refuted" and fit.witness is not None
    assert "capacity_fit" in evaluate(design, fit.witness.extend_seq_lens).violated


def test_unsorted_capture_list_breaks_minimality_not_safety() -> None:
    got = verdicts("cp_size = 4\ncapture_num_tokens = [512, 256, 1024]\n")
    assert got["minimal_bucket"] == "refuted" or got["no_needless_fallback"] == "refuted"
    assert got["capacity_fit"] == "proved" and got["padding_limit"] == "proved"


def test_missing_capacity_with_smallest_selector_breaks_captured_bucket() -> None:
    got = verdicts(SMALL + 'selector = "smallest"\n[capacity]\nrule = "table"\ntable = { "256" = 64, "512" = 200 }\n')
    assert got["captured_bucket"] == "refuted"


def test_per_rank_capacities_break_rank_consensus() -> None:
    got = verdicts(SMALL + '[capacity]\nrule = "table"\ntable = { "256" = [64, 64, 72, 64], "384" = 96, "512" = 128 }\n')
    assert got["rank_consensus"] == "refuted"


@pytest.mark.parametrize("factor", ["1", "3", "1.5", '"5/4"'])
def test_search_designs_stay_safe_for_other_padding_factors(factor: str) -> None:
    got = verdicts(SMALL + f"max_padding_factor = {factor}\n")
    assert set(got.values()) == {"proved"}


@pytest.mark.parametrize("strategy", ["interleave", "contiguous", "dual_chunk_swap", "dual_chunk_swap_dcp"])
def test_every_strategy_is_reviewed_and_the_pre_fix_selector_refuted(strategy: str) -> None:
    base = f'cp_size = 4\nstrategy = "{strategy}"\ncapture_num_tokens = [64, 96, 128, 192, 256]\n'
    assert set(verdicts(base).values()) == {"proved"}
    got = verdicts(base + 'selector = "smallest"\nlayout_basis = "padded"\n')
    assert got["padding_limit"] == "proved"


def test_context_len_capture_is_reviewed() -> None:
    got = verdicts('cp_size = 4\nstrategy = "dual_chunk_swap"\ncapture_num_tokens = [256, 512, 1024]\ncontext_len = 300\n'
                   'selector = "smallest"\n')
    assert "unknown" not in got.values()


# -- local keying (vLLM) --------------------------------------------------------------------------------------


def test_vllm_0_29_is_proved_for_any_number_of_requests() -> None:
    lemmas, results = review_invariants(load_design("vllm_pcp"))
    assert all(lemma.status == "proved" for lemma in lemmas)
    assert all(r.status == "proved" for r in results), results
    assert all("any number of requests" in r.scope for r in results)


def test_vllm_0_28_is_refuted_on_admission_replay_with_the_least_batch() -> None:
    design = load_design("vllm_pcp_0_28")
    _, results = review_invariants(design)
    got = {r.invariant: r for r in results}
    replay = got["admission_replay"]
    assert replay.status == "refuted" and replay.witness is not None
    # fewest requests, then fewest tokens: one prefill of 2 tokens is dispatched to size 2 (n = 2) but its
    # rank-local rows are (1, 1, 0, 0), so replay is keyed by 1: another graph. One token (m = n = 1) agrees.
    assert replay.witness.extend_seq_lens == (2,)
    outcome = replay.witness.outcome
    assert (outcome.bucket, outcome.replayed_bucket, outcome.key) == (2, 1, 1)
    assert "admission_replay" in evaluate(design, (2,)).violated and evaluate(design, (1,)).violated == ()
    assert got["captured_bucket"].status == "refuted"  # e.g. [9]: admitted 16, replayed under 3, never captured
    assert got["rank_consensus"].status == "proved" and got["capacity_fit"].status == "proved"


def test_the_issue_batches_replay_through_both_releases() -> None:
    old, new = load_design("vllm_pcp_0_28"), load_design("vllm_pcp")
    shipped = evaluate(old, (170, 161, 153))
    assert (shipped.bucket, shipped.replayed_bucket) == (496, 126) and "captured_bucket" in shipped.violated
    captured = evaluate(old, (64,) * 7)  # replayed under 112, a captured size: still another graph
    assert (captured.bucket, captured.replayed_bucket, captured.violated) == (448, 112, ("admission_replay",))
    fixed = evaluate(new, (170, 161, 153))
    assert (fixed.bucket, fixed.key, fixed.violated) == (128, 126, ())


def test_a_local_design_with_an_unsorted_list_breaks_minimality_only() -> None:
    got = verdicts('strategy = "dual_chunk_swap"\nkeying = "local"\ncp_size = 4\ncapture_num_tokens = [16, 8, 32]\n')
    assert got["minimal_bucket"] == "refuted"
    assert all(got[i] == "proved" for i in ("rank_consensus", "admission_replay", "captured_bucket", "capacity_fit"))


def test_a_local_design_runs_eagerly_only_above_its_largest_size() -> None:
    design = loads_design('strategy = "zigzag"\nkeying = "local"\ncp_size = 2\ncapture_num_tokens = [1, 4, 8]\n', name="t")
    assert evaluate(design, (3,)).bucket == 4  # zigzag P=2: L = 3 puts (2, 1): m = 2 -> size 4
    assert evaluate(design, (20,)).bucket is None  # m = 10 > 8: eager, and nothing fits
    assert set(verdicts('strategy = "zigzag"\nkeying = "local"\ncp_size = 2\ncapture_num_tokens = [1, 4, 8]\n').values()) == {"proved"}


def test_a_design_past_the_encodings_limit_is_a_clear_error() -> None:
    from cpgraph.design.schema import DesignError
    from cpgraph.spec.design_counts import MAX_SHORT_CLASSES, largest_cp_size

    limit = largest_cp_size("dual_chunk_swap")
    assert limit == 13 and MAX_SHORT_CLASSES == 640
    big = loads_design(f'strategy = "dual_chunk_swap"\nkeying = "local"\ncp_size = {limit + 1}\ncapture_num_tokens = [8]\n')
    with pytest.raises(DesignError, match=r"above its limit of 640 .*allowed: dual_chunk_swap cp_size <= 13"):
        review_invariants(big)


def test_a_solver_that_gives_up_is_unknown_never_proved_and_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    import cpgraph.design.review as review_module
    import cpgraph.proofs.engine.search as search
    from cpgraph.design.report import review

    monkeypatch.setattr(search, "DESIGN_RLIMIT", 1)  # one resource unit: z3 gives up on every query
    review_module._terms.cache_clear()
    result = review(loads_design(SMALL, name="t"), against=loads_design(SMALL + 'selector = "smallest"\n', name="o"))
    assert {r.status for r in result.invariants} == {"unknown"}
    assert all(r.note for r in result.invariants)  # each says why
    assert result.diff is not None and {c.status for c in result.diff.classes} == {"unknown"}
    assert result.exit_code == 3
    assert any(part.startswith("invariant capacity_fit: ") for part in result.unknowns)
    assert any(part.startswith("diff class fixed: ") for part in result.unknowns)
