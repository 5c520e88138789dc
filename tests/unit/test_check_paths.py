"""cpgraph.check.paths on drivers built from the reference model: a driver that runs the fastest fitting graph
passes every path; each planted bug (vLLM's global request count among them) is caught as the invariant it
breaks, with a minimal step; bad options are ValueErrors naming them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from cpgraph.check.paths import check_paths
from cpgraph.reference.graph_paths import Graph, GraphConfig, GraphStep, PathAnswer, captured, fits, in_order

Pick = Callable[[GraphStep, tuple[Graph, ...], tuple[tuple[int, int], ...], int], Graph | None]


def fastest(step: GraphStep, graphs: tuple[Graph, ...], ranks: tuple[tuple[int, int], ...], rank: int) -> Graph | None:
    q = step.uniform_query_len
    return next((g for g in in_order(graphs) if all(fits(g, rows, reqs, q) for rows, reqs in ranks)), None)


def global_requests(step: GraphStep, graphs: tuple[Graph, ...], ranks: tuple[tuple[int, int], ...], rank: int) -> Graph | None:
    # vLLM 0.32-0.34's dispatch in model form: the decode graph is looked up by the rank-local requests, but
    # taken only when it holds the GLOBAL request count; else the mixed routine's graphs (or eager)
    q = step.uniform_query_len
    local = max(reqs for _, reqs in ranks)
    decode = next((g for g in in_order(graphs) if g.query_len is not None and g.query_len == q and g.requests is not None
                   and g.requests >= local), None)
    if decode is not None and decode.requests is not None and decode.requests >= len(step.lengths):
        return decode
    return next((g for g in in_order(graphs) if g.query_len is None and all(fits(g, rows, reqs, q) for rows, reqs in ranks)), None)


def own_rank(step: GraphStep, graphs: tuple[Graph, ...], ranks: tuple[tuple[int, int], ...], rank: int) -> Graph | None:
    q = step.uniform_query_len
    return next((g for g in in_order(graphs) if fits(g, *ranks[rank], q)), None)  # the local rank's own load


def largest(step: GraphStep, graphs: tuple[Graph, ...], ranks: tuple[tuple[int, int], ...], rank: int) -> Graph | None:
    q = step.uniform_query_len
    fitting = [g for g in in_order(graphs) if all(fits(g, rows, reqs, q) for rows, reqs in ranks)]
    return max((g for g in fitting if g.mode == fitting[0].mode), key=lambda g: g.tokens) if fitting else None


def one_below(step: GraphStep, graphs: tuple[Graph, ...], ranks: tuple[tuple[int, int], ...], rank: int) -> Graph | None:
    q = step.uniform_query_len
    return next((g for g in in_order(graphs) if all(fits(g, max(0, rows - 1), max(0, reqs - 1), q) for rows, reqs in ranks)), None)


@dataclass
class ModelDriver:
    pick: Pick
    placement_row: str = "dual_chunk_swap"
    replay_piecewise: bool = False
    version: str = "model"
    modes: tuple[str, ...] = ("PIECEWISE", "FULL_AND_PIECEWISE", "FULL_DECODE_ONLY")
    dcp_size: int = 1

    def placement(self, cp_size: int) -> str:
        return self.placement_row

    def captured(self, config: GraphConfig) -> tuple[Graph, ...]:
        return captured(config)

    def answers_dp(self, steps: Sequence[GraphStep], config: GraphConfig) -> tuple[tuple[PathAnswer, ...], ...]:
        return tuple(self.answers(step, config) for step in steps)

    def answers(self, step: GraphStep, config: GraphConfig) -> tuple[PathAnswer, ...]:
        ranks = step.ranks()
        out = []
        for r, (rows, reqs) in enumerate(ranks):
            g = self.pick(step, captured(config), ranks, r)
            replayed = Graph("PIECEWISE", g.tokens) if self.replay_piecewise and g is not None and g.mode == "FULL" else g
            out.append(PathAnswer(r, g, replayed, rows, reqs))
        return tuple(out)


CP = (1, 2, 4)


def test_the_fastest_fitting_graph_keeps_every_path() -> None:
    report = check_paths([ModelDriver(fastest), ModelDriver(fastest, "dual_chunk_swap_replicated", dcp_size=2)], cp_sizes=CP, cases=300)
    assert report.ok and len(report.paths) == 6 and all(p.cases == 300 for p in report.paths)


def test_vllms_global_request_count_is_caught_with_the_minimal_step() -> None:
    report = check_paths([ModelDriver(global_requests)], cp_sizes=CP, cases=300, decided_at=lambda invariant: ("x.py:1 `num_reqs`",))
    found = {(v.invariant, v.mode) for v in report.violations}
    assert found == {("no_needless_fallback", "FULL_AND_PIECEWISE"), ("no_needless_fallback", "FULL_DECODE_ONLY")}
    for v in report.violations:
        assert (v.step.cp_size, v.step.lengths, v.config.decode_request_sizes) == (2, (1, 1), (1,)), v.text()
        assert v.should == Graph("FULL", 1, 1, 1) and v.cost == "speed" and v.decided_at == ("x.py:1 `num_reqs`",)
        assert "should run: FULL 1 tokens, 1 requests, q=1" in v.text()
    copied = check_paths([ModelDriver(global_requests, "dual_chunk_swap_replicated")], cp_sizes=CP, cases=200)
    assert copied.ok  # copied decodes: every rank holds the global count, so the global check costs nothing


@pytest.mark.parametrize("driver, invariant", [
    (ModelDriver(own_rank), "rank_consensus"),
    (ModelDriver(largest), "minimal_bucket"),
    (ModelDriver(one_below), "capacity_fit"),
    (ModelDriver(fastest, replay_piecewise=True), "admission_replay"),
])
def test_each_planted_bug_is_caught_as_the_invariant_it_breaks(driver: ModelDriver, invariant: str) -> None:
    report = check_paths([driver], cp_sizes=CP, cases=300)
    assert invariant in {v.invariant for v in report.violations}, report.text()


def test_spec_decoding_steps_run_uniform_decodes_of_one_plus_k_tokens() -> None:
    seen: list[GraphStep] = []

    class Recording(ModelDriver):
        def answers(self, step: GraphStep, config: GraphConfig) -> tuple[PathAnswer, ...]:
            seen.append(step)
            assert config.query_lens == (3,)
            return super().answers(step, config)

    assert check_paths([Recording(fastest)], cp_sizes=CP, cases=100, spec_tokens=2, modes=("FULL_DECODE_ONLY",)).ok
    uniform = [s for s in seen if s.uniform_query_len is not None]
    assert sum(s.uniform_query_len == 3 for s in uniform) > len(uniform) / 2  # ragged drafts may happen to be even
    assert any(not any(s.prefilling) and s.uniform_query_len is None for s in seen)  # ragged drafts
    assert any(any(s.prefilling) for s in seen)  # mixed steps


@pytest.mark.parametrize("kw, named", [
    ({"cases": 0}, "cases"), ({"spec_tokens": -1}, "spec_tokens"), ({"spec_tokens": 17}, "spec_tokens"),
])
def test_bad_options_name_themselves(kw: dict[str, int], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        check_paths([ModelDriver(fastest)], cp_sizes=CP, **kw)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one path driver"):
        check_paths([], cp_sizes=CP)


class AgreeingDriver(ModelDriver):
    """Every DP rank runs the fastest graph that fits every rank of every DP rank (the agreement)."""

    def answers_dp(self, steps: Sequence[GraphStep], config: GraphConfig) -> tuple[tuple[PathAnswer, ...], ...]:
        graphs = captured(config)
        agreed = next((g for g in in_order(graphs) if all(fits(g, rows, reqs, s.uniform_query_len) for s in steps for rows, reqs in s.ranks())), None)
        return tuple(tuple(PathAnswer(r, agreed, agreed, rows, reqs) for r, (rows, reqs) in enumerate(s.ranks())) for s in steps)


def test_dp_ranks_that_agree_keep_every_path_and_ones_that_do_not_break_consensus() -> None:
    assert check_paths([AgreeingDriver(fastest)], cp_sizes=CP, cases=200, dp_sizes=(1, 2, 3)).ok
    apart = check_paths([ModelDriver(fastest)], cp_sizes=CP, cases=200, dp_sizes=(2,))  # each DP rank on its own
    found = {v.invariant for v in apart.violations}
    assert "rank_consensus" in found
    v = next(v for v in apart.violations if v.invariant == "rank_consensus")
    assert len(v.steps) == 2 and "DP rank 1" in v.text()
    with pytest.raises(ValueError, match="dp_sizes"):
        check_paths([ModelDriver(fastest)], cp_sizes=CP, dp_sizes=(0,))
