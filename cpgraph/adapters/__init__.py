"""Adapters that present other projects' bucket-selection code as ``cpgraph check`` policies.

``cpgraph.adapters.sglang``: sglang's own prefill-CP CUDA-graph selector (``:zigzag``, ``:interleave``),
run from its files in an import sandbox (``cpgraph.adapters.shim``).
``cpgraph.adapters.vllm``: vLLM's Model Runner V2 prefill context parallel (``:pcp``): its PCPManager,
CudaGraphManager.dispatch and dispatch_cg_and_sync_dp, run the same way.

An adapter module builds its policies from an unpacked release with ``policy_from(root, name)`` (``name``
the attribute it serves from the installed package), so ``policy_at('MODULE:ATTR', root)`` (the command
line's ``--adapter-root DIR``) checks any release without installing it. A stack that is missing or has
no code to drive is an ``AdapterError``, which names what to install or pass.
"""

from __future__ import annotations

import importlib


class AdapterError(RuntimeError):
    """The stack an adapter drives is missing here, or has none of the code it drives; the message names
    what to install or pass (the command line reports it as a usage error, exit 2)."""


def policy_at(target: str, root: str) -> object:
    """The policy ``MODULE:ATTR`` of the release unpacked under ``root``: ``MODULE.policy_from(root, ATTR)``.
    ValueError when ``target`` does not name an adapter module's policy; the adapter's AdapterError when
    ``root`` holds no release it can drive."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr or ":" in attr:
        raise ValueError(f"--adapter-root needs a policy written MODULE:ATTR (e.g. cpgraph.adapters.vllm:pcp), got {target!r}")
    module = importlib.import_module(module_name)
    make = getattr(module, "policy_from", None)
    if not callable(make):
        raise ValueError(
            f"--adapter-root works with an adapter module (one with policy_from(root, name): cpgraph.adapters.sglang, "
            f"cpgraph.adapters.vllm); {module_name!r} has none"
        )
    policy: object = make(root, attr)
    return policy
