"""--emit-test writes a portable regression test: the policy by module name when it imports from
anywhere, else by a path relative to the test file; no absolute path; it runs from any directory,
fails while the bug is there and passes once the policy is fixed."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cpgraph.cli import main

BUGGY = "from cpgraph.proofs.mutants.ignore_capacity import admit, replay_bucket\n"
FIXED = "from cpgraph.reference.policy import admit, replay_bucket\n"
ARGS = ["--capacities", "captured", "--max-cases", "2000", "--cp-sizes", "2,4", "-q"]


def _pytest(test_file: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def _no_absolute_path(source: str, root: Path) -> None:
    assert str(root) not in source and "/tmp" not in source and "'/" not in source


def test_a_path_target_is_imported_relative_to_the_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = "policies/buggy_policy.py"
    project = tmp_path / "project"
    (project / "policies").mkdir(parents=True)
    (project / "policies" / "buggy_policy.py").write_text(BUGGY)
    monkeypatch.chdir(project)
    test_file = project / "tests" / "test_regression.py"
    assert main(["check", target, *ARGS, "--emit-test", str(test_file.relative_to(project))]) == 1
    source = test_file.read_text()
    _no_absolute_path(source, tmp_path)
    assert "os.path.join(HERE, '../policies/buggy_policy.py')" in source
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    failed = _pytest(test_file, elsewhere)
    assert failed.returncode == 1 and "capacity_fit broken" in failed.stdout, failed.stdout
    moved = tmp_path / "moved"
    shutil.copytree(project, moved)  # the test and the policy travel together
    assert _pytest(moved / "tests" / "test_regression.py", elsewhere).returncode == 1
    (project / "policies" / "buggy_policy.py").write_text(FIXED)
    passed = _pytest(test_file, elsewhere)
    assert passed.returncode == 0, passed.stdout


def test_a_module_importable_only_from_the_project_gets_a_relative_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    package = project / "emitstack_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "selector.py").write_text(BUGGY)
    monkeypatch.chdir(project)
    test_file = tmp_path / "ci" / "test_regression.py"
    assert main(["check", "emitstack_pkg.selector", *ARGS, "--emit-test", str(test_file)]) == 1
    source = test_file.read_text()
    _no_absolute_path(source, tmp_path)
    assert "POLICY = 'emitstack_pkg.selector'" in source and "ROOT = os.path.normpath(os.path.join(HERE, '../proj'))" in source
    assert "def test_selector_keeps_capacity_fit" in source
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _pytest(test_file, elsewhere).returncode == 1
    (package / "selector.py").write_text(FIXED)
    assert _pytest(test_file, elsewhere).returncode == 0


def test_an_installed_module_is_imported_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    test_file = tmp_path / "test_regression.py"
    assert main(["check", "cpgraph.proofs.mutants.ignore_capacity", *ARGS, "--emit-test", str(test_file)]) == 1
    source = test_file.read_text()
    assert "POLICY = 'cpgraph.proofs.mutants.ignore_capacity'" in source and "ROOT" not in source
    _no_absolute_path(source, tmp_path)
