"""The declared scope (proofs/engine/scope.py): the docs are generated from it, and the teeth pass fails, naming the
theorem and the part of its scope, when what ran or what the hypotheses admit is narrower than declared (the
three planted changes of issue 21: the sampled cp sizes cut to (1,), a setting hypothesis p <= 4, and one
n <= 4096). Cost: about 10 s of CPU in all (local_admitted_size_is_captured at P = 1..5, a scan theorem at
K = 1..32, folded literals at P = 1..3 through the whole CLI)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import pytest
import z3

from cpgraph.cli import main
from cpgraph.proofs.engine import obligation as obligation_module
from cpgraph.proofs.engine import scope as scope_module
from cpgraph.proofs.theorems import setting
from cpgraph.proofs.engine.results import Bite
from cpgraph.proofs.registry import BY_NAME, OBLIGATIONS
from cpgraph.proofs.run import run_obligations
from cpgraph.proofs.engine.scope import SCOPE, CpSizes, Edge, Lists, Scope
from cpgraph.proofs.engine.witness import SATISFIABLE, scope_bites
from cpgraph.spec.terms import BoolTerm

LOCAL = "local_admitted_size_is_captured"  # the cheapest end-to-end theorem (about 0.5 s per P here)


def _bites(names: tuple[str, ...], cp_max: int) -> tuple[Bite, ...]:
    results = run_obligations([BY_NAME[n] for n in names], cp_max=cp_max, jobs=1, witnesses=True)
    return scope_bites(results, cp_max)


def _plant_hypothesis(monkeypatch: pytest.MonkeyPatch, name: str, extra: Callable[[int], BoolTerm]) -> None:
    """The registry's ``name`` gets one more hypothesis, ``extra(parameter)``, on every query."""
    build = BY_NAME[name].build
    planted = dataclasses.replace(BY_NAME[name], build=lambda p: tuple(
        dataclasses.replace(q, hypotheses=(*q.hypotheses, extra(p))) for q in build(p)))
    monkeypatch.setitem(BY_NAME, name, planted)


def _lost(bites: tuple[Bite, ...]) -> list[tuple[str, str]]:
    return [(b.theorem, b.variant) for b in bites if not b.ok]


def test_the_readmes_scope_blocks_equal_the_table() -> None:
    stale = [str(path) for path, text in scope_module.generated().items() if path.read_text() != text]
    assert stale == [], "run: python -m cpgraph.proofs.engine.scope --markdown"
    assert scope_module.main(["--check"]) == 0


def test_every_theorem_has_a_declared_scope_and_the_run_covers_exactly_it() -> None:
    assert set(SCOPE) == set(BY_NAME)
    for o in OBLIGATIONS:
        assert o.scope_for(8) == SCOPE[o.name].text(8)
        # the declaration and the run (proofs/engine/obligation.py's sampled sizes, list lengths) are two statements
        assert SCOPE[o.name].parameters(64) == o.parameters(64), o.name


def test_a_scope_renders_its_parts_and_rejects_a_bad_declaration() -> None:
    e2e = SCOPE["admitted_batches_fit_every_rank"]
    text = e2e.text(64)
    assert text.startswith("P in {1..8, 12, 16, 24, 32}; zigzag (every P), interleave, contiguous (P <= 8); global keying")
    assert "any number of requests" in text and "every length (unbounded)" in text and "sorted 3-bucket lists" in text
    assert e2e.text(12).startswith("P in {1..8, 12};")
    data = e2e.data(8)
    assert data["cp_sizes"] == {"kind": "listed", "sizes": [1, 2, 3, 4, 5, 6, 7, 8]}
    assert data["capture_list_lengths"] == {"least": 3, "most": 3, "longer": {"most": 32, "cp_sizes": [2]}}
    assert data["tokens"] == "unbounded" and "sorted 3-bucket lists (and 32-bucket lists at P = 2)" in text
    assert e2e.short(8) == "P in {1..8}, 3-bucket lists (32 at P = 2)"
    assert e2e.lists is not None and e2e.lists.lengths(2) == (3, 32) and e2e.lists.lengths(3) == (3,)
    with pytest.raises(ValueError, match="kind must be one of"):
        CpSizes("some")
    with pytest.raises(ValueError, match="strictly increasing"):
        CpSizes("listed", (2, 1))
    with pytest.raises(ValueError, match="most_requests"):
        Scope(CpSizes("every"), requests="up to")
    with pytest.raises(ValueError, match="kind must be one of"):
        Edge("wider")
    with pytest.raises(ValueError, match="longer and longer_at go together"):
        Lists(3, 3, True, 32)
    with pytest.raises(ValueError, match="longer must exceed most"):
        Lists(3, 3, True, 3, (2,))


