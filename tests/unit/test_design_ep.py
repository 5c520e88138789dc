"""cpgraph review of EP designs (path = "ep", cpgraph/design/ep.py and ep_review.py): the bundled Megatron-Core
designs get the verdicts their releases show (0.16's token-only sync breaks rank_consensus with PR #3033's
witness; the synced form keeps it but falls back needlessly; 0.18's decode-only sync keeps every invariant), and a
bad key is a DesignError naming it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cpgraph.design.ep import EpDesign
from cpgraph.design.ep_review import review_ep
from cpgraph.design.record import DesignError
from cpgraph.design.schema import BUNDLED_EP, load_any_design, loads_any_design
from cpgraph.reference.ep_graphs import GraphDims


def _verdicts(name: str) -> dict[str, str]:
    design = load_any_design(name)
    assert isinstance(design, EpDesign)
    return {v.invariant: v.status for v in review_ep(design).invariants}


def test_the_0_16_design_breaks_rank_consensus_with_the_pr_3033_witness() -> None:
    design = load_any_design("megatron_0_16")
    assert isinstance(design, EpDesign)
    result = review_ep(design)
    consensus = next(v for v in result.invariants if v.invariant == "rank_consensus")
    assert consensus.status == "refuted" and consensus.steps == (GraphDims(1, 0, 1), GraphDims(1, 1, 0))
    assert {a.graph for a in consensus.answers} == {GraphDims(8, 0, 8), GraphDims(16, 16, 0)}
    assert [v.status for v in result.invariants if v.invariant != "rank_consensus"] == ["proved"] * 5
    assert result.exit_code == 1


def test_the_synced_form_keeps_consensus_and_the_decode_only_form_keeps_everything() -> None:
    synced = _verdicts("megatron_synced")
    assert synced["rank_consensus"] == "proved" and synced["no_needless_fallback"] == "refuted"
    assert set(_verdicts("megatron_decode_only").values()) == {"proved"}


def test_every_bundled_ep_design_loads() -> None:
    assert all(isinstance(load_any_design(name), EpDesign) for name in BUNDLED_EP)


@pytest.mark.parametrize("text, key", [
    ('path = "ep"\nmatching = "exact"\nsync = "tokens"\nep_size = 2\ngraphs = [[8, 0, 8]]', "matching"),
    ('path = "ep"\nmatching = "strict"\nsync = "tokens"\nep_size = 9\ngraphs = [[8, 0, 8]]', "ep_size"),
    ('path = "ep"\nmatching = "strict"\nsync = "tokens"\nep_size = 2\ngraphs = [[0, 0, 8]]', "graphs"),
    ('path = "ep"\nmatching = "strict"\nsync = "tokens"\nep_size = 2\ngraphs = [[8, 0, 8]]\ncp_size = 2', "cp_size"),
])
def test_a_bad_key_is_named(text: str, key: str) -> None:
    with pytest.raises(DesignError, match=key):
        loads_any_design(text)


def test_cpgraph_review_exits_1_on_the_0_16_design() -> None:
    done = subprocess.run([sys.executable, "-m", "cpgraph", "review", "megatron_0_16", "--quiet"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "rank_consensus         refuted" in done.stdout
