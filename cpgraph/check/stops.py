"""What stops a policy call or makes its answer wrong: the records (``CallStop``, ``PolicyStop``), the
answer-type checks of the protocol, and the policy's own traceback kept for the report (see calls.py)."""

from __future__ import annotations

import operator
import os
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from cpgraph.adapters.glue import adapter_frames_dir
from cpgraph.reference.laid_out import LaidOut
from cpgraph.reference.lists import compact

REFIRE_S = 0.25  # after the timeout, the timer fires again this often until the call gives up
HARD_STOP_FIRES = 8  # with hard_exit: after this many ignored fires the process exits 1
TRACEBACK_FRAMES = 8  # the policy's innermost frames kept in a report

PROTOCOL_REQUIRES = {
    "admit": "a bool (True: replay a graph; False: run eagerly)",
    "replay_bucket": "an int bucket from capture_num_tokens (raise, or return None, to refuse)",
    "local_rows": "a sequence of cp_size ints (the rows on each rank)",
    "admitted_bucket": "an int, the size admission chose (or None: it chose to run eagerly)",
    "local_layout": "a cpgraph.LaidOut record (the rows every rank holds and where each token is read back from), or None",
    "captured": "a sequence of cpgraph.Graph records (the graphs the configuration captures)",
    "answers_dp": "one sequence per DP rank's step of one cpgraph.PathAnswer per rank (cp_size of them)",
    "graphs": "a sequence of GraphDims records (the graphs the EP configuration captures; raise ValueError: the release refuses it)",
    "answers": "one EpAnswer per EP rank (ep_size of them), rank r's at index r",
    "chunk": "a pair (gating: bool, chunk: int or None)",
}
PATH_METHODS = ("captured", "answers_dp")  # a graph-path driver's calls: their answers are checked by the path subject
EP_METHODS = ("graphs", "answers", "chunk")  # an EP driver's: checked by the EP subject (subjects/ep_calls.py)


@dataclass(frozen=True)
class CallStop:
    """Why a policy call stopped the check: which call, on which batch, what happened."""

    kind: str  # 'timeout' | 'system_exit' | 'keyboard_interrupt' | 'protocol' | 'glue' (an adapter cannot drive its release)
    policy: str
    method: str
    rank: int | None
    batch: str  # the batch as keyword arguments
    detail: str
    policy_traceback: str = ""  # the policy's frames, when it raised

    @property
    def protocol_error(self) -> bool:
        return self.kind == "protocol"

    @property
    def usage_error(self) -> bool:
        """A stop that is no finding about the policy's stack: the protocol broken, or an adapter's glue
        that does not fit the release it drives (exit 2)."""
        return self.kind in ("protocol", "glue")

    @property
    def call(self) -> str:
        return f"{self.method}(cp_rank={self.rank}, ...)" if self.rank is not None else f"{self.method}(...)"

    def line(self) -> str:
        """One line: the call, what happened, the batch."""
        return f"policy {self.policy}: {self.call} {self.detail}; batch: {self.batch}"

    def text(self) -> str:
        out = self.line()
        if self.policy_traceback:
            out += "\n" + self.policy_traceback
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "method": self.method,
            "cp_rank": self.rank,
            "batch": self.batch,
            "detail": self.detail,
            "policy_traceback": self.policy_traceback,
        }


class PolicyStop(BaseException):
    """A policy call that ends the check (see CallStop). A BaseException so that ``ask``'s
    ``except Exception`` (a raising policy is an answer) lets it through."""

    def __init__(self, stop: CallStop) -> None:
        super().__init__(stop)
        self.stop = stop

    def __str__(self) -> str:
        return self.stop.line()


class CallTimeout(BaseException):
    """Raised by the session's SIGALRM handler inside a policy call that ran past its timeout."""


_LAST: dict[tuple[str, int | None], tuple[str, str]] = {}  # (method, rank) -> (error text, trimmed traceback)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _batch_text(kw: Mapping[str, Any]) -> str:
    keys = [k for k in kw if k not in ("cp_rank", "bucket")]
    return ", ".join(f"{k}={_value_text(kw[k])}" for k in keys)


def _value_text(value: Any) -> str:
    """A mapping as a dict, a list or tuple of ints in its compact form ((9,) * 107 + (8,)), else its repr."""
    if isinstance(value, Mapping):
        return repr(dict(value))
    if isinstance(value, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        return compact(value)
    return repr(value)


def trimmed_traceback(tb: TracebackType | None, exc: BaseException, *, skip: int = 1) -> str:
    """The policy's own frames (``skip`` frames of this module dropped), innermost ``TRACEBACK_FRAMES``. An
    adapter's frames (cpgraph/adapters/) are cpgraph's glue, not the policy's: left out, so a release driven by
    an adapter shows its own frames only."""
    glue = adapter_frames_dir() + os.sep
    frames = [f for f in traceback.extract_tb(tb)[skip:] if not f.filename.startswith(glue)]
    if not frames:
        return ""
    kept = frames[-TRACEBACK_FRAMES:]
    lines = [f"  policy frames ({len(frames) - len(kept)} outer frames left out):" if len(kept) < len(frames) else "  policy frames:"]
    for entry in traceback.format_list(kept):
        lines.extend("  " + part for part in entry.rstrip("\n").split("\n"))
    lines.append("  " + "".join(traceback.format_exception_only(type(exc), exc)).strip())
    return "\n".join(lines)


def last_traceback(method: str, rank: int | None, error: str | None) -> str:
    """The trimmed traceback of the last exception ``method`` raised on ``rank`` in this process, when its
    text matches ``error`` (the answer's error string); '' otherwise."""
    if error is None:
        return ""
    found = _LAST.get((method, rank))
    if found is None or not error.startswith(found[0][:40]):
        return ""
    return found[1]


def _check_answer(method: str, value: object) -> tuple[str | None, object]:
    """What is wrong with ``value`` as ``method``'s answer (None: it is fine), and the value to pass on
    (local_rows' iterable read once into a tuple)."""
    if method in PATH_METHODS or method in EP_METHODS:
        return None, value  # checked against the steps asked, by the subject (subjects/path_calls.py, ep_calls.py)
    if method == "local_layout":
        if value is None or isinstance(value, LaidOut):
            return None, value
        return f"returned {_short(value)} ({type(value).__name__})", value
    if method == "admit":
        if isinstance(value, bool) or type(value).__name__ == "bool_":  # numpy.bool_ is a bool too
            return None, value
        return f"returned {_short(value)} ({type(value).__name__})", value
    if method in ("replay_bucket", "admitted_bucket"):
        if value is None:
            return None, value
        if not isinstance(value, bool):
            try:
                operator.index(value)  # type: ignore[arg-type]
                return None, value
            except TypeError:
                pass
        return f"returned {_short(value)} ({type(value).__name__})", value
    if isinstance(value, (str, bytes, Mapping)):
        return f"returned {_short(value)} ({type(value).__name__})", value
    try:
        items: tuple[object, ...] = tuple(value)  # type: ignore[arg-type]
    except TypeError:
        return f"returned {_short(value)} ({type(value).__name__})", value
    for item in items:
        if isinstance(item, bool):
            return f"returned {_short(items)} (an item is a bool)", items
        try:
            operator.index(item)  # type: ignore[arg-type]
        except TypeError:
            return f"returned {_short(items)} (item {_short(item)} is a {type(item).__name__})", items
    return None, items