def test_the_unchanged_code_reaches_every_edge_of_its_scope() -> None:
    bites = _bites((LOCAL, "scan_selects_minimal_bucket"), 5)
    assert _lost(bites) == []
    ran = {b.parameter for b in bites if b.theorem == LOCAL and b.variant.startswith("scope: ran at")}
    assert ran == {1, 2, 3, 4, 5}
    witnessed = {b.variant for b in bites if b.theorem == LOCAL and b.parameter == 5}
    assert {"scope witness at P=5: n past 2**62 (unbounded)", f"scope witness at P=5: {SATISFIABLE}",
            "scope witness at P=5: last bucket of cap chosen by batch.l0, past 2**62",
            "scope witness at P=5: batch: 2**40 requests, every load l0..l(P-1) past 2**62 (any batch)",
            "scope witness at P=5: batch: every request present, past 2**62 (requests batch)"} <= witnessed
    assert "scope witness at K=32: last bucket of cap chosen by n, past 2**62" in {
        b.variant for b in bites if b.theorem == "scan_selects_minimal_bucket"}
    at_2 = {b.variant for b in bites if b.theorem == LOCAL and b.parameter == 2}
    assert {"scope witness at P=2: capture lists of 3 and 32 buckets, as declared",
            "scope witness at P=2: every chain on 32-bucket lists too"} <= at_2
    assert "scope witness at P=3: capture lists of 3 buckets, as declared" in {
        b.variant for b in bites if b.theorem == LOCAL and b.parameter == 3}


def test_the_long_lists_left_out_at_p_2_fail_naming_the_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setting, "LONG_LIST_CP_SIZES", ())
    assert _lost(_bites((LOCAL,), 2)) == [(LOCAL, "scope witness at P=2: every chain on 32-bucket lists too")]


def test_long_lists_run_where_not_declared_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setting, "LONG_LIST_CP_SIZES", (2, 3))
    assert _lost(_bites((LOCAL,), 3)) == [(LOCAL, "scope witness at P=3: capture lists of 3 buckets, as declared")]


def test_long_lists_cut_to_16_buckets_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setting, "LONG_LIST_LENGTH", 16)
    lost = _lost(_bites((LOCAL,), 2))
    assert (LOCAL, "scope witness at P=2: capture lists of 3 and 32 buckets, as declared") in lost
    assert (LOCAL, "scope witness at P=2: every chain on 32-bucket lists too") in lost


def test_one_chain_left_off_the_long_lists_fails_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = BY_NAME[LOCAL]
    narrower = dataclasses.replace(real, build=lambda p: tuple(
        q for q in real.build(p) if not q.part.endswith("(any layout, local, K=32)")))
    monkeypatch.setitem(BY_NAME, LOCAL, narrower)
    bites = _bites((LOCAL,), 2)
    assert _lost(bites) == [(LOCAL, "scope witness at P=2: every chain on 32-bucket lists too")]
    assert "(any layout, local)" in next(b.description for b in bites if not b.ok)


def test_sampled_cp_sizes_cut_to_one_fail_naming_each_missing_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(obligation_module, "SAMPLED_CP_SIZES", (1,))
    lost = _lost(_bites((LOCAL,), 3))
    assert lost == [(LOCAL, "scope: ran at P=2"), (LOCAL, "scope: ran at P=3")]


def test_a_shorter_list_range_fails_naming_the_list_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(obligation_module, "MAX_LIST_LENGTH", 30)
    lost = _lost(_bites(("scan_selects_minimal_bucket",), 1))
    assert lost == [("scan_selects_minimal_bucket", "scope: ran at K=31"), ("scan_selects_minimal_bucket", "scope: ran at K=32")]


