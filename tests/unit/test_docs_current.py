"""Generated docs are current: docs/measurements.md is what benchmarks/report.py makes of benchmarks/results, so
no figure on it is typed by hand or left behind by a newer report."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _report_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("benchmarks_report", ROOT / "benchmarks" / "report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_measurements_page_equals_the_results() -> None:
    report = _report_module()
    page = ROOT / "docs" / "measurements.md"
    assert page.exists(), f"docs/measurements.md is missing: run {report.COMMAND}"
    assert page.read_text() == report.render(), (
        f"docs/measurements.md differs from benchmarks/results/*.json: run {report.COMMAND} and commit the page")


def test_every_benchmark_with_results_has_a_row() -> None:
    rows, missing, skipped = _report_module().newest()
    assert rows, "no benchmark report was read"
    assert skipped == [], f"reports newer than the page's rows that no reader understands: {skipped}"
    names = {row.benchmark for row in rows}
    assert len(names) == len(rows), "two rows for one benchmark"
