"""Shared test settings: Hypothesis profiles (dev: quick, ci: deterministic and bounded); the ``vllm_release``
fixture (vLLM's released wheels, unpacked once per machine)."""

import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# -- vLLM's released wheels, for the vLLM adapter's tests --------------------------------------------------
# Each release's vllm/**.py files, unpacked once per machine outside the work tree (the wheel, 250-500 MB,
# is deleted after unpacking); CPGRAPH_VLLM_CACHE moves it. A wheel already downloaded into
# ~/.cache/cpgraph-wheels is unpacked from there instead of downloading it again (and left in place).
VLLM_CACHE = Path(os.environ.get("CPGRAPH_VLLM_CACHE", str(Path.home() / ".cache" / "cpgraph" / "vllm")))
VLLM_WHEELS = Path.home() / ".cache" / "cpgraph-wheels"


def _pip_reason(version: str, done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.splitlines()
    reason = next((line for line in reversed(lines) if "ERROR" in line), done.stderr.strip()[-300:])
    cause = next((line.strip() for line in lines if any(w in line for w in ("Retrying", "Connection", "Could not fetch", "NewConnectionError"))), "")
    return f"cannot download vllm=={version} from the package index: {reason or 'no wheel'}{f' ({cause[:200]})' if cause else ''}"


def vllm_release_root(version: str) -> Path:
    """The folder holding vLLM ``version``'s ``vllm`` package (.py files only), downloaded and unpacked on
    first use; pytest.skip with pip's reason when the package index cannot be reached."""
    root = VLLM_CACHE / version
    if (root / "WHEEL-FILE").is_file():
        return root
    VLLM_CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=VLLM_CACHE, prefix=f".download-{version}-") as scratch:
        wheels = sorted(VLLM_WHEELS.glob(f"vllm-{version}-*.whl"))
        if not wheels:
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
                     "--timeout", "20", "--retries", "1", f"vllm=={version}", "-d", scratch],
                    capture_output=True, text=True, timeout=600,
                )
            except subprocess.TimeoutExpired:
                pytest.skip(f"pip download vllm=={version} timed out after 600 s: the package index is unreachable or slow")
            wheels = sorted(Path(scratch).glob(f"vllm-{version}-*.whl"))
            if done.returncode != 0 or not wheels:
                pytest.skip(_pip_reason(version, done))
        unpacked = Path(scratch) / "unpacked"
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(unpacked, [m for m in wheel.namelist() if m.startswith("vllm/") and m.endswith(".py")])
        (unpacked / "WHEEL-FILE").write_text(wheels[0].name + "\n")
        try:
            unpacked.rename(root)  # atomic: a concurrent run unpacking the same release keeps the first
        except OSError:
            if not (root / "WHEEL-FILE").is_file():
                raise
    return root


@pytest.fixture(scope="session")
def vllm_release() -> Callable[[str], Path]:
    """``vllm_release(version)``: the unpacked release's folder (see vllm_release_root)."""
    return vllm_release_root
