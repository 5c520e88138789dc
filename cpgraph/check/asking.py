"""Asking a bound policy (calls.py's ``bound``): one call bounded and judged (``_call``), and every rank
of a batch asked in one frame (``RankAsker``, what protocol.ask and the search loop use)."""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Sequence
from os import getpid
from threading import get_ident
from time import monotonic
from typing import Any

from cpgraph.adapters.glue import GlueError
from cpgraph.check.batch import Batch
from cpgraph.check.protocol import Policy, RankAnswer, _as_int, _error
from cpgraph.check.stops import PROTOCOL_REQUIRES, CallStop, CallTimeout, PolicyStop, _LAST, _batch_text, _check_answer, trimmed_traceback
from cpgraph.check.timer import _HEART, _METHODS, _STARTED, _STATE, _board_line, _hard_stop
from cpgraph.output import INTERRUPT
from cpgraph.reference.answers import rank_answer


def _stop(name: str, method: str, rank: Any, kw: dict[str, Any], kind: str, detail: str, tb: str = "") -> PolicyStop:
    """The PolicyStop of a call (built on the error paths only)."""
    return PolicyStop(CallStop(kind, name, method, rank, _batch_text(kw), detail, tb))


def _call(name: str, m: int, fn: Callable[..., Any], kw: dict[str, Any], rank: Any, signed: list[bool]) -> Any:
    """``fn(**kw)``, the policy's ``_METHODS[m]`` call, bounded and judged: the signature is checked at the
    first call, the call is stamped for the timer and the supervisor, a stop or an exit becomes a
    PolicyStop, an exception is re-raised (the asker makes it an answer) with its trimmed traceback kept,
    and an answer of the wrong type is a protocol stop."""
    method = _METHODS[m]
    if not signed[m]:
        try:
            inspect.signature(fn).bind(**kw)
        except TypeError as exc:
            raise _stop(
                name, method, rank, kw, "protocol",
                f"cannot be called with the protocol's keywords ({exc}); the protocol calls "
                f"{method}({'bucket=..., ' if method == 'local_rows' else ''}**batch) with every argument by keyword: "
                f"{', '.join(kw)}",
            ) from None
        except ValueError:
            pass  # no signature to read (a builtin): the call itself will tell
        signed[m] = True
    state = _STATE
    board = state.board
    if board is not None and board[0] and os.getpid() == state.owner:
        _hard_stop(_board_line())  # a forked search process met a policy call it could not stop
    heart = state.heart
    slot = 0
    if heart is not None:  # tell the supervisor which call is running, from when (see supervise())
        slot = _HEART.size * (0 if os.getpid() == state.heart_pid else 1)
        state.seq += 1
        _HEART.pack_into(heart, slot, state.seq, time.monotonic(), m, -1 if rank is None else int(rank),
                         int(kw.get("cp_size", 0)), int(kw.get("num_tokens", 0)))
    timed = state.armed and get_ident() == state.main_ident
    if timed:
        state.fires = 0
        state.in_call = (name, method, rank)  # formatted only on a hard stop
        state.started = monotonic()
    try:
        try:
            value = fn(**kw)
        finally:
            if timed:
                state.started = 0.0
            if heart is not None:
                _STARTED.pack_into(heart, slot + 8, 0.0)
    except (CallTimeout, SystemExit, KeyboardInterrupt) as exc:
        stop = _stopped(name, method, rank, kw, exc)
        if stop is None:
            raise
        raise stop from None
    except Exception as exc:
        _note(name, method, rank, kw, exc)
        raise
    if m == 0:
        if value is True or value is False:  # the common answers, without _check_answer's call
            return value
    elif m == 1 and (value is None or type(value) is int):
        return value
    return _typed(name, method, rank, kw, value)


