"""Coverage, run by the teeth pass: every theorem's hypotheses are satisfiable, also at the boundary of its
domain and one past it, each theorem's queries cover the scope it states, and no bound it assumes is implied
by the others (proofs/teeth/needed.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import z3

from cpgraph.spec.logic import And
from cpgraph.proofs.engine.check import Status, check, one_context
from cpgraph.proofs.engine.constants import constant_names
from cpgraph.proofs.teeth.needed import needed_bites
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.engine.parameters import SAMPLED_CP_SIZES
from cpgraph.proofs.registry import BY_NAME
from cpgraph.spec.terms import BoolTerm
from cpgraph.proofs.engine.results import Bite


# -- coverage: every theorem's hypotheses are satisfiable, also at the boundary of its domain ---------------------
#
# A theorem whose hypotheses exclude a value it claims to cover (``n >= 1`` tightened to ``n > 1``, a window
# ``high >= n`` tightened to ``high > n``, a remainder class that cannot occur) still proves: fewer cases, all
# true. Two checks at one small parameter catch that: every query's hypotheses are satisfiable (the theorem is
# not vacuous), and the hypotheses admit each boundary point of the domain the theorem's docstring states
# (``BOUNDARIES``: n >= 1, high >= n, required >= 0, n >= sum(lengths), capacity >= 0, ...): the edge (n = 1)
# is admitted and the point past it (n = 0) excluded, so the domain is the one stated, neither narrower (a
# case silently dropped) nor wider (a theorem about inputs that do not exist, e.g. an empty batch). A bound
# is checked on every query whose hypotheses mention all of its variables (the point past it on the first;
# end-to-end theorems, which share one setting, on the first only); a bound that no query
# mentions is itself a failure (the table and the theorem drifted apart).

LOCAL_THEOREMS = (
    "local_ranks_sharing_their_sizes_agree", "local_admitted_batches_replay_the_admitted_size", "local_admitted_size_is_captured",
    "local_admitted_size_is_at_or_above_the_key", "local_admitted_batches_fit_every_rank",
    "local_replay_runs_only_into_a_listed_size_holding_every_rank", "local_admitted_size_is_the_least_that_fits",
    "local_batches_that_fit_are_admitted",
)

COVERAGE_PARAMETER = {"cp_size": 4, "cp_size_sampled": 4, "cp_size_small": 4, "list_length": 3, "once": 0}


Boundary = tuple[str, BoolTerm, BoolTerm]  # (the bound as written, its edge, the point just past it)


def _e2e_domain(p: int) -> tuple[Boundary, ...]:
    from cpgraph.spec.batch import class_batch

    batch = class_batch(p, "batch")
    n, capacity, first = z3.Int("n"), z3.Int("cap.c0"), z3.Int("cap.b0")
    return (
        ("n >= sum(lengths)", n == batch.tokens, n == batch.tokens - 1),
        ("capacity >= 0", capacity == 0, capacity == -1),
        ("bucket >= 1", first == 1, first == 0),
        _strictly_sorted(),
        ("requests >= 1", batch.requests == 1, batch.requests == 0),
    )


def _busiest_at_headroom(p: int) -> Boundary:
    """A rank at the headroom bound itself (P*a0 = N + k(P-1), one request): the loads the theorem allows reach it."""
    a0, tokens, requests = z3.Int("a0"), z3.Int("N"), z3.Int("k")
    return ("P*a0 <= N + k(P-1)", And(p * a0 == tokens + requests * (p - 1), requests == 1),
            And(p * a0 == tokens + requests * (p - 1) + 1, requests == 1))


def _split_threshold(p: int) -> Boundary:
    """The split form's threshold: q = 2P-2 is covered (the first query, dual_chunk_swap), q = 2P-3 is not."""
    q = z3.Int("q")
    return ("q >= 2P-2 @ dual_chunk_swap", q == 2 * p - 2, q == 2 * p - 3)


def _one_chunk_short(p: int) -> Boundary:
    """The dcp rule's edge: the longest copied prefill, L = 2P(2P-2)+1, is covered, and so is an empty one."""
    length = z3.Int("L")
    return ("L = 2P(2P-2)+1", length == 2 * p * (2 * p - 2) + 1, length == -1)


