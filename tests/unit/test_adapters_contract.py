"""Every stack adapter folder implements the declared contract (cpgraph/adapters/contract.py), and the list of
stacks comes from the folders that exist."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

import cpgraph.adapters as adapters
from cpgraph.adapters.contract import REQUIRED, Driven, StandIn, conformance


def test_stacks_are_the_folders_under_adapters() -> None:
    folders = {p.name for p in Path(adapters.__file__).parent.iterdir() if (p / "__init__.py").is_file()}
    assert set(adapters.stacks()) == folders
    assert {"vllm", "sglang"} <= folders


@pytest.mark.parametrize("name", sorted(adapters.stacks()))
def test_every_stack_conforms_to_the_contract(name: str) -> None:
    module = adapters.stacks()[name]
    assert conformance(module) == []
    for policy in getattr(module, "POLICIES"):
        assert f"cpgraph.adapters.{name}:{policy}" in adapters.stack_targets()


def test_conformance_names_what_a_stack_lacks() -> None:
    empty = types.ModuleType("cpgraph.adapters.nothing")
    assert sorted(p.split()[0] for p in conformance(empty)) == sorted(REQUIRED)
    partial = types.ModuleType("cpgraph.adapters.partial")
    for name, value in {"STACK": "x", "PACKAGE": "x", "POLICIES": ("p",), "READ_AGAINST": ("1.0", "2.0"),
                        "NEWEST": "1.0", "EXECUTED": (Driven("f", "x/f.py"),), "STOOD_IN": ("a string",),
                        "installed_root": lambda: "", "policy_from": 3}.items():
        setattr(partial, name, value)
    problems = conformance(partial)
    assert any(p.startswith("STOOD_IN must be a non-empty tuple of StandIn") for p in problems)
    assert "policy_from must be callable" in problems
    assert any(p.startswith("NEWEST must be READ_AGAINST's last release '2.0'") for p in problems)
    setattr(partial, "STOOD_IN", (StandIn("a", "b"),))
    setattr(partial, "policy_from", lambda root, policy="p": None)
    setattr(partial, "NEWEST", "2.0")
    assert conformance(partial) == []


def test_policy_at_names_the_adapters_when_the_module_is_none() -> None:
    with pytest.raises(ValueError, match="cpgraph.adapters.sglang, cpgraph.adapters.vllm"):
        adapters.policy_at("cpgraph.strategies:x", "/nonexistent")
    with pytest.raises(ValueError, match="MODULE:ATTR"):
        adapters.policy_at("cpgraph.adapters.vllm", "/nonexistent")
