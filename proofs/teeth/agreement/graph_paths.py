"""Agreement of spec/graph_paths.py with reference/graph_paths.py on fixed edge cases (the "graph paths" family of
proofs/teeth/agreement/stage.py).

- the tables: the cudagraph modes, the mode order, the placements (and where each puts decodes, against the
  reference strategy table's ``decodes`` column);
- a uniform decode step's per-rank (rows, requests): spec ``decode_step`` against ``GraphStep.ranks`` for every
  placement, P in 1..5, R in 1..2P+1 and 3P, q in 1..3 (the dispatch: dealt and copied, P in 1..4, q in 1..2);
- ``fits``: spec against reference on graphs with and without a request count and a query length, rows and
  requests one below, at and one above the graph's;
- the dispatch: spec ``release_dispatch`` against a small restatement of vLLM 0.32-0.34's rule over the
  reference's captured graphs (``release_restated``), and spec ``local_dispatch`` against the reference's own
  expectation ``expected`` (the fastest captured graph that fits every rank), both decode modes.
"""

from __future__ import annotations

import z3

from cpgraph.proofs.teeth.agreement.tally import Outcome, Tally, spec_values
from cpgraph.reference import graph_paths as ref
from cpgraph.reference.lists import compact
from cpgraph.reference.strategies import strategy_row
from cpgraph.spec import graph_paths as spec
from cpgraph.spec.terms import int_term

CP_SIZES = (1, 2, 3, 4, 5)
QUERY_LENS = (1, 2, 3)
DECODE_LISTS = ((1, 2, 4), (2, 3), (1, 8), (4,), ())  # decode graphs' request counts (one below, at, above R's shares)
TOKEN_SIZES = ((1, 2, 3, 4, 8, 16), ())
DISPATCH_PLACEMENTS = ("dual_chunk_swap", "dual_chunk_swap_replicated")  # dealt and copied (dcp copies decodes too)


def _requests_counts(p: int) -> tuple[int, ...]:
    return tuple(sorted({*range(1, 2 * p + 2), 3 * p}))


def _step(r: int, q: int, p: int, placement: str) -> ref.GraphStep:
    return ref.GraphStep((q,) * r, (False,) * r, p, placement)


def release_restated(step: ref.GraphStep, config: ref.GraphConfig) -> ref.Graph | None:
    """vLLM 0.32-0.34's dispatch of a uniform decode step, over the reference's captured graphs: key k = the
    largest rank rows; the least decode graph of the step's q with requests >= ceil(k/q), taken when it holds
    all R requests; else the least graph of the mixed routine's mode with tokens >= k (None: eager)."""
    q = step.uniform_query_len
    assert q is not None
    key = max(rows for rows, _ in step.ranks())
    graphs = ref.captured(config)
    decode = [g for g in graphs if g.query_len == q and g.requests is not None and g.requests * q >= key]
    decode.sort(key=lambda g: g.tokens)
    if decode and decode[0].requests is not None and decode[0].requests >= len(step.lengths):
        return decode[0]
    mixed = [g for g in graphs if g.query_len is None and g.tokens >= key]
    return min(mixed, key=lambda g: g.tokens) if mixed else None


def _as_triple(g: ref.Graph | None) -> tuple[int, int, int]:
    """(mode index, tokens, decode requests) as spec's Dispatch reads them."""
    if g is None:
        return (spec.EAGER, 0, 0)
    mode = ref.MODE_ORDER.index(g.mode)
    return (mode, g.tokens, g.requests if g.query_len is not None and g.requests is not None else 0)