def _local_domain(p: int) -> tuple[Boundary, ...]:
    """The local theorems' shared setting: the DualChunkSwap instance's lengths (L0 = 0: an absent request,
    and a length past it), n >= the batch's tokens, sorted sizes from 1, and any layout's loads from 0."""
    from cpgraph.spec.batch import requests_batch

    batch = requests_batch(p, 2, "batch")
    n, first, load = z3.Int("n"), z3.Int("cap.b0"), z3.Int("batch.l0")
    length = z3.Int("batch.L0")
    return (
        ("n >= sum(lengths)", n == batch.tokens, n == batch.tokens - 1),
        ("L0 >= 0", length == 0, length == -1),
        ("size >= 1", first == 1, first == 0),
        _strictly_sorted(),
        ("l0 >= 0 (any layout)", load == 0, load == -1),
    )


def _two_lengths() -> Boundary:
    """Requests of different lengths (L0 = 0, L1 = 1) are a batch the theorem covers, not only equal ones."""
    first, second = z3.Int("L0"), z3.Int("L1")
    return ("L0 != L1", And(first == 0, second == 1), first == -1)


def _bounds(*texts: str) -> Callable[[int], tuple[Boundary, ...]]:
    """Bounds written ``X >= Y`` or ``X <= Y`` (Y a variable, an integer, or P-1: the last rank): the
    edge X = Y must be admitted, the point past it (Y - 1, or Y + 1) excluded."""

    def at(p: int) -> tuple[Boundary, ...]:
        out = []
        for text in texts:
            left, op, right = text.split("@")[0].split()
            if right == "P-1":  # the last rank: of the parameter's P, or of the symbolic P (parameter 0)
                value = z3.Int("P") - 1 if p == 0 else z3.IntVal(p - 1)
            else:
                value = z3.IntVal(int(right)) if right.lstrip("-").isdigit() else z3.Int(right)
            x = z3.Int(left)
            out.append((text, x == value, x == value - 1 if op == ">=" else x == value + 1))
        return tuple(out)

    return at


def _strictly_sorted(prefix: str = "cap.b") -> Boundary:
    """Neighbouring buckets one apart (b1 = b0 + 1) are a list the theorem covers; a repeated bucket is not."""
    first, second = z3.Int(f"{prefix}0"), z3.Int(f"{prefix}1")
    return (f"{prefix}0 < {prefix}1", second == first + 1, second == first)


DECODE_THEOREMS = (
    "dispatched_graph_holds_every_rank", "local_dispatch_takes_a_decode_graph_whenever_one_fits",
    "release_dispatch_takes_a_decode_graph_whenever_one_fits_if_decodes_are_copied",
    "local_dispatch_takes_the_least_fitting_decode_graph", "graph_dispatch_is_the_same_on_every_rank",
)


def _decode_domain(p: int) -> tuple[Boundary, ...]:
    """The decode-path theorems' step and lists: R >= 1 decodes, decode graphs of >= 1 request and token sizes
    >= 1, each list strictly ascending."""
    return (*_bounds("R >= 1", "dec.n0 >= 1", "tok.t0 >= 1")(p), _strictly_sorted("dec.n"), _strictly_sorted("tok.t"))


def _scan(p: int) -> tuple[Boundary, ...]:
    return (*_bounds("n >= 1", "high >= n", "required >= 0", "cap.c0 >= 0", "cap.b0 >= 1")(p), _strictly_sorted())

