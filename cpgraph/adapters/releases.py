"""Releases of a stack on the package index: which there are, and one unpacked into a cache.

``index_versions(package)`` asks the package index (``pip index versions``) which releases there are;
``in_range(versions, spec)`` reads ``VERSION`` or ``LOW..HIGH`` (both ends included) against them;
``fetch(package, version)`` downloads the release's wheel without its dependencies, keeps only the
package's ``.py`` files (a vLLM wheel is 250-500 MB; its Python is a few MB) under
``$CPGRAPH_CACHE/<package>/<version>`` (default ``~/.cache/cpgraph``), and returns that folder, the root an
adapter drives (``--adapter-root``). A download that cannot be made is a ``ReleaseUnavailable`` naming pip's
reason. Writes are under a file lock and renamed into place whole, so parallel runs share one download.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from cpgraph.adapters import AdapterError



def stack_packages() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every stack's distribution on the package index (``PACKAGE`` of each folder under cpgraph/adapters/, so a
    new stack needs no edit here) -> (its import package, the pip arguments its wheels need): a stack declares
    ``IMPORT_PACKAGE`` when its import package has another name, and ``DOWNLOAD_ARGS`` (megatron-core's wheels
    from 0.17 on are built for Python 3.12 only; only their .py files are kept, so any Python reads them)."""
    from cpgraph.adapters import stacks  # the stacks import this module: looked up when asked, not at import

    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for module in stacks().values():
        package = getattr(module, "PACKAGE", None)
        if isinstance(package, str):
            out[package] = (str(getattr(module, "IMPORT_PACKAGE", package)), tuple(getattr(module, "DOWNLOAD_ARGS", ())))
    return out


def _known(package: str) -> tuple[str, tuple[str, ...]]:
    known = stack_packages()
    if package not in known:
        raise ValueError(f"package must be one of {', '.join(sorted(known))} (the stacks under cpgraph/adapters/); got {package!r}")
    return known[package]

MARKER = "WHEEL-FILE"  # written last into an unpacked release: the wheel's name
PIP_TIMEOUT_S = 900


class ReleaseUnavailable(AdapterError):
    """A release that cannot be listed or downloaded here (the package index's or pip's reason is named)."""


def version_key(version: str) -> tuple[int, ...]:
    """A version as a sortable tuple of its leading numeric parts ('0.27.1' -> (0, 27, 1), '0.5.6.post1' ->
    (0, 5, 6))."""
    parts = []
    for part in version.split("."):
        found = re.match(r"\d+", part)
        if found is None:
            break
        parts.append(int(found.group()))
        if found.end() != len(part):
            break
    return tuple(parts)


