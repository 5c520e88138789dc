"""The checker's verdicts, minimised witnesses and exit codes are those recorded in tests/data/check_verdicts.json
(tests/verdicts.py says how they are taken): mutants, a correct policy, sglang 0.5.17 and 0.5.23 on the
prefill subject, vLLM 0.28.0 and 0.34.0 on the graph-path subject, Megatron-Core 0.16.0 on the EP subject, and
the command line's exit codes."""

from __future__ import annotations

import json
from typing import Any

import pytest
import verdicts

RECORDED: dict[str, Any] = json.loads(verdicts.RECORD.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name, target, max_cases, release", verdicts.PREFILL, ids=[p[0] for p in verdicts.PREFILL])
def test_the_prefill_verdict_and_witnesses_are_the_recorded_ones(
    name: str, target: str, max_cases: int, release: tuple[str, str] | None
) -> None:
    if release is not None and not (verdicts.CACHE / release[0] / release[1]).is_dir():
        pytest.skip(f"{release[0]} {release[1]} is not unpacked under {verdicts.CACHE}")
    assert verdicts.prefill(target, max_cases, release) == RECORDED["prefill"][name]


@pytest.mark.parametrize("name, version", verdicts.PATHS, ids=[p[0] for p in verdicts.PATHS])
def test_the_graph_path_verdict_and_witnesses_are_the_recorded_ones(name: str, version: str) -> None:
    if not (verdicts.CACHE / "vllm" / version).is_dir():
        pytest.skip(f"vllm {version} is not unpacked under {verdicts.CACHE}")
    assert verdicts.paths(version) == RECORDED["graph_paths"][name]


@pytest.mark.parametrize("name, version", verdicts.EP, ids=[p[0] for p in verdicts.EP])
def test_the_ep_verdict_and_witnesses_are_the_recorded_ones(name: str, version: str) -> None:
    if not (verdicts.CACHE / "megatron-core" / version).is_dir():
        pytest.skip(f"megatron-core {version} is not unpacked under {verdicts.CACHE}")
    assert verdicts.ep(version) == RECORDED["ep_steps"][name]


def test_the_exit_codes_are_the_recorded_ones() -> None:
    if not (verdicts.CACHE / "vllm" / "0.34.0").is_dir() or not (verdicts.CACHE / "sglang" / "0.5.23").is_dir():
        pytest.skip(f"vllm 0.34.0 or sglang 0.5.23 is not unpacked under {verdicts.CACHE}")
    assert verdicts.exits() == RECORDED["exits"]
