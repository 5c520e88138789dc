"""Decode-path designs (path = "decode"): the bundled vLLM designs' verdicts, bad inputs, the CLI."""

import json
from pathlib import Path

import pytest

from cpgraph.cli import main
from cpgraph.design.decode import DecodeDesign
from cpgraph.design.decode_review import INVARIANTS, review_decode
from cpgraph.design.schema import (
    BUNDLED_DECODE, DesignError, load_any_design, load_design, loads_any_design, loads_design,
)
from cpgraph.reference.graph_paths import Graph

GOOD = """path = "decode"
cudagraph_mode = "FULL_AND_PIECEWISE"
placement = "dual_chunk_swap"
request_key = "global"
cp_size = 4
query_len = 1
decode_request_sizes = [1, 2, 4, 8]
token_sizes = [1, 2, 4, 8, 16]
"""


def statuses(design: DecodeDesign) -> dict[str, str]:
    return {r.invariant: r.status for r in review_decode(design).invariants}


@pytest.mark.parametrize("name", BUNDLED_DECODE)
def test_each_bundled_decode_design_loads_by_name_and_by_path(name: str) -> None:
    by_name, by_path = load_any_design(name), load_any_design(f"designs/{name}.toml")
    assert isinstance(by_name, DecodeDesign) and by_name == by_path and by_name.name == name


@pytest.mark.parametrize("name", ["vllm_decode_copied", "vllm_decode_dealt_local"])
def test_copied_and_the_local_fix_prove_every_invariant(name: str) -> None:
    design = load_any_design(name)
    assert isinstance(design, DecodeDesign)
    review = review_decode(design)
    assert [r.invariant for r in review.invariants] == list(INVARIANTS)
    assert {r.status for r in review.invariants} == {"proved"} and review.exit_code == 0


def test_the_dealt_release_refutes_no_needless_fallback_with_two_one_token_decodes() -> None:
    design = load_any_design("vllm_decode_dealt")
    assert isinstance(design, DecodeDesign) and design.cp_size == 2
    review = review_decode(design)
    got = {r.invariant: r for r in review.invariants}
    assert {i for i, r in got.items() if r.status != "proved"} == {"no_needless_fallback"}
    verdict = got["no_needless_fallback"]
    assert verdict.status == "refuted" and review.exit_code == 1
    w = verdict.witness
    assert w is not None and (w.num_reqs, w.query_len, w.cp_size) == (2, 1, 2)
    assert w.best == Graph("FULL", 1, 1, 1)  # the decode graph of 1 request fits every rank
    assert all((a.rows, a.requests, a.dispatched) == (1, 1, Graph("PIECEWISE", 1)) for a in w.answers)
    assert [f.invariant for f in w.findings] == ["no_needless_fallback"]


def test_full_decode_only_falls_back_eagerly_and_the_local_key_fixes_it() -> None:
    text = GOOD.replace('"FULL_AND_PIECEWISE"', '"FULL_DECODE_ONLY"').replace("token_sizes = [1, 2, 4, 8, 16]\n", "")
    dealt = loads_any_design(text, name="d")
    assert isinstance(dealt, DecodeDesign)
    review = review_decode(dealt)
    refuted = [r for r in review.invariants if r.status == "refuted"]
    assert [r.invariant for r in refuted] == ["no_needless_fallback"]
    w = refuted[0].witness
    assert w is not None and w.num_reqs == 2 and all(a.dispatched is None for a in w.answers)
    fixed = loads_any_design(text.replace('"global"', '"local"'), name="f")
    assert isinstance(fixed, DecodeDesign) and set(statuses(fixed).values()) == {"proved"}


