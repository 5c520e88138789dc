"""Domain guards, run by the teeth pass: each guarded spec builder builds at the edge of its domain and
raises one past it."""

from __future__ import annotations

from collections.abc import Callable

import z3

from cpgraph.spec.logic import And, Implies
from cpgraph.proofs.engine.check import Status, check
from cpgraph.proofs.engine.results import Bite


# -- domain guards: each spec builder accepts the edge of its domain and refuses the value past it -------------


def _guard_cases() -> tuple[tuple[str, Callable[[], object], Callable[[], object]], ...]:
    """(builder, a call at the edge of its domain that must succeed, the call one past it that must raise)."""
    from fractions import Fraction

    from cpgraph.spec import admission, arith, batch, capacity, graph_paths, invariants, keying, selection, strategies, terms, zigzag

    x = z3.Int("guard.x")
    chosen = selection.Selection(z3.Bool("guard.admitted"), x)
    empty = selection.CaptureList((), (), ())
    one = terms.Loads((x,), z3.BoolVal(True))
    two = terms.Loads((x, x), z3.BoolVal(True))
    setup = admission.RankSetup("zigzag", 1, 2, Fraction(2), empty)  # P = 1: one load
    return (
        ("graph_paths.decode_step query_len", lambda: graph_paths.decode_step(x, 1, 1, "dual_chunk_swap", "g"),
         lambda: graph_paths.decode_step(x, 0, 1, "dual_chunk_swap", "g")),
        ("graph_paths.decode_step cp_size", lambda: graph_paths.decode_step(x, 1, 1, "dual_chunk_swap", "g"),
         lambda: graph_paths.decode_step(x, 1, 0, "dual_chunk_swap", "g")),
        ("graph_paths.symbolic_decode_graphs", lambda: graph_paths.symbolic_decode_graphs(0, 1, "g"),
         lambda: graph_paths.symbolic_decode_graphs(-1, 1, "g")),
        ("graph_paths.symbolic_token_sizes", lambda: graph_paths.symbolic_token_sizes(0, "g"),
         lambda: graph_paths.symbolic_token_sizes(-1, "g")),
        ("batch.class_batch", lambda: batch.class_batch(1, "g"), lambda: batch.class_batch(0, "g")),
        ("capacity.headroom_bound", lambda: capacity.headroom_bound(x, 1, x, "g"), lambda: capacity.headroom_bound(x, 0, x, "g")),
        ("strategies.contiguous_request_loads", lambda: strategies.contiguous_request_loads(x, 1, "g"),
         lambda: strategies.contiguous_request_loads(x, 0, "g")),
        ("strategies.dual_chunk_swap_request_loads", lambda: strategies.dual_chunk_swap_request_loads(x, 1, "g"),
         lambda: strategies.dual_chunk_swap_request_loads(x, 0, "g")),
        ("strategies.dual_chunk_swap_dcp_request_loads", lambda: strategies.dual_chunk_swap_dcp_request_loads(x, 1, "g"),
         lambda: strategies.dual_chunk_swap_dcp_request_loads(x, 0, "g")),
        ("strategies.class_encodable", lambda: strategies.class_encodable("zigzag"),
         lambda: strategies.class_encodable("dual_chunk_swap")),
        ("batch.class_loads", lambda: batch.class_loads(batch.class_batch(1, "g"), "contiguous", "g"),
         lambda: batch.class_loads(batch.class_batch(1, "g"), "dual_chunk_swap_dcp", "g")),
        ("batch.any_layout", lambda: batch.any_layout(1, "g"), lambda: batch.any_layout(0, "g")),
        ("batch.requests_batch", lambda: batch.requests_batch(1, 1, "g"), lambda: batch.requests_batch(1, 0, "g")),
        ("batch.requests_batch cp_size", lambda: batch.requests_batch(1, 1, "g"), lambda: batch.requests_batch(0, 1, "g")),
        ("keying.keying", lambda: keying.keying("local"), lambda: keying.keying("locals")),
        ("invariants.captured_bucket keying", lambda: invariants.captured_bucket(chosen, empty, "local"),
         lambda: invariants.captured_bucket(chosen, empty, "vllm")),
        ("strategies.interleave_loads", lambda: strategies.interleave_loads(x, 1, "g"), lambda: strategies.interleave_loads(x, 0, "g")),
        ("zigzag.zigzag_request_loads", lambda: zigzag.zigzag_request_loads(x, 1, "g"), lambda: zigzag.zigzag_request_loads(x, 0, "g")),
        ("strategies.batch_loads", lambda: strategies.rank_loads((x,), 1, "g"), lambda: strategies.rank_loads((), 1, "g")),
        ("strategies.strategy", lambda: strategies.strategy("zigzag"), lambda: strategies.strategy("zigzag2")),
        ("selection.symbolic_capture_list", lambda: selection.symbolic_capture_list(0, "g"),
         lambda: selection.symbolic_capture_list(-1, "g")),
        ("selection.padding_window", lambda: selection.padding_window(x, Fraction(1)),
         lambda: selection.padding_window(x, Fraction(99, 100))),
        ("selection.CaptureList", lambda: selection.CaptureList((x,), (x,), (z3.BoolVal(True),)),
         lambda: selection.CaptureList((x,), (), (z3.BoolVal(True),))),
        ("arith.divmod_by", lambda: arith.divmod_by(x, 1, "g"), lambda: arith.divmod_by(x, 0, "g")),
        ("arith.divmod_by literals", lambda: arith.divmod_by(5, z3.IntVal(1), "g"), lambda: arith.divmod_by(5, z3.IntVal(0), "g")),
        ("arith.max_of", lambda: arith.max_of((x,), "g"), lambda: arith.max_of((), "g")),
        ("terms.int_term", lambda: terms.int_term(0), lambda: terms.int_term(False)),
        ("terms.Loads.plus", lambda: one.plus(one), lambda: one.plus(two)),
        ("admission.rank_decision loads", lambda: admission.rank_decision(one, 0, setup, x, "g"),
         lambda: admission.rank_decision(two, 0, setup, x, "g")),
        # A literal rank or index: 0..size-1 builds, size and -1 raise (a rank P is no rank; -1 reads the last entry).
        ("admission.rank_decision rank", lambda: admission.rank_decision(one, 0, setup, x, "g"),
         lambda: admission.rank_decision(one, 1, setup, x, "g")),
        ("terms.check_index past the last", lambda: terms.check_index("index", 2, 3, "g"),
         lambda: terms.check_index("index", 3, 3, "g")),
        ("terms.check_index below the first", lambda: terms.check_index("index", 0, 3, "g"),
         lambda: terms.check_index("index", -1, 3, "g")),
        *_proof_guard_cases(),
    )


