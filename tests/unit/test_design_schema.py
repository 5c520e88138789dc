"""Design files: bundled designs load, and every bad knob is rejected naming the key, value and what is allowed."""

import pytest

from cpgraph.design.schema import BUNDLED, DesignError, dumps_design, load_design, loads_design

BASE = 'cp_size = 4\ncapture_num_tokens = [512, 1024]\n'


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_designs_load_by_name_and_path(name: str) -> None:
    by_name = load_design(name)
    by_path = load_design(f"designs/{name}.toml")
    assert by_name == by_path
    assert by_name.cp_size == 4
    if by_name.keying == "global":
        assert by_name.align_size == 8 and by_name.strategy == "zigzag"
    else:  # vLLM: rows padded to the size only
        assert by_name.align_size == 1 and by_name.strategy.startswith("dual_chunk_swap")


VLLM_SIZES = (1, 2, 4) + tuple(range(8, 249, 8)) + tuple(range(256, 513, 16))


def test_bundled_designs_differ_where_the_issue_says() -> None:
    assert load_design("upstream").selector == "search"
    assert load_design("prefix").selector == "smallest"
    assert load_design("headroom").capacity_rule == "headroom"
    pcp = load_design("vllm_pcp")
    assert (pcp.strategy, pcp.keying, pcp.admits_by, pcp.split) == ("dual_chunk_swap", "local", "local_rows", False)
    assert pcp.capture_num_tokens == VLLM_SIZES and pcp.buckets == VLLM_SIZES  # vLLM's default sizes, all kept
    assert pcp.capacities()[0] == {s: s for s in VLLM_SIZES}  # a size s holds s rows on every rank
    old = load_design("vllm_pcp_0_28")
    assert (old.keying, old.admits_by, old.split) == ("local", "num_tokens", True)
    assert old.capture_num_tokens == VLLM_SIZES


LOCAL = 'strategy = "dual_chunk_swap"\nkeying = "local"\ncp_size = 4\ncapture_num_tokens = [1, 2, 4, 8]\n'


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (BASE + 'keying = "rank"\n', "'keying': got 'rank'; allowed: global | local"),
        (BASE + 'admission_key = "tokens"\n', "'admission_key': got 'tokens'; allowed: num_tokens | local_rows"),
        (BASE + 'admission_key = "local_rows"\n', "'admission_key': got 'local_rows'; allowed: num_tokens under keying = \"global\""),
        (LOCAL + "align_size = 1\n", "'align_size': got 1; allowed: nothing under keying = \"local\""),
        (LOCAL + "max_padding_factor = 2\n", "'max_padding_factor': got 2; allowed: nothing under keying = \"local\" (no padding window"),
        (LOCAL + "context_len = 512\n", "'context_len': got 512; allowed: nothing under keying = \"local\""),
        (LOCAL + 'layout_basis = "live"\n', "'layout_basis': got 'live'; allowed: nothing under keying = \"local\""),
        (LOCAL + '[capacity]\nrule = "captured"\n', "'capacity': got {'rule': 'captured'}; allowed: nothing under keying"),
        (BASE + 'strategy = "zigzag_pad"\n', "'strategy': got 'zigzag_pad'; allowed: zigzag | interleave | contiguous | dual_chunk_swap"),
    ],
)
def test_keying_knobs_are_validated_from_the_keying_table(text: str, needle: str) -> None:
    with pytest.raises(DesignError) as info:
        loads_design(text)
    assert needle in str(info.value)


