"""The semantic diff finds the changed region and classifies it (fixed / regressed / changed)."""

from cpgraph.design.diff import diff_designs
from cpgraph.design.report import Review
from cpgraph.design.schema import load_design, loads_design

UPSTREAM = load_design("upstream")


def test_prefix_to_upstream_is_all_fixes_and_no_regression(default_review: Review) -> None:
    diff = default_review.diff  # diff_designs(prefix, upstream), shared with the default review's tests
    assert diff is not None and (diff.old, diff.new) == (load_design("prefix"), UPSTREAM)
    fixed = diff.by_kind("fixed")
    assert fixed.status == "found" and fixed.changes
    first = fixed.changes[0]
    assert first.old.startswith("CRASH 512") and first.new == "graph 768" and sum(first.extend_seq_lens) == 507
    assert diff.by_kind("regressed").status == "none" and diff.by_kind("changed").status == "none"
    assert "any number of requests" in diff.by_kind("regressed").note


def test_dropping_a_bucket_regresses_exactly_the_tokens_it_served() -> None:
    buckets = [b for b in UPSTREAM.capture_num_tokens if b != 2304]
    edited = loads_design(f"cp_size = 4\ncapture_num_tokens = {buckets}\n", name="no2304")
    diff = diff_designs(UPSTREAM, edited)
    regressed = diff.by_kind("regressed")
    # any number of requests: from n = 1539 a batch of many short requests (busiest load 513 > bucket 2048's
    # 512 rows) already needs bucket 2304; one request of n tokens needs it from 2049 on
    assert dict(regressed.ranges)[0] == ((1539, 2304),)
    assert {(c.old, c.new) for c in regressed.changes} == {("graph 2304", "graph 2560")}
    assert diff.by_kind("fixed").status == "none" and diff.by_kind("changed").status == "none"


def test_headroom_only_improves_on_upstream() -> None:
    diff = diff_designs(UPSTREAM, load_design("headroom"))
    assert diff.by_kind("fixed").status == "none" and diff.by_kind("regressed").status == "none"
    changed = diff.by_kind("changed")
    assert changed.status == "found"
    assert all(c.new_outcome.admitted and not c.new_outcome.crashes for c in changed.changes)


def test_padded_layout_edit_is_a_regression_to_a_crash() -> None:
    edited = loads_design('cp_size = 4\ncapture_num_tokens = [256, 512, 768]\nlayout_basis = "padded"\n', name="p")
    base = loads_design("cp_size = 4\ncapture_num_tokens = [256, 512, 768]\n", name="b")
    regressed = diff_designs(base, edited).by_kind("regressed")
    assert regressed.status == "found" and regressed.changes[0].new.startswith("CRASH")


def test_diff_across_cp_sizes_counts_requests_only_the_smaller_p_runs_as_graphs() -> None:
    # P=2 takes requests of 4..7 tokens as graphs; P=4 runs them eagerly: a regression the shared batch sees
    old = loads_design("cp_size = 2\ncapture_num_tokens = [16, 32, 64]\n", name="p2")
    new = loads_design("cp_size = 4\ncapture_num_tokens = [16, 32, 64]\n", name="p4")
    regressed = diff_designs(old, new).by_kind("regressed")
    assert regressed.status == "found"
    first = regressed.changes[0]
    assert first.old_outcome.admitted and not first.new_outcome.admitted
    assert min(first.extend_seq_lens) < 8  # a request only the P=2 design takes the CP path for



def test_a_diff_across_keyings_reads_one_batch() -> None:
    # a global zigzag design against a local dual_chunk_swap one: one shared batch (lengths from 1, those below
    # the DualChunkSwap table's exact range counted apart); only the local design keys batches with a request
    # shorter than 2P, and the ranges are the envelope (the exact scan needs global keying)
    old = loads_design("cp_size = 2\ncapture_num_tokens = [8, 12, 16]\n", name="g")
    new = loads_design('strategy = "dual_chunk_swap"\nkeying = "local"\ncp_size = 2\ncapture_num_tokens = [2, 4, 8]\n', name="l")
    diff = diff_designs(old, new)
    changed = diff.by_kind("changed")
    assert changed.status == "found" and "envelope" in changed.note
    assert changed.changes[0].extend_seq_lens == (1,)  # eager under the CP-active gate, a graph of size 1 locally
