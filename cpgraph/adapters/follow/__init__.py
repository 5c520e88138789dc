"""Follow the code: run a release's own glue (the backward slice of its statements that reach a decision),
compiled from its files with their file:line, instead of restating it.

``slicing.py`` computes a function's backward slice (beniget's def-use chains, control dependences, in-place
mutations); ``program.py`` follows ``self.<method>`` calls, compiles the kept statements and refuses, by the
release's file:line, what reaches the sink and cannot be driven. ``imports`` builds the namespace the compiled
code runs in from the file's own imports, inside an adapter's sandbox.
"""

from __future__ import annotations

import ast
from typing import Any

from cpgraph.adapters.follow.program import FollowError, Program, Recorder, Returned, Site, Tally
from cpgraph.adapters.follow.slicing import Slice, backward_slice
from cpgraph.adapters.shim import Sandbox

__all__ = ["FollowError", "Program", "Recorder", "Returned", "Site", "Slice", "Tally", "backward_slice", "imports"]


def imports(sandbox: Sandbox, module_name: str) -> Any:
    """A loader for ``Program``: the namespace of ``module_name``'s file after running its top-level imports
    (and nothing else of it) inside ``sandbox``; an import that fails leaves its names undefined (a slice
    that reads one is refused)."""

    def load(module: ast.Module, path: str) -> dict[str, Any]:
        namespace: dict[str, Any] = {"__name__": module_name, "__file__": path}
        with sandbox:
            for node in module.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
                    try:
                        exec(code, namespace)
                    except ImportError:
                        continue
        return namespace

    return load