def _stopped(name: str, method: str, rank: Any, kw: dict[str, Any], exc: BaseException) -> PolicyStop | None:
    """The PolicyStop that a timeout, SystemExit or KeyboardInterrupt out of a call becomes (None: a real
    Ctrl-C, to re-raise). Called in the frame that caught ``exc`` (its traceback starts there)."""
    if isinstance(exc, CallTimeout):
        return _stop(name, method, rank, kw, "timeout", f"did not return within {_STATE.timeout_s:g} s (--call-timeout-s); the check stopped")
    tb = trimmed_traceback(exc.__traceback__, exc)
    if isinstance(exc, SystemExit):
        return _stop(name, method, rank, kw, "system_exit", f"raised SystemExit({exc.code!r}) (a policy must answer, not exit the process)", tb)
    if INTERRUPT.real:
        return None
    return _stop(name, method, rank, kw, "keyboard_interrupt", "raised KeyboardInterrupt (a policy must answer, not interrupt its caller)", tb)


def _note(name: str, method: str, rank: Any, kw: dict[str, Any], exc: Exception) -> None:
    """Keep the trimmed traceback of an exception a call raised (an answer; the report may show it). An
    adapter's GlueError is no answer: the adapter cannot drive the release, and the check stops (kind 'glue',
    a usage error) rather than judge the stack by cpgraph's own glue."""
    if isinstance(exc, GlueError):
        raise _stop(name, method, rank, kw, "glue", str(exc)) from None
    _LAST[(method, rank)] = (f"{type(exc).__name__}: {exc}", trimmed_traceback(exc.__traceback__, exc))


def _typed(name: str, method: str, rank: Any, kw: dict[str, Any], value: object) -> Any:
    """``value`` as ``method``'s answer (local_rows' iterable read into a tuple), or a protocol stop."""
    wrong, value = _check_answer(method, value)
    if wrong is not None:
        raise _stop(name, method, rank, kw, "protocol", f"{wrong}; the protocol requires {PROTOCOL_REQUIRES[method]}")
    return value


_LAYOUT = _METHODS.index("local_layout")
KEEP_UNKNOWN: Any = object()  # RankAsker's ``want`` when the caller does not know the reference's decision


