"""cpgraph review / simulate / plan: exit codes, formats and usage errors."""

import json
from pathlib import Path

import pytest

from cpgraph.cli import main


@pytest.mark.usefixtures("prefix_review_served")  # the prefix design's review, computed once for the session
def test_review_of_the_prefix_design_exits_1_and_names_capacity_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", "prefix", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    statuses = {x["invariant"]: x["status"] for x in data["invariants"]}
    assert statuses["capacity_fit"] == "refuted" and statuses["rank_consensus"] == "proved"


def test_review_md_is_a_pasteable_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["review", "headroom", "--format", "md", "--plot", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### cpgraph review: `headroom`") and "| `capacity_fit` | **proved** |" in out
    assert (tmp_path / "eager_fallback.png").stat().st_size > 1000
    assert (tmp_path / "padding.png").stat().st_size > 1000


def test_review_of_a_bad_design_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('cp_size = 4\ncapture_num_tokens = [512]\nselector = "fastest"\n')
    assert main(["review", str(bad)]) == 2
    assert "'selector': got 'fastest'" in capsys.readouterr().err


def test_simulate_counts_the_prefix_overflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.jsonl"
    workload.write_text("[1534, 161, 353]\n[4096]\n{\"extend_seq_lens\": [3, 600]}\n")
    assert main(["simulate", "--workload", str(workload), "upstream", "prefix", "--format", "json"]) == 1
    rows = {r["design"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["prefix"]["overflows"] == 1 and rows["prefix"]["first_overflow"] == [1534, 161, 353]
    assert rows["upstream"]["overflows"] == 0 and rows["upstream"]["graph"] == 2 and rows["upstream"]["eager"] == 1
    png = tmp_path / "sim.png"
    assert main(["simulate", "--workload", str(workload), "upstream", "--plot", str(png)]) == 0
    assert png.stat().st_size > 1000


def test_simulate_rejects_a_bad_workload_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.jsonl"
    workload.write_text("[10, -1]\n")
    assert main(["simulate", "--workload", str(workload)]) == 2
    assert "w.jsonl:1" in capsys.readouterr().err


def test_plan_writes_a_design_that_the_review_proves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.jsonl"
    workload.write_text("\n".join(json.dumps([300 + 7 * i, 40]) for i in range(60)) + "\n")
    out = tmp_path / "planned.toml"
    code = main(["plan", "--workload", str(workload), "--cp-size", "4", "--max-buckets", "4", "--out", str(out)])
    assert code == 0
    assert "SAFE: every invariant proved" in capsys.readouterr().out
    assert main(["review", str(out)]) == 0


def test_rational_padding_factor_goes_through_review_and_simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    design = tmp_path / "f.toml"
    design.write_text('cp_size = 4\ncapture_num_tokens = [512, 640, 768]\nmax_padding_factor = "5/4"\n')
    assert main(["review", str(design), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {x["status"] for x in data["invariants"]} == {"proved"}
    workload = tmp_path / "w.jsonl"
    workload.write_text("[512]\n[410]\n[409]\n")  # 512 <= 5/4 * 410 = 512.5; 5/4 * 409 = 511.25 < 512
    assert main(["simulate", "--workload", str(workload), str(design), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["graph"] == 2 and row["eager"] == 1


def test_review_rejects_sizes_past_the_encoding_limits_at_load_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for text, needle in (
        ("cp_size = 1000\ncapture_num_tokens = [4096]\n", "'cp_size': got 1000; allowed: an integer >= 1 and <= 64"),
        ("cp_size = 4\ncapture_num_tokens = [512, 1000000000000]\n", "got a bucket of 1000000000000 tokens"),
    ):
        path = tmp_path / "big.toml"
        path.write_text(text)
        assert main(["review", str(path)]) == 2
        assert needle in capsys.readouterr().err


def test_review_proves_vllm_0_29_and_refutes_0_28_with_the_least_batch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", "designs/vllm_pcp.toml", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {x["status"] for x in data["invariants"]} == {"proved"} and data["design"]["keying"] == "local"
    assert main(["review", "designs/vllm_pcp_0_28.toml", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    replay = next(x for x in data["invariants"] if x["invariant"] == "admission_replay")
    assert replay["status"] == "refuted" and replay["witness"]["extend_seq_lens"] == [2]
    assert replay["witness"]["outcome"]["buckets"] == [2] * 4 and replay["witness"]["outcome"]["replayed"] == [1] * 4


def test_review_of_0_28_against_0_29_classifies_the_batches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", "vllm_pcp", "--against", "vllm_pcp_0_28", "--format", "json"]) == 0
    classes = {c["kind"]: c for c in json.loads(capsys.readouterr().out)["diff"]["classes"]}
    assert classes["fixed"]["status"] == "found" and classes["fixed"]["region"] == [2, 512]
    assert classes["fixed"]["changes"][0]["extend_seq_lens"] == [2]
    assert classes["regressed"]["status"] == "none"
    assert classes["changed"]["status"] == "found" and classes["changed"]["changes"][0]["old"] == "eager"


def test_simulate_runs_global_and_local_designs_side_by_side(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    workload = tmp_path / "w.jsonl"
    workload.write_text("[170, 161, 153]\n[1534, 161, 353]\n[4096]\n[1]\n")
    assert main(["simulate", "--workload", str(workload), "upstream", "prefix", "vllm_pcp", "vllm_pcp_0_28", "--format", "json"]) == 1
    rows = {r["design"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["vllm_pcp"]["overflows"] == 0 and rows["vllm_pcp"]["graph"] == 2  # [4096] and [1534, ...]: m > 512
    assert rows["vllm_pcp_0_28"]["first_overflow"] == [170, 161, 153]
    assert "admission_replay" in rows["vllm_pcp_0_28"]["first_violated"]
    assert main(["simulate", "--workload", str(workload), "vllm_pcp_0_28"]) == 1
    assert "replay runs another graph than the one admitted" in capsys.readouterr().out


def test_plan_chooses_sizes_for_a_local_design_and_the_review_proves_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.jsonl"
    workload.write_text("\n".join(json.dumps([300 + 7 * i, 40]) for i in range(60)) + "\n")
    out = tmp_path / "planned.toml"
    code = main(["plan", "--workload", str(workload), "--cp-size", "4", "--keying", "local", "--max-buckets", "4",
                 "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "SAFE: every invariant proved" in text and "vllm_pcp" in text
    assert 'keying = "local"' in out.read_text() and 'strategy = "dual_chunk_swap"' in out.read_text()
    assert main(["review", str(out)]) == 0


def test_a_review_past_the_encodings_limit_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.toml"
    big.write_text('strategy = "dual_chunk_swap"\nkeying = "local"\ncp_size = 20\ncapture_num_tokens = [8, 16]\n')
    assert main(["review", str(big)]) == 2
    assert "above its limit of 640" in capsys.readouterr().err
    assert main(["simulate", "--workload", "chat", str(big)]) == 0  # simulate takes any cp_size
