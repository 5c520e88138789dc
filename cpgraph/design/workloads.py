"""Workloads: batches of extend_seq_lens, built in (deterministic, from documented parameters) or from a file.

A workload file is JSON lines, one batch per line: ``[1534, 161, 353]`` or
``{"extend_seq_lens": [1534, 161, 353]}``. Blank lines and lines starting with ``#`` are skipped.

Built-in workloads (``random.Random(seed)``, so every run sees the same batches). A scheduler packs
requests into a batch up to a token budget of 8192 (``max_prefill_tokens``); with chunked prefill the
request that would overflow the budget is cut to fill it exactly.
- ``chat``: 2000 batches of short chat prompts: 1-16 requests per batch, lengths log-normal with median
  200 tokens and sigma 0.9, clipped to [16, 4096]; 20% of batches are cut to fill the budget.
- ``docs``: 600 batches of long documents: 1-3 requests of 1500-12000 tokens (uniform); 60% of batches
  are cut to fill the budget.
- ``mixed``: 3000 batches: 65% chat batches, 25% docs batches, 10% one document (1500-6000 tokens)
  followed by 1-8 chat prompts.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from pathlib import Path

BUDGET = 8192
Lengths = tuple[int, ...]  # one batch of a workload: its extend_seq_lens


def _chat_length(rng: random.Random) -> int:
    return max(16, min(4096, int(rng.lognormvariate(math.log(200), 0.9))))


def _pack(lengths: list[int], rng: random.Random, cut_share: float) -> Lengths:
    """Pack requests in order up to the budget; maybe cut the overflowing one to fill it exactly."""
    out: list[int] = []
    for length in lengths:
        room = BUDGET - sum(out)
        if length <= room:
            out.append(length)
        elif rng.random() < cut_share and room >= 16:
            out.append(room)
            break
        else:
            break
    return tuple(out) if out else (min(lengths[0], BUDGET),)


def _chat(rng: random.Random) -> Lengths:
    return _pack([_chat_length(rng) for _ in range(rng.randint(1, 16))], rng, 0.2)


def _docs(rng: random.Random) -> Lengths:
    return _pack([rng.randint(1500, 12000) for _ in range(rng.randint(1, 3))], rng, 0.6)


def _doc_plus_chat(rng: random.Random) -> Lengths:
    return _pack([rng.randint(1500, 6000)] + [_chat_length(rng) for _ in range(rng.randint(1, 8))], rng, 0.2)


def _mixed(rng: random.Random) -> Lengths:
    roll = rng.random()
    return _chat(rng) if roll < 0.65 else (_docs(rng) if roll < 0.90 else _doc_plus_chat(rng))


BUILTIN: dict[str, tuple[int, int, Callable[[random.Random], Lengths]]] = {
    "chat": (2000, 1, _chat),
    "docs": (600, 2, _docs),
    "mixed": (3000, 3, _mixed),
}


def builtin(name: str) -> tuple[Lengths, ...]:
    """A built-in workload by name (chat, docs, mixed)."""
    count, seed, draw = BUILTIN[name]
    rng = random.Random(seed)
    return tuple(draw(rng) for _ in range(count))


class WorkloadError(ValueError):
    """A workload that cannot be read: names the file, the line and what is allowed."""


def parse_lines(text: str, source: str) -> tuple[Lengths, ...]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise WorkloadError(f"{source}:{number}: not JSON ({exc.msg}); allowed: [int, ...] per line") from None
        if isinstance(item, dict):
            item = item.get("extend_seq_lens")
        if (
            not isinstance(item, list)
            or not item
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in item)
        ):
            raise WorkloadError(
                f"{source}:{number}: got {line[:80]!r}; allowed: a non-empty list of positive ints "
                'or {"extend_seq_lens": [...]}'
            )
        out.append(tuple(item))
    if not out:
        raise WorkloadError(f"{source}: no batches")
    return tuple(out)


def load_workload(ref: str) -> tuple[str, tuple[Lengths, ...]]:
    """(name, batches) for a built-in name or a JSON-lines file."""
    if ref in BUILTIN:
        return ref, builtin(ref)
    path = Path(ref)
    if not path.is_file():
        raise WorkloadError(f"workload {ref!r}: no such file and not built in; built in: {', '.join(BUILTIN)}")
    return path.stem, parse_lines(path.read_text(encoding="utf-8"), str(path))
