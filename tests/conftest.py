"""Shared test settings: Hypothesis profiles (dev: quick, ci: deterministic and bounded); the ``vllm_release``
fixture (vLLM's released wheels, unpacked once per machine); the bundled designs' reviews computed once per
session (the solver work of a review is the suite's costliest)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from cpgraph.design.report import Review
    from cpgraph.design.schema import Design

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


@pytest.fixture(scope="session")
def default_review() -> Review:
    """What ``cpgraph review`` with no arguments reviews (the bundled upstream design against the pre-fix
    prefix design, with the diff), computed once for every test that reads it."""
    from cpgraph.design.report import review
    from cpgraph.design.schema import load_design

    return review(load_design("upstream"), against=load_design("prefix"))


@pytest.fixture(scope="session")
def prefix_review() -> Review:
    """``cpgraph review prefix``: the pre-fix design alone (refuted), computed once."""
    from cpgraph.design.report import review
    from cpgraph.design.schema import load_design

    return review(load_design("prefix"))


def _serve(monkeypatch: pytest.MonkeyPatch, cached: Review) -> None:
    """``cpgraph review`` of ``cached``'s design (and old design) answers ``cached``, so the CLI's rendering,
    formats and exit codes are tested without proving the same designs again; any other design is
    reviewed as usual."""
    import cpgraph.design.report as report

    real = report.review

    def review(design: Design, *, against: Design | None = None, progress: bool = False) -> Review:
        if cached.design == design and (cached.old[0] if cached.old else None) == against:
            return cached
        return real(design, against=against, progress=progress)

    monkeypatch.setattr(report, "review", review)


@pytest.fixture()
def default_review_served(monkeypatch: pytest.MonkeyPatch, default_review: Review) -> None:
    """In this test ``cpgraph review`` (no design: upstream against prefix) answers the session's review."""
    _serve(monkeypatch, default_review)


@pytest.fixture()
def prefix_review_served(monkeypatch: pytest.MonkeyPatch, prefix_review: Review) -> None:
    """In this test ``cpgraph review prefix`` answers the session's review of the prefix design."""
    _serve(monkeypatch, prefix_review)