BOUNDARIES: dict[str, Callable[[int], tuple[Boundary, ...]]] = {
    "divmod_quotient_and_remainder_are_unique": _bounds("S >= 1"),
    "folded_literals_equal_their_terms": _bounds(),  # concrete inputs only: every query pins x and y
    "align_up_is_least_multiple_at_or_above": _bounds("A >= 1", "v >= 0"),
    "zigzag_loads_sum_to_tokens": _bounds("L >= 0"),
    "contiguous_loads_sum_to_tokens": _bounds("L >= 0"),
    "interleave_loads_sum_to_tokens": _bounds("L >= 0"),
    "table_batch_loads_sum_to_tokens": lambda p: (*_bounds("L0 >= 0", "L1 >= 0")(p), _two_lengths()),
    "zigzag_busiest_rank_holds_ceil_share": _bounds("L >= 0", "r >= 0", "r <= P-1"),
    "contiguous_busiest_rank_holds_ceil_share": _bounds("L >= 0"),
    "dual_chunk_swap_loads_sum_to_tokens": _bounds("L >= 0"),
    "dual_chunk_swap_long_requests_split_by_remainder": lambda p: (*_bounds("m >= 0", "m <= 7")(p), _split_threshold(p)),
    "dual_chunk_swap_request_excess_is_tight": _bounds(*(f"L >= 0 @ {part} {kind}" for kind in ("dual_chunk_swap", "dual_chunk_swap_dcp")
                                                         for part in ("bound", "reached first at the witness"))),
    "dual_chunk_swap_dcp_copies_exactly_the_short_prefills": lambda p: (*_bounds("L >= 0")(p), _one_chunk_short(p)),
    "interleave_busiest_rank_holds_ceil_share": _bounds("L >= 0", "r >= 0", "r <= P-1"),
    "zigzag_ownership_partitions_blocks_for_symbolic_cp_size": _bounds("P >= 1", "r >= 0", "j >= 0"),
    "busiest_rank_holds_ceil_share_for_symbolic_cp_size": _bounds("P >= 1", "r >= 0", "r <= P-1", "L >= 0"),
    "per_request_headroom_bound_holds_for_symbolic_cp_size": _bounds("P >= 1", "r >= 0", "r <= P-1", "L >= 0"),
    "headroom_bound_holds_for_symbolic_cp_size": _bounds("P >= 1", "r >= 0", "r <= P-1", "L >= 0", "k <= R"),
    "headroom_bound_is_tight_for_symbolic_cp_size": _bounds("P >= 2", "q >= 0"),
    "headroom_bound_holds_for_any_number_of_requests": _bounds("L >= 0", "r >= 0", "r <= P-1", "R >= 1", "k <= R"),
    "headroom_bound_is_tight": _bounds("tight.q >= 0 @ request", "k >= 0 @ step", "k >= 1 @ bound"),
    "capture_capacity_is_aligned_ceil_share": _bounds("B >= 1"),
    "headroom_capture_fits_first_bucket_at_or_above_n": lambda p: (
        *_bounds("k >= 0", "k <= N", "R >= 1", "n >= 1", "N <= n", "B >= n")(p), _busiest_at_headroom(p)),
    "scan_selects_least_fitting_bucket": _scan,
    "scan_selects_least_fitting_bucket_for_any_list_length": _bounds("n >= 1", "high >= n", "required >= 0", "head.bucket >= 1"),
    "scan_select_is_the_step_folded_over_the_whole_list": _scan,
    "scan_selects_a_captured_bucket": _scan,
    "scan_respects_padding_limit": _scan,
    "scan_bucket_has_room_for_required_rows": _scan,
    "scan_selects_minimal_bucket": _scan,
    "scan_never_falls_back_when_a_bucket_fits": _scan,
    "least_fitting_bucket_is_unique": _scan,
    "scan_selects_first_bucket_at_or_above_n_when_it_has_room": _scan,
    "padding_window_holds_n_for_every_factor": _bounds("n >= 1", "F >= 1"),
    "local_scan_meets_every_invariant": lambda p: (*_bounds("key >= 0", "cap.b0 >= 1")(p), _strictly_sorted()),
    "class_loads_track_request_loads": _bounds("L >= 0"),
    **{name: _e2e_domain for name in (
        "ranks_sharing_their_capture_state_agree", "admitted_batches_replay_the_admitted_bucket",
        "admitted_bucket_is_captured", "admitted_bucket_is_within_padding_limit", "admitted_batches_fit_every_rank",
        "replay_runs_only_into_a_listed_bucket_with_room", "admitted_bucket_is_the_least_that_fits",
        "active_batches_that_fit_are_admitted", "admission_and_replay_read_the_whole_list",
    )},
    **{name: _local_domain for name in LOCAL_THEOREMS},
    **{name: _decode_domain for name in DECODE_THEOREMS},
    "release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt": lambda p: (
        *_bounds("dec.n0 >= 1", *(f"R {op} 1 @ fewer requests (dual_chunk_swap, release, FULL_DECODE_ONLY, q=1, R < 2)" for op in (">=", "<=")))(p),
        _strictly_sorted("dec.n")),
    # Megatron-Core's EP theorems: graphs of >= 1 token and no negative request count; steps of no negative
    # dimension (a decode-only step: >= 1 decode); the PR #3033 witness is pinned
    "synced_dimensions_give_consensus": _bounds("graph0.T >= 1", "graph0.P >= 0", "graph0.D >= 0", "rank0.T >= 1",
                                                "rank0.P >= 0", "rank0.D >= 0"),
    "decode_steps_synced_by_tokens_agree": _bounds("graph0.T >= 1", "graph0.D >= 1", "rank0.D >= 1"),
    "syncing_tokens_alone_breaks_consensus_under_strict_matching": _bounds(),
}


