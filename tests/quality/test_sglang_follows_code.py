"""The sglang adapter follows the release's code: planted edits in copies of released wheels change the verdict
exactly when they change behaviour.

Each test copies the unpacked wheel (the ``sglang_release`` fixture) into tmp_path, edits text in one file and
checks the copy:

- a regression on the driven path (the model runner's graph decision, load_batch's bucket, the CP bucket scan,
  can_run_graph's handling of the attention backend's own prefill-graph check) is found: check_policy reports a
  violation, and ``decided_at`` cites the planted line;
- a regression in the layout the replay reads (zigzag's ``build_metadata``: a rank's ``zigzag_index``, the
  restore's ``cp_reverse_index``) is found through ``local_layout`` (exit 1, ``capacity_fit``, the planted line
  cited), and metadata without a field the adapter reads is refused (exit 2 naming ``build_metadata``);
- a fix (0.5.17's capacity_fit bug patched in its own runner) passes;
- behaviour-preserving refactors (keywords through a dict, a renamed local, a split statement, ``zigzag_index``
  built in two statements) keep the release's verdict, answers and layouts;
- a change the adapter does not drive (a server argument it does not give, an sglang helper it does not
  declare, a flag set under a new name but read under the old) is refused with exit 2 naming the release's
  file:line, never judged as if the flag were on.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cpgraph import LaidOut, check_policy
from cpgraph.adapters.glue import GlueError
from cpgraph.adapters.sglang import SglangPolicy, policy_from
from cpgraph.reference.laid_out import layout_mismatch
from test_sglang_released import NEEDED  # the files the driven path runs (this folder is on sys.path)

RUNNER = "sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py"
MODEL_RUNNER = "sglang/srt/model_executor/model_runner.py"
BCG = "sglang/srt/layers/cp/bcg/bcg.py"
UTILS = "sglang/srt/layers/cp/utils.py"
ZIGZAG = "sglang/srt/layers/cp/zigzag.py"
CHECK = dict(cp_sizes=(2, 4), boundary=False, workers=1, padding_factors="2")
CASES = 80  # each plant below is met within the first 50 batches; every batch runs the whole path on each rank
EXAMPLE = dict(
    cp_rank=0, cp_size=4, align_size=8, num_tokens=2048, extend_seq_lens=(1534, 161, 353),
    capture_num_tokens=(2048, 2304, 2560), bucket_local_tokens={2048: 512, 2304: 576, 2560: 640}, max_padding_factor=2,
)
SMALL = dict(EXAMPLE, extend_seq_lens=(512, 512), num_tokens=1024, capture_num_tokens=(1024, 2048),
             bucket_local_tokens={1024: 256, 2048: 512})
Edit = tuple[str, str, str]  # (file, text, replacement): the text must occur exactly once


@pytest.fixture(scope="module")
def wheels(sglang_release: Callable[[str, tuple[str, ...]], Path]) -> dict[str, Path]:
    return {v: sglang_release(v, NEEDED) for v in ("0.5.23", "0.5.18", "0.5.17")}


@pytest.fixture(scope="module")
def release(wheels: dict[str, Path]) -> SglangPolicy:
    """0.5.23 as shipped, built once: the verdict and answers every refactor must keep."""
    return policy_from(str(wheels["0.5.23"]))


def planted(source: Path, into: Path, *edits: Edit) -> Path:
    shutil.copytree(source, into)
    for file, text, replacement in edits:
        path = into / file
        content = path.read_text()
        assert content.count(text) == 1, f"{text!r} occurs {content.count(text)} times in {file}"
        path.write_text(content.replace(text, replacement))
    return into


def line_of(root: Path, file: str, text: str) -> str:
    """``file:line`` of the line of ``file`` under ``root`` holding ``text``."""
    lines = (root / file).read_text().splitlines()
    found = [i for i, line in enumerate(lines, 1) if text in line]
    assert len(found) == 1, (text, found)
    return f"{file}:{found[0]}"


def answers(policy: SglangPolicy, batch: dict[str, Any]) -> tuple[object, ...]:
    admitted = policy.admit(**batch)
    return admitted, policy.replay_bucket(**batch) if admitted else None


def layouts(policy: SglangPolicy, batch: dict[str, Any]) -> tuple[LaidOut | None, ...]:
    """Every rank's ``local_layout`` for the bucket it replays (None where it replays none)."""
    out = []
    for rank in range(batch["cp_size"]):
        kw = dict(batch, cp_rank=rank)
        bucket = policy.replay_bucket(**kw)
        out.append(None if bucket is None else policy.local_layout(bucket=bucket, **kw))
    return tuple(out)


