"""Every link in every Markdown file of the repository resolves inside the repository (no link leaves it:
no ../ outside the root, no web address), so the docs work in every clone."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _markdown_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        files = [ROOT / line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist): walk the tree
        files = [p for p in ROOT.rglob("*.md") if ".venv" not in p.parts and "build" not in p.parts]
    return sorted(set(files))


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_markdown_link_resolves_inside_the_repository(path: Path) -> None:
    for target in LINK.findall(path.read_text()):
        assert "://" not in target and not target.startswith("mailto:"), f"{path.name}: {target} leaves the repository"
        file_part = target.split("#", 1)[0]
        if not file_part:
            continue
        resolved = (path.parent / file_part).resolve()
        assert resolved.is_relative_to(ROOT), f"{path.name}: {target} points outside the repository"
        assert resolved.exists(), f"{path.name}: {target} does not exist"
