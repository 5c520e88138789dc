"""The teeth pass beyond the variants: every theorem's hypotheses are satisfiable and cover exactly the domain
its table entry states (edge admitted, the point past it excluded), and every spec builder guards its domain."""

import dataclasses

import pytest
import z3

from cpgraph.proofs import registry

from cpgraph.proofs.teeth import run as teeth
from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.engine.obligation import Query, Theorem
from cpgraph.proofs.registry import BY_NAME, OBLIGATIONS


def test_every_theorem_lists_its_domain_bounds() -> None:
    assert set(teeth.BOUNDARIES) == set(BY_NAME)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_every_theorem_is_covered_at_its_bounds(name: str) -> None:
    bites = teeth.coverage(name)
    assert bites and all(b.ok for b in bites), [b for b in bites if not b.ok]


def _replace_theorem(monkeypatch: pytest.MonkeyPatch, name: str, build: Theorem) -> None:
    monkeypatch.setitem(registry.BY_NAME, name, dataclasses.replace(BY_NAME[name], build=build))


def test_a_tightened_hypothesis_loses_the_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    # scan theorems take every window [n, H] with H >= n; one that silently needs H > n still proves.
    real = BY_NAME["scan_respects_padding_limit"]

    def tightened(parameter: int) -> tuple[Query, ...]:
        high, n = z3.Int("high"), z3.Int("n")
        return tuple(dataclasses.replace(q, hypotheses=(*q.hypotheses, high > n)) for q in real.build(parameter))

    _replace_theorem(monkeypatch, real.name, tightened)
    lost = [b.variant for b in teeth.coverage(real.name) if not b.ok]
    # The edge is lost, and the bound it tightened is now implied by the tighter one (proofs/teeth/needed.py).
    assert lost == ["needed: high >= n (relation)", "edge: high >= n"]


def test_a_loosened_hypothesis_admits_the_point_past_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # An end-to-end theorem about the empty batch too is about a batch the runner never sees.
    real = BY_NAME["admitted_bucket_is_captured"]
    from cpgraph.spec.batch import is_reachable

    def loosened(parameter: int) -> tuple[Query, ...]:
        from cpgraph.spec.batch import class_batch

        batch = class_batch(parameter, "batch")
        return tuple(
            dataclasses.replace(q, hypotheses=tuple(is_reachable(batch) if h.eq(batch.holds) else h for h in q.hypotheses))
            for q in real.build(parameter)
        )

    _replace_theorem(monkeypatch, real.name, loosened)
    lost = [b.variant for b in teeth.coverage(real.name) if not b.ok]
    assert lost == ["past: requests >= 1"]


def test_vacuous_hypotheses_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = BY_NAME["zigzag_loads_sum_to_tokens"]

    def vacuous(parameter: int) -> tuple[Query, ...]:
        return tuple(dataclasses.replace(q, hypotheses=(*q.hypotheses, z3.BoolVal(False))) for q in real.build(parameter))

    _replace_theorem(monkeypatch, real.name, vacuous)
    bites = teeth.coverage(real.name)
    assert any(b.variant.startswith("satisfiable") and b.got is Status.PROVED for b in bites)
    assert not all(b.ok for b in bites)


def test_every_spec_builder_guards_its_domain() -> None:
    bites = teeth.guards()
    assert len(bites) >= 15 and all(b.ok for b in bites), [b for b in bites if not b.ok]


def test_a_replay_that_drops_its_layouts_facts_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every theorem assumes the live batch's facts, so a replay whose holds leaves out the layout it built still
    # proves them all; only a layout of replay's own making (one request of n tokens) tells it apart.
    from cpgraph.spec import replay as spec_replay

    real = spec_replay.replay

    def forgetful(*args: object, **kwargs: object) -> spec_replay.Replay:
        built = real(*args, **kwargs)  # type: ignore[arg-type]
        return dataclasses.replace(built, holds=z3.BoolVal(True))

    monkeypatch.setattr(spec_replay, "replay", forgetful)
    lost = [b.variant for b in teeth.guards() if not b.ok]
    assert lost == ["replay defines its layout"]