def _proof_guard_cases() -> tuple[tuple[str, Callable[[], object], Callable[[], object]], ...]:
    """The same for the theorems' own helpers that refuse bad input (proofs/theorems/setting.py)."""
    from fractions import Fraction

    from cpgraph.proofs.theorems import setting
    from cpgraph.spec.admission import admit
    from cpgraph.spec.replay import replay

    def alike(form: str) -> object:
        return setting.every_rank_alike("guard", setting.setting(1, "zigzag", Fraction(2), form=form), admit, replay)

    return (
        ("proofs.theorems.setting.ranks_at", lambda: setting.ranks_at(1), lambda: setting.ranks_at(0)),
        ("proofs.theorems.setting.setting form", lambda: setting.setting(1, "zigzag", Fraction(2), form="requests"),
         lambda: setting.setting(1, "zigzag", Fraction(2), form="request")),
        ("proofs.theorems.setting.every_rank_alike", lambda: alike("any"), lambda: alike("classes")),
        ("proofs.theorems.setting.setting list_length", lambda: setting.setting(1, "zigzag", Fraction(2), list_length=1),
         lambda: setting.setting(1, "zigzag", Fraction(2), list_length=0)),
    )


def _raises(call: Callable[[], object], argument: str | None = None) -> bool:
    """The call raises ValueError or TypeError (whose message, when ``argument`` is given, starts by naming it:
    a builder's own guard, not a refusal deeper down that names some other value)."""
    try:
        call()
    except (ValueError, TypeError) as error:
        return argument is None or str(error).split(" ", 1)[0] == argument
    return False


