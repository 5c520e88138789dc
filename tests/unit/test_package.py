"""What `pip install cpgraph` puts into site-packages: one top-level name, and torch only as the `[impl]` extra."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_installs_one_top_level_name() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["cpgraph*"]
    assert not any(dep.startswith("torch") for dep in project["project"]["dependencies"])
    assert any(dep.startswith("torch") for dep in project["project"]["optional-dependencies"]["impl"])
