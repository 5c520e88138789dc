"""proofs/theorems/setting.py ``shared_settings``: inside the block every theorem of one parameter shares its settings
and sides (Python's work saved), and the queries are the very ones built without it."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cpgraph.proofs.theorems import end_to_end, setting
from cpgraph.proofs.registry import BY_NAME
from cpgraph.proofs.theorems.setting import shared_settings
from cpgraph.spec import admission

END_TO_END = [name for name, o in BY_NAME.items() if o.over == "cp_size_sampled"]


@pytest.mark.parametrize("cp_size", [1, 3, 4])
def test_shared_builds_are_the_same_queries(cp_size: int) -> None:
    alone = {name: BY_NAME[name].build(cp_size) for name in END_TO_END}
    with shared_settings():
        shared = {name: BY_NAME[name].build(cp_size) for name in END_TO_END}
    assert len(END_TO_END) >= 16
    for name in END_TO_END:
        assert [q.part for q in alone[name]] == [q.part for q in shared[name]], name
        for a, b in zip(alone[name], shared[name]):
            assert a.claim.eq(b.claim), (name, a.part)
            assert len(a.hypotheses) == len(b.hypotheses) and all(x.eq(y) for x, y in zip(a.hypotheses, b.hypotheses)), (name, a.part)


def test_inside_a_block_a_setting_and_its_sides_are_built_once() -> None:
    with shared_settings():
        first = setting.setting(4, "zigzag", Fraction(2))
        assert setting.setting(4, "zigzag", Fraction(2)) is first
        assert setting.setting(4, "zigzag", Fraction(3, 2)) is not first  # another key, another setting
        assert first.admitted(admission.admit) is first.admitted(admission.admit)
        assert first.rows_needed("truth") is first.rows_needed("truth")
    # outside any block nothing is shared
    assert setting.setting(4, "zigzag", Fraction(2)) is not setting.setting(4, "zigzag", Fraction(2))


def test_a_patched_builder_is_seen_by_every_build_outside_a_block(monkeypatch: pytest.MonkeyPatch) -> None:
    # a caller that patches a spec builder between two builds sees its patch: nothing outlives a block
    calls: list[int] = []
    real = setting.class_batch

    def spy(cp_size: int, name: str) -> object:
        calls.append(cp_size)
        return real(cp_size, name)

    monkeypatch.setattr(setting, "class_batch", spy)
    settings = len(end_to_end._settings(2))
    calls.clear()
    end_to_end.admitted_bucket_is_captured(2)
    end_to_end.admitted_bucket_is_captured(2)
    assert len(calls) == 2 * settings  # every build builds its batches anew
    calls.clear()
    with shared_settings():
        end_to_end.admitted_bucket_is_captured(2)
        end_to_end.admitted_bucket_is_captured(2)
    assert len(calls) == settings  # once per setting inside the block
