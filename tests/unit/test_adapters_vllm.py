"""The vLLM adapter's errors, without a vLLM release (the released wheels are driven in
tests/quality/test_vllm_released.py): a missing stack is an AdapterError naming what to install or pass,
and the command line turns it into a usage error (exit 2) for the vLLM and the sglang adapter alike."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import cpgraph.adapters.vllm as adapter
from cpgraph.adapters import AdapterError, policy_at
from cpgraph.adapters.sglang import SglangAdapterError
from cpgraph.adapters.vllm import NEWEST, VllmAdapterError, policy_from
from cpgraph.adapters.vllm.release import read_glue

HINT = f"pip download --no-deps vllm=={NEWEST}"  # the newest release the families were read against
INSTALLED = importlib.util.find_spec("vllm") is not None


def test_a_folder_without_vllm_is_an_adapter_error_naming_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(VllmAdapterError, match=f"--adapter-root {tmp_path}: no vllm package in it; {HINT}") as raised:
        policy_from(str(tmp_path))
    assert isinstance(raised.value, AdapterError) and "--adapter-root DIR" in str(raised.value)
    with pytest.raises(VllmAdapterError, match="no such folder"):
        policy_from(str(tmp_path / "absent"))


def test_a_vllm_without_model_runner_v2_pcp_names_the_missing_files(tmp_path: Path) -> None:
    (tmp_path / "vllm").mkdir()
    with pytest.raises(VllmAdapterError, match=r"no Model Runner V2 prefill context parallel \(missing vllm\.v1\.worker\.gpu\.pcp_manager"):
        policy_from(str(tmp_path))


def test_a_model_runner_whose_glue_differs_is_refused_naming_the_step(tmp_path: Path) -> None:
    gpu = tmp_path / "vllm" / "v1" / "worker" / "gpu"
    gpu.mkdir(parents=True)
    (gpu / "model_runner.py").write_text("class GPUModelRunner:\n    def execute_model(self):\n        return None\n")
    (gpu / "pcp_manager.py").write_text("")
    # the partition is still restated (located by shape); the dispatch before it is run from the source
    with pytest.raises(VllmAdapterError, match="does not match the glue the adapter restates \\(the model runner partitions the batch"):
        read_glue(str(tmp_path))


def test_bad_options_name_the_allowed_values(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="policy must be one of pcp; got 'zigzag'"):
        policy_from(str(tmp_path), "zigzag")
    with pytest.raises(ValueError, match="planted must be False, True \\(= 'pre_fix'\\) or one of pre_fix, global_dispatch; got 'later'"):
        policy_from(str(tmp_path), planted="later")
    with pytest.raises(ValueError, match="dcp_size must be an int >= 1, got 0"):
        policy_from(str(tmp_path), dcp_size=0)
    with pytest.raises(AttributeError, match="policies: pcp"):
        adapter.zigzag  # noqa: B018


def test_policy_at_builds_an_adapter_modules_policy_from_a_root(tmp_path: Path) -> None:
    with pytest.raises(VllmAdapterError, match="no vllm package"):
        policy_at("cpgraph.adapters.vllm:pcp", str(tmp_path))
    with pytest.raises(SglangAdapterError, match="no sglang package"):
        policy_at("cpgraph.adapters.sglang:zigzag", str(tmp_path))
    with pytest.raises(ValueError, match="works with an adapter module .* 'cpgraph.reference.policy' has none"):
        policy_at("cpgraph.reference.policy:admit", str(tmp_path))
    with pytest.raises(ValueError, match="needs a policy written MODULE:ATTR"):
        policy_at("cpgraph.adapters.vllm", str(tmp_path))


@pytest.mark.skipif(INSTALLED, reason="vllm is installed here")
def test_the_installed_policy_says_when_vllm_is_not_installed() -> None:
    with pytest.raises(VllmAdapterError, match=f"vLLM is not installed in this environment.*{HINT}.*--adapter-root DIR"):
        adapter.pcp  # noqa: B018


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cpgraph", "check", *argv, "--max-cases", "50"],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(INSTALLED, reason="vllm is installed here")
def test_the_cli_says_what_to_install_or_pass_when_vllm_is_missing() -> None:
    done = _cli("cpgraph.adapters.vllm:pcp")
    assert done.returncode == 2, done.stdout + done.stderr
    assert HINT in done.stderr and "--adapter-root DIR" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_cli_refuses_an_adapter_root_without_the_stack(tmp_path: Path) -> None:
    done = _cli("cpgraph.adapters.vllm:pcp", "--adapter-root", str(tmp_path))
    assert done.returncode == 2 and f"--adapter-root {tmp_path}: no vllm package in it" in done.stderr and HINT in done.stderr
    done = _cli("cpgraph.adapters.sglang:zigzag", "--adapter-root", str(tmp_path))
    assert done.returncode == 2 and f"no sglang package under {tmp_path}" in done.stderr
    done = _cli("cpgraph.reference.policy:admit", "--adapter-root", str(tmp_path))
    assert done.returncode == 2 and "--adapter-root works with an adapter module" in done.stderr


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang is installed here")
def test_the_cli_says_what_to_install_or_pass_when_sglang_is_missing() -> None:
    done = _cli("cpgraph.adapters.sglang:zigzag")
    assert done.returncode == 2 and "pip install sglang" in done.stderr and "--adapter-root DIR" in done.stderr


def test_the_sandbox_hands_outside_packages_through_for_real(tmp_path: Path) -> None:
    from cpgraph.adapters.shim import Sandbox, Stub

    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "real.py").write_text("import numpy as np\nimport torch\ndef total(xs):\n    return int(np.asarray(xs).sum()), torch.zeros(3)\n")
    box = Sandbox(str(tmp_path), "fakepkg", ["fakepkg.real"], outside=("numpy",))
    real = box.load("fakepkg.real")
    with box:
        count, tensor = real.total([1, 2, 3])
    assert count == 6 and isinstance(tensor, Stub) and real.np is sys.modules["numpy"]