# The scope each theorem states, as the labels its queries must carry at the coverage parameter (P = 4): a
# strategy or a padding factor silently left out (a constant of the theorem moved, a condition flipped) proves
# just as well, with fewer cases.
_ALL = ("zigzag", "interleave", "contiguous", "dual_chunk_swap", "dual_chunk_swap_replicated", "dual_chunk_swap_dcp")
_CLASS = ("zigzag", "interleave", "contiguous")  # the class-encodable rows: the class-batch theorems' scope
_E2E_SCOPE = tuple(f"({sid}, F={f})" for sid in _CLASS for f in ("2", "3/2"))
_LOCAL_SCOPE = ("(dual_chunk_swap, local)", "(dual_chunk_swap_dcp, local)", "(any layout, local)")
_CHUNK_LEMMAS = tuple(f"chunk {j}" for j in range(8))  # one lemma per DualChunkSwap chunk: 2P at P = 4

# What a theorem's queries must not name at the coverage parameter: the first part past the stated structure.
BEYOND: dict[str, tuple[str, ...]] = {
    "table_batch_loads_sum_to_tokens": ("chunk 8",),  # 2P chunk lemmas per request at P = 4, no more
    "dual_chunk_swap_loads_sum_to_tokens": ("chunk 8",),
}

SCOPES: dict[str, tuple[str, ...]] = {
    # The fold theorem calls admission's decision and replay's tripwire at P in {1, 2, 3, 4, 8}, both keyings
    # (written out, not read from selection.FOLD_CP_SIZES: a narrowed run must differ from this declaration).
    "scan_select_is_the_step_folded_over_the_whole_list": tuple(
        f"{call}, {keying}, P={p}" for call in ("admission's call", "replay's tripwire") for keying in ("global", "local")
        for p in (1, 2, 3, 4, 8)),
    # "checked at the edges of every clause: L in {0, 1, P-1, P, P+1, 2P-1, 2P, 2P+1, 3P+1, 4P-1, 4P}" at P = 4
    # and A in {P, 2P} (each L's divisions one query per A)
    "folded_literals_equal_their_terms": tuple(f"L={v}{a}" for v in (0, 1, 3, 4, 5, 7, 8, 9, 13, 15, 16)
                                               for a in ("", ", A=4", ", A=8")),
    "table_batch_loads_sum_to_tokens": (*_ALL, *_CHUNK_LEMMAS),
    "dual_chunk_swap_loads_sum_to_tokens": ("request", "base", "step", *_CHUNK_LEMMAS),
    "class_loads_track_request_loads": (
        "base", "step invariant", "step covers", "step tokens", "exact", "class_batch is the state",
        *(f"{part} {kind}" for kind in ("zigzag", "contiguous") for part in ("base loads", "request split", "step loads")),
        *(f"suffix step {kind} T{j}" for kind in ("zigzag", "contiguous") for j in range(8)),  # 2P classes at P = 4
    ),
    "dual_chunk_swap_long_requests_split_by_remainder": ("dual_chunk_swap", "dual_chunk_swap_dcp", "tight below dual_chunk_swap",
                                                         "tight below dual_chunk_swap_dcp"),
    "dual_chunk_swap_request_excess_is_tight": tuple(f"{part} {kind}" for kind in ("dual_chunk_swap", "dual_chunk_swap_dcp")
                                                     for part in ("bound", "reached", "reached by the empty request")),
    "ranks_sharing_their_capture_state_agree": (*_E2E_SCOPE, "(any layout, global, F=2)"),  # the every-rank chains
    "admitted_batches_replay_the_admitted_bucket": _E2E_SCOPE,
    "admitted_bucket_is_captured": _E2E_SCOPE,
    "admitted_bucket_is_within_padding_limit": tuple(f"({sid}, F={f})" for sid in _CLASS for f in ("1", "5/4", "3/2", "2", "4")),
    "admitted_batches_fit_every_rank": (*_E2E_SCOPE, "any capacities", "captured capacities"),
    "replay_runs_only_into_a_listed_bucket_with_room": tuple(f"({sid}, F=2)" for sid in _CLASS),
    "admitted_bucket_is_the_least_that_fits": _E2E_SCOPE,
    "active_batches_that_fit_are_admitted": _E2E_SCOPE,
    **{name: _LOCAL_SCOPE for name in LOCAL_THEOREMS},
    # every side's check, for every class-encodable strategy under global and any layout under local, on 32 buckets
    "admission_and_replay_read_the_whole_list": tuple(
        f"{part} {label}" for part in ("admission's decision", "replay's decision", "replay's tripwire",
                                       "rows as on the short list")
        for label in (*(f"({sid}, F=2, K=32)" for sid in _CLASS), "(any layout, local, K=32)")) + tuple(
        f"{step}, rank {rank} {label}" for step in ("rows agree", "keys agree", "rank_consensus") for rank in (1, 2, 3)
        for label in ("(any layout, global, F=2, K=32)", "(any layout, local, K=32)")),
}


