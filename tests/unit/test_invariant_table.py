"""reference/invariants.py is the one table: every row states its invariant on every subject, with a kind and a
cost; the graph-path checker, the decode review and the reports read their sentences from it."""

from __future__ import annotations

import pytest

from cpgraph.reference.invariants import INVARIANT_TABLE, SUBJECTS, sentence


def test_every_row_has_a_cost_and_a_sentence_on_every_subject() -> None:
    for row in INVARIANT_TABLE.values():
        assert row.cost == "speed" if row.kind == "efficiency" else row.cost != "speed"
        assert all(row.stated(subject) for subject in SUBJECTS)
        assert row.stated("global") == row.batch_global and row.stated("local") == row.batch_local


def test_an_unknown_subject_or_id_is_named() -> None:
    with pytest.raises(ValueError, match="'ep'"):
        sentence("capacity_fit", "ep")
    with pytest.raises(ValueError, match="'fit'"):
        sentence("fit")


def test_the_decode_review_and_the_path_report_read_the_graph_path_column() -> None:
    from cpgraph.design.decode_review import sentence as decode_sentence

    assert decode_sentence("captured_bucket") == INVARIANT_TABLE["captured_bucket"].graph_path == "the descriptor was captured"
