"""proofs/README.md's theorem catalogue is generated (proofs/catalogue.py) and current: one row per registered theorem
with its statement, declared scope and query count. The counts here are tests/data/prove_record.json's, which
tests/unit/test_prove_record.py keeps equal to the queries built (``query_counts``, about 10 s), so this check costs
no query building; the generator itself builds them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cpgraph.proofs import catalogue
from cpgraph.proofs.engine import scope as scope_module
from cpgraph.proofs.engine.scope import SCOPE
from cpgraph.proofs.registry import OBLIGATIONS

RECORD = Path(__file__).resolve().parents[1] / "data" / "prove_record.json"


def _recorded() -> dict[str, int]:
    return {t["name"]: t["queries"] for t in json.loads(RECORD.read_text())["theorems"]}


def test_the_committed_catalogue_is_current() -> None:
    stale = [str(path) for path, text in catalogue.generated(_recorded()).items() if path.read_text() != text]
    assert stale == [], f"{', '.join(stale)}: stale generated blocks; run: {catalogue.COMMAND}"


def test_the_catalogue_has_one_row_per_theorem_with_its_statement_scope_and_count() -> None:
    counts = _recorded()
    text = catalogue.table(counts)
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [re.match(r"\| `([a-z0-9_]+)`", row).group(1) for row in rows] == [o.name for o in OBLIGATIONS]  # type: ignore[union-attr]
    for o, row in zip(OBLIGATIONS, rows):
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells == [f"`{o.name}`", o.doc, SCOPE[o.name].text(), f"{counts[o.name]:,}"], o.name
    assert f"{len(OBLIGATIONS)} theorems, {sum(counts.values()):,} solver queries" in text
    with pytest.raises(KeyError, match=OBLIGATIONS[0].name):
        catalogue.table({})


def test_check_names_the_command_when_the_catalogue_is_stale(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(catalogue.README.read_text())
    monkeypatch.setattr(catalogue, "README", readme)
    monkeypatch.setattr(scope_module, "generated", lambda: {})  # the scope blocks: tests/unit/test_proofs_scope.py
    monkeypatch.setattr(catalogue, "query_counts", _recorded)
    assert catalogue.main(["--check"]) == 0
    counts = _recorded()
    counts[OBLIGATIONS[0].name] += 1  # a theorem that builds one query more than the committed catalogue says
    monkeypatch.setattr(catalogue, "query_counts", lambda: counts)
    assert catalogue.main(["--check"]) == 1
    assert f"run {catalogue.COMMAND}" in capsys.readouterr().out
    assert catalogue.main(["--markdown"]) == 0 and f"| {counts[OBLIGATIONS[0].name]:,} |" in readme.read_text()
    assert catalogue.main(["--check"]) == 0


def test_query_counts_builds_the_queries() -> None:
    cheap = tuple(o for o in OBLIGATIONS if o.over == "once")[:2]
    assert catalogue.query_counts(64, cheap) == {o.name: len(o.build(0)) for o in cheap}
