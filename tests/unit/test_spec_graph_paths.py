"""spec/graph_paths.py: a uniform decode step's per-rank shares, the two dispatch designs on the release's
witness, and every guard naming its argument; reference/graph_paths.py's inputs refused naming theirs."""

import pytest
import z3

from cpgraph.proofs.engine.evaluate import values_of
from cpgraph.reference import graph_paths as ref
from cpgraph.spec import graph_paths as spec
from cpgraph.spec.logic import And


def _values(*terms: z3.ExprRef, facts: z3.BoolRef) -> tuple[int | bool, ...]:
    return values_of(list(terms), facts)


@pytest.mark.parametrize(("r", "p", "want"), [(5, 3, (2, 2, 1)), (2, 4, (1, 1, 0, 0)), (8, 4, (2, 2, 2, 2)), (1, 1, (1,))])
def test_round_robin_shares_are_the_reference_ranks(r: int, p: int, want: tuple[int, ...]) -> None:
    step = spec.decode_step(r, 2, p, "dual_chunk_swap", "s")
    assert _values(*step.requests, facts=step.holds) == want
    assert _values(*step.rows, facts=step.holds) == tuple(2 * x for x in want)
    assert ref.GraphStep((2,) * r, (False,) * r, p).ranks() == tuple((2 * x, x) for x in want)


def test_a_symbolic_r_is_an_explicit_quotient_and_remainder_per_rank() -> None:
    r = z3.Int("R")
    step = spec.decode_step(r, 1, 3, "dual_chunk_swap", "s")
    assert _values(*step.requests, facts=And(step.holds, r == 7)) == (3, 2, 2)
    copied = spec.decode_step(r, 3, 4, "dual_chunk_swap_dcp", "s")
    assert all(x.eq(r) for x in copied.requests)


def _dispatch(design: str, mode: str, r: int, p: int) -> tuple[int | bool, ...]:
    step = spec.decode_step(r, 1, p, "dual_chunk_swap", "s")
    d = spec.DISPATCHES[design](step, spec.decode_graphs((1, 2, 4), 1), (z3.IntVal(8),), mode, 0, "d")
    return _values(d.mode, d.tokens, d.requests, facts=d.holds)


@pytest.mark.parametrize("p", [2, 3, 8])
def test_the_release_passes_over_a_fitting_decode_graph_the_fix_takes(p: int) -> None:
    assert _dispatch("release", "FULL_AND_PIECEWISE", 2, p) == (spec.PIECEWISE, 8, 0)
    assert _dispatch("release", "FULL_DECODE_ONLY", 2, p) == (spec.EAGER, 0, 0)
    assert _dispatch("local", "FULL_AND_PIECEWISE", 2, p) == (spec.FULL, 1, 1)
    assert _dispatch("release", "FULL_AND_PIECEWISE", 1, p) == (spec.FULL, 1, 1)  # one decode: the two agree


def test_copied_decodes_hold_every_request_on_every_rank_so_the_designs_agree() -> None:
    for design in ("release", "local"):
        step = spec.decode_step(3, 1, 2, "dual_chunk_swap_replicated", "s")
        d = spec.DISPATCHES[design](step, spec.decode_graphs((1, 2, 4), 1), (), "FULL_DECODE_ONLY", 1, "d")
        assert _values(d.mode, d.requests, facts=d.holds) == (spec.FULL, 4)


@pytest.mark.parametrize(("call", "names"), [
    (lambda: spec.decode_step(1, 1, 2, "zigzag", "s"), "placement"),
    (lambda: spec.decode_step(1, 1, 0, "dual_chunk_swap", "s"), "cp_size"),
    (lambda: spec.decode_step(1, 0, 2, "dual_chunk_swap", "s"), "query_len"),
    (lambda: spec.decode_graphs((1,), 0), "query_len"),
    (lambda: spec.symbolic_decode_graphs(-1, 1, "g"), "count"),
    (lambda: spec.symbolic_token_sizes(-1, "t"), "count"),
    (lambda: spec.request_key("rank"), "request key"),
    (lambda: spec.release_dispatch(spec.decode_step(1, 1, 2, "dual_chunk_swap", "s"), spec.decode_graphs((1,), 1), (),
                                   "PIECEWISE", 0, "d"), "mode"),
    (lambda: spec.local_dispatch(spec.decode_step(1, 1, 2, "dual_chunk_swap", "s"), spec.decode_graphs((1,), 1), (),
                                 "FULL_DECODE_ONLY", 2, "d"), "rank"),
    (lambda: spec.local_dispatch(spec.decode_step(1, 1, 2, "dual_chunk_swap", "s"), spec.decode_graphs((1,), 2), (),
                                 "FULL_DECODE_ONLY", 0, "d"), "graphs"),
])
def test_spec_guards_name_their_argument(call: object, names: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=names):
        call()


@pytest.mark.parametrize(("call", "names"), [
    (lambda: ref.GraphConfig("FULL_AND_DECODE", (8,)), "cudagraph_mode"),
    (lambda: ref.GraphConfig("FULL", (0,)), "token_sizes"),
    (lambda: ref.GraphConfig("FULL", [8]), "token_sizes"),  # type: ignore[arg-type]
    (lambda: ref.GraphConfig("FULL", (8,), (1, True)), "decode_request_sizes"),
    (lambda: ref.GraphConfig("FULL", (8,), (1,), (0,)), "query_lens"),
    (lambda: ref.GraphConfig("FULL", (8,), max_num_seqs=0), "max_num_seqs"),
    (lambda: ref.GraphStep((1,), (False,), 2, "zigzag"), "placement"),
    (lambda: ref.GraphStep((1, 1), (False,), 2), "lengths and prefilling"),
    (lambda: ref.GraphStep((), (), 2), "lengths and prefilling"),
    (lambda: ref.GraphStep((0,), (False,), 2), "lengths"),
    (lambda: ref.GraphStep((1,), (False,), 0), "cp_size"),
])
def test_reference_refuses_bad_inputs_naming_the_argument(call: object, names: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=names):
        call()
