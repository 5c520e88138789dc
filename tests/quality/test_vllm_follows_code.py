"""The vLLM adapter judges the code that is there, not the code it recognises: copies of fetched releases with
edits planted in execute_model (issue #44, items 1, 2 and 5).

- A regression in the glue (0.29.0, the whole batch's count handed to dispatch again): exit 1, the added
  line cited first where the report says what decided, marked as changed from the release.
- A held-out plant (0.30.0, the dispatch count's ``if`` given one more test): exit 1, the planted header
  cited first (the statements that ran on the witness, the changed ones first; cited.py).
- A behaviour-preserving refactor (the count renamed and computed in two statements; a comment and two
  independent lines swapped; the count moved into a new method): the same answers as the release, batch
  for batch, and the same exit code; the partition's local renamed: the same answers.
- A fix (0.34.0 with examples/vllm_dealt_decode_fix applied: dispatch holds the rank-local request count):
  followed, so the FULL decode graph that holds each rank's one decode is run, and the fixed lines are cited
  first, never the unchanged global count.
- A change the adapter cannot drive (the count through a stubbed call, or through ``self`` state it does not
  stand in for; the partition's padding through a stubbed call): exit 2 before the first batch, naming the
  added line.
- A partition that pads past the dispatched size (0.34.0): replays what it did not admit, exit 1.

Releases come from the ``vllm_release`` fixture (tests/conftest.py); each test edits its own copy of the files
the adapter reads (cpgraph.adapters.vllm.plants.copy_release)."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cpgraph.adapters.glue import GlueError
from cpgraph.adapters.pristine import pristine_roots
from cpgraph.adapters.vllm import VllmPolicy, policy_from
from cpgraph.adapters.vllm.plants import copy_release
from cpgraph.reference.graph_paths import Graph, GraphConfig, GraphStep, expected

RUNNER = "vllm/v1/worker/gpu/model_runner.py"
FIX = Path(__file__).resolve().parents[2] / "examples" / "vllm_dealt_decode_fix" / "fix.patch"
SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))
CLI = [sys.executable, "-m", "cpgraph", "check", "cpgraph.adapters.vllm:pcp", "--max-cases", "300", "--path-cases", "20",
       "--cp-sizes", "1,2,4", "--dp-sizes", "1"]


def _copy(vllm_release: Callable[[str], Path], version: str, into: Path) -> Path:
    return Path(copy_release(str(vllm_release(version)), str(into)))


def _edit(root: Path, edit: Callable[[list[str]], list[str]]) -> list[str]:
    path = root / RUNNER
    lines = edit(path.read_text().splitlines(keepends=True))
    path.write_text("".join(lines))
    return lines


def _at(lines: list[str], stripped: str, after: int = 0) -> int:
    """The 0-based index of the first line at or after ``after`` whose text, stripped, is ``stripped``."""
    return next(i for i, line in enumerate(lines) if i >= after and line.strip() == stripped)


def _execute(lines: list[str]) -> int:
    return _at(lines, "def execute_model(")


def _cli(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *extra, "--adapter-root", str(root)], capture_output=True, text=True, timeout=600)


PREFILL_ONLY = ("--no-graph-paths",)  # a plant whose finding is on prefill batches: the graph paths add only time


def _batches(seed: int, count: int) -> list[tuple[int, tuple[int, ...], tuple[bool, ...]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        p = rng.choice((1, 2, 4, 8))
        flags = tuple(rng.random() < 0.7 for _ in range(rng.randint(1, 6)))
        out.append((p, tuple(rng.randint(1, 700) if f else 1 for f in flags), flags))
    return out


def _answers(policy: VllmPolicy, batches: list[tuple[int, tuple[int, ...], tuple[bool, ...]]]) -> list[object]:
    out: list[object] = []
    for p, lengths, flags in batches:
        for rank in range(p):
            step = policy.step(cp_rank=rank, cp_size=p, num_tokens=sum(lengths), extend_seq_lens=lengths,
                               capture_num_tokens=SIZES, is_prefilling=flags)
            out.append((step.count, step.mode, step.dispatched, step.replay, step.rows))
    return out


# -- a regression in the glue -----------------------------------------------------------------------------
def test_the_whole_batch_count_handed_to_dispatch_again_fails_citing_the_added_line(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    root = _copy(vllm_release, "0.29.0", tmp_path / "regressed")

    def regress(lines: list[str]) -> list[str]:
        at = _at(lines, "num_active_loras = 0", _execute(lines))  # after the PCP dispatch count's if-block
        return lines[:at] + ["        num_toks = max(num_toks, scheduler_output.total_num_scheduled_tokens)\n"] + lines[at:]

    added = _at(_edit(root, regress), "num_toks = max(num_toks, scheduler_output.total_num_scheduled_tokens)") + 1
    cited = f"{RUNNER}:{added}"
    policy = policy_from(str(root))
    assert policy.citations()["dispatch_count"] == cited
    batch = dict(cp_rank=0, cp_size=4, num_tokens=484, extend_seq_lens=(170, 161, 153), capture_num_tokens=SIZES)
    assert policy.step(**batch).count == 484  # the whole batch, where the release hands dispatch 126
    done = _cli(root, *PREFILL_ONLY)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "minimal_bucket violated" in done.stdout
    assert f"decided at: {cited} `num_toks = max(num_toks, scheduler_output.total_num_scheduled_tokens)`" in done.stdout
    if _pristine("0.29.0"):  # the added line, which ran, is the first line cited, marked as changed
        assert _first_decided(done.stdout) == (f"{cited} `num_toks = max(num_toks, scheduler_output.total_num_scheduled_tokens)` "
                                               f"(the token count execute_model hands dispatch_cg_and_sync_dp) {_changed('0.29.0')}")


# -- the planted line cited (issue #44): a held-out plant the adapter has no role for ------------------------
PLANTED_IF = ("            if self.pcp_manager is not None:\n", "            if self.pcp_manager is not None and num_reqs == 1:\n")


def _pristine(version: str) -> bool:
    """Whether cpgraph's cache holds ``version`` as released (the pristine copy changed lines are told against)."""
    return bool(pristine_roots("vllm", version))