@pytest.mark.parametrize(("edit", "named"), [
    (('cudagraph_mode = "FULL_AND_PIECEWISE"', 'cudagraph_mode = "PIECEWISE"'), "'cudagraph_mode': got 'PIECEWISE'"),
    (('placement = "dual_chunk_swap"', 'placement = "zigzag"'), "'placement': got 'zigzag'"),
    (('request_key = "global"', 'request_key = "rank"'), "'request_key': got 'rank'"),
    (("cp_size = 4", "cp_size = 65"), "'cp_size': got 65"),
    (("query_len = 1", "query_len = 0"), "'query_len': got 0"),
    (("decode_request_sizes = [1, 2, 4, 8]", "decode_request_sizes = [2, 1]"), "strictly ascending"),
    (("decode_request_sizes = [1, 2, 4, 8]", "decode_request_sizes = []"), "'decode_request_sizes': got []"),
    (("decode_request_sizes = [1, 2, 4, 8]", "decode_request_sizes = [1, 512]"), "max_num_seqs = 256"),
    (("token_sizes = [1, 2, 4, 8, 16]", "token_sizes = [1, 300000]"), "'token_sizes': got 300000"),
    (("token_sizes = [1, 2, 4, 8, 16]\n", ""), "'token_sizes' is missing"),
    (("query_len = 1", 'query_len = 1\nstrategy = "zigzag"'), "'strategy': got 'zigzag'; allowed: nothing under path"),
    (("query_len = 1", "query_len = 1\ncapture_num_tokens = [8]"), "'capture_num_tokens'"),
    (("query_len = 1", "query_len = 1\nspeed = 3"), "'speed' is not a design knob"),
])
def test_a_bad_decode_design_names_the_key_the_value_and_what_is_allowed(edit: tuple[str, str], named: str) -> None:
    old, new = edit
    assert old in GOOD
    with pytest.raises(DesignError, match="allowed|missing|not a design knob") as err:
        loads_any_design(GOOD.replace(old, new), name="bad")
    assert named in str(err.value)


def test_token_sizes_are_rejected_where_the_mixed_routine_runs_eagerly() -> None:
    with pytest.raises(DesignError, match="'token_sizes'.*FULL_DECODE_ONLY"):
        loads_any_design(GOOD.replace('"FULL_AND_PIECEWISE"', '"FULL_DECODE_ONLY"'), name="bad")


def test_a_prefill_design_rejects_the_decode_keys_and_plan_reads_no_decode_design() -> None:
    prefill = "cp_size = 4\ncapture_num_tokens = [512]\n"
    with pytest.raises(DesignError, match="'request_key'.*path = \"decode\""):
        loads_design(prefill + 'request_key = "local"\n', name="bad")
    with pytest.raises(DesignError, match="'path': got 'sideways'"):
        loads_any_design(prefill + 'path = "sideways"\n', name="bad")
    assert loads_design('path = "prefill"\n' + prefill, name="ok").cp_size == 4
    with pytest.raises(DesignError, match="'path'.*cpgraph review only"):
        load_design("vllm_decode_dealt")


def test_the_cli_exit_codes_of_the_decode_designs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["review", "vllm_decode_copied", "-q"]) == 0
    assert "SAFE: every invariant proved" in capsys.readouterr().out
    assert main(["review", "designs/vllm_decode_dealt.toml", "--format", "json", "-q"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert {x["invariant"]: x["status"] for x in data["invariants"]}["no_needless_fallback"] == "refuted"
    assert main(["review", "vllm_decode_dealt", "--format", "junit", "-q"]) == 1
    assert 'failures="1"' in capsys.readouterr().out
    assert main(["review", "vllm_decode_dealt_local", "--format", "md", "-q"]) == 0
    assert "| `no_needless_fallback` | **proved** |" in capsys.readouterr().out
    assert main(["review", "vllm_decode_dealt", "--against", "vllm_decode_copied"]) == 2
    assert "decode-path design" in capsys.readouterr().err
    assert main(["review", "vllm_decode_dealt", "--plot", str(tmp_path)]) == 2
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace('"global"', '"rank"'))
    assert main(["review", str(bad)]) == 2
    assert "'request_key': got 'rank'" in capsys.readouterr().err


@pytest.mark.parametrize("wrong, refuted", [
    ({"need": None, "target_shift": -1}, "capacity_fit"),  # the decode graph one below the rows, no request check
    ({"own_rank_key": True}, "rank_consensus"),  # each rank keys by its own rows
    ({"largest": True}, "minimal_bucket"),  # the largest decode graph, not the least
])
def test_a_planted_wrong_dispatch_is_refuted_by_the_decode_review(
    monkeypatch: pytest.MonkeyPatch, wrong: dict[str, object], refuted: str
) -> None:
    # The review's safety and efficiency claims have teeth: a design whose dispatch is wrong in one way is refuted
    # on the invariant that way breaks (with a witness the reference judge confirms).
    import cpgraph.design.decode_review as review
    from cpgraph.proofs.teeth.variants.graph_paths import _wrong

    planted = _wrong(**wrong)  # type: ignore[arg-type]

    def dispatch(step, graphs, sizes, mode, request_key, rank, name):  # type: ignore[no-untyped-def]
        return planted(step, graphs, sizes, mode, rank, name)

    monkeypatch.setattr(review, "dispatch", dispatch)
    found = statuses(load_any_design("vllm_decode_dealt_local"))
    assert found[refuted] == "refuted", found