# The argument each cp_size guard's message must name: without the guard (or with it moved past 0), cp_size = 0
# is still refused, but by divmod_by naming its divisor, and the builder no longer says what was wrong.
_NAMED = {name: "cp_size" for name in (
    "batch.class_batch", "capacity.headroom_bound", "strategies.contiguous_request_loads",
    "strategies.dual_chunk_swap_request_loads", "strategies.dual_chunk_swap_dcp_request_loads", "batch.any_layout",
    "strategies.interleave_loads", "zigzag.zigzag_request_loads", "batch.requests_batch cp_size",
    "proofs.theorems.setting.ranks_at")} | {"admission.rank_decision loads": "loads", "admission.rank_decision rank": "rank",
    "terms.check_index past the last": "index", "terms.check_index below the first": "index", "proofs.theorems.setting.setting form": "form", "proofs.theorems.setting.every_rank_alike": "every_rank_alike"}


def guards() -> tuple[Bite, ...]:
    """Each guarded spec builder at the edge of its domain (must build) and one past it (must raise): a Bite
    per builder, PROVED when both hold; and the spec's replay record defines the layout it built."""
    out = []
    for name, edge, past in _guard_cases():
        ok = not _raises(edge) and _raises(past, _NAMED.get(name))
        out.append(Bite("domain guards", name, "builds at the edge of its domain, raises one past it", 0, Status.PROVED,
                        Status.PROVED if ok else Status.REFUTED))
    return (*out, replay_defines_its_layout())


def replay_defines_its_layout() -> Bite:
    """``spec.replay`` takes any layout (a caller's: a padded one, one request of n tokens) and its ``holds`` must
    define the layout it built, as it does every other term it returns: the theorems assume the live batch's
    facts anyway, so only a layout of the replay's own making tells a replay that drops them apart."""
    from fractions import Fraction

    from cpgraph.proofs.teeth.variants.end_to_end import one_request_layout
    from cpgraph.spec.admission import RankSetup
    from cpgraph.spec.batch import class_batch
    from cpgraph.spec.replay import replay
    from cpgraph.spec.selection import symbolic_capture_list

    p, n = 4, z3.Int("contract.n")
    batch = class_batch(p, "contract.batch")
    setup = RankSetup("zigzag", p, 2 * p, Fraction(2), symbolic_capture_list(3, "contract.cap"))
    built = replay(batch, n, setup, 0, "contract.replay", layout=one_request_layout)
    laid = one_request_layout(batch, n, "contract.replay.layout")  # the same names: the very terms replay built
    verdict = check(laid.holds, hypotheses=(built.holds,)).status
    return Bite("spec contracts", "replay defines its layout", "replay's facts imply the facts of the layout it built", p,
                Status.PROVED, verdict)


def induction_base() -> Bite:
    """EMPTY_BATCH, the state every induction over requests starts from, is the spec's empty batch: the class
    state with no request has EMPTY_BATCH's tokens and requests and, under every strategy with per-request
    loads (the class-encodable ones: the class state is theirs), EMPTY_BATCH's load on every rank (P = 1..4).
    PROVED when all hold."""
    from cpgraph.proofs.theorems.batch import empty_state
    from cpgraph.proofs.theorems.induction import EMPTY_BATCH
    from cpgraph.spec.batch import class_loads
    from cpgraph.spec.strategies import CLASS_ENCODABLE, STRATEGIES

    load, tokens, requests = EMPTY_BATCH
    ok = True
    for p in range(1, 5):
        empty = empty_state(p)
        claims = [empty.tokens == tokens, empty.requests == requests]
        for kind in CLASS_ENCODABLE:
            if STRATEGIES[kind].request_loads is not None:
                loads = class_loads(empty, kind, f"base.{kind}")
                claims += [Implies(loads.holds, x == load) for x in loads.loads]
        ok = ok and check(And(claims)).status is Status.PROVED
    return Bite("induction base", "EMPTY_BATCH", "the state every induction starts from is the spec's empty batch", 0,
                Status.PROVED, Status.PROVED if ok else Status.REFUTED)
