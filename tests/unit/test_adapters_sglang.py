"""The sglang adapter's errors and its import sandbox, without downloading sglang (the released wheels are
checked in tests/quality/test_sglang_released.py)."""

import importlib.util
import sys
from pathlib import Path

import pytest

import cpgraph.adapters.sglang as adapter
from cpgraph.adapters.shim import Sandbox, Stub
from cpgraph.adapters.sglang import SglangAdapterError, policy_from


def test_a_folder_without_sglang_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SglangAdapterError, match=f"no sglang package under {tmp_path}"):
        policy_from(str(tmp_path))
    (tmp_path / "sglang").mkdir()
    with pytest.raises(SglangAdapterError, match="no prefill-CP CUDA-graph runner: missing"):
        policy_from(str(tmp_path))


def test_an_unknown_strategy_names_the_allowed_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="strategy must be one of zigzag, interleave; got 'spiral'"):
        policy_from(str(tmp_path), "spiral")
    with pytest.raises(AttributeError, match="policies: zigzag, interleave"):
        adapter.spiral  # noqa: B018


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang is installed here")
def test_the_installed_policies_say_when_sglang_is_not_installed() -> None:
    with pytest.raises(SglangAdapterError, match="sglang is not installed"):
        adapter.zigzag  # noqa: B018


def test_the_sandbox_runs_real_modules_over_stubs_and_keeps_them_to_itself(tmp_path: Path) -> None:
    pkg = tmp_path / "fakepkg"
    (pkg / "inner").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('the package root is never executed')\n")
    (pkg / "inner" / "__init__.py").write_text("")
    (pkg / "inner" / "real.py").write_text(
        "import torch\nfrom fakepkg.heavy import Base, decorate\nfrom fakepkg.config import knob\n"
        "class Thing(Base):\n    pass\n"
        "@decorate\ndef gone():\n    return 1\n"
        "def answer(n):\n    import fakepkg.inner.late as late\n    return n * knob() + late.VALUE + (1 if torch.cuda.is_available() else 0)\n"
    )
    (pkg / "inner" / "late.py").write_text("VALUE = 100\n")
    box = Sandbox(str(tmp_path), "fakepkg", ["fakepkg.inner.real", "fakepkg.inner.late"], {"fakepkg.config": {"knob": lambda: 3}})
    real = box.load("fakepkg.inner.real")
    assert "fakepkg.inner.real" not in sys.modules and "fakepkg" not in sys.modules
    with box:
        assert real.answer(2) == 106  # the late import is real, torch.cuda is a falsy stub
    assert "fakepkg.inner.late" not in sys.modules
    assert isinstance(real.gone, Stub) and not Stub() and real.Thing.__mro__[1] is object
    assert real.answer.__code__.co_filename == str(pkg / "inner" / "real.py")


def test_a_strict_stand_in_answers_only_what_it_was_given() -> None:
    from cpgraph.adapters.sglang.strict import NotProvided, strict

    class Runner:
        def can_run(self) -> bool:
            return bool(getattr(self, "enable_cp_bcg_capture", False)) and self.max_num_tokens > 0

    given = strict(Runner, "PrefillCudaGraphRunner", {"max_num_tokens": 8})
    assert given.max_num_tokens == 8 and given.can_run() is False  # the release's own default for an unset flag
    with pytest.raises(NotProvided, match="PrefillCudaGraphRunner.capture_num_tokens is read"):
        given.capture_num_tokens  # noqa: B018
    assert strict(Runner, "PrefillCudaGraphRunner", {"max_num_tokens": 8, "enable_cp_bcg_capture": True}).can_run()


def test_the_adapter_gives_only_names_the_release_assigns_or_declares(tmp_path: Path) -> None:
    from cpgraph.adapters.sglang.state import assigned, declared, given

    (tmp_path / "runner.py").write_text(
        "class R:\n    backend = None\n    def __init__(self):\n        self.enable_cp_v3_capture = True\n"
        "        setattr(self, 'max_num_tokens', 4)\n    def read(self):\n        return self.enable_cp_bcg_capture\n"
    )
    (tmp_path / "args.py").write_text("class ServerArgs:\n    enable_prefill_cp: bool = False\n")
    sets = assigned(str(tmp_path), ["runner.py"])
    assert {"enable_cp_v3_capture", "max_num_tokens", "backend"} <= sets and "enable_cp_bcg_capture" not in sets
    assert given({"enable_cp_bcg_capture": True, "enable_cp_v3_capture": True}, sets) == {"enable_cp_v3_capture": True}
    names = declared(str(tmp_path), ["args.py"])
    assert "enable_prefill_cp" in names and "enable_prefill_context_parallel" not in names


def test_an_undeclared_sglang_helper_refuses_a_truth_test_on_the_driven_path(tmp_path: Path) -> None:
    from cpgraph.adapters.sglang.helpers import HELPERS, NotDriven, driving, strict_helpers

    pkg = tmp_path / "sglang"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "gate.py").write_text(
        "import torch\nfrom sglang.srt.utils import graph_blocked, is_cuda\n"
        "SET_UP = bool(graph_blocked())\n"  # module set-up: the shim's falsy stub
        "def admit(n):\n    if not is_cuda() or torch.cuda.is_available():\n        return False\n"
        "    if graph_blocked(n):\n        return False\n    return True\n"
    )
    box = strict_helpers(Sandbox(str(tmp_path), "sglang", ["sglang.gate"]))
    gate = box.load("sglang.gate")
    assert HELPERS["is_cuda"][0] is True and gate.SET_UP is False
    with box:
        assert gate.admit(1) is True  # outside the driven path a stub stays falsy
        with driving(), pytest.raises(NotDriven, match="graph_blocked"):
            gate.admit(1)  # torch stays a plain stub; the sglang helper's answer is not made up
    with pytest.raises(ValueError, match="has loaded nothing"):
        strict_helpers(box)
    from cpgraph.adapters.sglang.helpers import Helper

    mode = Helper("sglang.srt.graph_mode")()
    assert mode != "graph"  # outside the driven path: the shim's identity comparison
    with driving(), pytest.raises(NotDriven, match="compares"):
        mode == "graph"  # noqa: B015


def test_a_stand_in_tensor_is_only_its_rows() -> None:
    from cpgraph.adapters.sglang.stand_ins import BufferRegistry, Rows

    rows = Rows(10)
    assert len(rows[:4]) == 4 and rows[2:].shape == (8,) and rows.zero_() is rows
    with pytest.raises(TypeError, match="only slices"):
        rows[3]
    registry = BufferRegistry()
    assert len(registry.get_slot("input_ids").slice_for(2, 16)) == 16 and not registry.has_slot("mamba_track_mask")
    with pytest.raises(KeyError, match="no slot 'input_embeds'"):
        registry.get_slot("input_embeds")
