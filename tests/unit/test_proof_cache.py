"""The proof cache (proofs/engine/cache.py, asked by proofs/engine/check.py): a stored proof is reused only under
its exact key, a stored model only once it replays, anything off in an entry is a miss, and a planted spec change
is refuted after a warm run. Every test writes under its own tmp_path (CPGRAPH_PROOF_CACHE points there)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import z3

from cpgraph.cli import main
from cpgraph.proofs.engine import cache
from cpgraph.proofs.engine.check import (
    Status, check, cross_check, cvc5_available, determined_values, one_context, satisfiable,
)

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--only", "zigzag_loads_sum_to_tokens", "--cp-max", "3", "--jobs", "1"]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The cache on, under tmp_path, for this test alone (the process's setting and env restored after)."""
    folder = tmp_path / "proofs"
    monkeypatch.setenv("CPGRAPH_PROOF_CACHE", str(folder))
    saved = cache.current()
    cache.configure(cache.Setting("on", folder))
    yield folder
    cache.configure(saved)


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


def _delta(before: cache.Tally) -> tuple[int, int]:
    counts = cache.tally() - before
    return counts.solved, counts.reused


def test_a_proof_round_trips_and_is_reused(root: Path) -> None:
    x = z3.Int("x")
    before = cache.tally()
    assert check(x * x >= 0).proved
    assert _delta(before) == (1, 0) and len(_entries(root)) == 1
    assert check(x * x >= 0).proved
    assert _delta(before) == (1, 1)
    assert check(x * x >= 0, rlimit=4_000_000).proved  # another option, another key: solved
    assert _delta(before) == (2, 1) and len(_entries(root)) == 2
    entry = json.loads(_entries(root)[0].read_text())
    assert set(entry) == {"format", "key", "status", "model", "assignment", "checksum"}
    assert entry["key"] == _entries(root)[0].stem and entry["status"] == "unsat"


def test_satisfiable_and_determined_values_are_reused_with_their_models_replayed(root: Path) -> None:
    x, y = z3.Ints("x y")
    first = (satisfiable([x > 5, y == x + 1]), determined_values([x + 1], x == 4))
    before = cache.tally()
    again = (satisfiable([x > 5, y == x + 1]), determined_values([x + 1], x == 4))
    assert _delta(before) == (0, 2)
    assert first[0] == again[0] == "sat"
    assert [v.as_long() for v in again[1][0] or ()] == [5] and again[1][1] == ""


@pytest.mark.parametrize("damage", ["truncated", "not json", "checksum", "wrong key", "empty", "unknown status"])
def test_a_damaged_entry_is_ignored_and_solved_again(root: Path, damage: str) -> None:
    x = z3.Int("x")
    assert check(x * x >= 0).proved
    (path,) = _entries(root)
    text = path.read_text()
    data = json.loads(text)
    if damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "not json":
        path.write_text("\0\0garbage")
    elif damage == "checksum":
        path.write_text(json.dumps({**data, "status": "unsat", "model": {"x": 1}}))
    elif damage == "wrong key":
        path.write_text(json.dumps({**data, "key": "0" * 64}))
    elif damage == "empty":
        path.write_text("")
    else:
        body = {**data, "status": "proved"}
        del body["checksum"]
        body["checksum"] = cache._checksum(body)
        path.write_text(json.dumps(body))
    assert cache.load(path.stem) is None
    before = cache.tally()
    assert check(x * x >= 0).proved
    assert _delta(before) == (1, 0)
    assert cache.load(path.stem) is not None  # solved, and written whole again


def test_a_proof_stored_under_another_querys_name_is_not_trusted(root: Path) -> None:
    x = z3.Int("x")
    assert check(x * x >= 0).proved
    (proof,) = _entries(root)
    wrong = check(x >= 3, hypotheses=[x > 1])  # refuted: x = 2
    assert wrong.status is Status.REFUTED
    refuted = next(p for p in _entries(root) if p != proof)
    refuted.write_text(proof.read_text())  # the proof's entry, checksum and all, planted under the other name
    before = cache.tally()
    again = check(x >= 3, hypotheses=[x > 1])
    assert again.status is Status.REFUTED and again.model == {"x": 2} and _delta(before) == (1, 0)


