"""Start-up of the prefill runner after its configuration is agreed (impl/config.py): the capacity tripwire,
capture of every bucket and the replay-vs-eager check, each step agreed across ranks when there are several.

Order (nothing is served before the last step passes):
1. ``capacities``: impl's rows per bucket (its own layout code) against the reference's rule
   (``cpgraph.reference.capture_local_tokens`` / ``headroom_local_tokens``; under local keying the keying table's
   capacity, a size s holding s rows): a mismatch stops start-up.
2. ``capture_buckets``: largest first, one agreed step per bucket. On CUDA a failed capture stops start-up
   naming the bucket (torch leaves a failed capture's state undefined); in emulation the bucket is dropped on
   every rank. The per-bucket outcomes are agreed, then the final table is compared once more; zero captured
   buckets is an error naming why each failed.
3. ``verify_buckets``: every captured graph is replayed once on a synthetic batch and compared with the same
   padded computation run eagerly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

import torch

import cpgraph.reference as reference
from cpgraph.reference.keying import keying_row
from cpgraph.impl.agreement import Control, ConsensusError, StartupError, disagreement, where
from cpgraph.impl.config import STARTUP_TOLERANCE, RunnerConfig
from cpgraph.impl.decision import align_up, headroom_local_tokens, max_rank_load, required_local_tokens
from cpgraph.impl.graphs import BucketKey, GraphRunner
from cpgraph.impl.layout import build_torch_layout

log = logging.getLogger("cpgraph.impl.startup")


def capacities(config: RunnerConfig) -> dict[int, int]:
    """Rows per rank for each bucket by impl's rule, checked against the reference's rule (the tripwire)."""
    rows = {}
    for b in config.capture_num_tokens:
        mine, expected = _rule_rows(config, b), _reference_rows(config, b)
        name = "keying table" if config.keying == "local" else _REFERENCE_RULE[config.capture_rule]
        if mine != expected:
            raise StartupError(
                f"bucket {b}: impl's {config.capture_rule!r} rule gives {mine} rows per rank but the reference's "
                f"{name} gives {expected} (cp_size={config.cp_size}, align_size={config.align_size}); refusing to start"
            )
        rows[b] = mine
    return rows


_REFERENCE_RULE = {"captured": "capture_local_tokens", "headroom": "headroom_local_tokens"}


def _rule_rows(config: RunnerConfig, bucket: int) -> int:
    """impl's own rows: its headroom formula, or one request of B tokens laid out by impl/layout.py; under local
    keying the size itself once that layout fits it (a size s holds s rows on every rank)."""
    if config.keying == "local":
        single = build_torch_layout((bucket,), cp_size=config.cp_size, strategy=config.strategy, rows=bucket)
        return single.rows
    if config.capture_rule == "headroom":
        return headroom_local_tokens(bucket, cp_size=config.cp_size, align_size=config.align_size,
                                     max_requests=config.max_requests)
    single = build_torch_layout((bucket,), cp_size=config.cp_size, strategy=config.strategy)
    return align_up(max(single.loads), config.align_size)


def _reference_rows(config: RunnerConfig, bucket: int) -> int:
    if config.keying == "local":
        capacity = keying_row("local").capacity(bucket, {})
        assert capacity is not None  # a local size always has one
        return capacity
    if config.capture_rule == "headroom":
        return reference.headroom_local_tokens(bucket, cp_size=config.cp_size, align_size=config.align_size,
                                               max_requests=config.max_requests)
    return reference.capture_local_tokens(bucket, cp_size=config.cp_size, align_size=config.align_size,
                                          strategy=config.strategy)


@dataclass(frozen=True)
class CaptureReport:
    """What start-up captured (bucket -> rows per rank), what it dropped and why, and how long each took."""

    bucket_local_tokens: dict[int, int]
    dropped: dict[int, str]
    capture_seconds: dict[int, float]


def capture_buckets(config: RunnerConfig, graph_runner: GraphRunner, control: Control,
                    rows: Mapping[int, int]) -> CaptureReport:
    """Capture every bucket, largest first (smaller graphs reuse the pool's blocks), one agreed step each."""
    captured: dict[int, int] = {}
    dropped: dict[int, str] = {}
    seconds: dict[int, float] = {}
    for b in reversed(config.capture_num_tokens):
        key = BucketKey(b, rows[b], config.keying)
        layout = build_torch_layout((b,), cp_size=config.cp_size, rows=key.local_tokens, strategy=config.strategy,
                                    device=config.device)
        hidden = torch.randn(b, config.hidden, generator=torch.Generator().manual_seed(b)).to(config.device)
        start = time.perf_counter()
        outcome = control.step(lambda: graph_runner.capture(key, layout, hidden), graph_runner)
        if outcome.failures:
            reason = where(outcome.failures, control.world_size)
            if config.use_cuda_graph:
                raise StartupError(
                    f"bucket {b} ({key.local_tokens} rows per rank) failed to capture: {reason}. After a failed "
                    "CUDA graph capture torch leaves the stream and allocator state undefined, so start-up stops "
                    "(fix the cause or leave the bucket out of capture_num_tokens)"
                ) from outcome.local_error
            graph_runner.discard(key)
            dropped[b] = reason
            log.warning("dropping bucket %d (%d rows per rank): capture failed: %s", b, key.local_tokens, reason)
            continue
        seconds[b] = time.perf_counter() - start
        got = int(graph_runner.static_output[key].shape[1])
        if got != key.local_tokens:
            raise StartupError(f"bucket {b} was captured for {key.local_tokens} rows per rank but its output has {got}")
        captured[b] = key.local_tokens
    _agree_table(control, captured)
    if not captured:
        why = "; ".join(f"bucket {b} ({rows[b]} rows per rank): {reason}" for b, reason in sorted(dropped.items()))
        raise StartupError(f"no bucket could be captured, so every batch would run eagerly; refusing to start: {why}")
    return CaptureReport(dict(sorted(captured.items())), dropped, seconds)


def _agree_table(control: Control, captured: Mapping[int, int]) -> None:
    """The one collective over the per-bucket outcomes: every rank must hold the same table."""
    if control.world_size == 1:
        return
    tables = [repr(t) for t in control.all_gather_object(sorted(captured.items()))]
    if len(set(tables)) > 1:
        raise ConsensusError(disagreement("the captured buckets (bucket, rows)", tables) + "; refusing to start")


@dataclass(frozen=True)
class StartupCheck:
    """One captured bucket's replay on a synthetic batch against the same padded computation run eagerly."""

    bucket: int
    extend_seq_lens: tuple[int, ...]
    max_abs_error: float
    bit_exact: bool


class ReplayMismatch(RuntimeError):
    """A captured graph's replay differs from eager at the same padded shape."""


def synthetic_lengths(config: RunnerConfig, bucket: int, rows: int) -> tuple[int, ...]:
    """A batch that fits ``rows`` at ``bucket``, with several requests where the capacity allows (so the check
    exercises request boundaries and padding rows the capture batch did not)."""
    thirds = (bucket // 3, bucket // 3, bucket - 2 * (bucket // 3))
    for lengths in (thirds, (bucket // 2, bucket - bucket // 2), (bucket - 1,), (bucket,)):
        if min(lengths) >= 1 and _needed(config, lengths) <= rows:
            return lengths
    return (bucket,)


def _needed(config: RunnerConfig, lengths: tuple[int, ...]) -> int:
    """The rows the plan records for ``lengths``: the largest live rows (local) or them aligned (global)."""
    if config.keying == "local":
        return max_rank_load(lengths, cp_size=config.cp_size, strategy=config.strategy)
    return required_local_tokens(lengths, cp_size=config.cp_size, align_size=config.align_size,
                                 strategy=config.strategy)


def verify_buckets(config: RunnerConfig, graph_runner: GraphRunner, control: Control,
                   captured: Mapping[int, int]) -> dict[int, StartupCheck]:
    """Replay every captured graph once and compare with eager; any mismatch (on any rank) stops start-up."""
    atol, rtol = STARTUP_TOLERANCE[config.dtype]
    checks = {}
    for b, rows in sorted(captured.items()):
        lengths = synthetic_lengths(config, b, rows)
        gen = torch.Generator().manual_seed(7919 + b)
        hidden = torch.randn(sum(lengths), config.hidden, generator=gen).to(config.device, config.dtype)
        layout = build_torch_layout(lengths, cp_size=config.cp_size, rows=rows, strategy=config.strategy,
                                    device=config.device)
        key = BucketKey(b, rows, config.keying)

        def check() -> StartupCheck:
            replayed = graph_runner.replay(key, layout, hidden)
            eager = graph_runner.eager(key, layout, hidden)
            diff = (replayed.float() - eager.float()).abs()
            error = float(diff.max().item()) if diff.numel() else 0.0
            ok = bool(torch.isfinite(replayed).all().item()) and bool(
                (diff <= atol + rtol * eager.float().abs()).all().item())
            if not ok:
                raise ReplayMismatch(f"replay differs from eager by {error:.3g} (atol={atol}, rtol={rtol}) "
                                     f"on extend_seq_lens={lengths}")
            return StartupCheck(b, lengths, error, torch.equal(replayed, eager))

        outcome = control.step(check, graph_runner)
        if outcome.failures or outcome.value is None:
            raise StartupError(f"start-up replay check of bucket {b} ({rows} rows per rank) failed: "
                               f"{where(outcome.failures, control.world_size)}; refusing to serve") from outcome.local_error
        checks[b] = outcome.value
    return checks
