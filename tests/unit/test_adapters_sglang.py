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
