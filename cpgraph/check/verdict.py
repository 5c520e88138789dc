"""How a finding reads, on every subject: one headline (the invariant, where it broke, its kind, its sentence on
that subject from reference/invariants.py's table, what it costs), so a batch finding and a graph-path finding
read alike in text, Markdown and JUnit."""

from __future__ import annotations

from cpgraph.reference.invariants import INVARIANT_TABLE


def headline(invariant: str, where: str, subject: str) -> str:
    """``invariant`` broken ``where`` (a path's name, or the prefill batches), stated on ``subject`` (a column
    of the table: 'batch_global', 'batch_local', 'graph_path', or a batch keying)."""
    row = INVARIANT_TABLE[invariant]
    return f"{invariant} violated on {where} ({row.kind}: {row.stated(subject)}; costs {row.cost})"


def prefill_where(keying: str) -> str:
    """The batch subject's name in a headline."""
    return "prefill batches (local keying)" if keying == "local" else "prefill batches"