def test_a_guard_moved_by_one_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    from cpgraph.spec import batch

    real = batch.class_batch

    def lax(cp_size: int, name: str) -> object:
        return real(max(cp_size, 1), name)  # accepts cp_size 0 (the guard `cp_size < 0`)

    monkeypatch.setattr(batch, "class_batch", lax)
    lost = [b.variant for b in teeth.guards() if not b.ok]
    assert lost == ["batch.class_batch"]


@pytest.mark.parametrize("shift", [1, -1])
def test_an_index_guard_moved_by_one_is_caught(monkeypatch: pytest.MonkeyPatch, shift: int) -> None:
    """check_index accepting size itself (a rank P, one past the last bucket), or refusing the last index: the
    guard checks at both ends of 0..size-1 tell."""
    from cpgraph.spec import admission, terms

    real = terms.check_index

    def moved(argument: str, value: object, size: int, of: str) -> None:
        real(argument, value, size + shift, of)  # type: ignore[arg-type]

    monkeypatch.setattr(terms, "check_index", moved)
    monkeypatch.setattr(admission, "check_index", moved)
    lost = [b.variant for b in teeth.guards() if not b.ok]
    assert {"admission.rank_decision rank", "terms.check_index past the last"} <= set(lost)
    if shift == 1:  # only the guards at the top end move; refusing the last index also breaks every edge call
        assert lost == ["admission.rank_decision rank", "terms.check_index past the last"]


def test_a_guard_that_divmod_by_backs_is_caught_when_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without zigzag's own guard, cp_size = 0 is still refused, by divmod_by naming its divisor: the guard
    check wants the builder's own refusal, naming cp_size."""
    from cpgraph.spec import arith, zigzag

    def unguarded(length: object, cp_size: int, name: str) -> object:
        return arith.divmod_by(length, 2 * cp_size, name)  # type: ignore[arg-type]

    monkeypatch.setattr(zigzag, "zigzag_request_loads", unguarded)
    lost = [b.variant for b in teeth.guards() if not b.ok]
    assert lost == ["zigzag.zigzag_request_loads"]


@pytest.mark.parametrize("moved", [(1, 0, 0), (0, 1, 0), (0, 0, 1)])
def test_an_induction_base_moved_off_the_empty_batch_is_caught(monkeypatch: pytest.MonkeyPatch, moved: tuple[int, int, int]) -> None:
    from cpgraph.proofs.teeth import guards
    from cpgraph.proofs.theorems import induction
    assert guards.induction_base().ok
    monkeypatch.setattr(induction, "EMPTY_BATCH", moved)
    assert not guards.induction_base().ok


def test_the_induction_chain_builds_base_step_and_bound_from_one_invariant() -> None:
    import z3

    from cpgraph.proofs.theorems.induction import EMPTY_BATCH, induction_chain

    seen: list[tuple[object, object, object]] = []

    def invariant(a: object, n: object, k: object) -> z3.BoolRef:
        seen.append((a, n, k))
        return z3.BoolVal(True)

    base, step, bound = induction_chain(invariant, step_to=(z3.Int("a") + 1, z3.Int("N") + 1, z3.Int("k") + 1),
                                        step_facts=(), bound=z3.BoolVal(True), bound_facts=())
    assert (base.part, step.part, bound.part) == ("base", "step", "bound")
    assert EMPTY_BATCH in seen  # the base is the invariant at the empty batch
    held = invariant(z3.Int("a"), z3.Int("N"), z3.Int("k"))
    assert step.hypotheses[0].eq(held) and bound.hypotheses[0].eq(held)  # step and bound assume that invariant


def test_teeth_runs_coverage_and_guards_for_the_theorems_it_checks() -> None:
    bites, _ = teeth.teeth(["padding_window_holds_n_for_every_factor"])
    names = {b.theorem for b in bites}
    assert names == {"padding_window_holds_n_for_every_factor", "domain guards", "spec contracts", "induction base"}
    assert all(b.ok for b in bites)
    assert len(OBLIGATIONS) == len(teeth.BOUNDARIES)