def scope_edges() -> tuple[Bite, ...]:
    """The end-to-end theorems' stated scope at its edges: every class-encodable strategy with F in {2, 3/2} up
    to P = 8, only zigzag with F = 2 above it; the local theorems: the DualChunkSwap instances and any layout up
    to P = 8, any layout alone above it (proofs/engine/scope.py's declared scopes); and every "up to P" threshold is
    the declared one (``_thresholds``)."""
    from fractions import Fraction

    from cpgraph.proofs.theorems import end_to_end, end_to_end_local
    out = []
    for p, strategies, factors in ((8, _CLASS, (Fraction(2), Fraction(3, 2))), (12, ("zigzag",), (Fraction(2),))):
        got = {(s.strategy, s.factor) for s in end_to_end._settings(p)}
        want = {(sid, f) for sid in strategies for f in factors}
        out.append(Bite("end-to-end scope", f"P={p}", "every strategy and factor the scope states, no other", p,
                        Status.PROVED, Status.PROVED if got == want else Status.REFUTED))
    for p, labels in ((8, set(_LOCAL_SCOPE)), (12, {"(any layout, local)"})):
        got_labels = {s.label for s in end_to_end_local.local_settings(p)}
        out.append(Bite("local end-to-end scope", f"P={p}", "the DualChunkSwap instances up to P = 8, any layout at every P",
                        p, Status.PROVED, Status.PROVED if got_labels == labels else Status.REFUTED))
    return (*out, *_thresholds())


def _thresholds() -> tuple[Bite, ...]:
    """Each "up to P = x" threshold of the theorems equals the x their declared scope (proofs/engine/scope.py) states.
    The sampled cp sizes jump from 8 to 12, so a threshold moved to 9, 10 or 11 runs the very same queries:
    only this comparison tells it from the declared one."""
    from cpgraph.proofs.theorems import end_to_end_local, setting, strategies
    from cpgraph.proofs.engine.scope import SCOPE

    def strategies_to(theorem: str) -> int:
        return max(s.max_p or 0 for s in SCOPE[theorem].strategies)

    pairs = (
        ("OTHER_STRATEGIES_MAX_P", setting.OTHER_STRATEGIES_MAX_P, "admitted_bucket_is_captured", strategies_to("admitted_bucket_is_captured")),
        ("OTHER_STRATEGIES_MAX_P (factors)", setting.OTHER_STRATEGIES_MAX_P, "admitted_bucket_is_captured",
         max(f.max_p or 0 for f in SCOPE["admitted_bucket_is_captured"].factors)),
        ("INSTANCE_MAX_P", end_to_end_local.INSTANCE_MAX_P, "local_admitted_size_is_captured", strategies_to("local_admitted_size_is_captured")),
        ("TABLE_ROWS_MAX_P", strategies.TABLE_ROWS_MAX_P, "table_batch_loads_sum_to_tokens", strategies_to("table_batch_loads_sum_to_tokens")),
        ("EVERY_RANK_MAX_P", setting.EVERY_RANK_MAX_P, "ranks_sharing_their_capture_state_agree",
         SCOPE["ranks_sharing_their_capture_state_agree"].every_rank_max_p),
        ("EVERY_RANK_MAX_P (local)", setting.EVERY_RANK_MAX_P, "local_ranks_sharing_their_sizes_agree",
         SCOPE["local_ranks_sharing_their_sizes_agree"].every_rank_max_p),
    )
    out = [Bite(theorem, f"threshold: {name}", f"{name} = {value}, the scope declares up to P = {declared}", value,
                Status.PROVED, Status.PROVED if value == declared else Status.REFUTED)
           for name, value, theorem, declared in pairs]
    # The capture-list lengths the end-to-end theorems are built with at every sampled P (also above --cp-max's run).
    for theorem in ("admitted_batches_fit_every_rank", "local_admitted_batches_fit_every_rank"):
        lists = SCOPE[theorem].lists
        assert lists is not None
        for p in SAMPLED_CP_SIZES:
            got_lengths, declared_lengths = setting.list_lengths_at(p), lists.lengths(p)
            out.append(Bite(theorem, f"list lengths at P={p}", f"list_lengths_at gives {got_lengths}, the scope declares "
                            f"{declared_lengths}", p, Status.PROVED,
                            Status.PROVED if got_lengths == declared_lengths else Status.REFUTED))
    # The ranks the consensus theorems compare at every sampled P, also the ones above --cp-max's run.
    for theorem in ("ranks_sharing_their_capture_state_agree", "local_ranks_sharing_their_sizes_agree"):
        for p in SAMPLED_CP_SIZES:
            got, declared = set(setting.ranks_at(p)) - {0} or {0}, set(SCOPE[theorem].ranks(p))
            out.append(Bite(theorem, f"ranks at P={p}", f"ranks_at gives {sorted(got)}, the scope declares {sorted(declared)}",
                            p, Status.PROVED, Status.PROVED if got == declared else Status.REFUTED))
    return tuple(out)


