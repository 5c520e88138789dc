"""Which of the release's lines ran on a batch: a line tracer over the release's own files, for citing the
lines that decided a batch (``SglangPolicy.decided_at``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

# The functions whose lines decide admission and the replayed bucket (their names in the release).
DECIDING = frozenset({
    "forward", "_forward_raw", "_prefill_cuda_graph_allows_context_parallel", "can_run_graph", "can_replay_locally",
    "_has_inactive_dp_rank", "_pad_to_bucket", "load_batch", "execute", "execute_prefill_cp_bcg",
    "select_replay_bucket", "select_replay_bucket_for_batch", "required_local_tokens", "_max_local_tokens",
    "allows_replay", "prepare", "is_cp_active", "is_cp_v2_active",
})


@contextmanager
def traced(root: str, functions: frozenset[str], into: dict[str, None]) -> Iterator[None]:
    """Record into ``into`` (as keys, in order) ``file:line`` (relative to ``root``) of every line run in a
    function named in ``functions`` whose code is a file under ``root``."""
    prefix = os.path.abspath(root) + os.sep

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            into.setdefault(f"{os.path.relpath(frame.f_code.co_filename, root)}:{frame.f_lineno}", None)
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
