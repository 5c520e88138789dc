"""proofs/theorems/graph_paths.py: each decode-path theorem proves at small scope, each wrong dispatch gets its
verdict, and the release's design fact has a concrete witness, the fewest decodes, replayed through
reference/graph_paths.py (its expectation, its judge) and found by the solver as the minimal counterexample to
the fix's no_needless_fallback under the release's rule."""

import pytest

from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.registry import BY_NAME
from cpgraph.proofs.run import run_queries, run_task
from cpgraph.proofs.teeth.agreement.graph_paths import release_restated
from cpgraph.proofs.teeth.bite import bite
from cpgraph.proofs.teeth.variants.catalogue import VARIANTS
from cpgraph.proofs.theorems import graph_paths as theorems
from cpgraph.reference import graph_paths as ref
from cpgraph.spec.graph_paths import release_dispatch

NAMES = (
    "dispatched_graph_holds_every_rank", "local_dispatch_takes_a_decode_graph_whenever_one_fits",
    "release_dispatch_takes_a_decode_graph_whenever_one_fits_if_decodes_are_copied",
    "release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt",
    "local_dispatch_takes_the_least_fitting_decode_graph", "graph_dispatch_is_the_same_on_every_rank",
)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("p", [1, 2, 3])
def test_each_theorem_proves_at_small_scope(name: str, p: int) -> None:
    result = run_task(BY_NAME[name], p)
    assert result.failure is None, result.failure.render() if result.failure else ""


@pytest.mark.parametrize("index", [i for i, v in enumerate(VARIANTS) if v.theorem in NAMES])
def test_each_wrong_dispatch_gets_its_verdict(index: int) -> None:
    found = bite(VARIANTS[index])
    assert found.ok, (VARIANTS[index].name, VARIANTS[index].theorem, found.got)


def test_every_decode_theorem_is_refuted_by_some_variant() -> None:
    refuted = {v.theorem for v in VARIANTS if v.expected is Status.REFUTED}
    assert set(NAMES) <= refuted


def _config(mode: str) -> ref.GraphConfig:
    return ref.GraphConfig(mode, (8, 16), (1, 2, 4), (1,))


@pytest.mark.parametrize("p", [2, 3, 4, 8])
@pytest.mark.parametrize("mode", ["FULL_AND_PIECEWISE", "FULL_DECODE_ONLY"])
def test_the_witness_replays_through_the_reference(p: int, mode: str) -> None:
    step = ref.GraphStep((1, 1), (False, False), p)  # R = 2 decodes of q = 1, dealt round-robin
    config = _config(mode)
    want = ref.expected(step, ref.captured(config))
    assert want == ref.Graph("FULL", 1, 1, 1)  # a decode graph of 1 request fits every rank
    ran = release_restated(step, config)
    assert ran == (ref.Graph("PIECEWISE", 8) if mode == "FULL_AND_PIECEWISE" else None)
    answers = [ref.PathAnswer(r, ran, ran, rows, reqs) for r, (rows, reqs) in enumerate(step.ranks())]
    assert [f.invariant for f in ref.judge(step, ref.captured(config), answers)] == ["no_needless_fallback"]
    # Minimal: one decode is never passed over (the release holds R = 1 = every rank's requests).
    one = ref.GraphStep((1,), (False,), p)
    assert release_restated(one, config) == ref.expected(one, ref.captured(config))


def test_the_solver_finds_the_witness_as_the_least_counterexample_to_the_fix_under_the_release() -> None:
    queries = theorems.local_dispatch_takes_a_decode_graph_whenever_one_fits(2, dispatch_fn=release_dispatch)
    result = run_queries("local_dispatch_takes_a_decode_graph_whenever_one_fits", 2, queries, "P=2")
    assert result.failure is not None and result.failure.verdict.status is Status.REFUTED
    model = result.failure.model
    r = model["R"]
    assert r == theorems.WITNESS_REQUESTS  # minimised: the fewest decodes
    assert isinstance(r, int)
    decode = tuple(int(str(model[f"dec.n{i}"])) for i in range(theorems.DECODE_GRAPHS))
    q = int(result.failure.label.split("q=")[1].split(")")[0].split(",")[0])
    step = ref.GraphStep((q,) * r, (False,) * r, 2)
    config = ref.GraphConfig("FULL_DECODE_ONLY" if "FULL_DECODE_ONLY" in result.failure.label else "FULL_AND_PIECEWISE",
                             tuple(int(str(model.get(f"tok.t{i}", 1 + i))) for i in range(theorems.TOKEN_SIZES)), decode, (q,))
    want = ref.expected(step, ref.captured(config))
    assert want is not None and want.mode == "FULL"
    ran = release_restated(step, config)
    assert ran is None or ran.mode == "PIECEWISE"


def test_the_witness_queries_say_what_the_theorem_claims() -> None:
    parts = [q.part for q in theorems.release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt(2)]
    assert sum(part.startswith("witness") for part in parts) == 4 and sum(part.startswith("fewer requests") for part in parts) == 4
    assert [q.part for q in theorems.release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt(1)][0].startswith(
        "no witness at P = 1")