def _satisfiable(query: Query, extra: tuple[BoolTerm, ...] = ()) -> Status:
    witness = check(False, hypotheses=(*query.hypotheses, *extra), rlimit=query.rlimit, pipeline_first=True, model=False)
    return Status.REFUTED if witness.status is Status.REFUTED else witness.status


def _chains(queries: Sequence[Query]) -> list[tuple[str, Query]]:
    """One query per chain: the queries of one chain (parts ending in the same "(strategy, F=...)") checked
    together, with the union of their hypotheses (a model of the union is a model of each); any other query
    on its own."""
    groups: dict[str, list[Query]] = {}
    for q in queries:
        key = q.part[q.part.rindex("("):] if q.part.endswith(")") and "(" in q.part else q.part
        groups.setdefault(key, []).append(q)
    out = []
    for key, members in groups.items():
        hypotheses = tuple(dict.fromkeys(h for q in members for h in q.hypotheses))
        out.append((key, Query(key, z3.BoolVal(False), hypotheses, rlimit=max(q.rlimit for q in members))))
    return out


def _guards(claim: BoolTerm, lemma: BoolTerm) -> bool:
    """``claim`` is ``Implies(Not(x), lemma)``: a lemma proved where the theorem's claim ``x`` fails."""
    return bool(z3.is_implies(claim) and z3.is_not(claim.arg(0)) and claim.arg(1).eq(lemma))


def _covered(fragment: str, queries: Sequence[Query]) -> bool:
    """Some query's label names ``fragment`` as a whole part (not inside a longer word)."""
    return any(re.search(rf"(^|[\s(]){re.escape(fragment)}($|[\s)])", q.part) for q in queries)


def coverage(theorem: str) -> tuple[Bite, ...]:
    """Non-vacuity of every query of ``theorem`` and its boundary points, at its coverage parameter: each a
    Bite that must be REFUTED (a witness model exists). Its checks share one fresh context (always run in
    this order)."""
    with one_context():
        return _coverage(theorem)


