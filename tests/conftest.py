"""Shared test settings: Hypothesis profiles (dev: quick, ci: deterministic and bounded); the ``vllm_release``
and ``sglang_release`` fixtures (vLLM's and sglang's released wheels, unpacked once per machine under a file lock, so
pytest-xdist workers never race on a download); the bundled designs' reviews computed once per
session (the solver work of a review is the suite's costliest)."""

from __future__ import annotations

import os
import pickle
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest
from hypothesis import HealthCheck, settings

from cpgraph.adapters.releases import ReleaseUnavailable, locked, unpack

T = TypeVar("T")

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


# -- Released wheels (vLLM's and sglang's), for the adapters' real-code tests ----------------------------------
# Each release's files a test needs, unpacked once per machine outside the work tree (the wheel, up to 500 MB
# for vLLM, is deleted after unpacking); CPGRAPH_VLLM_CACHE / CPGRAPH_SGLANG_CACHE move them. A wheel already
# downloaded into ~/.cache/cpgraph-wheels is unpacked from there instead of downloading it again (and left in
# place). A file lock per release makes one process (a pytest-xdist worker, another run) fetch it while any
# other waits; the unpacked folder is renamed into place whole, so no reader ever sees half of it.
VLLM_CACHE = Path(os.environ.get("CPGRAPH_VLLM_CACHE", str(Path.home() / ".cache" / "cpgraph" / "vllm")))
SGLANG_CACHE = Path(os.environ.get("CPGRAPH_SGLANG_CACHE", str(Path.home() / ".cache" / "cpgraph" / "sglang")))
WHEELS = Path.home() / ".cache" / "cpgraph-wheels"


machine_lock = locked  # one process at a time (a pytest-xdist worker, another run) fills a shared cache folder


def release_root(package: str, version: str, cache: Path, folder: str, keep: Callable[[str], bool]) -> Path:
    """``cache``/``folder``: the members of ``package``==``version``'s wheel that ``keep`` selects, downloaded and
    unpacked on first use (under the release's file lock); pytest.skip with pip's reason when the package index
    cannot be reached."""
    root = cache / folder
    if (root / "WHEEL-FILE").is_file():
        return root
    with machine_lock(cache, folder):  # one download per machine, however many workers ask at once
        if not (root / "WHEEL-FILE").is_file():
            _unpack(package, version, cache, root, keep)
    return root


def _unpack(package: str, version: str, cache: Path, root: Path, keep: Callable[[str], bool]) -> None:
    """The release's wheel (from ~/.cache/cpgraph-wheels when there, else downloaded) unpacked into ``root``
    by cpgraph.adapters.releases.unpack; pytest.skip with pip's reason when it cannot be downloaded."""
    wheels = sorted(WHEELS.glob(f"{package}-{version}-*.whl"))
    try:
        unpack(package, version, cache, root, keep, wheel=wheels[0] if wheels else None)
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))


def vllm_release_root(version: str) -> Path:
    """The folder holding vLLM ``version``'s ``vllm`` package (.py files only), see release_root."""
    return release_root("vllm", version, VLLM_CACHE, version, lambda m: m.startswith("vllm/") and m.endswith(".py"))


def sglang_release_root(version: str, needed: tuple[str, ...]) -> Path:
    """The folder holding the files ``needed`` (paths, or folders ending in /) of sglang ``version``'s wheel;
    the folder's name carries a checksum of ``needed``, so a test that needs other files gets a fresh unpack."""
    key = zlib.crc32("\n".join(needed).encode())
    return release_root("sglang", version, SGLANG_CACHE, f"{version}-{key:08x}",
                        lambda m: any(m == n or (n.endswith("/") and m.startswith(n)) for n in needed))


@pytest.fixture(scope="session")
def vllm_release() -> Callable[[str], Path]:
    """``vllm_release(version)``: the unpacked release's folder (see vllm_release_root)."""
    return vllm_release_root


@pytest.fixture(scope="session")
def sglang_release() -> Callable[[str, tuple[str, ...]], Path]:
    """``sglang_release(version, needed)``: the unpacked release's folder (see sglang_release_root)."""
    return sglang_release_root


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, once per run of the suite: under pytest-xdist the first worker to ask computes it and
    pickles it into the run's shared temporary folder (under a lock), and every other worker loads that; in a
    serial run it is simply computed (the session fixture that calls this keeps it for the session)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return compute()
    shared = tmp_path_factory.getbasetemp().parent  # this run's folder, one per run, above every worker's own
    path = shared / f"{name}.pickle"
    with machine_lock(shared, name):
        if path.is_file():
            value: T = pickle.loads(path.read_bytes())
            return value
        value = compute()
        path.write_bytes(pickle.dumps(value))
        return value


def _review(design: str, against: str | None = None) -> Review:
    from cpgraph.design.report import review
    from cpgraph.design.schema import load_design

    return review(load_design(design), against=load_design(against) if against else None)


@pytest.fixture(scope="session")
def default_review(tmp_path_factory: pytest.TempPathFactory) -> Review:
    """What ``cpgraph review`` with no arguments reviews (the bundled upstream design against the pre-fix
    prefix design, with the diff), computed once per run for every test that reads it (about 10 CPU s)."""
    return once_per_run(tmp_path_factory, "default-review", lambda: _review("upstream", "prefix"))


@pytest.fixture(scope="session")
def prefix_review(tmp_path_factory: pytest.TempPathFactory) -> Review:
    """``cpgraph review prefix``: the pre-fix design alone (refuted), computed once per run."""
    return once_per_run(tmp_path_factory, "prefix-review", lambda: _review("prefix"))


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
