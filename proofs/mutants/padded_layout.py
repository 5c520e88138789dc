"""Selects correctly, but lays the replay out on the padded count: the pad (bucket - n) is folded into the
last request, which changes the loads (docs/semantics.md: 256 pad tokens give 584 rows > 576)."""

from __future__ import annotations

from typing import Any, Final

from cpgraph.proofs.mutants._kit import align_up, correct_select, protocol, zigzag_loads

CAUGHT_AS: Final = "capacity_fit"

admit, replay_bucket = protocol(correct_select)


def local_rows(*, bucket: int, **batch: Any) -> tuple[int, ...]:
    lengths = list(batch["extend_seq_lens"])
    lengths[-1] += bucket - batch["num_tokens"]
    p: int = batch["cp_size"]
    rows: int = align_up(max(zigzag_loads(lengths, p)), batch["align_size"])
    return (rows,) * p