def test_the_end_to_end_scope_edges_are_covered() -> None:
    # the part of the teeth pass that runs only for the sampled end-to-end theorems (cpgraph prove runs it)
    edges = teeth.scope_edges()
    assert edges and all(b.ok for b in edges), [b for b in edges if not b.ok]


def test_a_strategy_left_out_of_a_theorem_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = BY_NAME["class_loads_track_request_loads"]

    def narrower(parameter: int) -> tuple[Query, ...]:
        return tuple(q for q in real.build(parameter) if "contiguous" not in q.part)

    _replace_theorem(monkeypatch, real.name, narrower)
    lost = [b.variant for b in teeth.coverage(real.name) if not b.ok]
    assert "scope: step loads contiguous" in lost and all(x.startswith("scope: ") and "contiguous" in x for x in lost)


def test_the_end_to_end_scope_edges_hold() -> None:
    bites = teeth.scope_edges()
    assert [(b.theorem, b.variant) for b in bites][:4] == [
        ("end-to-end scope", "P=8"), ("end-to-end scope", "P=12"), ("local end-to-end scope", "P=8"),
        ("local end-to-end scope", "P=12"),
    ]
    assert {b.variant for b in bites[4:] if b.variant.startswith("threshold")} == {
        "threshold: OTHER_STRATEGIES_MAX_P", "threshold: OTHER_STRATEGIES_MAX_P (factors)", "threshold: INSTANCE_MAX_P",
        "threshold: TABLE_ROWS_MAX_P", "threshold: EVERY_RANK_MAX_P", "threshold: EVERY_RANK_MAX_P (local)",
    }
    assert all(b.ok for b in bites)


@pytest.mark.parametrize("module, name", [("setting", "OTHER_STRATEGIES_MAX_P"), ("setting", "EVERY_RANK_MAX_P"),
                                          ("end_to_end_local", "INSTANCE_MAX_P"), ("strategies", "TABLE_ROWS_MAX_P")])
def test_a_threshold_moved_into_the_sampling_gap_is_caught(monkeypatch: pytest.MonkeyPatch, module: str, name: str) -> None:
    # No sampled cp size lies in 9..11: a threshold of 9 runs the same queries as 8, and only the declared scope
    # tells them apart.
    import importlib

    monkeypatch.setattr(importlib.import_module(f"cpgraph.proofs.theorems.{module}"), name, 9)
    lost = [b.variant for b in teeth.scope_edges() if not b.ok]
    assert lost and all(v.startswith(f"threshold: {name}") for v in lost)


def test_long_lists_moved_to_another_p_are_caught_also_above_cp_max(monkeypatch: pytest.MonkeyPatch) -> None:
    from cpgraph.proofs.theorems import setting
    monkeypatch.setattr(setting, "LONG_LIST_CP_SIZES", (4,))
    lost = {(b.theorem, b.variant) for b in teeth.scope_edges() if not b.ok}
    assert lost == {(t, f"list lengths at P={p}") for t in ("admitted_batches_fit_every_rank", "local_admitted_batches_fit_every_rank")
                    for p in (2, 4)}


def test_a_dual_chunk_swap_instance_left_out_of_a_local_theorem_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = BY_NAME["local_batches_that_fit_are_admitted"]

    def narrower(parameter: int) -> tuple[Query, ...]:
        return tuple(q for q in real.build(parameter) if "dual_chunk_swap_dcp" not in q.part)

    _replace_theorem(monkeypatch, real.name, narrower)
    lost = [b.variant for b in teeth.coverage(real.name) if not b.ok]
    assert lost == ["scope: (dual_chunk_swap_dcp, local)"]


def test_a_class_setting_refuses_a_row_that_is_not_class_encodable() -> None:
    from fractions import Fraction

    from cpgraph.proofs.theorems.setting import Setting

    with pytest.raises(ValueError, match="not class-encodable"):
        Setting(4, "dual_chunk_swap", Fraction(2))
    with pytest.raises(ValueError, match="keying must be one of"):
        Setting(4, "zigzag", Fraction(2), keying="vllm")
    with pytest.raises(ValueError, match="form must be one of"):
        Setting(4, "zigzag", Fraction(2), form="lengths")
    assert Setting(4, "dual_chunk_swap", Fraction(2), keying="local", form="requests").label == "(dual_chunk_swap, local)"


