"""Which of the release's lines ran on a batch: a line tracer over the release's own files, for citing the
lines that decided a batch (``SglangPolicy.decided_at``), and which lines of a tree differ from the pristine
release of its version (``changed_lines``, over cpgraph/adapters/pristine.py), to narrow the citation to a change that ran."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from cpgraph.adapters.pristine import changed_in
from cpgraph.adapters.pristine import pristine_roots as pristine_roots  # re-exported: the sglang policy looks its pristine copy up here

# The functions whose lines decide admission and the replayed bucket (their names in the release).
DECIDING = frozenset({
    "forward", "_forward_raw", "_prefill_cuda_graph_allows_context_parallel", "can_run_graph", "can_replay_locally",
    "_has_inactive_dp_rank", "_pad_to_bucket", "load_batch", "execute", "execute_prefill_cp_bcg",
    "select_replay_bucket", "select_replay_bucket_for_batch", "required_local_tokens", "_max_local_tokens",
    "allows_replay", "prepare", "is_cp_active", "is_cp_v2_active", "can_apply",
})


# The functions that build the CP layout the replay reads (local_layout): traced for decided_at, their lines cited only
# where they differ from the pristine release (a plant in the layout), never among every line that ran.
LAYING_OUT = frozenset({"build_metadata"})


# The invariants judged on the replayed bucket, and the deciding functions that choose and lay it out: their
# lines are cited first for those invariants when every line that ran is cited.
BUCKET_SIDE = frozenset({"captured_bucket", "padding_limit", "capacity_fit", "minimal_bucket"})
CHOOSING = frozenset({
    "load_batch", "_pad_to_bucket", "select_replay_bucket", "select_replay_bucket_for_batch", "required_local_tokens",
    "_max_local_tokens", "prepare",
})


@contextmanager
def traced(root: str, functions: frozenset[str], into: dict[str, str]) -> Iterator[None]:
    """Record into ``into`` (as keys, in order; the value the function's name) ``file:line`` (relative to
    ``root``) of every line run in a function named in ``functions`` whose code is a file under ``root``."""
    prefix = os.path.abspath(root) + os.sep

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            into.setdefault(f"{os.path.relpath(frame.f_code.co_filename, root)}:{frame.f_lineno}", frame.f_code.co_name)
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        if event == "call" and code.co_name in functions and code.co_filename.startswith(prefix):
            return local
        return None

    before = sys.gettrace()
    sys.settrace(calls)
    try:
        yield
    finally:
        sys.settrace(before)


def changed_lines(root: str, pristine: tuple[str, ...], rel: str) -> frozenset[str]:
    """``rel:line`` of every line of ``root``/``rel`` replaced or inserted relative to the same file in the
    first of ``pristine`` that has it (cpgraph/adapters/pristine.py, shared with the vLLM adapter). Empty when
    none has it, ``root`` is that unpack, or a file is unreadable."""
    return frozenset(f"{rel}:{n}" for n in changed_in(root, pristine, rel))