def graph_paths() -> Outcome:
    """Every comparison of the module docstring."""
    tally = Tally()
    tally.compare("graph path tables", lambda: "CUDAGRAPH_MODES", 0, dict(ref.CUDAGRAPH_MODES), dict(spec.CUDAGRAPH_MODES))
    tally.compare("graph path tables", lambda: "MODE_ORDER", 0, tuple(ref.MODE_ORDER), tuple(spec.MODE_ORDER))
    tally.compare("graph path tables", lambda: "PLACEMENTS", 0, tuple(ref.PLACEMENTS), tuple(spec.PLACEMENTS))
    for placement in ref.PLACEMENTS:
        dealt = strategy_row(placement).decodes == "round_robin"
        tally.compare("graph path tables", lambda: f"decodes of {placement!r}", 0, dealt, spec.placement_of(placement) == "round_robin")
    for placement in ref.PLACEMENTS:
        for p in CP_SIZES:
            for r in _requests_counts(p):
                for q in QUERY_LENS:
                    step = spec.decode_step(r, q, p, placement, "agree.step")
                    got = spec_values([*step.rows, *step.requests], [step.holds])
                    actual = got if isinstance(got, str) else tuple(zip(got[:p], got[p:]))
                    tally.compare("decode_step", lambda: f"decode_step({r}, {q}, {p}, {placement!r})", p,
                                  _step(r, q, p, placement).ranks(), actual)
    for graph in (ref.Graph("FULL", 8, 4, 2), ref.Graph("FULL", 8, 8), ref.Graph("PIECEWISE", 8)):
        for rows in (7, 8, 9):
            for requests in (3, 4, 5, 9):
                for step_q in (None, 2, 3):
                    term = spec.fits(graph.tokens, graph.requests, graph.query_len, rows, requests, step_q)
                    got = spec_values([term], [])
                    tally.compare("fits", lambda: f"fits({graph!r}, {rows}, {requests}, {step_q})", 0,
                                  ref.fits(graph, rows, requests, step_q), got if isinstance(got, str) else got[0])
    for mode in spec.DECODE_ROUTINE_MODES:
        for decode in DECODE_LISTS:
            for sizes in TOKEN_SIZES:
                for placement in DISPATCH_PLACEMENTS:
                    for p in CP_SIZES[:4]:
                        for r in _requests_counts(p):
                            for q in QUERY_LENS[:2]:
                                _dispatch(tally, mode, decode, sizes, placement, p, r, q)
    return tally.outcome()


def _dispatch(tally: Tally, mode: str, decode: tuple[int, ...], sizes: tuple[int, ...], placement: str, p: int, r: int,
              q: int) -> None:
    config = ref.GraphConfig(mode, sizes, decode, (q,), max_num_seqs=1024)
    step = _step(r, q, p, placement)
    graphs = spec.decode_graphs(decode, q)
    tokens = tuple(int_term(t) for t in sizes)
    for design, expected in (("release", release_restated(step, config)), ("local", ref.expected(step, ref.captured(config)))):
        s = spec.decode_step(r, q, p, placement, "agree.step")
        d = spec.DISPATCHES[design](s, graphs, tokens, mode, 0, "agree.dispatch")
        got = spec_values([d.mode, d.tokens, d.requests], [d.holds])
        tally.compare(f"{design}_dispatch", lambda: f"{design}_dispatch(R={r}, q={q}, P={p}, {placement!r}, {mode!r}, "
                      f"decode={compact(decode)}, sizes={compact(sizes)})", p, _as_triple(expected),
                      got if isinstance(got, str) else tuple(int(v) for v in got))
        # the mode's three readings (what a design review's claims read): exactly the one the expected graph has
        flags = spec_values([z3.If(d.full, 1, 0), z3.If(d.piecewise, 1, 0), z3.If(d.eager, 1, 0)], [d.holds])
        want = tuple(int(m == (expected.mode if expected is not None else "EAGER")) for m in ("FULL", "PIECEWISE", "EAGER"))
        tally.compare("dispatch_mode_readings", lambda: f"{design}_dispatch(R={r}, q={q}, P={p}, {placement!r}, {mode!r}).full/"
                      f"piecewise/eager", p, want, flags if isinstance(flags, str) else tuple(int(v) for v in flags))
