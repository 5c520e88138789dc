"""The semantic diff finds the changed region and classifies it (fixed / regressed / changed)."""

from cpgraph.design.diff import diff_designs
from cpgraph.design.schema import load_design, loads_design

UPSTREAM = load_design("upstream")


def test_prefix_to_upstream_is_all_fixes_and_no_regression() -> None:
    diff = diff_designs(load_design("prefix"), UPSTREAM)
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
    assert dict(regressed.ranges)[1] == ((2049, 2304),)
    assert [(c.old, c.new) for c in regressed.changes] == [("graph 2304", "graph 2560")]
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
