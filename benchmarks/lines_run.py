"""Run ``python -m cpgraph ARGS`` and record every line it runs in the files under ROOT (benchmarks/glue_mutation.py).

    python benchmarks/lines_run.py ROOT OUT ARGS...

Each line run for the first time in a file under ROOT is appended to OUT as ``relative/path.py:LINE`` at once, so
the lines run in a forked process (the check's second search process, the command line's supervisor) are kept
too. The exit code is cpgraph's. A tracer that the checked code sets itself (a citation's re-run) replaces this
one while it is set; the unmutated run that this records makes no finding, so none is set there.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
from types import FrameType
from typing import Any


def main() -> int:
    root, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    prefix = os.path.abspath(root) + os.sep
    seen: set[tuple[str, int]] = set()
    sink = open(out, "a", encoding="utf-8")  # noqa: SIM115  (open for the whole run, forks included)

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            key = (frame.f_code.co_filename, frame.f_lineno)
            if key not in seen:
                seen.add(key)
                sink.write(f"{os.path.relpath(key[0], prefix)}:{key[1]}\n")
                sink.flush()
        return local

    def scope(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(prefix) else None

    sys.settrace(scope)
    threading.settrace(scope)
    sys.argv = ["cpgraph", *args]
    try:
        runpy.run_module("cpgraph", run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        sys.settrace(None)
        sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