def test_a_stored_model_is_reused_only_when_it_replays(root: Path) -> None:
    x = z3.Int("x")
    first = check(x >= 3, hypotheses=[x > 1])
    assert first.status is Status.REFUTED and first.model == {"x": 2}
    before = cache.tally()
    assert check(x >= 3, hypotheses=[x > 1]).model == {"x": 2} and _delta(before) == (0, 1)
    (path,) = _entries(root)
    forged = cache.Entry(path.stem, "sat", {"x": 7}, {"x": 7})  # a well-formed entry whose model is no counterexample
    cache.store(forged)
    before = cache.tally()
    again = check(x >= 3, hypotheses=[x > 1])
    assert again.status is Status.REFUTED and again.model == {"x": 2} and _delta(before) == (1, 0)
    assert json.loads(path.read_text())["model"] == {"x": 2}  # the genuine model written back


def test_unknown_is_never_stored(root: Path) -> None:
    x, y, z = z3.Ints("x y z")
    hard = z3.ForAll([z], z3.Implies(z > 0, x * x * z + y * y * z != 3 * z))
    verdict = check(z3.BoolVal(False), hypotheses=[hard, x > 0, y > 0], rlimit=1)
    assert verdict.status is Status.UNKNOWN
    assert _entries(root) == []


def test_a_query_printed_in_its_blocks_solver_context_has_the_key_a_warm_run_prints(root: Path) -> None:
    """Cold, a block's queries after its first solve are printed in the block's solver context (after solving
    there); warm, none is solved, so each is printed in the process's printing context. Same text, same key:
    the warm block reuses every one (shared subterms, so the printer's lets are in the text)."""
    x, y = z3.Ints("x y")
    shared = z3.And(x + y > 2, x - y < 7, x * 2 + y * 3 != 11)
    queries = [(z3.Or(shared, x > y), [shared]), (z3.Implies(shared, x + y > 2), [shared, x > 0]),
               (z3.And(shared, shared) == shared, [shared, z3.Or(shared, y > 1)])]
    before = cache.tally()
    for _ in ("cold", "warm"):
        with one_context():
            assert all(check(claim, hypotheses=h, pipeline_first=True).proved for claim, h in queries)
            assert satisfiable([shared, x > 3]) == "sat"
    assert _delta(before) == (4, 4) and len(_entries(root)) == 4


def test_generated_names_are_renumbered_in_order_of_appearance() -> None:
    text, names = cache.canonical("(let ((?x10 (+ x!3 1)) ($x7 a)) (= ?x10 ?x10 x!3 $x7 v!2.5))")
    assert text == "(let ((?x0 (+ x!2 1)) ($x1 a)) (= ?x0 ?x0 x!2 $x1 v!2.5))"
    assert names == {"?x10": "?x0", "$x7": "$x1", "x!3": "x!2"}


def _writer(args: tuple[str, int]) -> int:
    folder, seed = args
    setting = cache.Setting("on", Path(folder))
    for round_ in range(150):
        for i in range(8):
            cache.store(cache.Entry(f"{i:02x}" + "ab" * 31, "sat", {"x": seed * 1000 + round_}, {"x": i}), setting)
    return seed


def test_two_processes_writing_the_same_entries_leave_every_one_whole(tmp_path: Path) -> None:
    folder = tmp_path / "proofs"
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert sorted(pool.map(_writer, [(str(folder), 1), (str(folder), 2)])) == [1, 2]
    setting = cache.Setting("on", folder)
    loaded = [cache.load(f"{i:02x}" + "ab" * 31, setting) for i in range(8)]
    assert all(e is not None and e.assignment == {"x": i} for i, e in enumerate(loaded))
    assert not list(folder.rglob("*.tmp"))  # no temporary file left behind