def test_a_local_design_keeps_every_size_and_round_trips() -> None:
    design = loads_design(LOCAL + 'admission_key = "num_tokens"\n', name="l")
    assert design.buckets == (1, 2, 4, 8)  # no CP-active gate drops sizes below 2P
    assert design.split and design.key == "local_rows" and design.admits_by == "num_tokens"
    assert loads_design(dumps_design(design), name="l") == design
    plain = loads_design(LOCAL, name="p")
    assert not plain.split and "admission_key" not in dumps_design(plain)
    assert loads_design(dumps_design(plain), name="p") == plain


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (BASE + 'selector = "fastest"\n', "'selector': got 'fastest'; allowed: search | smallest"),
        (BASE + 'layout_basis = "pad"\n', "'layout_basis'"),
        (BASE + "max_padding_factor = 0\n", "'max_padding_factor': got 0; allowed: a number >= 1"),
        (BASE + "max_padding_factor = 0.5\n", "'max_padding_factor': got 0.5; allowed: a number >= 1"),
        (BASE + 'max_padding_factor = "two"\n', "'max_padding_factor': got 'two'"),
        (BASE + 'max_padding_factor = "5/0"\n', "'max_padding_factor': got '5/0'"),
        ("cp_size = 65\ncapture_num_tokens = [512]\n", "'cp_size': got 65; allowed: an integer >= 1 and <= 64"),
        ("cp_size = 4\ncapture_num_tokens = [1000000000000]\n", "a bucket of 1000000000000 tokens; allowed: buckets <= 262144"),
        ("cp_size = 4\ncapture_num_tokens = [" + ", ".join(str(8 * (i + 1)) for i in range(257)) + "]\n",
         "a list of 257 buckets; allowed: at most 256 buckets"),
        (BASE + "context_len = 0\n", "'context_len': got 0"),
        (BASE + "context_len = 300000\n", "'context_len': got 300000; allowed: an integer >= 1 and <= 262144"),
        (BASE + "align_size = 300000\n", "'align_size': got 300000"),
        (BASE + "context_len = 512\n[capacity]\nrule = \"headroom\"\nmax_requests = 2\n", "'context_len': got 512"),
        (BASE + "cp_sizes = 4\n", "'cp_sizes' is not a design knob"),
        ("cp_size = 4\ncapture_num_tokens = [512, 512]\n", "512 is repeated"),
        ("cp_size = 4\ncapture_num_tokens = [4]\n", "at least one bucket >= 2*cp_size = 8"),
        ("capture_num_tokens = [512]\n", "'cp_size' is missing"),
        (BASE + '[capacity]\nrule = "headroom"\n', "'capacity.max_requests' is missing"),
        (BASE + '[capacity]\nrule = "table"\ntable = { "512" = [1, 2] }\n', "a list of 4 integers"),
        (BASE + '[capacity]\nrule = "captured"\nmax_requests = 3\n', "'capacity.max_requests'"),
        (BASE + '[capacity]\nrule = "table"\ntable = { "512" = 300000 }\n', "'capacity.table.512': got 300000"),
        (BASE + "cp_size = 4\n", "not valid TOML"),
    ],
)
def test_bad_design_names_key_value_and_allowed(text: str, needle: str) -> None:
    with pytest.raises(DesignError) as info:
        loads_design(text)
    assert needle in str(info.value)


def test_unknown_design_lists_bundled_names() -> None:
    with pytest.raises(DesignError, match="bundled: upstream, prefix, headroom, vllm_pcp, vllm_pcp_0_28"):
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


@pytest.mark.parametrize(("written", "num", "den"), [("1.5", 3, 2), ('"5/4"', 5, 4), ('"1.25"', 5, 4), ("3", 3, 1)])
def test_padding_factors_are_exact_rationals(written: str, num: int, den: int) -> None:
    design = loads_design(BASE + f"max_padding_factor = {written}\n", name="f")
    assert (design.max_padding_factor.numerator, design.max_padding_factor.denominator) == (num, den)
    assert loads_design(dumps_design(design), name="f") == design


def test_a_rational_factor_bounds_the_bucket_exactly() -> None:
    from cpgraph.design.evaluate import select

    design = loads_design("cp_size = 4\ncapture_num_tokens = [600]\nmax_padding_factor = \"3/2\"\n", name="f")
    caps = design.capacities()[0]
    assert select(design, 400, 8, caps) == 600  # 600 * 2 <= 3 * 400
    assert select(design, 399, 8, caps) is None  # 600 * 2 > 3 * 399


def test_context_len_round_trips_and_sets_capture_capacity() -> None:
    design = loads_design(BASE + "context_len = 300\n", name="c")
    assert loads_design(dumps_design(design), name="c") == design
    whole = loads_design(BASE, name="w")
    assert design.capacities()[0][1024] >= whole.capacities()[0][1024]
