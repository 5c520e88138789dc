"""cpgraph/adapters/pristine.py (which lines of a tree differ from its release as released) and follow.py's
line tracer and statement map, on small trees made here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cpgraph.adapters.follow import code_objects, run_traced, statements_at
from cpgraph.adapters.pristine import Pristine, changed_in, pristine_roots

RELEASED = "def f(x):\n    y = g(\n        x,\n    )\n    if y:\n        return y\n    return 0\n"


def _tree(folder: Path, text: str, wheel: bool = False) -> Path:
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "m.py").write_text(text)
    if wheel:
        (folder / "WHEEL-FILE").write_text("pkg-1.0.whl\n")
    return folder


def test_changed_lines_are_told_against_the_cached_release_and_nothing_is_changed_in_the_release_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CPGRAPH_CACHE", str(tmp_path / "cache"))
    released = _tree(tmp_path / "cache" / "pkg" / "1.0", RELEASED, wheel=True)
    assert pristine_roots("pkg", "1.0") == (str(released),) and pristine_roots("pkg", "2.0") == ()
    planted = _tree(tmp_path / "planted", RELEASED.replace("    if y:\n", "    if y and x:\n"))
    assert changed_in(str(planted), pristine_roots("pkg", "1.0"), "pkg/m.py") == {5}
    assert changed_in(str(released), pristine_roots("pkg", "1.0"), "pkg/m.py") == frozenset()  # the release itself
    assert Pristine(str(planted), "pkg", "2.0").changed("pkg/m.py") == frozenset()  # no pristine copy cached
    # a statement copied below itself: difflib may align the original's lines to the copy's, the block is unchanged
    copied = _tree(tmp_path / "copied", RELEASED.replace("    if y:\n", "    z = g(\n        x,\n    )\n    if y:\n"))
    pristine = Pristine(str(copied), "pkg", "1.0")
    assert pristine.changed("pkg/m.py") and pristine.unchanged_block("pkg/m.py", 2, 4)
    assert not pristine.unchanged_block("pkg/m.py", 5, 7)
    assert pristine.mark("Pkg") == "(changed from Pkg 1.0 as released)"


def test_the_tracer_records_each_line_run_and_the_statement_map_gives_each_its_statement(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", RELEASED)
    path = str(tree / "pkg" / "m.py")
    namespace: dict[str, Any] = {"g": lambda x: 1 // x}
    exec(compile(RELEASED, path, "exec"), namespace)
    f = namespace["f"]
    ran, failed = run_traced(str(tree), code_objects([f]), lambda: f(3))
    assert failed is None and all(r.sliced and r.file == "pkg/m.py" for r in ran)
    at = statements_at(path)
    assert at[3].lineno == 2 and at[5].lineno == 5 and at[6].lineno == 6 and 1 in at  # a header owns its own lines only
    assert {at[r.line].lineno for r in ran} == {2, 5, 7}  # 1 // 3 is 0: the `if` ran, its body did not
    ran, failed = run_traced(str(tree), frozenset(), lambda: f(0))
    assert isinstance(failed, ZeroDivisionError) and {at[r.line].lineno for r in ran} == {2}
    assert not any(r.sliced for r in ran)  # not among the code objects named: code run whole
