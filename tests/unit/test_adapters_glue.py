"""cpgraph.adapters.glue on small planted sources (no release needed): each kind of assumption is read from
the syntax tree and a change is named at file:line; an exception is the release's only when its own raise or
assert raised it; the release-range spec is read strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpgraph.adapters.glue import (
    Assumption, GlueError, calls, changes, check_release, classify, defines, members, reads, signature,
)
from cpgraph.adapters.releases import in_range, is_final, release_version, version_key

SOURCE = '''
import enum

class Mode(enum.Enum):
    NONE = 0
    PIECEWISE = 1

class Manager:
    def __init__(self, config, device, mode, decode_query_len, lora=None, *, extra=0):
        self._captured = False
        self.sizes = config.capture_sizes

    def dispatch(self, num_reqs, num_tokens):
        if not self._captured:
            raise ValueError("not captured")
        registry.fill_from(num_tokens, padded_num_tokens=num_tokens)
        return self.table[num_tokens]

def guard(n):
    assert n >= 0, "negative"
    return n
'''


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(SOURCE)
    return tmp_path


def _names(root: Path, *assumed: Assumption) -> list[str]:
    return [c.name for c in changes(str(root), assumed)]


def test_a_kept_assumption_of_every_kind_is_no_change(root: Path) -> None:
    assert _names(
        root,
        signature("pkg/m.py", "Manager.__init__", positional=("config", "device", "mode", "decode_query_len"), keywords=("lora", "extra")),
        defines("pkg/m.py", "Manager.dispatch"),
        reads("pkg/m.py", ("_captured", "capture_sizes"), "Manager"),
        members("pkg/m.py", "Mode", ("NONE", "PIECEWISE")),
        calls("pkg/m.py", "fill_from", ("padded_num_tokens",)),
        defines("pkg/m.py", "missing_name|guard"),
    ) == []


def test_a_renamed_positional_parameter_is_named_at_its_line(root: Path) -> None:
    found = changes(str(root), [signature("pkg/m.py", "Manager.__init__", positional=("config", "device", "mode", "decode_query_lens"))])
    assert [c.name for c in found] == ["decode_query_lens"]
    assert found[0].where == "pkg/m.py:9" and "'decode_query_len' where the adapter passes 'decode_query_lens'" in found[0].detail


def test_a_new_required_parameter_and_an_unknown_keyword_are_changes(root: Path) -> None:
    assert _names(root, signature("pkg/m.py", "Manager.__init__", positional=("config", "device"), keywords=("mode",))) == ["decode_query_len"]
    assert _names(root, signature("pkg/m.py", "Manager.dispatch", positional=("num_reqs", "num_tokens"), keywords=("num_loras",))) == ["num_loras"]


def test_a_missing_definition_member_read_or_call_keyword_is_a_change(root: Path) -> None:
    assert _names(root, defines("pkg/m.py", "Manager.replay")) == ["replay"]
    assert _names(root, members("pkg/m.py", "Mode", ("FULL",))) == ["FULL"]
    assert _names(root, reads("pkg/m.py", ("_graphs_captured", "capture_sizes|cudagraph_capture_sizes"), "Manager")) == ["_graphs_captured"]
    assert _names(root, calls("pkg/m.py", "fill_from", ("padded_bs",))) == ["padded_bs"]
    assert _names(root, calls("pkg/m.py", "fill_buffers", ())) == ["fill_buffers"]
    assert _names(root, defines("pkg/other.py", "x")) == ["pkg/other.py"]


def test_check_release_names_the_adapter_release_change_and_range(root: Path) -> None:
    with pytest.raises(GlueError, match=r"adapter\.x cannot drive stack 9\.9 under .*pkg/m\.py:9: .*decode_query_lens.*read against stack 1-2"):
        check_release("adapter.x", "stack 9.9", str(root), [signature("pkg/m.py", "Manager.__init__", positional=("config", "device", "mode", "decode_query_lens"))], "stack 1-2")
    with pytest.raises(ValueError, match="kind must be one of"):
        Assumption("renamed", ("pkg/m.py",), "x")


def _raised(root: Path, code: str) -> Exception:
    namespace: dict[str, object] = {"registry": None}
    exec(compile(SOURCE, str(root / "pkg" / "m.py"), "exec"), namespace)
    try:
        exec(code, namespace)
    except Exception as exc:
        return exc
    raise AssertionError("nothing raised")


def test_the_releases_own_raise_or_assert_is_the_release_s_anything_else_is_glue(root: Path) -> None:
    own = _raised(root, "Manager(type('C', (), {'capture_sizes': 1}), 'cpu', 0, 1).dispatch(1, 2)")
    assert classify(own, "adapter.x", "stack 9.9", str(root), "stack 1-2") is own
    asserted = _raised(root, "guard(-1)")
    assert classify(asserted, "adapter.x", "stack 9.9", str(root), "stack 1-2") is asserted
    glue = _raised(root, "Manager(1, 'cpu', 0, 1)")  # int has no capture_sizes: the interpreter, not a raise
    out = classify(glue, "adapter.x", "stack 9.9", str(root), "stack 1-2")
    assert isinstance(out, GlueError)
    assert "AttributeError" in str(out) and "in __init__ at pkg/m.py:" in str(out) and "stack 9.9" in str(out), str(out)


def test_release_ranges_versions_and_names() -> None:
    assert version_key("0.27.1") == (0, 27, 1) and version_key("0.5.6.post1") == (0, 5, 6) and version_key("x") == ()
    assert is_final("0.34.0") and is_final("0.5.6.post1") and not is_final("0.35.0rc1")
    listed = ["0.25.0", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.34.0", "0.35.0"]
    assert in_range("0.26.0..0.34.0", listed) == ["0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.34.0"]
    assert in_range("0.34.0", listed) == ["0.34.0"]
    for bad in ("latest", "0.34.0..", "0.34..0.26", "..0.3"):
        with pytest.raises(ValueError, match="--release"):
            in_range(bad, listed)
    with pytest.raises(ValueError, match="no vllm release in that range"):
        in_range("0.29.0..0.33.0", listed)


def test_a_release_version_is_read_from_its_files_never_run(tmp_path: Path) -> None:
    (tmp_path / "sglang").mkdir()
    (tmp_path / "sglang" / "version.py").write_text('__version__ = "0.5.99"\nraise SystemExit(3)\n')
    assert release_version(str(tmp_path), "sglang") == "0.5.99"
    (tmp_path / "vllm").mkdir()
    (tmp_path / "WHEEL-FILE").write_text("vllm-0.40.0-cp38-abi3-manylinux1_x86_64.whl\n")
    assert release_version(str(tmp_path), "vllm", ("_version.py",)) == "0.40.0"


def test_real_code_that_computes_with_a_stub_is_stopped_as_glue_never_answered(tmp_path: Path) -> None:
    from cpgraph.adapters.shim import Stub, StubComputed

    cdiv = Stub("vllm.utils.math_utils.cdiv")
    for compute in (lambda: cdiv(9, 2) < 4, lambda: 3 * cdiv(1, 1), lambda: range(cdiv(2, 1)), lambda: cdiv() // 2):
        with pytest.raises(StubComputed, match=r"computed with <stub vllm\.utils\.math_utils\.cdiv\(\)>"):
            compute()
    assert not cdiv and (cdiv | True) is cdiv  # a stubbed feature flag is still off, and combines as before
    try:
        _ = cdiv(1, 2) > 0
    except StubComputed as exc:
        assert isinstance(classify(exc, "adapter.x", "stack 9.9", str(tmp_path), "stack 1-2"), GlueError)


@pytest.mark.parametrize("args, said", [
    (["cpgraph.adapters.vllm:pcp", "--release", "latest"], "--release must be VERSION or LOW..HIGH"),
    (["cpgraph.adapters.vllm:pcp", "--release", "0.34.0..0.26.0"], "the range runs from its lower release to its higher one"),
    (["cpgraph.adapters.vllm:pcp", "--release", "0.34.0", "--adapter-root", "."], "--release and --adapter-root both name"),
    (["proofs/mutants/ignore_capacity.py", "--release", "0.34.0"], "--release needs an adapter policy"),
])
def test_bad_release_flags_are_usage_errors_before_any_download(args: list[str], said: str) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "cpgraph", "check", *args, "--max-cases", "10"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