def cli(root: Path, cwd: Path, *more: str) -> list[str]:
    return [sys.executable, "-m", "cpgraph", "check", "cpgraph.adapters.sglang:zigzag", "--adapter-root", str(root),
            "--max-cases", str(CASES), "--padding-factors", "2", "--cp-sizes", "2,4", "--no-graph-paths", *more]


# -- regressions on the driven path: found, the planted line cited ------------------------------------------
REGRESSIONS: dict[str, tuple[Edit, str]] = {
    # the model runner takes the graph path even where can_run_graph refuses
    "model runner decision": ((MODEL_RUNNER, "and self.prefill_cuda_graph_runner.can_run_graph(forward_batch)\n",
                               "and (self.prefill_cuda_graph_runner.can_run_graph(forward_batch) or True)\n"),
                              "(self.prefill_cuda_graph_runner.can_run_graph(forward_batch) or True)"),
    # load_batch scans for the bucket of one token more than the batch has
    "load_batch off by one": ((RUNNER, "                    num_tokens=num_tokens,\n                    extend_seq_lens",
                               "                    num_tokens=num_tokens + 1,\n                    extend_seq_lens"),
                              "num_tokens=num_tokens + 1,"),
    # the CP bucket scan takes a bucket 8 rows short
    "bucket scan capacity": ((BCG, "and required_local_tokens <= captured_local_tokens",
                              "and required_local_tokens <= captured_local_tokens + 8"),
                             "captured_local_tokens + 8"),
    # the CP-activity gate always open: a batch too short to shard takes the CP graph (admission_replay)
    "CP gate always open": ((UTILS, "    return strategy.can_apply(len(input_ids), forward_batch)", "    return True"),
                            "    return True"),
    # zigzag's gate asks for one long request instead of all: a batch with a short request takes the CP graph
    "zigzag gate any length": ((ZIGZAG, "return all(int(length) >= self.cp_size * 2 for length in extend_lens)",
                                "return any(int(length) >= self.cp_size * 2 for length in extend_lens)"),
                               "return any(int(length) >= self.cp_size * 2"),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_a_regression_on_the_driven_path_is_found_and_its_line_cited(wheels: dict[str, Path], tmp_path: Path, name: str) -> None:
    edit, marker = REGRESSIONS[name]
    root = planted(wheels["0.5.23"], tmp_path / "planted", edit)
    policy = policy_from(str(root))
    report = check_policy(policy, max_cases=CASES, minimize_s=1.0, **CHECK)
    assert not report.ok, report.text()
    assert set(report.invariants) & {"capacity_fit", "admission_replay", "minimal_bucket", "captured_bucket"}, report.text()
    batch = dict(report.violations[0].batch.kwargs(), cp_rank=0)  # the minimised counterexample
    cited = policy.decided_at(report.violations[0].invariant, batch)
    assert line_of(root, edit[0], marker) in cited, cited
    assert line_of(root, MODEL_RUNNER, "ret = self.decode_cuda_graph_runner.execute(") not in cited  # a branch not taken



@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_the_command_line_cites_the_planted_line_in_text_and_json(wheels: dict[str, Path], tmp_path: Path, name: str) -> None:
    """The issue's "a regression in the glue (exit 1, the planted line cited)": ``cpgraph check --adapter-root``
    on the planted copy exits 1 and its prefill finding's ``decided at`` is the planted line (the lines that ran
    and differ from the pristine release), in the text report and in the JSON."""
    edit, marker = REGRESSIONS[name]
    root = planted(wheels["0.5.23"], tmp_path / "planted", edit)
    where = line_of(root, edit[0], marker)
    argv = [sys.executable, "-m", "cpgraph", "check", "cpgraph.adapters.sglang:zigzag", "--adapter-root", str(root),
            "--max-cases", str(CASES), "--padding-factors", "2", "--cp-sizes", "2,4", "--no-graph-paths"]
    text = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert text.returncode == 1, text.stdout + text.stderr
    assert f"decided at: {where}" in text.stdout, text.stdout
    data = subprocess.run([*argv, "--format", "json"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert data.returncode == 1, data.stderr
    cited = [v["decided_at"] for v in json.loads(data.stdout)["violations"]]
    assert any(where in lines for lines in cited), cited


# can_run_graph's handling of the attention backend's own prefill-graph check (0.5.21 on): the stand-in backend's
# can_run_prefill_cuda_graph accepts every batch and the release's own __init__ line reads it, so the check runs
BACKEND_CHECK = "        if backend_can_run is not None and not backend_can_run(forward_batch):\n"
BACKEND_PLANTS = {
    # the glue mutant once not reached (benchmarks/glue_mutation_equivalents.json): the backend's answer inverted
    "backend check inverted": "        if backend_can_run is not None and backend_can_run(forward_batch):\n",
    # the backend's answer ignored: every batch refused wherever the backend has a check
    "backend check always refuses": "        if backend_can_run is not None and not False:\n",
}


@pytest.mark.parametrize("name", sorted(BACKEND_PLANTS))
def test_the_backends_prefill_graph_check_is_run_and_a_plant_in_its_handling_found(
    wheels: dict[str, Path], tmp_path: Path, name: str
) -> None:
    """The attention backend's own check says yes to every batch (stand_ins.AttentionBackend); the release's
    __init__ reads it into _backend_can_run_prefill_cuda_graph (its own statements, run on the runner) and
    can_run_graph calls it. With its handling inverted or refusing always, the model runner keeps every batch
    eager: ``cpgraph check --adapter-root`` exits 1 on no_needless_fallback, the planted line cited."""
    shipped = policy_from(str(wheels["0.5.23"]))
    assert shipped.path.runner_init is not None  # the release's own __init__ line that reads the backend's check
    assert line_of(wheels["0.5.23"], RUNNER, BACKEND_CHECK.strip()) in shipped.lines_run(EXAMPLE)
    marker = BACKEND_PLANTS[name]
    root = planted(wheels["0.5.23"], tmp_path / "planted", (RUNNER, BACKEND_CHECK, marker))
    where = line_of(root, RUNNER, marker.strip())
    assert policy_from(str(root)).admit(**EXAMPLE) is False and shipped.admit(**EXAMPLE) is True
    argv = [sys.executable, "-m", "cpgraph", "check", "cpgraph.adapters.sglang:zigzag", "--adapter-root", str(root),
            "--max-cases", str(CASES), "--padding-factors", "2", "--cp-sizes", "2,4", "--no-graph-paths"]
    text = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert text.returncode == 1, text.stdout + text.stderr
    assert "no_needless_fallback violated" in text.stdout and f"decided at: {where}" in text.stdout, text.stdout
    data = subprocess.run([*argv, "--format", "json"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert data.returncode == 1, data.stderr
    cited = [v["decided_at"] for v in json.loads(data.stdout)["violations"] if v["invariant"] == "no_needless_fallback"]
    assert cited and all(where in lines for lines in cited), cited


def test_a_shipped_release_cites_the_bucket_choice_first_for_a_bucket_invariant(wheels: dict[str, Path]) -> None:
    """0.5.17 as shipped (no pristine diff to narrow by): every line that ran is cited, those of the functions that
    choose the bucket first for capacity_fit, so the report's first lines are where 0.5.17 pads without the capacity."""
    from cpgraph.adapters.sglang.trace import CHOOSING

    policy = policy_from(str(wheels["0.5.17"]))
    ran = policy.functions_run(EXAMPLE)
    cited = policy.decided_at("capacity_fit", EXAMPLE)
    assert sorted(cited) == sorted(ran) and ran[cited[0]] in CHOOSING, cited[:5]
    assert policy.decided_at("no_needless_fallback", EXAMPLE) == tuple(ran)  # in the order run
    assert policy.decided_at("capacity_fit") == ()


NOT_ACTIVE = '''        if getattr(self, "enable_cp_bcg_capture", False) and not is_cp_active(
            forward_batch
        ):
            return False'''


def test_a_batch_too_small_for_cp_is_kept_off_the_cp_graph_by_two_gates_and_the_replay(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    """can_run_graph admitting a batch that is not CP-active is no finding alone: the model runner's own gate
    (_prefill_cuda_graph_allows_context_parallel) keeps it eager, so the glue mutant at that line is equivalent.
    With that gate removed too, sglang's replay path refuses it (prepare_cp_forward asserts is_cp_active) and the
    check reports it."""
    one = planted(wheels["0.5.23"], tmp_path / "one", (RUNNER, NOT_ACTIVE, NOT_ACTIVE.replace("return False", "return True")))
    small = dict(EXAMPLE, extend_seq_lens=(1, 100), num_tokens=101, capture_num_tokens=(128,), bucket_local_tokens={128: 32})
    assert policy_from(str(one)).admit(**small) is False
    both = planted(one, tmp_path / "both", (MODEL_RUNNER, "        and is_cp_active(forward_batch)\n    )", "    )"))
    policy = policy_from(str(both))
    assert policy.admit(**small) is True
    report = check_policy(policy, max_cases=CASES, minimize_s=1.0, **CHECK)
    assert set(report.invariants) & {"capacity_fit", "captured_bucket", "admission_replay"}, report.text()
    assert all(not v.spec.active for v in report.violations), report.text()

# -- the layout the replay reads: local_layout, from each rank's own metadata --------------------------------------
ZIGZAG_INDEX_LATE = "                cp_segment_num - cp_rank - 1,\n"
LAYOUT_PLANTS: dict[str, tuple[Edit, str]] = {
    # every rank's late block one before its own: rank P-1 holds block P-1 twice, block P nowhere
    "zigzag_index late block one off": ((ZIGZAG, ZIGZAG_INDEX_LATE, ZIGZAG_INDEX_LATE.replace("- 1,", "- 2,")),
                                        "cp_segment_num - cp_rank - 2,"),
    # every rank's early block the next rank's (kept in range): the early blocks move between ranks
    "zigzag_index early block the next rank's": (
        (ZIGZAG, "range(cp_rank, cp_rank + bs * cp_segment_num, cp_segment_num)",
         "range((cp_rank + 1) % self.cp_size, (cp_rank + 1) % self.cp_size + bs * cp_segment_num, cp_segment_num)"),
        "(cp_rank + 1) % self.cp_size + bs * cp_segment_num"),
    # the restore takes each request's early pieces in reverse rank order (still a permutation: its asserts hold)
    "cp_reverse_index early pieces reversed": (
        (ZIGZAG, "list(range(batch_id, cp_segment_num * bs, 2 * bs))",
         "list(range(batch_id, cp_segment_num * bs, 2 * bs))[::-1]"),
        "list(range(batch_id, cp_segment_num * bs, 2 * bs))[::-1]"),
}


def test_the_shipped_layout_is_read_on_every_rank_and_is_the_live_one(release: SglangPolicy, wheels: dict[str, Path]) -> None:
    """0.5.23's zigzag layout of the worked example, read from each rank's own metadata, is the reference's (rank 0
    holds request 0's blocks 0 and 7: [0, 192) and [1343, 1534), 513 rows in all); where the release's own guard
    stops the replay (0.5.17 on the worked example: bucket 2048 holds 512 rows, 520 needed) nothing is laid out;
    interleave's metadata holds no per-token index, so its policy shows no layout."""
    shown = layouts(release, EXAMPLE)
    for laid in shown:
        assert laid is not None
        assert layout_mismatch(laid, lengths=EXAMPLE["extend_seq_lens"], cp_size=4, strategy="zigzag", capacity=576) is None
    first = shown[0]
    assert first is not None and (0, 0, 192, 0) in first.rows[0] and (0, 1343, 1534, 258) in first.rows[0]
    assert max(at + stop - start for _, start, stop, at in first.rows[0]) == 513
    first_release = policy_from(str(wheels["0.5.17"]))
    assert first_release.replay_bucket(**EXAMPLE) == 2048
    assert first_release.local_layout(bucket=2048, **EXAMPLE) is None
    assert getattr(policy_from(str(wheels["0.5.23"]), "interleave"), "local_layout", None) is None


@pytest.mark.parametrize("name", sorted(LAYOUT_PLANTS))
def test_a_regression_in_the_layout_is_found_through_local_layout_and_its_line_cited(
    wheels: dict[str, Path], release: SglangPolicy, tmp_path: Path, name: str
) -> None:
    """The bucket and the row counts are the release's (only the indices changed), so only the layout shown can
    see it: ``cpgraph check --adapter-root`` exits 1 on ``capacity_fit``, the planted line the finding's
    ``decided at:`` (build_metadata is traced, its lines cited where they differ from the pristine release)."""
    edit, marker = LAYOUT_PLANTS[name]
    root = planted(wheels["0.5.23"], tmp_path / "planted", edit)
    where = line_of(root, edit[0], marker)
    policy = policy_from(str(root))
    assert answers(policy, EXAMPLE) == answers(release, EXAMPLE)
    assert policy.local_rows(bucket=2304, **EXAMPLE) == release.local_rows(bucket=2304, **EXAMPLE)
    text = subprocess.run(cli(root, tmp_path), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert text.returncode == 1, text.stdout + text.stderr
    assert "capacity_fit violated" in text.stdout and f"decided at: {where}" in text.stdout, text.stdout
    data = subprocess.run(cli(root, tmp_path, "--format", "json"), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert data.returncode == 1, data.stderr
    found = json.loads(data.stdout)["violations"]
    assert {v["invariant"] for v in found} == {"capacity_fit"}, found
    assert all(where in v["decided_at"] for v in found), found


def test_metadata_without_a_field_the_layout_is_read_from_is_refused_naming_build_metadata(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    """``zigzag_index`` renamed throughout zigzag.py (the field, build_metadata and the shard that reads it): the
    release runs as before, but the adapter reads the rows from ``zigzag_index``, so ``local_layout`` is refused
    (exit 2) naming build_metadata's line, never judged on a layout it could not read."""
    root = planted(wheels["0.5.23"], tmp_path / "renamed")
    path = root / ZIGZAG
    path.write_text(path.read_text().replace("zigzag_index", "zigzag_blocks"))
    policy = policy_from(str(root))
    assert answers(policy, EXAMPLE) == (True, 2304)
    with pytest.raises(GlueError) as refused:
        policy.local_layout(bucket=2304, **EXAMPLE)
    where = line_of(root, ZIGZAG, "    def build_metadata(")
    assert where in str(refused.value) and "zigzag_index" in str(refused.value), str(refused.value)
    done = subprocess.run(cli(root, tmp_path), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 2 and where in done.stdout + done.stderr, done.stdout + done.stderr


# -- a fix: followed ----------------------------------------------------------------------------------------
FIT = '''
    def _cp_fitting_bucket(self, forward_batch, num_tokens):
        from sglang.srt.layers.cp.utils import is_cp_v2_active, prepare_cp_forward

        if not is_cp_v2_active(forward_batch):
            return self._pad_to_bucket(num_tokens, self.capture_num_tokens)
        forward_batch.attn_cp_metadata = None
        prepare_cp_forward(forward_batch)
        need = max(forward_batch.attn_cp_metadata.per_rank_actual_token)
        for bucket in self.capture_num_tokens:
            room = self.prefill_cp_bcg_input.bucket_local_tokens.get(bucket)
            if num_tokens <= bucket <= num_tokens * 2 and room is not None and need <= room:
                return bucket
        return None

    def load_batch(self, forward_batch: ForwardBatch, **kwargs) -> ForwardBatch:'''
FIX: tuple[Edit, ...] = (
    (RUNNER, "\n    def load_batch(self, forward_batch: ForwardBatch, **kwargs) -> ForwardBatch:", FIT),
    (RUNNER, "        static_num_tokens = self._pad_to_bucket(num_tokens, self.capture_num_tokens)\n        self.raw_num_tokens",
     "        static_num_tokens = self._cp_fitting_bucket(forward_batch, num_tokens)\n        self.raw_num_tokens"),
    (RUNNER, "        ):\n            return False\n        # Multi-req replay is supported",
     "        ):\n            return False\n        if self._cp_fitting_bucket(forward_batch, len(forward_batch.input_ids)) is None:\n"
     "            return False\n        # Multi-req replay is supported"),
)


def test_the_first_releases_bug_fixed_in_its_own_runner_passes(wheels: dict[str, Path], tmp_path: Path) -> None:
    shipped = policy_from(str(wheels["0.5.17"]))
    assert answers(shipped, EXAMPLE) == (True, 2048)  # the bug: bucket 2048 holds 512 rows, the batch needs 520
    fixed = policy_from(str(planted(wheels["0.5.17"], tmp_path / "fixed", *FIX)))
    assert answers(fixed, EXAMPLE) == (True, 2304)
    report = check_policy(fixed, max_cases=CASES, capacities="captured", **CHECK)
    assert report.ok, report.text()


# -- refactors: the same verdict and answers ------------------------------------------------------------------
REFACTORS: dict[str, tuple[Edit, ...]] = {
    # load_batch's CP scan called with its keywords passed through a dict
    "keywords through a dict": ((RUNNER, """            static_num_tokens = (
                self.prefill_cp_bcg_input.select_replay_bucket_for_batch(
                    num_tokens=num_tokens,
                    extend_seq_lens=forward_batch.extend_seq_lens_cpu,
                    capture_num_tokens=self.capture_num_tokens,
                    max_padding_factor=_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR,
                )
            )""", """            scan = dict(
                num_tokens=num_tokens,
                extend_seq_lens=forward_batch.extend_seq_lens_cpu,
                capture_num_tokens=self.capture_num_tokens,
                max_padding_factor=_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR,
            )
            static_num_tokens = self.prefill_cp_bcg_input.select_replay_bucket_for_batch(**scan)"""),),
    # the static buffers filled with keywords through a dict (what the adapter once read its bucket from)
    "fill_from keywords through a dict": ((RUNNER, """        self.buffer_registry.fill_from(
            forward_batch,
            raw_bs=bs,
            padded_bs=bs,
            raw_num_tokens=num_tokens,
            padded_num_tokens=static_num_tokens,
            pp_proxy_tensors=kwargs.get("pp_proxy_tensors"),
        )""", """        fill = {"raw_bs": bs, "padded_bs": bs, "raw_num_tokens": num_tokens}
        fill.update(padded_num_tokens=static_num_tokens, pp_proxy_tensors=kwargs.get("pp_proxy_tensors"))
        self.buffer_registry.fill_from(forward_batch, **fill)"""),),
    # the scan's local renamed
    "a renamed local": ((BCG, """        max_num_tokens = num_tokens * max_padding_factor
        for bucket in capture_num_tokens:
            if bucket < num_tokens:
                continue
            if bucket > max_num_tokens:
                break""", """        ceiling = num_tokens * max_padding_factor
        for bucket in capture_num_tokens:
            if bucket < num_tokens:
                continue
            if bucket > ceiling:
                break"""),),
    # zigzag's build_metadata builds zigzag_index in two statements (the layout the replay reads)
    "zigzag_index in two statements": ((ZIGZAG, """        zigzag_index = list(
            range(cp_rank, cp_rank + bs * cp_segment_num, cp_segment_num)
        ) + list(
            range(
                cp_segment_num - cp_rank - 1,
                bs * cp_segment_num,
                cp_segment_num,
            )
        )""", """        early = range(cp_rank, cp_rank + bs * cp_segment_num, cp_segment_num)
        late = range(cp_segment_num - cp_rank - 1, bs * cp_segment_num, cp_segment_num)
        zigzag_index = [*early, *late]"""),),
    # the model runner's CP check split into statements
    "a split statement": ((MODEL_RUNNER, """    return get_cp_strategy() is None or (
        bool(getattr(prefill_runner, "enable_cp_bcg_capture", False))
        and is_cp_active(forward_batch)
    )""", """    strategy = get_cp_strategy()
    if strategy is None:
        return True
    captured = bool(getattr(prefill_runner, "enable_cp_bcg_capture", False))
    return captured and is_cp_active(forward_batch)"""),),
}


@pytest.mark.parametrize("name", sorted(REFACTORS))
def test_a_refactor_keeps_the_verdict_and_the_answers(wheels: dict[str, Path], release: SglangPolicy, tmp_path: Path,
                                                     name: str) -> None:
    refactored = policy_from(str(planted(wheels["0.5.23"], tmp_path / "refactored", *REFACTORS[name])))
    for batch in (EXAMPLE, SMALL, dict(EXAMPLE, bucket_local_tokens={2048: 512, 2304: 560, 2560: 640})):
        assert answers(refactored, batch) == answers(release, batch), batch
        assert layouts(refactored, batch) == layouts(release, batch), batch
    report = check_policy(refactored, max_cases=CASES, **CHECK)
    assert report.ok, report.text()


# -- what the adapter does not drive: refused at the release's line -------------------------------------------
NOT_DRIVEN: dict[str, tuple[Edit, str, str]] = {
    # the decision reads a server argument the adapter does not give
    "an unknown server argument": ((MODEL_RUNNER, "        and is_cp_active(forward_batch)\n    )",
                                    "        and is_cp_active(forward_batch)\n        and get_parallel().enable_prefill_cp_graph\n    )"),
                                   "get_parallel().enable_prefill_cp_graph", "enable_prefill_cp_graph"),
    # can_run_graph branches on an sglang helper the adapter does not declare
    "an undeclared helper": ((RUNNER, "        # Non-DP local check (sole decision for tp-only).\n",
                              "        if is_npu_graph_blocked(forward_batch):\n            return False\n"
                              "        # Non-DP local check (sole decision for tp-only).\n"),
                             "if is_npu_graph_blocked(forward_batch):", "is_npu_graph_blocked"),
}


def _planted_helper(root: Path) -> None:
    path = root / RUNNER
    path.write_text(path.read_text().replace("from sglang.srt.utils import (\n", "from sglang.srt.utils import (\n    is_npu_graph_blocked,\n", 1))


@pytest.mark.parametrize("name", sorted(NOT_DRIVEN))
def test_a_change_the_adapter_does_not_drive_is_refused_at_its_line(wheels: dict[str, Path], tmp_path: Path, name: str) -> None:
    edit, marker, said = NOT_DRIVEN[name]
    root = planted(wheels["0.5.23"], tmp_path / "planted", edit)
    if name == "an undeclared helper":
        _planted_helper(root)
    policy = policy_from(str(root))
    with pytest.raises(GlueError) as refused:
        policy.admit(**EXAMPLE)
    assert line_of(root, edit[0], marker) in str(refused.value) and said in str(refused.value), str(refused.value)


def test_a_flag_set_under_a_new_name_but_read_under_the_old_is_not_judged_on(wheels: dict[str, Path], tmp_path: Path) -> None:
    """The release sets ``enable_cp_bcg_capture`` nowhere (renamed where it is assigned, not where it is read):
    the adapter gives no value for it, so the release's own defaults decide (its getattr(..., False) reads)."""
    source = (wheels["0.5.23"] / RUNNER).read_text()
    root = planted(wheels["0.5.23"], tmp_path / "renamed")
    renamed = source.replace("self.enable_cp_bcg_capture = ", "self.enable_cp_graph_capture = ")
    renamed = renamed.replace("if self.enable_cp_bcg_capture:", "if self.enable_cp_graph_capture:")
    assert renamed != source
    (root / RUNNER).write_text(renamed)
    policy = policy_from(str(root))
    try:
        admitted = policy.admit(**EXAMPLE)
    except GlueError as refused:  # a plain read of the unset name: refused at its line
        assert f"{RUNNER}:" in str(refused) and "enable_cp_bcg_capture" in str(refused), str(refused)
    else:
        assert admitted is False  # the release's real behaviour: CP graphs off, the model runner goes eager


def test_the_same_holds_on_another_release(wheels: dict[str, Path], tmp_path: Path) -> None:
    """0.5.18 (the fix release, whose scan and flags are spelled differently): a regression in load_batch's
    lengths is found and cited, and its flag renamed where it is set is not judged as on."""
    marker = "extend_seq_lens=forward_batch.extend_seq_lens_cpu[:-1] or forward_batch.extend_seq_lens_cpu,"
    edit = (RUNNER, "                    num_tokens=num_tokens,\n                    extend_seq_lens=forward_batch.extend_seq_lens_cpu,",
            f"                    num_tokens=num_tokens,\n                    {marker}")
    content = (wheels["0.5.18"] / RUNNER).read_text()
    load_batch = content.index("def load_batch")
    assert content.index(edit[1], load_batch) > load_batch  # the edit lands in load_batch (the scan's second call)
    root = tmp_path / "regressed"
    shutil.copytree(wheels["0.5.18"], root)
    head, tail = content[:load_batch], content[load_batch:]
    (root / RUNNER).write_text(head + tail.replace(edit[1], edit[2], 1))
    policy = policy_from(str(root))
    report = check_policy(policy, max_cases=300, minimize_s=1.0, **CHECK)  # met after 150-300: it needs two requests
    assert "capacity_fit" in report.invariants, report.text()
    batch = dict(report.violation("capacity_fit").batch.kwargs(), cp_rank=0)
    assert line_of(root, RUNNER, marker) in policy.decided_at("capacity_fit", batch)

    renamed = planted(wheels["0.5.18"], tmp_path / "renamed")
    text = content.replace("self.enable_cp_v2_bcg_capture = ", "self.enable_cp_v3_bcg_capture = ")
    assert text != content
    (renamed / RUNNER).write_text(text)
    try:
        assert policy_from(str(renamed)).admit(**EXAMPLE) is False  # CP graphs off: the release's own default
    except GlueError as refused:
        assert f"{RUNNER}:" in str(refused) and "enable_cp_v2_bcg_capture" in str(refused), str(refused)