def test_the_size_bound_drops_the_oldest_entries(tmp_path: Path) -> None:
    setting = cache.Setting("on", tmp_path / "proofs", max_entries=256 * 4)  # 4 entries per shard
    names = [f"00{i:062x}" for i in range(200)]  # every one in shard 00
    for i, name in enumerate(names):
        cache.store(cache.Entry(name, "unsat"), setting)
        os.utime(setting.root / "00" / f"{name}.json", (i, i))  # stored in this order, oldest first
    left = {p.stem for p in (tmp_path / "proofs" / "00").glob("*.json")}
    assert len(left) <= 4 + cache._SWEEP_EVERY
    assert names[0] not in left and names[-1] in left
    assert names[-1] in left and all(names.index(n) > 150 for n in left)


def _prove(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["prove", "--json", "-q", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_no_cache_touches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CPGRAPH_PROOF_CACHE", str(tmp_path / "proofs"))
    code, report = _prove([*SMALL, "--no-cache"], capsys)
    assert code == 0 and report["proof_cache"]["mode"] == "off" and report["proof_cache"]["reused"] == 0
    assert report["proof_cache"]["solved"] >= report["queries"] > 0
    assert not (tmp_path / "proofs").exists()
    assert cache.current().mode == "off"  # the caller's setting is back


def test_a_warm_run_reuses_and_rebuild_solves_again(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, cold = _prove(SMALL, capsys)
    assert code == 0 and cold["proof_cache"]["reused"] == 0 and cold["proof_cache"]["path"] == str(root)
    calls = cold["proof_cache"]["solver_calls"]
    code, warm = _prove(SMALL, capsys)
    assert code == 0 and warm["ok"] and warm["proof_cache"]["solver_calls"] == calls
    assert warm["proof_cache"]["reused"] >= warm["queries"]  # every theorem query at least, from the cache
    code, rebuilt = _prove([*SMALL, "--rebuild-cache"], capsys)
    assert code == 0 and rebuilt["proof_cache"] == {**cold["proof_cache"], "mode": "rebuild"}
    assert warm["proof_cache"]["run"] is None  # main() called in this process: never the run record


def test_the_text_report_says_what_was_solved_and_reused(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", *SMALL]) == 0
    assert main(["prove", *SMALL]) == 0
    out = capsys.readouterr().out
    assert f"reused from the proof cache at {root}" in out and "solver calls" in out


def test_no_cache_with_rebuild_cache_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--no-cache", "--rebuild-cache"]) == 2
    err = capsys.readouterr().err
    assert "--no-cache and --rebuild-cache" in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not cvc5_available(), reason="needs cvc5")
def test_the_cross_check_has_its_own_entries(root: Path) -> None:
    x = z3.Int("x")
    assert check(x * x >= 0).proved
    before = cache.tally()
    assert cross_check(x * x >= 0).proved and _delta(before) == (1, 0)  # z3's entry is not cvc5's
    assert cross_check(x * x >= 0).proved and _delta(before) == (1, 1)
    assert len(_entries(root)) == 2


# -- a planted spec change after a warm run: refuted, never hidden --------------------------------------------


def _mutated_copy(into: Path) -> tuple[Path, str]:
    """The package (cpgraph/ and the parts linked into it) copied to ``into``, and one of the project's own
    mutation samples of spec/zigzag.py (benchmarks/mutation.py's operators: a block holds q + [j <= m]) to plant."""
    for part in ("cpgraph", "spec", "proofs", "reference", "impl"):
        shutil.copytree(ROOT / part, into / part, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import mutation
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    source = (ROOT / "spec" / "zigzag.py").read_text()
    (mutant,) = [m for m in mutation.mutants_of("spec/zigzag.py", source)
                 if m.operator == "comparison" and "indicator(block < remainder)" in m.text]
    return into, mutant.apply(source)


def _prove_in(tree: Path, folder: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    """``cpgraph prove`` as a command (a fresh process: the run record applies) from the package copy ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "CPGRAPH_PROOF_CACHE": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-m", "cpgraph", "prove", "--json", "-q", "--no-teeth", *SMALL, *flags],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, json.loads(done.stdout)


def test_a_planted_spec_change_after_a_warm_run_is_refuted(tmp_path: Path) -> None:
    tree, mutated = _mutated_copy(tmp_path / "tree")
    folder = tmp_path / "proofs"
    code, cold = _prove_in(tree, folder)
    assert code == 0 and cold["proof_cache"]["solved"] > 0 and cold["proof_cache"]["run"] is None
    code, warm = _prove_in(tree, folder)
    assert code == 0 and warm["proof_cache"]["solved"] == 0 and warm["proof_cache"]["run"] is not None  # the run record
    (tree / "spec" / "zigzag.py").write_text(mutated)
    code, planted = _prove_in(tree, folder)
    assert code == 1 and planted["verdict"] == "refuted" and planted["proof_cache"]["run"] is None
    assert planted["proof_cache"]["solved"] > 0  # the queries the mutant changed, solved
    (theorem,) = planted["theorems"]
    assert theorem["verdict"] == "refuted" and theorem["failures"][0]["counterexample"]
    code, again = _prove_in(tree, folder)  # a refuted run is never recorded
    assert code == 1 and again["proof_cache"]["run"] is None


def test_a_damaged_run_record_is_a_miss_and_the_queries_are_reused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for part in ("cpgraph", "spec", "proofs", "reference", "impl"):
        shutil.copytree(ROOT / part, tree / part, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    folder = tmp_path / "proofs"
    assert _prove_in(tree, folder)[0] == 0
    (record,) = (folder / "runs").glob("*.json")
    record.write_text(record.read_text()[:-40])  # truncated
    code, warm = _prove_in(tree, folder)
    assert code == 0 and warm["proof_cache"]["run"] is None and warm["proof_cache"]["solved"] == 0
    code, recorded = _prove_in(tree, folder)  # the run rewrote its record whole
    assert code == 0 and recorded["proof_cache"]["run"] is not None
    assert recorded["theorems"] == warm["theorems"] and recorded["teeth"] == warm["teeth"]  # read back as it was
    code, rebuilt = _prove_in(tree, folder, "--rebuild-cache")
    assert code == 0 and rebuilt["proof_cache"]["run"] is None and rebuilt["proof_cache"]["reused"] == 0


def test_the_package_digest_changes_with_any_file(tmp_path: Path) -> None:
    from cpgraph.commands.prove_runs import package_digest

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("X = 1\n")
    first = package_digest(tmp_path)
    (tmp_path / "a" / "__pycache__").mkdir()
    (tmp_path / "a" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert package_digest(tmp_path) == first  # bytecode is not source
    (tmp_path / "a" / "x.py").write_text("X = 2\n")
    assert package_digest(tmp_path) != first


def test_a_run_record_reads_back_every_field_of_its_results() -> None:
    from cpgraph.commands.prove_runs import _decode, _encode
    from cpgraph.proofs.engine.check import Verdict
    from cpgraph.proofs.engine.opinions import Note, NoteKind
    from cpgraph.proofs.engine.results import Bite, Failure, ObligationResult
    from cpgraph.proofs.engine.scope import Witnessed

    failure = Failure("P=2 step", Verdict(Status.REFUTED, 0.25, {"n": 3, "ok": False}), {"n": 3}, {"loads": "[1, 2]"}, "x")
    result = ObligationResult(
        "t", "P = 1..2", Status.REFUTED, 7, 1.5, ("P=2 step", 0.25), (failure,),
        (Note("P=1 lemma", NoteKind.NOT_CROSS_CHECKED, "cvc5: resourceout"),), 6, 2, 0.75, (1, 2),
        ((1, (Witnessed("edge", True),)), (2, (Witnessed("edge", False, "why"),))), 0.5,
    )
    bite = Bite("t", "variant", "a wrong one", 2, Status.REFUTED, Status.PROVED)
    assert _decode(ObligationResult, json.loads(json.dumps(_encode(result)))) == result
    assert _decode(Bite, json.loads(json.dumps(_encode(bite)))) == bite
    with pytest.raises((TypeError, ValueError)):
        _decode(Bite, {**_encode(bite), "expected": "maybe"})