def release_version(root: str, package: str, version_files: Sequence[str] = ("version.py", "_version.py")) -> str:
    """The version of the ``package`` release under ``root``, for reports, read and never run: the
    ``__version__`` (or ``version``) string of one of the package's ``version_files``, else the wheel named in
    the ``WHEEL-FILE`` that ``fetch`` writes, else a ``<package>-*.dist-info`` beside the package, else the
    installed distribution when ``root`` is where it is installed, else 'unknown'."""
    for name in version_files:
        path = os.path.join(root, package, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), filename=path)
            for node in tree.body:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    if any(isinstance(t, ast.Name) and t.id in ("__version__", "version") for t in node.targets):
                        return node.value.value
    marker = os.path.join(root, MARKER)
    if os.path.isfile(marker):
        with open(marker, encoding="utf-8") as handle:
            wheel = handle.read().strip()
        if wheel.startswith(f"{package}-"):
            return wheel.split("-")[1]
    for entry in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        metadata = os.path.join(root, entry, "METADATA")
        if entry.startswith(f"{package}-") and entry.endswith(".dist-info") and os.path.isfile(metadata):
            with open(metadata, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
    try:
        dist = importlib.metadata.distribution(package)
        if os.path.abspath(str(dist.locate_file(""))) == os.path.abspath(root):
            return dist.version
    except importlib.metadata.PackageNotFoundError:
        pass
    return "unknown"


def is_final(version: str) -> bool:
    """A final release ('0.34.0', '0.5.6.post1'), not a pre-release or a dev build."""
    return re.fullmatch(r"\d+(\.\d+)*(\.post\d+)?", version) is not None


def cache_dir() -> Path:
    return Path(os.environ.get("CPGRAPH_CACHE", str(Path.home() / ".cache" / "cpgraph")))


def _pip(args: Sequence[str], what: str) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run([sys.executable, "-m", "pip", *args, "--disable-pip-version-check"],
                              capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ReleaseUnavailable(f"{what}: pip took over {PIP_TIMEOUT_S} s (the package index is unreachable or slow)") from None
    except OSError as exc:
        raise ReleaseUnavailable(f"{what}: cannot run pip ({exc})") from None
    return done


def pip_reason(stderr: str) -> str:
    """The line of pip's stderr that says why it failed (and the connection error behind it, when named)."""
    lines = [line for line in stderr.splitlines() if not line.startswith("WARNING: Location '")]
    reason = next((line for line in reversed(lines) if "ERROR" in line), "\n".join(lines).strip()[-300:])
    cause = next((line.strip() for line in lines if any(w in line for w in ("Retrying", "Connection", "Could not fetch", "NewConnectionError"))), "")
    return (reason or "no wheel") + (f" ({cause[:200]})" if cause else "")


def index_versions(package: str) -> list[str]:
    """The final releases of ``package`` on the package index, oldest first."""
    _, target = _known(package)
    done = _pip(["index", "versions", *target, package], f"cannot list {package} releases")
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("Available versions:")), None)
    if done.returncode != 0 or line is None:
        raise ReleaseUnavailable(f"cannot list {package} releases from the package index: {pip_reason(done.stderr)}")
    versions = [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    return sorted((v for v in versions if is_final(v)), key=version_key)


def newest(package: str) -> str:
    """The newest final release of ``package`` on the package index."""
    versions = index_versions(package)
    if not versions:
        raise ReleaseUnavailable(f"the package index lists no final release of {package}")
    return versions[-1]


def in_range(spec: str, versions: Sequence[str] | None = None, *, package: str = "vllm") -> list[str]:
    """The releases ``spec`` names: ``VERSION`` (itself), or ``LOW..HIGH``: every final release of ``versions``
    (default: the package index's) from LOW to HIGH, both included, oldest first."""
    text = spec.strip()
    low, sep, high = text.partition("..")
    pattern = r"\d+(\.\d+)*(\.post\d+)?"
    if not re.fullmatch(pattern, low) or (sep and not re.fullmatch(pattern, high)):
        raise ValueError(f"--release must be VERSION or LOW..HIGH (e.g. 0.34.0 or 0.26.0..0.34.0), got {spec!r}")
    if not sep:
        return [low]
    if version_key(low) > version_key(high):
        raise ValueError(f"--release {spec}: the range runs from its lower release to its higher one (LOW..HIGH)")
    listed = index_versions(package) if versions is None else list(versions)
    chosen = [v for v in listed if version_key(low) <= version_key(v) <= version_key(high)]
    if not chosen:
        raise ValueError(f"--release {spec}: the package index lists no {package} release in that range")
    return sorted(chosen, key=version_key)


@contextlib.contextmanager
def locked(folder: Path, name: str) -> Iterator[None]:
    """Hold an exclusive lock on ``folder``/.``name``.lock: one process at a time fills a cache folder the
    machine shares (a parallel run, a pytest-xdist worker); the others wait, then find it full."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _python_files(package: str) -> Callable[[str], bool]:
    return lambda member: member.startswith(f"{package}/") and member.endswith(".py")


def fetch(package: str, version: str, cache: Path | None = None) -> Path:
    """The folder holding ``package``==``version``'s package (.py files only), downloaded and unpacked on
    first use (see the module docstring); ReleaseUnavailable with pip's reason when it cannot be."""
    _known(package)
    folder = (cache or cache_dir()) / package
    root = folder / version
    if (root / MARKER).is_file():
        return root
    with locked(folder, version):
        if not (root / MARKER).is_file():
            unpack(package, version, folder, root)
    return root


def download(package: str, version: str, into: str) -> Path:
    """``package``==``version``'s wheel, downloaded without dependencies into ``into``."""
    spec = f"{package}=={version}"
    done = _pip(["download", "--no-deps", "--only-binary", ":all:", *_known(package)[1], "-q", "--timeout", "30",
                 "--retries", "2", spec, "-d", into], f"cannot download {spec}")
    wheels = sorted(Path(into).glob(f"{package.replace('-', '_')}-{version}-*.whl"))
    if done.returncode != 0 or not wheels:
        raise ReleaseUnavailable(f"cannot download {spec} from the package index: {pip_reason(done.stderr)}")
    return wheels[0]


def unpack(package: str, version: str, folder: Path, root: Path, keep: Callable[[str], bool] | None = None,
           wheel: Path | None = None) -> None:
    """Unpack the members ``keep`` selects (default: the package's .py files) of the wheel (downloaded unless
    given) into ``root``, whole: written beside it and renamed into place."""
    with tempfile.TemporaryDirectory(dir=folder, prefix=f".download-{version}-") as scratch:
        found = wheel if wheel is not None else download(package, version, scratch)
        unpacked = Path(scratch) / "unpacked"
        with zipfile.ZipFile(found) as archive:
            archive.extractall(unpacked, [m for m in archive.namelist() if (keep or _python_files(_known(package)[0]))(m)])
        (unpacked / MARKER).write_text(found.name + "\n")
        if root.exists():  # a half-written folder from an interrupted run (no marker)
            shutil.rmtree(root)
        unpacked.rename(root)

