"""How a finding reads, on every subject: one headline (the invariant, where it broke, its kind, its sentence on
that subject from reference/invariants.py's table, what it costs), so a batch finding and a graph-path finding
read alike in text, Markdown and JUnit."""

from __future__ import annotations

from cpgraph.reference.invariants import INVARIANT_TABLE


def headline(invariant: str, where: str, subject: str, *, kind: str = "", info: bool = False) -> str:
    """``invariant`` broken ``where`` (a path's name, the prefill batches, an EP step), stated on ``subject`` (a
    column of the table: 'batch_global', 'batch_local', 'graph_path', 'ep_step', or a batch keying); ``kind``
    (a finer name inside the invariant) shown in brackets, ``info``: a note, not a violation."""
    row = INVARIANT_TABLE[invariant]
    named = f"{invariant} [{kind}]" if kind and kind != invariant else invariant
    if info:
        return f"{named} noted on {where} (information)"
    return f"{named} violated on {where} ({row.kind}: {row.stated(subject)}; costs {row.cost})"


def prefill_where(keying: str) -> str:
    """The batch subject's name in a headline."""
    return "prefill batches (local keying)" if keying == "local" else "prefill batches"