def _coverage(theorem: str) -> tuple[Bite, ...]:
    obligation = BY_NAME[theorem]
    parameter = COVERAGE_PARAMETER[obligation.over]
    queries = obligation.build(parameter)
    memo: dict[int, frozenset[str]] = {}  # each hypothesis's constants, walked once (the queries keep them alive)
    out = [Bite(theorem, f"satisfiable: {label}", "the hypotheses have a model (not vacuous)", parameter, Status.REFUTED,
                _satisfiable(q)) for label, q in _chains(queries)]
    # A guarded lemma (proved where the claim fails) proves whatever it says while the claim holds: its own
    # statement, unguarded, must hold too (first chain only: the lemma builders are shared by every chain).
    first = _chains(queries)[0][0] if queries else ""
    for step, q in enumerate(queries):
        if q.lemma is not None and q.part.endswith(first):
            verdict = check(q.lemma, hypotheses=q.hypotheses, rlimit=q.rlimit, pipeline_first=True).status
            out.append(Bite(theorem, f"lemma holds unguarded: step {step + 1}, {q.part}",
                            "the chain's lemma, stated on its own, is proved", parameter, Status.PROVED, verdict))
    # A lemma field belongs to a guarded lemma step only (claim: Implies(Not(claim of the theorem), lemma)); set
    # elsewhere it re-proves a claim already proved, and a step whose field went missing is never checked alone.
    stray = [q.part for q in queries if q.lemma is not None and not _guards(q.claim, q.lemma)]
    out.append(Bite(theorem, "lemma fields only on guarded lemma steps", ", ".join(stray) or "none", parameter, Status.PROVED,
                    Status.REFUTED if stray else Status.PROVED))
    # A lemma that assumes its own conclusion proves whatever it says (an off-by-one slice of earlier lemmas).
    circular = [q.part for q in queries if any(z3.is_expr(h) and h.eq(q.claim) for h in q.hypotheses)]
    out.append(Bite(theorem, "no query assumes its own claim", ", ".join(circular) or "none", parameter, Status.PROVED,
                    Status.REFUTED if circular else Status.PROVED))
    for fragment in SCOPES.get(theorem, ()):
        out.append(Bite(theorem, f"scope: {fragment}", f"a query covers {fragment}", parameter, Status.PROVED,
                        Status.PROVED if _covered(fragment, queries) else Status.REFUTED))
    for fragment in BEYOND.get(theorem, ()):
        out.append(Bite(theorem, f"scope ends before: {fragment}", f"no query covers {fragment}", parameter,
                        Status.PROVED, Status.REFUTED if _covered(fragment, queries) else Status.PROVED))
    stated = re.search(r"sorted (\d+)-bucket lists", obligation.scope)
    if stated:  # the capture-list length the scope states: its last bucket is in the queries, one more is not
        k = int(stated.group(1))
        seen = constant_names((t for q in queries for t in (q.claim, *q.hypotheses)), memo=memo)
        ok = f"cap.b{k - 1}" in seen and f"cap.b{k}" not in seen
        out.append(Bite(theorem, f"scope: {k}-bucket lists", f"the queries' capture list has exactly the {k} buckets the scope states",
                        parameter, Status.PROVED, Status.PROVED if ok else Status.REFUTED))
    out += needed_bites(obligation, parameter, queries)
    boundaries = BOUNDARIES.get(theorem)
    if boundaries is None:
        return (*out, Bite(theorem, "boundaries", "no boundary points listed in proofs/teeth/run.py BOUNDARIES", parameter,
                           Status.REFUTED, Status.PROVED))
    names: dict[int, set[str]] = {}

    def mentions(index: int, wanted: set[str]) -> bool:
        if index not in names:
            names[index] = constant_names(queries[index].hypotheses, memo=memo)
        return wanted <= names[index]

    every_query = BOUNDARIES.get(theorem) not in (_e2e_domain, _local_domain)  # end-to-end theorems share one setting: its first query
    for text, edge, past in boundaries(parameter):
        wanted = constant_names((edge,))
        where = [q for i, q in enumerate(queries) if mentions(i, wanted)]
        if not where:
            out.append(Bite(theorem, f"boundary: {text}", "no query mentions these variables", parameter, Status.REFUTED, Status.PROVED))
            continue
        one_part = "@" in text
        if one_part:  # a bound of one part of the argument only
            text, part = (x.strip() for x in text.split("@"))
            where = [q for q in where if q.part == part]
        # The edge on every query that mentions the bound's variables (a lemma's hypotheses tightened is as
        # narrow as the theorem's), the point past it on the first (later lemmas may hold more generally).
        for i, q in enumerate(where if every_query else where[:1]):
            label = f"{text} ({q.part})" if one_part or (every_query and len(where) > 1) else text
            out.append(Bite(theorem, f"edge: {label}", f"the hypotheses admit the edge of {text}", parameter, Status.REFUTED,
                            _satisfiable(q, (edge,))))
            if i == 0:
                out.append(Bite(theorem, f"past: {label}", f"the hypotheses exclude the point past {text}", parameter,
                                Status.PROVED, Status.PROVED if _satisfiable(q, (past,)) is Status.PROVED else Status.REFUTED))
    return tuple(out)