def _plant(monkeypatch: pytest.MonkeyPatch, hypothesis: object) -> None:
    """Every Setting gets one more hypothesis, ``hypothesis(setting)``."""
    original = setting.Setting.__init__

    def planted(self: setting.Setting, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        self.hypotheses = (*self.hypotheses, hypothesis(self))  # type: ignore[operator]

    monkeypatch.setattr(setting.Setting, "__init__", planted)


def test_a_setting_hypothesis_p_at_most_4_fails_as_vacuous_at_p_5(monkeypatch: pytest.MonkeyPatch) -> None:
    _plant(monkeypatch, lambda s: z3.IntVal(s.cp_size) <= 4)
    lost = _lost(_bites((LOCAL,), 5))
    assert (LOCAL, f"scope witness at P=5: {SATISFIABLE}") in lost
    assert all(v.startswith("scope witness at P=5") for _, v in lost)


def test_a_setting_hypothesis_n_at_most_4096_fails_naming_unbounded_n(monkeypatch: pytest.MonkeyPatch) -> None:
    _plant(monkeypatch, lambda s: s.n <= 4096)
    lost = _lost(_bites((LOCAL,), 2))
    assert (LOCAL, "scope witness at P=1: n past 2**62 (unbounded)") in lost
    assert (LOCAL, "scope witness at P=2: n past 2**62 (unbounded)") in lost
    assert (LOCAL, f"scope witness at P=2: {SATISFIABLE}") not in lost


def test_prove_exits_1_by_itself_when_the_run_is_narrower_than_declared(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(obligation_module, "SAMPLED_CP_SIZES", (1,))
    code = main(["prove", "--only", "folded_literals_equal_their_terms", "--cp-max", "3", "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "SCOPE LOST folded_literals_equal_their_terms: scope: ran at P=2: declared P=2" in out
    assert "proved, but some theorems lost their teeth" in out


def test_a_symbolic_p_bounded_to_4_fails_naming_the_large_p(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "busiest_rank_holds_ceil_share_for_symbolic_cp_size"
    _plant_hypothesis(monkeypatch, name, lambda p: z3.Int("P") <= 4)
    lost = _lost(_bites((name,), 1))
    assert lost == [(name, "scope witness at symbolic: P = 2**20 (every P)")]


def test_a_bounded_request_count_fails_naming_the_class_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "admitted_bucket_is_captured"
    _plant_hypothesis(monkeypatch, name, lambda p: z3.Sum([z3.Int(f"batch.{kind}{m}") for kind in "cs" for m in range(2 * p)]) <= 1000)
    lost = _lost(_bites((name,), 1))
    assert lost == [(name, "scope witness at P=1: batch: 2**40 requests in every remainder class (classes batch)")]


def test_bounded_bucket_values_fail_naming_the_last_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    _plant_hypothesis(monkeypatch, LOCAL, lambda p: z3.Int("cap.b2") <= 2**20)
    lost = _lost(_bites((LOCAL,), 1))
    assert lost == [(LOCAL, "scope witness at P=1: last bucket of cap chosen by batch.l0, past 2**62"),
                    (LOCAL, "scope witness at P=1: every bucket and capacity of cap past 2**62")]


@pytest.mark.parametrize("theorem", [LOCAL, "admitted_bucket_is_captured", "scan_selects_minimal_bucket"])
def test_a_bounded_capacity_below_the_last_fails_naming_the_list(monkeypatch: pytest.MonkeyPatch, theorem: str) -> None:
    # "unbounded values and capacities": a bound on a capacity the last-bucket witness does not touch
    _plant_hypothesis(monkeypatch, theorem, lambda p: z3.Int("cap.c0") <= 4096)
    lost = [variant for _, variant in _lost(_bites((theorem,), 1))]
    if theorem.startswith("scan"):  # every list length; at K = 1 the first capacity is the last bucket's too
        assert set(lost) == {f"scope witness at K={k}: every bucket and capacity of cap past 2**62" for k in range(1, 33)} | {
            "scope witness at K=1: last bucket of cap chosen by n, past 2**62"}
    else:
        assert lost == ["scope witness at P=1: every bucket and capacity of cap past 2**62"]


@pytest.mark.parametrize("theorem", ["ranks_sharing_their_capture_state_agree", "local_ranks_sharing_their_sizes_agree"])
def test_the_consensus_theorems_compare_exactly_the_declared_ranks(theorem: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from cpgraph.proofs.engine.witness import witness_checks

    def ranks(p: int) -> dict[str, tuple[bool, str]]:
        return {w.what: (w.ok, w.detail) for w in witness_checks(theorem, p, BY_NAME[theorem].build(p)) if "rank" in w.what}

    assert SCOPE[theorem].ranks(5) == (1, 2, 3, 4) and SCOPE[theorem].ranks(12) == (6, 11)
    assert ranks(5) == {"ranks 1..4 compared with rank 0": (True, "")}
    monkeypatch.setattr(setting, "ranks_at", lambda p: (0, p // 2, p - 1))  # the ends and the middle only
    ok, detail = ranks(5)["ranks 1..4 compared with rank 0"]
    assert not ok and "missing [1, 3]" in detail


@pytest.mark.parametrize("requests", [1, 3])
def test_a_requests_batch_of_other_than_the_declared_two_fails(monkeypatch: pytest.MonkeyPatch, requests: int) -> None:
    # "DualChunkSwap's own loads: up to 2 prefills": one fewer leaves the second request's edge unreached,
    # one more proves a scope nobody declared (and costs more); both fail the scope, naming the batch.
    from cpgraph.proofs.engine.witness import witness_checks

    monkeypatch.setattr(setting, "REQUESTS", requests)
    got = {w.what: w.ok for w in witness_checks(LOCAL, 2, BY_NAME[LOCAL].build(2))}
    if requests == 3:
        assert got["requests batches of at most 2 requests, as declared"] is False
    else:
        assert [what for what, ok in got.items() if not ok] == ["batch: every request present, past 2**62 (requests batch)"], got
    monkeypatch.setattr(setting, "REQUESTS", 2)
    assert all(witness.ok for witness in witness_checks(LOCAL, 2, BY_NAME[LOCAL].build(2)))


def test_a_run_wider_than_its_declared_factors_fails_naming_the_factor(monkeypatch: pytest.MonkeyPatch) -> None:
    # proofs/theorems/end_to_end.py's tripwire theorem runs FACTORS[:1] (F = 2, as declared); a run with F = 3/2 as well is
    # another statement than the declared one.
    from fractions import Fraction

    from cpgraph.proofs.theorems import end_to_end
    name = "replay_runs_only_into_a_listed_bucket_with_room"
    monkeypatch.setattr(end_to_end, "FACTORS", (Fraction(3, 2), Fraction(2)))
    lost = _lost(_bites((name,), 1))
    assert (name, "scope witness at P=1: no undeclared F in the queries") in lost
    assert (name, "scope witness at P=1: F=2 in the queries") in lost


def test_a_declared_part_left_out_at_a_p_fails_naming_the_part(monkeypatch: pytest.MonkeyPatch) -> None:
    # The capture rule's capacities are declared a part of capacity_fit up to P = 8; a chain set cut below that
    # (end_to_end.py's `cp_size <= OTHER_STRATEGIES_MAX_P` moved) proves every query left, and fails here.
    from cpgraph.proofs.theorems import end_to_end
    name = "admitted_batches_fit_every_rank"
    monkeypatch.setattr(end_to_end, "OTHER_STRATEGIES_MAX_P", 0)
    lost = _lost(_bites((name,), 1))
    assert lost == [(name, "scope witness at P=1: captured capacities in the queries")]


@pytest.mark.parametrize(("offset", "ok"), [(1, True), (-1, False), (3, False)])
def test_a_statement_at_another_remainder_class_fails_the_residue_edge(offset: int, ok: bool) -> None:
    # headroom_bound_is_tight_for_symbolic_cp_size declares L mod 2P = P+1: the same claim stated at L = 2Pq + P - 1
    # (true there too, or not) is another statement, and the residue witness says which class is missing.
    from cpgraph.proofs.engine.obligation import Query
    from cpgraph.proofs.engine.witness import witness_checks

    p, q, length = z3.Int("P"), z3.Int("q"), z3.Int("L")
    query = Query("request", length >= 0, (p >= 2, q >= 0, length == 2 * p * q + p + offset))
    checks = {w.what: w.ok for w in witness_checks("headroom_bound_is_tight_for_symbolic_cp_size", 0, (query,))}
    assert checks["L mod 2P = P+1"] is ok


@pytest.mark.parametrize("form", ["Q+1", "P1", ""])
def test_a_residue_edge_with_an_unreadable_form_is_a_value_error(form: str) -> None:
    with pytest.raises(ValueError, match=rf"a residue edge's form must read aP\+b, aP or b .* got {re.escape(repr(form))}"):
        Edge("residue", "L", form=form)


@pytest.mark.parametrize(("form", "ab"), [("P+1", (1, 1)), ("2P-1", (2, -1)), ("P", (1, 0)), ("0", (0, 0)), ("-3", (0, -3))])
def test_a_residue_form_reads_as_a_p_plus_b(form: str, ab: tuple[int, int]) -> None:
    from cpgraph.proofs.engine.scope import residue_form

    assert residue_form(form) == ab
