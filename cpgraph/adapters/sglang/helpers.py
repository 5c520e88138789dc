"""sglang's own helpers that the sandbox stubs, made strict: the driven path may call them and pass their
results along, but a branch on one (its truth value) is refused unless the adapter declares the answer.

The shim's stubs are falsy ("a feature it stands for is off"). On the forward path that would let a release
that gates the graph on a new helper (``if cp_graph_blocked(batch): return False``) be judged as if the gate
were open. Here every name an sglang module the sandbox stubs hands out is a ``Helper``: calling it, reading
its attributes or using it as a context manager gives another Helper, and testing its truth raises
``NotDriven``, which the check reports at the release's line that tested it (exit 2). The helpers whose
answers the adapter declares (``HELPERS``, with the configuration they stand for) answer those values.
torch, triton and other packages stay plain stubs: they are the GPU, not sglang's decisions. Only the driven
path is strict (``driving()``): the module-level set-up run at import keeps the shim's falsy stubs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from cpgraph.adapters.shim import Sandbox, Stub, StubModule

# name (last part) -> (the answer its call gives, the configuration it stands for)
HELPERS: Mapping[str, tuple[object, str]] = {
    "has_forward_context": (False, "no forward context is open outside the model runner"),
    "get_global_dwdp_manager": (None, "no DWDP manager"),
    "is_dsa_enable_prefill_cp": (False, "no DSA (sparse-attention) prefill CP"),
    "is_mla_cp_enabled": (False, "no MLA CP"),
    "require_gathered_buffer": (False, "no DP attention gather buffer"),
    "require_mlp_tp_gather": (False, "no DP attention gather"),
    "require_attn_tp_gather": (False, "no DP attention gather"),
    "is_cuda": (True, "a CUDA device"),
    "is_npu": (False, "a CUDA device"),
    "is_hip": (False, "a CUDA device"),
    "prefill_graph_tolerates_sum_len": (False, "graphs need every DP rank on the same path"),
    "is_allocation_symmetric": (True, "symmetric allocation"),
    "use_input_scattered": (False, "attention-TP input is not scattered (attention TP 1 under CP)"),
}


_DRIVING = False


@contextlib.contextmanager
def driving() -> Iterator[None]:
    """Helpers refuse truth tests inside this block (the driven path), not while modules are imported."""
    global _DRIVING
    before, _DRIVING = _DRIVING, True
    try:
        yield
    finally:
        _DRIVING = before


# attribute (last part) of a stubbed server object (the model, the attention backend, the pipeline group)
# -> (its value, the configuration it stands for)
ATTRIBUTES: Mapping[str, tuple[object, str]] = {
    "is_last_rank": (True, "no pipeline parallelism: the one pipeline rank is the last"),
    "is_first_rank": (True, "no pipeline parallelism: the one pipeline rank is the first"),
    "skips_prefill_metadata_on_idle_dp_rank": (False, "no DP attention: no idle DP rank"),
}


class NotDriven(TypeError):
    """The release branched on an sglang helper the sandbox stubs and the adapter does not declare."""


class Helper(Stub):
    """An sglang name the sandbox stubs: passes through calls and attributes, refuses a truth test."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name in ATTRIBUTES:
            return ATTRIBUTES[name][0]
        return Helper(f"{object.__getattribute__(self, '_name')}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = object.__getattribute__(self, "_name")
        last = name.rsplit(".", 1)[-1]
        if last in HELPERS:
            return HELPERS[last][0]
        return Helper(f"{name}()")

    def __getitem__(self, key: object) -> Helper:
        return Helper(f"{object.__getattribute__(self, '_name')}[]")

    def _refused(self, what: str) -> NotDriven:
        return NotDriven(
            f"the release {what} {self!r}, an sglang helper the sandbox stubs and the adapter does not drive or "
            f"declare (cpgraph/adapters/sglang/helpers.py HELPERS)"
        )

    def __bool__(self) -> bool:
        if not _DRIVING:
            return False  # module set-up at import time is not the driven path: the shim's "feature off"
        raise self._refused("branches on")

    def __eq__(self, other: object) -> bool:
        if _DRIVING and other is not self:
            raise self._refused("compares")
        return other is self

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = Stub.__hash__


class HelperModule(StubModule):
    """A stubbed sglang module whose every attribute is a Helper."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = Helper(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _Modules(dict[str, Any]):
    """The sandbox's module table: an sglang stub module entering it becomes a HelperModule."""

    def __init__(self, package: str) -> None:
        super().__init__()
        self.package = package

    def __setitem__(self, name: str, module: Any) -> None:
        if type(module) is StubModule and name.split(".")[0] == self.package:
            module.__class__ = HelperModule
        super().__setitem__(name, module)


def strict_helpers(sandbox: Sandbox) -> Sandbox:
    """``sandbox`` with the package's stub modules handing out Helpers (call before loading anything)."""
    if sandbox.modules:
        raise ValueError(f"strict_helpers needs a sandbox that has loaded nothing; it holds {sorted(sandbox.modules)}")
    sandbox.modules = _Modules(sandbox.package)
    return sandbox
