"""cpgraph.proofs.engine.check: three verdicts, deterministic resource limits, unknown carries its reason."""

import pytest
import z3

from cpgraph.proofs.engine.check import Status, check, determined_values


def test_a_valid_claim_is_proved() -> None:
    x = z3.Int("x")
    assert check(x * x >= 0).status is Status.PROVED


def test_a_false_claim_is_refuted_with_a_model_of_every_named_variable() -> None:
    x, y = z3.Ints("x y")
    verdict = check(x + y > 2, hypotheses=[x >= 0, y == x])
    assert verdict.status is Status.REFUTED
    assert set(verdict.model) == {"x", "y"} and verdict.model["x"] + verdict.model["y"] <= 2


def test_check_false_under_satisfiable_hypotheses_is_refuted_with_a_witness() -> None:
    x = z3.Int("x")
    verdict = check(False, hypotheses=[x > 5, x < 7])
    assert verdict.status is Status.REFUTED and verdict.model == {"x": 6}


def test_check_false_under_contradictory_hypotheses_is_proved_so_vacuity_is_visible() -> None:
    x = z3.Int("x")
    assert check(False, hypotheses=[x > 5, x < 5]).status is Status.PROVED


def test_an_exhausted_resource_limit_is_unknown_with_the_reason() -> None:
    x, y, z = z3.Ints("x y z")
    hard = z3.Implies(z3.And(x > 1, y > 1, z > 1), x * x * x + y * y * y != z * z * z)
    verdict = check(hard, rlimit=2_000)
    assert verdict.status is Status.UNKNOWN and not verdict.proved
    assert "rlimit=2000" in verdict.reason


def test_the_same_query_gets_the_same_verdict_and_model_every_time() -> None:
    x, y = z3.Ints("x y")
    verdicts = {tuple(sorted(check(x + 2 * y != 7, hypotheses=[x > 0, y > 0]).model.items())) for _ in range(3)}
    assert len(verdicts) == 1


def test_a_non_positive_rlimit_is_rejected_naming_it() -> None:
    with pytest.raises(ValueError, match="rlimit must be"):
        check(True, rlimit=0)


def test_a_query_runs_in_a_context_of_its_own_whatever_was_built_before() -> None:
    # z3's search follows its terms' ids; in the shared context those depend on every term the process built
    # before (a test worker's history under xdist), so a query could run out of its rlimit in one order and not
    # in another (CI, 2026-12-01: the padded-layout diff went unknown). Translated into a fresh context, the
    # same query gets the same ids whatever came before.
    from cpgraph.proofs.engine.check import _isolated

    def ids() -> list[int]:
        x, y = z3.Int("iso.x"), z3.Int("iso.y")
        ctx, terms = _isolated([x + 2 * y >= 7, z3.Or(x < y, x == 3)])
        assert ctx is not z3.main_ctx() and all(t.ctx is ctx for t in terms)
        return [t.get_id() for t in terms]

    before = ids()
    junk = [z3.Int(f"iso.junk{i}") * (i + 1) for i in range(500)]  # the main context grows
    assert z3.Sum(junk).get_id() > max(before)
    assert ids() == before


def test_determined_values_come_back_in_the_callers_context() -> None:
    x = z3.Int("home.x")
    values, why = determined_values([x + 1], z3.And(x >= 4, x <= 4))
    assert why == "" and values is not None and values[0].ctx is z3.main_ctx() and values[0].as_long() == 5


def test_queries_in_one_block_share_a_fresh_context_whatever_ran_before() -> None:
    from cpgraph.proofs.engine.check import _isolated, one_context

    def block_ids() -> list[list[int]]:
        x = z3.Int("blk.x")
        with one_context():
            first_ctx, first = _isolated([x >= 1])
            second_ctx, second = _isolated([x + 1 >= 2, x <= 9])
            assert first_ctx is second_ctx and first_ctx is not z3.main_ctx()
        return [[t.get_id() for t in first], [t.get_id() for t in second]]

    before = block_ids()
    _ = [z3.Int(f"blk.junk{i}") + i for i in range(300)]
    assert block_ids() == before  # the block's ids depend on the block alone
    assert _isolated([z3.Int("blk.y") >= 0])[0] is not _isolated([z3.Int("blk.y") >= 0])[0]  # outside: one each


# -- the pipeline first (proofs/run.py's proof queries, the coverage checks) ------------------------------------


def test_the_pipeline_proves_what_the_default_solver_proves() -> None:
    x, y = z3.Int("x"), z3.Int("y")
    facts = (y == x + 1, x >= 0)
    assert check(y > x, hypotheses=facts, pipeline_first=True).status is Status.PROVED
    assert check(y > x + 1, hypotheses=facts, pipeline_first=True).status is Status.REFUTED


def test_a_refutation_after_the_pipeline_carries_the_default_solvers_whole_model() -> None:
    # solve-eqs eliminates y = x + 1; the model still names it, because it comes from the default solver
    x, y = z3.Int("x"), z3.Int("y")
    facts = (y == x + 1, x >= 0)
    first = check(x > 3, hypotheses=facts, pipeline_first=True)
    assert first.status is Status.REFUTED and first.model == check(x > 3, hypotheses=facts).model
    assert first.model["y"] == first.model["x"] + 1 and first.model["x"] <= 3


def test_without_a_model_the_pipelines_refutation_is_the_verdict() -> None:
    x, y = z3.Int("x"), z3.Int("y")
    verdict = check(False, hypotheses=(y == x + 1, x >= 0), pipeline_first=True, model=False)
    assert verdict.status is Status.REFUTED and verdict.model == {}


def test_a_query_the_pipeline_gives_up_on_goes_to_the_default_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    from cpgraph.proofs.engine import check as module
    x = z3.Int("x")
    claim, facts = x * x >= 0, (x >= -1000,)
    monkeypatch.setattr(module, "PIPELINE_RLIMIT", 1)  # the pipeline runs out at once
    seen: list[str] = []
    pipeline, default = module._pipeline, z3.Solver

    def pipeline_spy(ctx: z3.Context, rlimit: int) -> z3.Solver:
        seen.append("pipeline")
        return pipeline(ctx, rlimit)

    def default_spy(*args: object, **kwargs: object) -> z3.Solver:
        seen.append("default")
        return default(*args, **kwargs)

    monkeypatch.setattr(module, "_pipeline", pipeline_spy)
    monkeypatch.setattr(z3, "Solver", default_spy)
    assert check(claim, hypotheses=facts, pipeline_first=True).status is Status.PROVED
    assert seen == ["pipeline", "default"]
    seen.clear()
    assert check(claim, hypotheses=facts, pipeline_first=True, seed=1).status is Status.PROVED
    assert seen == ["default"]  # a seeded check is the default solver's alone
    seen.clear()
    monkeypatch.setattr(module, "PIPELINE_RLIMIT", 8_000_000)
    assert check(claim, hypotheses=facts, pipeline_first=True).status is Status.PROVED
    assert seen == ["pipeline"]  # proved by the pipeline: the default solver never runs


def test_a_limit_exhausted_by_both_solvers_is_unknown_naming_the_callers_limit() -> None:
    x, y, z = z3.Ints("x y z")
    hard = z3.Implies(z3.And(x > 1, y > 1, z > 1), x * x * x + y * y * y != z * z * z)
    verdict = check(hard, rlimit=2_000, pipeline_first=True)
    assert verdict.status is Status.UNKNOWN and "rlimit=2000" in verdict.reason