@pytest.mark.parametrize("theorem", ["admitted_batches_replay_the_admitted_bucket", "local_admitted_batches_fit_every_rank"])
def test_a_guarded_lemma_that_no_longer_holds_on_its_own_is_caught(theorem: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A chain's lemmas are proved guarded (where the claim fails), so a lemma turned false still proves while the
    # claim holds; the coverage task states each of the first chain's lemmas unguarded.
    from cpgraph.proofs.theorems import claims, end_to_end, end_to_end_local
    lemmas = [b for b in teeth.coverage(theorem) if b.variant.startswith("lemma holds unguarded")]
    assert lemmas and all(b.ok for b in lemmas)

    def rows_differ(first: z3.ArithRef, second: z3.ArithRef) -> tuple[str, z3.BoolRef]:
        return "rows agree", first != second

    for module in (claims, end_to_end, end_to_end_local):
        monkeypatch.setattr(module, "same_rows", rows_differ)
    lost = [b.variant for b in teeth.coverage(theorem) if not b.ok]
    assert lost and all(v.startswith("lemma holds unguarded: step ") and "rows agree" in v for v in lost)


@pytest.mark.parametrize("kind", ["dual_chunk_swap", "dual_chunk_swap_dcp"])
def test_a_loosened_lower_bound_of_one_part_is_caught_and_named(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # "no shorter prefill reaches the excess" over L >= -1: negative lengths are no prefill, and the part
    # still proves, so only its own boundary sees it
    real = BY_NAME["dual_chunk_swap_request_excess_is_tight"]
    part = f"reached first at the witness {kind}"
    length = z3.Int("L")

    def loosened(parameter: int) -> tuple[Query, ...]:
        return tuple(
            dataclasses.replace(q, hypotheses=tuple(length >= -1 if h.eq(length >= 0) else h for h in q.hypotheses))
            if q.part == part else q
            for q in real.build(parameter)
        )

    _replace_theorem(monkeypatch, real.name, loosened)
    lost = [b.variant for b in teeth.coverage(real.name) if not b.ok]
    assert lost == [f"past: L >= 0 ({part})"]


@pytest.mark.parametrize("where", ["last step", "unguarded lemma"])
def test_a_lemma_field_off_a_guarded_lemma_step_fails(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    # A lemma field re-proves its own claim where the step is not a guarded lemma: the theorem's own claim
    # (the last step), or a step stated unguarded. Either one is a chain built wrong.
    real = BY_NAME["admitted_bucket_is_captured"]

    def stray(parameter: int) -> tuple[Query, ...]:
        queries = list(real.build(parameter))
        index = len(queries) - 1 if where == "last step" else 0
        claim = queries[index].claim if where == "last step" else z3.Bool("lemma")
        queries[index] = dataclasses.replace(queries[index], claim=claim, lemma=claim)
        return tuple(queries)

    _replace_theorem(monkeypatch, real.name, stray)
    lost = [b.variant for b in teeth.coverage(real.name) if not b.ok]
    assert "lemma fields only on guarded lemma steps" in lost


def test_a_middle_rank_moved_above_the_run_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Above P = 8 the consensus theorems compare ranks P/2 and P-1 with rank 0; P/3 would be run only at P >= 12,
    # past a --cp-max 8 run, so the declared ranks are compared with ranks_at at every sampled P here.
    from cpgraph.proofs.theorems import setting
    real = setting.ranks_at
    monkeypatch.setattr(setting, "ranks_at", lambda p: real(p) if p <= 8 else (0, p // 3, p - 1))
    lost = {b.variant for b in teeth.scope_edges() if not b.ok}
    assert lost == {f"ranks at P={p}" for p in (12, 16, 24, 32)}
