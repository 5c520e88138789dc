"""The figures: an unsafe design's crash region and its smallest crashing batch, eager-fallback regions
and padding per design, a small crash share marked, a rank disagreement drawn per rank."""

from pathlib import Path

from cpgraph.design.plots import _lanes, panels_of, plot_review, plot_simulation
from cpgraph.design.report import Review, review
from cpgraph.design.schema import load_design
from cpgraph.design.simulate import simulate

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_review_figures_show_the_crash_region_of_the_unsafe_design(prefix_review: Review, tmp_path: Path) -> None:
    result = prefix_review  # review(load_design("prefix")), shared
    (prefix,) = panels_of(result)
    assert prefix.witnesses and prefix.crash  # refuted: a crash region and its smallest crashing batch
    assert [kind for _, kind, _ in _lanes(prefix)] == ["eager", "crash"]
    n, requests, _ = prefix.witnesses[0]
    assert any(lo <= n <= hi for _, spans in prefix.crash for lo, hi in spans)  # the witness lies in the region
    written = plot_review(result, tmp_path / "plots")
    assert [p.name for p in written] == ["eager_fallback.png", "padding.png"]
    assert all(p.read_bytes()[:8] == PNG for p in written)


def test_a_small_crash_share_still_gets_a_figure(tmp_path: Path) -> None:
    batches = [(1534, 161, 353)] + [(4096,)] * 99  # one crash in a hundred batches for the pre-fix design
    results = [simulate(load_design(d), batches, "one-in-a-hundred") for d in ("upstream", "prefix")]
    assert results[1].overflows == 1
    assert plot_simulation(results, tmp_path / "sim.png").read_bytes()[:8] == PNG


def test_the_review_figures_of_vllm_0_28_against_0_29(tmp_path: Path) -> None:
    # local keying: the x axis runs to P times the largest size (above it every batch is eager), the crash
    # region of 0.28 is every n from 2 to its largest size, the padding curve is P*s/n
    result = review(load_design("vllm_pcp_0_28"), against=load_design("vllm_pcp"))
    shipped, fixed = panels_of(result)  # the design reviewed first, then the one it is diffed against
    assert shipped.crash == ((0, ((2, 512),)),) and shipped.witnesses[0][:2] == (2, 1)
    assert fixed.efficiency.top == 2048 and not fixed.crash
    written = plot_review(result, tmp_path / "plots")
    assert all(p.read_bytes()[:8] == PNG for p in written)