def _changed(version: str) -> str:
    return f"(changed from vLLM {version} as released)"


def _first_decided(stdout: str) -> str:
    return next(line.strip() for line in stdout.splitlines() if line.strip().startswith("decided at: ")).removeprefix("decided at: ")


def test_a_held_out_plant_in_a_control_header_fails_citing_the_planted_line_first(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    # 0.30.0's dispatch count guarded by one more test (multi-request batches then dispatch by the global count):
    # no role of the adapter names the `if`, but it ran on the witness and differs from the release
    release = vllm_release("0.30.0")
    if not _pristine("0.30.0"):
        pytest.skip("vLLM 0.30.0 is not unpacked in cpgraph's cache (releases.cache_dir()): no pristine copy to tell changes against")
    root = _copy(vllm_release, "0.30.0", tmp_path / "held-out")

    def plant(lines: list[str]) -> list[str]:
        at = _at(lines, PLANTED_IF[0].strip(), _execute(lines))
        assert at + 1 == 1665
        return lines[:at] + [PLANTED_IF[1]] + lines[at + 1:]

    _edit(root, plant)
    done = subprocess.run([sys.executable, "-m", "cpgraph", "check", "cpgraph.adapters.vllm:pcp", "--adapter-root", str(root),
                           "--max-cases", "2000", "--no-graph-paths"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "minimal_bucket violated" in done.stdout and "no_needless_fallback violated" in done.stdout
    assert _first_decided(done.stdout) == f"{RUNNER}:1665 `{PLANTED_IF[1].strip()}` {_changed('0.30.0')}"
    # the report's witness, cited in full: the planted header first; a prefill finding is not explained by the
    # decode paths' lines (cudagraph_utils' _is_compatible, the DP re-dispatch, the partition's request contract)
    witness = dict(cp_rank=0, cp_size=2, num_tokens=3, extend_seq_lens=[1, 2], capture_num_tokens=[2, 3])
    lines = policy_from(str(root)).decided_at("minimal_bucket", batch=witness)
    assert lines[0] == f"{RUNNER}:1665 `{PLANTED_IF[1].strip()}` {_changed('0.30.0')}", lines
    assert not any(w.startswith(("vllm/v1/worker/gpu/cudagraph_utils.py", "vllm/v1/worker/gpu/dp_utils.py")) for w in lines), lines
    assert [w for w in lines if w.endswith(_changed("0.30.0"))] == [lines[0]]
    # the release itself, checked from its cached copy: nothing is changed, nothing marked
    assert not any("as released" in w for w in policy_from(str(release)).decided_at("minimal_bucket", batch=witness))


# -- behaviour-preserving refactors -----------------------------------------------------------------------
def _renamed_and_split(lines: list[str]) -> list[str]:
    start = _execute(lines)
    end = _at(lines, "if batch_desc.num_tokens == 0:", start)
    body = [line.replace("num_toks", "tokens_to_dispatch") for line in lines[start:end]]
    text = "".join(body)
    old = "                tokens_to_dispatch = self.pcp_manager.get_num_tokens_for_dispatch("
    assert old in text
    text = text.replace(old, "                rank_local_rows = self.pcp_manager.get_num_tokens_for_dispatch(")
    call_end = text.index(")\n", text.index("rank_local_rows = ")) + 2
    text = text[:call_end] + "                tokens_to_dispatch = rank_local_rows\n" + text[call_end:]
    return lines[:start] + text.splitlines(keepends=True) + lines[end:]


def _commented_and_reordered(lines: list[str]) -> list[str]:
    start = _execute(lines)
    first = _at(lines, "num_reqs = len(scheduler_output.num_scheduled_tokens)", start)
    second = _at(lines, "num_toks = scheduler_output.total_num_scheduled_tokens", start)
    assert second == first + 1
    out = list(lines)
    out[first], out[second] = lines[second], lines[first]
    return out[:first] + ["        # the counts dispatch is handed (a comment a refactor adds)\n"] + out[first:]


def _moved_into_a_helper(lines: list[str]) -> list[str]:
    """The PCP count moved into a new method of the model runner (followed as execute_model's own)."""
    text = "".join(lines)
    old = ("                num_toks = self.pcp_manager.get_num_tokens_for_dispatch(\n"
           "                    batch_req_state.num_scheduled_tokens,\n"
           "                    batch_req_state.is_prefilling_np,\n"
           "                )\n")
    assert text.count(old) == 1
    text = text.replace(old, "                num_toks = self._rank_local_dispatch_tokens(batch_req_state)\n")
    at = text.index("    def execute_model(")
    helper = ("    def _rank_local_dispatch_tokens(self, state):\n"
              "        found = self.pcp_manager.get_num_tokens_for_dispatch(state.num_scheduled_tokens, state.is_prefilling_np)\n"
              "        return found\n\n")
    return (text[:at] + helper + text[at:]).splitlines(keepends=True)


@pytest.mark.parametrize("refactor", [_renamed_and_split, _commented_and_reordered, _moved_into_a_helper])
def test_a_refactor_keeps_every_answer_and_the_verdict(
    vllm_release: Callable[[str], Path], tmp_path: Path, refactor: Callable[[list[str]], list[str]]
) -> None:
    release = vllm_release("0.29.0")
    root = _copy(vllm_release, "0.29.0", tmp_path / "refactored")
    _edit(root, refactor)
    batches = _batches(44, 150)
    assert _answers(policy_from(str(root)), batches) == _answers(policy_from(str(release)), batches)
    done = _cli(root)
    assert done.returncode == 0, done.stdout + done.stderr


# -- a fix ------------------------------------------------------------------------------------------------
def test_the_dealt_decode_fix_is_followed(vllm_release: Callable[[str], Path], tmp_path: Path) -> None:
    root = _copy(vllm_release, "0.34.0", tmp_path / "fixed")
    subprocess.run(["patch", "-p1", "-s", "-i", str(FIX)], cwd=root, check=True)
    config = GraphConfig("FULL_DECODE_ONLY", (1,), (1,), (1,), 256)
    for path, ran in ((vllm_release("0.34.0"), None), (root, Graph("FULL", 1, 1, 1))):
        paths = policy_from(str(path)).graph_paths()
        step = GraphStep((1, 1), (False, False), 2, paths.placement(2))
        answers = paths.answers(step, config)
        held = [(a.rows, a.requests) for a in answers]
        assert held == [(1, 1), (1, 1)] and expected(step, paths.captured(config), held) == Graph("FULL", 1, 1, 1)
        assert all(a.dispatched == ran and a.replayed == ran for a in answers), (path, answers)
    lines = policy_from(str(root)).decided_at("no_needless_fallback")
    assert any("dispatch_num_reqs = self.pcp_manager.get_num_reqs_for_dispatch(" in w for w in lines), lines
    if not _pristine("0.34.0"):
        return
    # the fix's lines are cited first, marked; the unchanged global count is never cited as what decided it,
    # whether from the roles (no case run) or from what ran on the case the release fails (FULL decode, 2 ranks)
    policy = policy_from(str(root))
    unchanged = "num_reqs = len(scheduler_output.num_scheduled_tokens)"
    for witnessed in (False, True):
        if witnessed:
            paths = policy.graph_paths()
            paths.answers(GraphStep((1, 1), (False, False), 2, paths.placement(2)), config)
        lines = policy.decided_at("no_needless_fallback")
        marked = [w for w in lines if w.endswith(_changed("0.34.0"))]
        assert marked and lines[:len(marked)] == tuple(marked), lines
        assert any("dispatch_num_reqs = self.pcp_manager.get_num_reqs_for_dispatch(" in w for w in marked), lines
        assert not any(unchanged in w for w in marked) and unchanged not in lines[0], lines
        # a statement the patch copied below itself is not changed (difflib aligns the copy's lines to it)
        assert not any("num_toks = self.pcp_manager.get_num_tokens_for_dispatch(" in w for w in marked), lines
    assert any(w.startswith("vllm/v1/worker/gpu/dp_utils.py:") for w in marked), marked  # the patched dispatch, run


# -- what the adapter cannot drive ------------------------------------------------------------------------
UNDRIVEN = {
    "a stubbed call": ("        num_toks = current_platform.round_up_tokens(num_toks)\n", "current_platform"),
    "self state": ("        num_toks = max(num_toks, self.min_dispatch_tokens)\n", "self.min_dispatch_tokens"),
}


@pytest.mark.parametrize("name", sorted(UNDRIVEN))
def test_a_count_the_adapter_cannot_drive_is_refused_naming_the_line(
    vllm_release: Callable[[str], Path], tmp_path: Path, name: str
) -> None:
    added, named = UNDRIVEN[name]
    root = _copy(vllm_release, "0.29.0", tmp_path / "undriven")

    def plant(lines: list[str]) -> list[str]:
        at = _at(lines, "num_active_loras = 0", _execute(lines))
        return lines[:at] + [added] + lines[at:]

    line = _at(_edit(root, plant), added.strip()) + 1
    with pytest.raises(GlueError, match=f"{RUNNER}:{line} .*{named.replace('.', '[.]')}"):
        policy_from(str(root))
    done = _cli(root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{RUNNER}:{line}" in done.stderr and "violated" not in done.stdout


# -- the partition and the replay key -----------------------------------------------------------------------
MANAGER = "vllm/v1/worker/gpu/pcp_manager.py"
PADDED = "            padded_num_tokens = batch_desc.num_tokens\n"


def _edit_manager(root: Path, old: str, new: str) -> int:
    path = root / MANAGER
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))
    return text[: text.index(old)].count("\n") + 1


def test_a_partition_that_pads_past_the_dispatched_size_replays_what_it_did_not_admit(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    root = _copy(vllm_release, "0.34.0", tmp_path / "overpadded")
    _edit_manager(root, PADDED, "            padded_num_tokens = batch_desc.num_tokens + 8\n")
    batch = dict(cp_rank=0, cp_size=4, num_tokens=484, extend_seq_lens=(170, 161, 153), capture_num_tokens=SIZES)
    step = policy_from(str(root)).step(**batch)
    assert (step.dispatched, step.replay) == (128, 136)  # the release's own 128 and 128
    done = _cli(root, *PREFILL_ONLY)
    assert done.returncode == 1 and "admission_replay violated" in done.stdout, done.stdout + done.stderr


def test_a_partition_refactor_keeps_every_answer(vllm_release: Callable[[str], Path], tmp_path: Path) -> None:
    root = _copy(vllm_release, "0.34.0", tmp_path / "partition-refactored")
    path = root / MANAGER
    text = path.read_text()
    head, _, tail = text.partition("    def partition_batch(")
    body, _, rest = tail.partition("    def prepare_inputs_for_capture_or_profile(")
    body = body.replace("padded_num_tokens = ", "graph_tokens = ").replace("padded_num_tokens=padded_num_tokens", "padded_num_tokens=graph_tokens")
    body = body.replace("if padded_num_tokens is None else padded_num_tokens", "if graph_tokens is None else graph_tokens")
    assert "padded_num_tokens = " not in body and "graph_tokens" in body
    path.write_text(head + "    def partition_batch(" + body + "    def prepare_inputs_for_capture_or_profile(" + rest)
    batches = _batches(45, 120)
    assert _answers(policy_from(str(root)), batches) == _answers(policy_from(str(vllm_release("0.34.0"))), batches)


def test_a_partition_the_adapter_cannot_drive_is_refused_naming_the_line(vllm_release: Callable[[str], Path], tmp_path: Path) -> None:
    root = _copy(vllm_release, "0.34.0", tmp_path / "partition-undriven")
    (root / MANAGER).write_text((root / MANAGER).read_text().replace(
        "from vllm.v1.worker.gpu.input_batch import", "from vllm.platforms import current_platform\nfrom vllm.v1.worker.gpu.input_batch import", 1))
    line = _edit_manager(root, PADDED, "            padded_num_tokens = current_platform.pad_graph_tokens(batch_desc.num_tokens)\n")
    with pytest.raises(GlueError, match=f"{MANAGER}:{line} .*current_platform"):
        policy_from(str(root))


def test_a_descriptor_changed_between_dispatch_and_partition_is_followed(vllm_release: Callable[[str], Path], tmp_path: Path) -> None:
    root = _copy(vllm_release, "0.34.0", tmp_path / "handed-over")

    def widen(lines: list[str]) -> list[str]:
        at = _at(lines, "cudagraph_stats = None", _execute(lines))  # after the dispatch, before prepare_inputs
        return lines[:at] + ["        batch_desc = replace(batch_desc, num_tokens=batch_desc.num_tokens + 8)\n"] + lines[at:]

    _edit(root, widen)
    batch = dict(cp_rank=1, cp_size=4, num_tokens=484, extend_seq_lens=(170, 161, 153), capture_num_tokens=SIZES)
    step = policy_from(str(root)).step(**batch)
    assert (step.dispatched, step.replay) == (128, 136)  # dispatched 128; the partition was handed 136


# -- the replay key, run from execute_model after the partition (issue #44, item 1) ---------------------------
REPLAY_KEY = "num_tokens=input_batch.num_tokens_after_padding,"


def _replay_key_at(lines: list[str]) -> int:
    """The 0-based index of execute_model's ``batch_descriptor = BatchDescriptor(`` (its key on the next line)."""
    at = _at(lines, "batch_descriptor = BatchDescriptor(", _execute(lines))
    assert lines[at + 1].strip() == REPLAY_KEY
    return at


def test_a_replay_key_replaying_under_the_unpadded_count_fails_citing_the_line(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    root = _copy(vllm_release, "0.29.0", tmp_path / "replay-unpadded")

    def regress(lines: list[str]) -> list[str]:
        at = _replay_key_at(lines)
        return lines[:at + 1] + ["                num_tokens=input_batch.num_tokens,\n"] + lines[at + 2:]

    line = _at(_edit(root, regress), "batch_descriptor = BatchDescriptor(", 0) + 1
    policy = policy_from(str(root))
    assert policy.citations()["replay_key"] == f"{RUNNER}:{line}"
    batch = dict(num_tokens=484, extend_seq_lens=(170, 161, 153), capture_num_tokens=SIZES)
    release = policy_from(str(vllm_release("0.29.0")))
    for rank in range(4):
        ours, theirs = policy.step(cp_rank=rank, cp_size=4, **batch), release.step(cp_rank=rank, cp_size=4, **batch)
        assert theirs.replay == theirs.dispatched == ours.dispatched == 128
        assert ours.replay == ours.rows[rank] < 128  # the rank's own rows, not the size it admitted
    done = _cli(root, *PREFILL_ONLY)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "admission_replay violated" in done.stdout
    assert f"decided at: {RUNNER}:{line} `batch_descriptor = BatchDescriptor(`" in done.stdout


def _replay_key_refactored(lines: list[str]) -> list[str]:
    """The forward context's descriptor renamed, its key computed first into a local, a comment added."""
    at = _replay_key_at(lines)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    end = _at(lines, "batch_descriptor=batch_descriptor,", at)
    out = list(lines)
    out[end] = out[end].replace("batch_descriptor=batch_descriptor,", "batch_descriptor=forward_key,")
    out[at + 1] = out[at + 1].replace("input_batch.num_tokens_after_padding", "replay_tokens")
    out[at] = out[at].replace("batch_descriptor = ", "forward_key = ")
    return out[:at] + [f"{indent}# the key the PIECEWISE graph replays under\n",
                       f"{indent}replay_tokens = input_batch.num_tokens_after_padding\n"] + out[at:]


def _replay_key_moved_into_a_helper(lines: list[str]) -> list[str]:
    """The forward context's descriptor built by a new method of the model runner (followed as execute_model's own)."""
    at = _replay_key_at(lines)
    end = next(i for i in range(at, len(lines)) if lines[i].strip() == ")")
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    args = "".join(line.strip() for line in lines[at + 1:end])
    start = _execute(lines) - 1 if lines[_execute(lines) - 1].strip().startswith("@") else _execute(lines)
    helper = ["    def _forward_key(self, input_batch, batch_desc):\n", f"        return BatchDescriptor({args})\n", "\n"]
    return lines[:start] + helper + lines[start:at] + [f"{indent}batch_descriptor = self._forward_key(input_batch, batch_desc)\n"] + lines[end + 1:]


@pytest.mark.parametrize("version", ["0.29.0", "0.34.0"])
@pytest.mark.parametrize("refactor", [_replay_key_refactored, _replay_key_moved_into_a_helper])
def test_a_replay_key_refactor_keeps_every_answer_and_the_verdict(
    vllm_release: Callable[[str], Path], tmp_path: Path, version: str, refactor: Callable[[list[str]], list[str]]
) -> None:
    root = _copy(vllm_release, version, tmp_path / "replay-refactored")
    lines = _edit(root, refactor)
    policy = policy_from(str(root))
    named = "forward_key = BatchDescriptor(" if refactor is _replay_key_refactored else "batch_descriptor = self._forward_key(input_batch, batch_desc)"
    assert policy.citations()["replay_key"] == f"{RUNNER}:{_at(lines, named) + 1}"
    batches = _batches(46, 120)
    assert _answers(policy, batches) == _answers(policy_from(str(vllm_release(version))), batches)
    if version == "0.29.0":
        done = _cli(root)
        assert done.returncode == 0, done.stdout + done.stderr


# -- guards on the path, run (issue #44, item 2) ----------------------------------------------------------
def test_a_guard_added_before_dispatch_stops_the_step_and_changes_the_verdict(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    root = _copy(vllm_release, "0.29.0", tmp_path / "guarded")

    def guard(lines: list[str]) -> list[str]:
        at = _at(lines, "num_active_loras = 0", _execute(lines))
        return lines[:at] + ["        assert num_toks <= 64\n"] + lines[at:]

    line = _at(_edit(root, guard), "assert num_toks <= 64") + 1
    policy, release = policy_from(str(root)), policy_from(str(vllm_release("0.29.0")))
    small = dict(cp_rank=0, cp_size=4, num_tokens=50, extend_seq_lens=(30, 20), capture_num_tokens=SIZES)
    assert policy.step(**small) == release.step(**small)  # under the bound: the release's answer
    with pytest.raises(AssertionError):  # over it: the step stops at the tree's guard (its by-design refusal)
        policy.step(cp_rank=0, cp_size=4, num_tokens=484, extend_seq_lens=(170, 161, 153), capture_num_tokens=SIZES)
    done = _cli(root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f'line {line}, in execute_model' in done.stdout and "assert num_toks <= 64" in done.stdout


def test_the_partitions_guards_run(vllm_release: Callable[[str], Path], tmp_path: Path) -> None:
    """0.29.0's partition_batch refuses speculative decoding (``num_draft_tokens > 0``): run, a spec decode step
    under PCP is refused by the release there; a guard added to the partition is run too."""
    paths = policy_from(str(vllm_release("0.29.0"))).graph_paths()
    config = GraphConfig("PIECEWISE", SIZES, (1, 2, 4, 8), (3,), 256)
    step = GraphStep((3, 3, 40), (False, False, True), 2, paths.placement(2))
    answers = paths.answers(step, config)
    assert all(a.replayed is None and "NotImplementedError" in (a.refusal or "") for a in answers), answers
    root = _copy(vllm_release, "0.34.0", tmp_path / "partition-guarded")
    line = _edit_manager(root, PADDED, PADDED + "            assert padded_num_tokens <= 64\n") + 1
    batch = dict(cp_rank=0, cp_size=4, num_tokens=484, extend_seq_lens=(170, 161, 153), capture_num_tokens=SIZES)
    step_over = policy_from(str(root)).step(**batch)
    assert step_over.admitted and step_over.replay is None and step_over.refusal is not None
    small = dict(cp_rank=0, cp_size=4, num_tokens=50, extend_seq_lens=(30, 20), capture_num_tokens=SIZES)
    assert policy_from(str(root)).step(**small) == policy_from(str(vllm_release("0.34.0"))).step(**small)
    assert line > 1


# -- the layout's contents (issue #44's mutation sample): the rows, not only their counts ------------------------
RESTORED_ONCE = "                if not bool(is_prefilling[segment.global_batch_req_idx]) and rank != 0:\n"


def test_a_layout_that_reads_tokens_back_from_rows_that_do_not_hold_them_fails_citing_the_line(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    root = _copy(vllm_release, "0.29.0", tmp_path / "read-back")
    line = _edit_manager(root, RESTORED_ONCE, RESTORED_ONCE.replace(" and rank != 0", " or rank != 0"))
    done = _cli(root, *PREFILL_ONLY)
    assert done.returncode == 1 and "capacity_fit violated" in done.stdout, done.stdout + done.stderr
    assert "the layout reads request 0" in done.stdout
    assert f"decided at: {MANAGER}:{line} `if not bool(is_prefilling[segment.global_batch_req_idx]) or rank != 0:`" in done.stdout


def test_a_layout_that_sets_no_gather_index_is_refused_naming_its_function(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    root = _copy(vllm_release, "0.29.0", tmp_path / "no-gather")
    _edit_manager(root, "        self._padded_gather_idx = async_copy_to_gpu(\n", "        _dropped = async_copy_to_gpu(\n")
    first = next(i for i, text in enumerate((root / MANAGER).read_text().splitlines()) if "def _build_batch_layout(" in text) + 1
    done = _cli(root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"PCPManager._build_batch_layout ({MANAGER}:{first}) set no gather and restore indices" in done.stderr


def test_the_shipped_layout_is_the_live_one_on_every_rank(vllm_release: Callable[[str], Path]) -> None:
    from cpgraph.reference.laid_out import layout_mismatch

    for version in ("0.29.0", "0.34.0"):
        policy = policy_from(str(vllm_release(version)))
        for p, lengths, flags in _batches(46, 60):
            if p == 1:
                continue
            kw = dict(cp_size=p, align_size=1, num_tokens=sum(lengths), extend_seq_lens=lengths, capture_num_tokens=SIZES,
                      bucket_local_tokens={s: s for s in SIZES}, max_padding_factor=None, is_prefilling=flags)
            for rank in range(p):
                step = policy.step(cp_rank=rank, cp_size=p, num_tokens=sum(lengths), extend_seq_lens=lengths,
                                   capture_num_tokens=SIZES, is_prefilling=flags)
                if step.replay is None:
                    continue
                layout = policy.local_layout(bucket=step.replay, cp_rank=rank, **kw)
                assert layout is not None and layout.restored is not None
                assert layout_mismatch(layout, lengths=lengths, cp_size=p, strategy=policy.strategy, is_prefilling=flags,
                                       capacity=step.replay) is None, (version, p, lengths, flags, rank)


def test_a_dealt_decode_read_back_from_the_wrong_rank_fails_on_the_graph_paths(
    vllm_release: Callable[[str], Path], tmp_path: Path
) -> None:
    """0.34.0 deals decodes round-robin (dcp 1): a sharded decode has one owner, which must be the row its output is
    read back from. With the owner test dropped, a decode dealt to rank 1 is read back from nowhere."""
    root = _copy(vllm_release, "0.34.0", tmp_path / "dealt-read-back")
    _edit_manager(root, "                    and not is_sharded_decode\n", "")
    done = _cli(root, "--cudagraph-modes", "PIECEWISE", "--dcp-sizes", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "capacity_fit violated on the PIECEWISE, decodes dual_chunk_swap (dcp 1), DP 1 path" in done.stdout
    assert "the layout reads request 1 [0, 1) back from rank 0 rows [1, 2), which do not hold those tokens" in done.stdout


def test_decodes_dealt_in_the_releases_own_order_are_its_live_layout(vllm_release: Callable[[str], Path]) -> None:
    """0.34.0 sorts a batch before dealing decodes round-robin (here the 3-token decode before the 1-token one): with
    speculative decodes of unequal lengths the dealing follows that order, and the layout it shows is judged in it
    (no finding; judged in the batch's given order it would break capacity_fit)."""
    from cpgraph.reference.graph_paths import GraphConfig, GraphStep, judge_dp

    policy = policy_from(str(vllm_release("0.34.0")))
    driver = policy.graph_path_drivers((1,))[0]
    config = GraphConfig("PIECEWISE", (3, 8), (1, 2), (3,), 256)
    step = GraphStep((1, 3), (False, False), 2, driver.placement(2))
    answers = driver.answers_dp(steps=[step], config=config)
    layout = answers[0][0].layout
    assert layout is not None and layout.order == (1, 0)  # the 3-token decode first: dealt to rank 0
    assert layout.rows[0] == ((1, 0, 3, 0),)
    assert judge_dp(list(zip([step], answers)), driver.captured(config=config)) == []
