"""Design files: bundled designs load, and every bad knob is rejected naming the key, value and what is allowed."""

import pytest

from cpgraph.design.schema import BUNDLED, DesignError, dumps_design, load_design, loads_design

BASE = 'cp_size = 4\ncapture_num_tokens = [512, 1024]\n'


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_designs_load_by_name_and_path(name: str) -> None:
    by_name = load_design(name)
    by_path = load_design(f"designs/{name}.toml")
    assert by_name == by_path
    assert by_name.cp_size == 4 and by_name.align_size == 8 and by_name.strategy == "zigzag"


def test_bundled_designs_differ_where_the_issue_says() -> None:
    assert load_design("upstream").selector == "search"
    assert load_design("prefix").selector == "smallest"
    assert load_design("headroom").capacity_rule == "headroom"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (BASE + 'selector = "fastest"\n', "'selector': got 'fastest'; allowed: search | smallest"),
        (BASE + 'layout_basis = "pad"\n', "'layout_basis'"),
        (BASE + "max_padding_factor = 0\n", "'max_padding_factor': got 0; allowed: an integer >= 1"),
        (BASE + "cp_sizes = 4\n", "'cp_sizes' is not a design knob"),
        ("cp_size = 4\ncapture_num_tokens = [512, 512]\n", "512 is repeated"),
        ("cp_size = 4\ncapture_num_tokens = [4]\n", "at least one bucket >= 2*cp_size = 8"),
        ("capture_num_tokens = [512]\n", "'cp_size' is missing"),
        (BASE + '[capacity]\nrule = "headroom"\n', "'capacity.max_requests' is missing"),
        (BASE + '[capacity]\nrule = "table"\ntable = { "512" = [1, 2] }\n', "a list of 4 integers"),
        (BASE + '[capacity]\nrule = "captured"\nmax_requests = 3\n', "'capacity.max_requests'"),
        ('strategy = "interleave"\n' + BASE + '[capacity]\nrule = "headroom"\nmax_requests = 2\n', "zigzag only"),
        (BASE + "cp_size = 4\n", "not valid TOML"),
    ],
)
def test_bad_design_names_key_value_and_allowed(text: str, needle: str) -> None:
    with pytest.raises(DesignError) as info:
        loads_design(text)
    assert needle in str(info.value)


def test_unknown_design_lists_bundled_names() -> None:
    with pytest.raises(DesignError, match="bundled: upstream, prefix, headroom"):
        load_design("no-such-design")


def test_dumps_round_trips_every_knob() -> None:
    design = loads_design(
        BASE + 'selector = "smallest"\nlayout_basis = "padded"\n[capacity]\nrule = "table"\n'
        'table = { "512" = 128, "1024" = [256, 256, 264, 256] }\n',
        name="t",
    )
    again = loads_design(dumps_design(design), name="t")
    assert again == design
    assert design.per_rank_table and design.rank_capacities(2) == {512: 128, 1024: 264}
