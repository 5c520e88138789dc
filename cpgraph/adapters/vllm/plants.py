"""The planted regressions (``VllmPolicy(..., planted=...)``) as edits to a copy of a release's source, so the
adapter runs them through the same engine as the release itself (nothing of the regression is restated).

``global_dispatch``: one line added before execute_model calls ``dispatch_cg_and_sync_dp``, handing it the
global token count (the pre-0.29 sizing). ``pre_fix``: that line, and the partition padded to nothing (0.29:
the ``padded_num_tokens=`` keyword dropped; 0.30 on: ``partition_batch`` keeps ``padded_num_tokens = None``),
so the layout is the 0.28 one. The copy holds the files the adapter reads (vllm/*.py, vllm/config,
vllm/utils, vllm/v1/worker) in a temporary folder, made once per release and plant in a process.
"""

from __future__ import annotations

import ast
import atexit
import os
import re
import shutil
import tempfile

from cpgraph.adapters.vllm.release import MODEL_RUNNER, PCP_FILE, VllmGlueError

PLANTS = ("pre_fix", "global_dispatch")
COPIED = ("vllm/config", "vllm/utils", "vllm/v1/worker")
MARK = "  # planted by cpgraph"
_COPIES: dict[tuple[str, str], str] = {}


def planted_copy(root: str, plant: str) -> str:
    """A copy of the release under ``root`` with ``plant`` planted (see the module docstring)."""
    if plant not in PLANTS:
        raise ValueError(f"planted must be one of {', '.join(PLANTS)}; got {plant!r}")
    key = (os.path.abspath(root), plant)
    found = _COPIES.get(key)
    if found is not None and os.path.isdir(found):
        return found
    dest = tempfile.mkdtemp(prefix=f"cpgraph-vllm-{plant}-")
    atexit.register(shutil.rmtree, dest, True)
    copy_release(root, dest)
    _global_dispatch(dest)
    if plant == "pre_fix":
        _unpadded_partition(dest)
    _COPIES[key] = dest
    return dest


def copy_release(root: str, dest: str) -> str:
    """Copy the files of the release under ``root`` that the adapter reads (vllm/*.py, vllm/config, vllm/utils,
    vllm/v1/worker) into ``dest`` (made if missing); returns ``dest``."""
    os.makedirs(os.path.join(dest, "vllm"), exist_ok=True)
    for name in os.listdir(os.path.join(root, "vllm")):
        if name.endswith(".py"):
            shutil.copy2(os.path.join(root, "vllm", name), os.path.join(dest, "vllm", name))
    for folder in COPIED:
        if os.path.isdir(os.path.join(root, folder)):
            shutil.copytree(os.path.join(root, folder), os.path.join(dest, folder),
                            ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    return dest


def _global_dispatch(root: str) -> None:
    path = os.path.join(root, MODEL_RUNNER)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    tree = ast.parse(text)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "dispatch_cg_and_sync_dp"]
    statement = next((s for s in ast.walk(tree) if isinstance(s, (ast.Assign, ast.Expr)) and any(c in calls for c in ast.walk(s))), None)
    count = calls[0].args[2] if calls and len(calls[0].args) > 2 else None
    if statement is None or not isinstance(count, ast.Name):
        raise VllmGlueError(f"{path}: no dispatch_cg_and_sync_dp(manager, num_reqs, <name>, ...) to plant the global count before")
    lines = text.splitlines(keepends=True)
    indent = " " * statement.col_offset
    lines.insert(statement.lineno - 1, f"{indent}{count.id} = scheduler_output.total_num_scheduled_tokens{MARK}\n")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("".join(lines))


def _unpadded_partition(root: str) -> None:
    runner, manager = os.path.join(root, MODEL_RUNNER), os.path.join(root, PCP_FILE)
    with open(runner, encoding="utf-8") as handle:
        text = handle.read()
    keyword = re.compile(r"\n\s*padded_num_tokens=batch_desc\.num_tokens,?")
    if keyword.search(text):
        with open(runner, "w", encoding="utf-8") as handle:
            handle.write(keyword.sub("", text))
        return
    with open(manager, encoding="utf-8") as handle:
        text = handle.read()
    if "padded_num_tokens = batch_desc.num_tokens\n" not in text:
        raise VllmGlueError(f"{manager}: no `padded_num_tokens = batch_desc.num_tokens` to plant the unpadded partition in")
    with open(manager, "w", encoding="utf-8") as handle:
        handle.write(text.replace("padded_num_tokens = batch_desc.num_tokens\n", f"padded_num_tokens = None{MARK}\n", 1))
