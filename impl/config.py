"""The runner's validated configuration: every constructor argument checked (errors name the argument, its
value and what is allowed), and, across ranks, agreed before any other collective runs: a rank with a bad
argument, or another capture list / alignment / rule, is named on every rank.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from cpgraph.impl.agreement import Control, ConsensusError, StartupError, disagreement, where
from cpgraph.impl.checks import check_capture_list, check_cp_size, check_int, check_keying, check_strategy
from cpgraph.impl.decision import default_align_size
from cpgraph.impl.graphs import canonical_device, explain
from cpgraph.impl.model import CPTransformer

CAPTURE_RULES = ("captured", "headroom")
# Start-up replay check: replay vs the same padded computation run eagerly (atol, rtol). Real graphs are
# expected bit-exact (tests/gpu asserts it); the gate allows the rounding of the dtype so that it only
# trips on a wrong graph (stale buffers, a missed input), which is off by O(1).
STARTUP_TOLERANCE = {torch.float64: (1e-9, 1e-9), torch.float32: (1e-4, 1e-4),
                     torch.bfloat16: (6e-2, 2e-2), torch.float16: (1e-2, 1e-2)}


@dataclass(frozen=True)
class RunnerConfig:
    """Every constructor argument, validated; ``capture_num_tokens`` already without the buckets below 2P (global
    keying; under local keying it lists sizes of rank-local rows, every one kept: every batch is keyed)."""

    cp_size: int
    capture_num_tokens: tuple[int, ...]
    below_2p: tuple[int, ...]
    align_size: int
    strategy: str
    max_padding_factor: int
    capture_rule: str
    max_requests: int
    device: torch.device
    dtype: torch.dtype
    use_cuda_graph: bool
    warmup_iters: int
    hidden: int
    keying: str = "global"

    def summary(self) -> str:
        """What every rank must share (the device index is per rank and left out)."""
        return (f"cp_size={self.cp_size} capture_num_tokens={self.capture_num_tokens} align_size={self.align_size} "
                f"strategy={self.strategy} max_padding_factor={self.max_padding_factor} "
                f"capture_rule={self.capture_rule} max_requests={self.max_requests} device_type={self.device.type} "
                f"dtype={self.dtype} use_cuda_graph={self.use_cuda_graph} warmup_iters={self.warmup_iters} "
                f"hidden={self.hidden} keying={self.keying}")

    @staticmethod
    def validate(model: object, *, cp_size: object, capture_num_tokens: object, align_size: object,
                 strategy: object, max_padding_factor: object, capture_rule: object, max_requests: object,
                 device: object, dtype: object, use_cuda_graph: object, warmup_iters: object,
                 keying: object = "global") -> RunnerConfig:
        """Raise TypeError/ValueError naming the argument, its value and what is allowed; else the config."""
        if not isinstance(model, CPTransformer):
            raise TypeError(f"model must be a CPTransformer, got {type(model).__name__}")
        p = check_cp_size("cp_size", cp_size)
        kind = check_strategy(strategy)
        align = default_align_size(cp_size=p, strategy=kind) if align_size is None else check_int(
            "align_size", align_size, minimum=1)
        factor = check_int("max_padding_factor", max_padding_factor, minimum=1)
        if not isinstance(capture_rule, str) or capture_rule not in CAPTURE_RULES:
            error = TypeError if not isinstance(capture_rule, str) else ValueError
            raise error(f"capture_rule must be one of {', '.join(CAPTURE_RULES)}; got {capture_rule!r}")
        keyed = check_keying(keying)
        if capture_rule == "headroom" and keyed == "local":
            raise ValueError("capture_rule 'headroom' is a global-keying rule; under keying='local' a size s holds s "
                             "rows on every rank (use capture_rule='captured')")
        if capture_rule == "headroom" and kind != "zigzag":
            raise ValueError(f"capture_rule 'headroom' is defined for zigzag only, got strategy={kind!r}")
        requests = check_int("max_requests", max_requests, minimum=1)
        listed = check_capture_list("capture_num_tokens", capture_num_tokens)
        kept = listed if keyed == "local" else tuple(b for b in listed if b >= 2 * p)
        if not kept:
            raise ValueError(f"capture_num_tokens={listed!r} has no bucket >= 2*cp_size = {2 * p}; "
                             "a CP graph runner needs at least one")
        dev = _check_device(model, device)
        if not isinstance(dtype, torch.dtype) or dtype not in STARTUP_TOLERANCE:
            raise TypeError(f"dtype must be one of {', '.join(map(str, STARTUP_TOLERANCE))}, got {dtype!r}")
        wrong = sorted({str(t.dtype) for t in model.parameters() if t.is_floating_point() and t.dtype != dtype})
        if wrong:
            raise ValueError(f"model parameters are {', '.join(wrong)} but dtype={dtype}; convert the model first")
        if use_cuda_graph is not None and not isinstance(use_cuda_graph, bool):
            raise TypeError(f"use_cuda_graph must be True, False or None (automatic), got {use_cuda_graph!r}")
        graphs = dev.type == "cuda" if use_cuda_graph is None else use_cuda_graph
        if graphs and dev.type != "cuda":
            raise ValueError(f"use_cuda_graph=True needs a CUDA device, got device={dev}")
        warmup = check_int("warmup_iters", warmup_iters, minimum=1)
        below = () if keyed == "local" else tuple(b for b in listed if b < 2 * p)
        return RunnerConfig(p, kept, below, align, kind, factor, capture_rule, requests, dev, dtype, graphs,
                            warmup, model.config.hidden, keyed)


def _check_device(model: CPTransformer, device: object) -> torch.device:
    params = list(model.parameters())
    found = canonical_device(params[0].device) if params else torch.device("cpu")
    dev = found if device is None else canonical_device(device)
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if dev.index is None or dev.index >= count:
            raise ValueError(f"device={device!r} ({dev}) is not available: this machine has {count} CUDA devices")
    if any(canonical_device(t.device) != dev for t in params):
        raise ValueError(f"model parameters are on {found} but device={device!r} ({dev}); move the model first")
    return dev


def agree_config(control: Control, make: Callable[[], RunnerConfig]) -> RunnerConfig:
    """Validate locally, then (across ranks) agree before any other collective: every rank raises
    StartupError naming the ranks whose arguments were invalid, or ConsensusError naming who differs."""
    try:
        config, error = make(), None
    except (TypeError, ValueError) as exc:
        if control.world_size == 1:
            raise
        config, error = None, exc
    if control.world_size == 1:
        assert config is not None
        return config
    mine = ("ok", config.summary()) if config is not None else ("error", explain(error) if error else "no config")
    entries = control.all_gather_object(mine)
    errors = {r: text for r, (kind, text) in enumerate(entries) if kind == "error"}
    if errors:
        raise StartupError(f"start-up refused on every rank: invalid arguments on {where(errors, 2)}") from error
    assert config is not None
    summaries = [text for _, text in entries]
    if len(set(summaries)) > 1:
        raise ConsensusError(disagreement("the runner configuration", summaries) + "; refusing to start")
    return config
