"""Adapters that present other projects' bucket-selection code as ``cpgraph check`` policies.

One folder per stack (``cpgraph/adapters/<stack>/``), each implementing the contract declared in
``cpgraph/adapters/contract.py``; ``stacks()`` lists the folders that exist. Shared by every stack:
``shim.py`` (the import sandbox), ``glue.py`` (what an adapter assumes of a release, checked before the
first batch), ``releases.py`` (listing and fetching releases).

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
            f"--adapter-root works with an adapter module (one with policy_from(root, name): "
            f"{', '.join(sorted({t.partition(':')[0] for t in stack_targets()}))}); {module_name!r} has none"
        )
    policy: object = make(root, attr)
    return policy


def stacks() -> dict[str, object]:
    """Every stack adapter that exists: the packages under cpgraph/adapters/ (one folder per stack), by
    folder name, each imported (importing one loads no release). The list comes from the folders, so a new
    stack is found by adding its folder; ``contract.conformance`` says what one lacks."""
    import pkgutil

    found: dict[str, object] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.ispkg:
            found[info.name] = importlib.import_module(f"{__name__}.{info.name}")
    return found


def stack_targets() -> list[str]:
    """``cpgraph.adapters.<stack>:<policy>`` for every policy of every stack, for messages."""
    return [f"{__name__}.{name}:{policy}" for name, module in stacks().items() for policy in getattr(module, "POLICIES", ())]
