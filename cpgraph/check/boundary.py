"""The spec's boundary models as checker inputs: proofs/conformance/boundaries.py's Z3 cases, solved in a child
process (z3's context is not thread-safe, and the solver must not hold up the cheap phases), used as
they arrive and reused for the rest of the process."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from cpgraph.check.batch import Batch, parse_table, recorded
from cpgraph.check.options import CheckOptions

PhasedBatch = tuple[str, Batch]  # (phase, batch)


def _table_kind(batch: Batch, options: CheckOptions) -> str | None:
    """Which of the allowed table kinds a boundary model's capacities are (None: not an allowed kind)."""
    allowed = {parse_table(t)[0]: t for t in options.capacities}
    for spec in (allowed.get("captured"), allowed.get("headroom")):
        if spec is None:
            continue
        ctx = options.context_len if spec == "captured" else None
        rows = recorded(
            spec, batch.capture_num_tokens, cp_size=batch.cp_size, align_size=batch.align_size, strategy=options.strategy, context_len=ctx
        )
        if rows == batch.bucket_local_tokens:
            return spec
    return "arbitrary" if "arbitrary" in allowed else None


_Model = tuple[str, int, int, int, int, tuple[int, ...], tuple[int, ...], tuple[tuple[int, int], ...]]
_MODELS: dict[tuple[Any, ...], tuple[_Model, ...]] = {}  # per process, per argument tuple


def _models_for(cp_size: int, factor: int, max_requests: int, max_tokens: int, strategy: str) -> tuple[_Model, ...]:
    """cpgraph.proofs.conformance.boundaries' cases as plain picklable tuples (empty when no model exists for them)."""
    try:
        from cpgraph.proofs.conformance.boundaries import boundary_cases
    except ImportError:
        return ()
    try:
        models = boundary_cases(
            cp_size=cp_size, max_padding_factor=factor, max_requests=max_requests, max_tokens=max_tokens, strategy=strategy
        )
    except (TypeError, ValueError, NotImplementedError):
        return ()  # no boundary model for that strategy, size or factor; the other phases still cover it
    out = []
    for c in models:
        caps = dict(c.bucket_local_tokens)
        buckets = tuple(c.capture_num_tokens)
        rows = tuple((b, caps[b]) for b in buckets if b in caps)
        out.append((c.clause, c.cp_size, c.align_size, c.max_padding_factor, c.num_tokens, tuple(c.extend_seq_lens), buckets, rows))
    return tuple(out)


def solve_to_stdout(keys_json: str) -> None:
    """Child process entry: solve each key in turn, writing one JSON line (key, models) as each is done.
    Runs niced: on a busy machine the policy's own search comes first, the solver takes what is left."""
    try:
        os.nice(10)
    except OSError:
        pass
    for key in json.loads(keys_json):
        models = _models_for(*key)
        sys.stdout.write(json.dumps([key, models]) + "\n")
        sys.stdout.flush()


def _as_model(raw: list[Any]) -> _Model:
    clause, p, align, factor, n, lengths, buckets, rows = raw
    return (str(clause), p, align, factor, n, tuple(lengths), tuple(buckets), tuple((b, r) for b, r in rows))


class BoundaryFeed:
    """Boundary models drawn by Z3 in a child process (z3's context is not thread-safe, and the solver
    should not hold up the cheap exhaustive phase); models already drawn in this process are reused."""

    def __init__(self, options: CheckOptions) -> None:
        self._options = options
        keys = [
            (p, options.max_padding_factor, min(options.max_requests, 3), options.max_tokens, options.strategy)
            for p in options.cp_sizes
            if p > 1 and isinstance(options.max_padding_factor, int)  # the models are drawn at an int F
        ]
        pending = [k for k in keys if k not in _MODELS]
        self._ready = [k for k in keys if k in _MODELS]
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        if pending and _solver_available():
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
            code = "import sys; from cpgraph.check.boundary import solve_to_stdout; solve_to_stdout(sys.argv[1])"
            self._proc = subprocess.Popen(
                [sys.executable, "-c", code, json.dumps(pending)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                env=env,
            )
            assert self._proc.stdout is not None
            os.set_blocking(self._proc.stdout.fileno(), False)

    def ready(self) -> list[PhasedBatch]:
        """Every boundary case that has arrived since the last call (never blocks)."""
        if self._proc is not None:
            assert self._proc.stdout is not None
            chunk = self._proc.stdout.read()
            if chunk:
                self._buffer += chunk
                *lines, self._buffer = self._buffer.split(b"\n")
                for line in lines:
                    key, models = json.loads(line)
                    key = tuple(key)
                    _MODELS[key] = tuple(_as_model(m) for m in models)
                    self._ready.append(key)
            elif self._proc.poll() is not None:
                self.close()
        out: list[PhasedBatch] = []
        for key in self._ready:
            out.extend(_cases_from(_MODELS[key], self._options))
        self._ready = []
        return out

    def close(self) -> None:
        """Stop the solver child (this process started it) and reap it."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
            self._proc.wait(timeout=5)
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None


def _solver_available() -> bool:
    return importlib.util.find_spec("z3") is not None and importlib.util.find_spec("cpgraph.proofs.conformance.boundaries") is not None


def _cases_from(models: tuple[_Model, ...], options: CheckOptions) -> Iterator[PhasedBatch]:
    """The models as batches, those outside the run's fixed knobs left out (an alignment or factor the
    code base does not use). With padded n asked for, each model also comes with n padded to a multiple
    of its alignment (or by one token), on the same capture list and table; with only padded n, the
    live model is left out."""
    for clause, p, align, factor, n, lengths, buckets, rows in models:
        if align not in options.aligns(p) or factor not in options.factors:
            continue
        batch = Batch(p, align, n, lengths, buckets, rows, factor, "arbitrary")
        kind = _table_kind(batch, options)
        if kind is None or not buckets:
            continue
        batch = replace(batch, table=kind, context_len=options.context_len if kind == "captured" else None)
        if options.num_tokens != "padded" or n > sum(lengths):
            yield (f"boundary:{clause}", batch)
        if options.num_tokens != "live" and n == sum(lengths):
            yield (f"boundary:{clause}:padded", replace(batch, num_tokens=n + (-n % align or 1)))


def boundary(options: CheckOptions) -> Iterator[PhasedBatch]:
    """The spec's boundary models (Z3, proofs/conformance/boundaries.py), solved in this process, allowed kinds only."""
    for p in options.cp_sizes:
        if p > 1 and isinstance(options.max_padding_factor, int):
            key = (p, options.max_padding_factor, min(options.max_requests, 3), options.max_tokens, options.strategy)
            if key not in _MODELS:
                _MODELS[key] = _models_for(*key)
            yield from _cases_from(_MODELS[key], options)