class RankAsker:
    """Every rank of a batch asked in one frame, each call through ``_call`` (the bound above) with no
    wrapper in between: what protocol.ask does for a bound policy, the same calls in the same order with
    the same keywords. Given the reference's decision (``want``, the live ``loads``, the bucket's
    ``capacity``: reference.judge.expected_bucket), it returns None instead of the answers when every
    rank's answers meet reference.judge.keeps_everything (no rule can fire), so no record is built."""

    __slots__ = ("name", "fns", "wrappers", "signed", "layout_fn", "layout_wrapper")

    def __init__(self, name: str, fns: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any] | None],
                 wrappers: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any] | None], signed: list[bool],
                 layout_fn: Callable[..., Any] | None = None, layout_wrapper: Callable[..., Any] | None = None) -> None:
        self.name, self.fns, self.wrappers, self.signed = name, fns, wrappers, signed
        self.layout_fn, self.layout_wrapper = layout_fn, layout_wrapper  # local_layout (optional) and its bound wrapper

    def serves(self, policy: Policy) -> bool:
        """Are ``policy``'s functions still the ones this asker was made for (not replaced since)?"""
        w = self.wrappers
        return (policy.admit is w[0] and policy.replay_bucket is w[1] and policy.local_rows is w[2]
                and policy.local_layout is self.layout_wrapper)

    def __call__(self, batch: Batch, ranks: Sequence[int] | None, always: bool, want: Any = KEEP_UNKNOWN,
                 loads: Sequence[int] = (), capacity: int = 0, table: dict[int, int] | None = None) -> tuple[RankAnswer, ...] | None:
        name, signed = self.name, self.signed
        admit_fn, replay_fn, rows_fn = self.fns
        layout_fn, layout_m = self.layout_fn, _LAYOUT
        if table is None:  # the capacity mapping the ranks are given copies of (the caller's, if it made one)
            base = batch.kwargs()
            table = base.pop("bucket_local_tokens")
        else:
            base = batch.kwargs_less_table()
        keep = want is not KEEP_UNKNOWN
        out = []
        state = _STATE
        board = state.board
        timed = state.armed and get_ident() == state.main_ident  # one thread asks every rank of a batch
        plain = state.heart is None and signed[0] and signed[1]  # signatures checked, no supervisor: inline
        for rank in range(batch.cp_size) if ranks is None else ranks:
            kw = base.copy()
            kw["cp_rank"] = rank
            kw["bucket_local_tokens"] = table.copy()  # each rank its own copy: a write cannot reach another rank
            admit: bool | None
            admit_error = replay_error = rows_error = None
            rows: tuple[object, ...] | None = None
            if plain:  # _call written out: the same stamps, checks and stops, no supervisor to tell
                if board is not None and board[0] and getpid() == state.owner:
                    _hard_stop(_board_line())
                if timed:
                    state.fires, state.in_call, state.started = 0, (name, "admit", rank), monotonic()
                try:
                    try:
                        value = admit_fn(**kw)
                    finally:
                        if timed:
                            state.started = 0.0
                except (CallTimeout, SystemExit, KeyboardInterrupt) as exc:
                    stop = _stopped(name, "admit", rank, kw, exc)
                    if stop is None:
                        raise
                    raise stop from None
                except Exception as exc:
                    _note(name, "admit", rank, kw, exc)
                    admit, admit_error = None, _error(exc)
                else:
                    admit = value if value is True or value is False else bool(_typed(name, "admit", rank, kw, value))
            else:
                try:
                    admit = bool(_call(name, 0, admit_fn, kw, rank, signed))
                except Exception as exc:
                    admit, admit_error = None, _error(exc)
            bucket: object = None
            asked = always or admit is True
            if asked and plain:
                if board is not None and board[0] and getpid() == state.owner:
                    _hard_stop(_board_line())
                if timed:
                    state.fires, state.in_call, state.started = 0, (name, "replay_bucket", rank), monotonic()
                try:
                    try:
                        value = replay_fn(**kw)
                    finally:
                        if timed:
                            state.started = 0.0
                except (CallTimeout, SystemExit, KeyboardInterrupt) as exc:
                    stop = _stopped(name, "replay_bucket", rank, kw, exc)
                    if stop is None:
                        raise
                    raise stop from None
                except Exception as exc:
                    _note(name, "replay_bucket", rank, kw, exc)
                    bucket, replay_error = None, _error(exc)
                else:
                    if value is not None and type(value) is not int:
                        value = _as_int(_typed(name, "replay_bucket", rank, kw, value))
                    bucket = value
            elif asked:
                try:
                    bucket = _call(name, 1, replay_fn, kw, rank, signed)
                    if type(bucket) is not int:
                        bucket = _as_int(bucket)
                except Exception as exc:
                    bucket, replay_error = None, _error(exc)
            if rows_fn is not None and bucket is not None:
                rkw = {"bucket": bucket}
                rkw.update(kw)
                try:
                    rows = tuple(_as_int(r) for r in _call(name, 2, rows_fn, rkw, rank, signed))
                except Exception as exc:
                    rows_error = _error(exc)
            layout: object = None
            if layout_fn is not None and bucket is not None:  # a layout shown is always judged (no keep)
                lkw = {"bucket": bucket}
                lkw.update(kw)
                try:
                    layout = _call(name, layout_m, layout_fn, lkw, rank, signed)
                except Exception as exc:
                    layout = _error(exc)
                keep = False
            if keep:  # reference.judge.keeps_everything, rank by rank (tests hold the two equal)
                if want is None:
                    keep = admit is False and bucket is None
                elif admit is not True or type(bucket) is not int or bucket != want:
                    keep = False
                elif rows is not None or rows_error is not None:
                    keep = rows is not None and len(rows) == len(loads) and all(
                        type(r) is int and load <= r <= capacity for r, load in zip(rows, loads)
                    )
            out.append((rank, admit, admit_error, bucket, replay_error, rows, rows_error, asked, None, layout))
        if keep:
            return None
        return tuple(rank_answer(*a) for a in out)
