"""vLLM's released prefill context parallel (Model Runner V2), driven as shipped through
cpgraph.adapters.vllm: each release's own PCPManager, CudaGraphManager.dispatch and
dispatch_cg_and_sync_dp, loaded from its wheel's files (fetched and unpacked once per machine by the
``vllm_release`` fixture in tests/conftest.py; skipped with pip's reason when the package index cannot be
reached). These tests call the adapter directly, not the checker.

- The layout: ``reference.layout.rank_loads`` with the policy's strategy equals the release's own
  per-rank rows on 10,000 random batches of prefills and decodes, P in 1..8 (0.26.0, 0.29.0, 0.32.0,
  0.34.0), and with decode context parallel (dcp = 2) on fewer.
- The shipped bug: 0.26.0-0.28.0 admit one size and replay under another ([170, 161, 153] at P = 4:
  496 vs 126; [64] * 7: 448 vs 112); 0.29.0-0.34.0 replay the size they admitted, the least capture size
  >= the largest rank-local rows, and run eagerly above the largest size.
- The planted regression: 0.33.0 with the pre-fix glue behaves as 0.28.0.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cpgraph import check_policy

from cpgraph.adapters.vllm import GLOBAL_DISPATCH, LOCAL_DISPATCH, READ_AGAINST, SPLIT_CAPTURE, Step, VllmPolicy, policy_from
from cpgraph.reference.layout import rank_loads

RELEASES = ("0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")
SHIPPED_BUG = RELEASES[:3]
FIXED = RELEASES[3:]
CONFORMANCE = ("0.26.0", "0.29.0", "0.32.0", "0.34.0")
# vLLM's default capture sizes (vllm/config/vllm.py:1745 in 0.26.0, :2410 in 0.33.0, max_graph_size 512)
DEFAULT_SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))
EXAMPLES = {(170, 161, 153): (496, 126, [106, 126, 126, 126]), (64,) * 7: (448, 112, [112] * 4)}
DECODES = {"dual_chunk_swap_replicated": "replicated", "dual_chunk_swap": "round_robin"}

_POLICIES: dict[tuple[str, object, int], VllmPolicy] = {}


@pytest.fixture(scope="module")
def policy(vllm_release: Callable[[str], Path]) -> Callable[..., VllmPolicy]:
    """``policy(version, planted=False, dcp_size=1)``: one policy per release and option in this session."""

    def make(version: str, planted: bool | str = False, dcp_size: int = 1) -> VllmPolicy:
        key = (version, planted, dcp_size)
        if key not in _POLICIES:
            _POLICIES[key] = policy_from(str(vllm_release(version)), planted=planted, dcp_size=dcp_size)
        return _POLICIES[key]

    return make


def _batch(lengths: tuple[int, ...], cp_size: int, *, rank: int = 0, sizes: tuple[int, ...] = DEFAULT_SIZES,
           is_prefilling: tuple[bool, ...] | None = None) -> dict[str, object]:
    return dict(cp_rank=rank, cp_size=cp_size, align_size=1, num_tokens=sum(lengths), extend_seq_lens=lengths,
                capture_num_tokens=sizes, bucket_local_tokens={}, max_padding_factor=None, is_prefilling=is_prefilling)


def _random_batches(seed: int, count: int, *, decodes: bool = True) -> list[tuple[int, tuple[int, ...], tuple[bool, ...]]]:
    """Batches of 1..8 requests at P in 1..8: lengths 1..600, a third of them short (1..4P, where chunks
    run out), and with ``decodes`` about one request in three a decode (1..4 tokens)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        p = rng.randint(1, 8)
        prefilling = tuple(not decodes or rng.random() < 0.65 for _ in range(rng.randint(1, 8)))
        lengths = tuple(
            (rng.randint(1, 600) if rng.random() < 0.65 else rng.randint(1, 4 * p)) if pre else rng.randint(1, 4)
            for pre in prefilling
        )
        out.append((p, lengths, prefilling))
    return out


def _step(policy: VllmPolicy, p: int, lengths: tuple[int, ...], prefilling: tuple[bool, ...] | None = None,
          sizes: tuple[int, ...] = DEFAULT_SIZES, rank: int = 0) -> Step:
    return policy.step(cp_rank=rank, cp_size=p, num_tokens=sum(lengths), extend_seq_lens=lengths,
                       capture_num_tokens=sizes, is_prefilling=prefilling)


# -- the release, its code and its glue ---------------------------------------------------------------
@pytest.mark.parametrize("version", RELEASES)
def test_the_driven_code_is_the_wheels_own_and_its_family_is_read_from_it(
    policy: Callable[..., VllmPolicy], vllm_release: Callable[[str], Path], version: str
) -> None:
    root = str(vllm_release(version))
    pcp = policy(version)
    assert pcp.version == version and (Path(root) / "WHEEL-FILE").read_text().startswith(f"vllm-{version}-")
    for name, path in pcp.code_files().items():
        assert os.path.commonpath([path, root]) == root, f"{name} comes from {path}, not from {root}"
    assert pcp.family == (GLOBAL_DISPATCH if version in SHIPPED_BUG else SPLIT_CAPTURE if version >= "0.34.0" else LOCAL_DISPATCH)
    assert version in READ_AGAINST and pcp.local == (version not in SHIPPED_BUG)
    assert pcp.strategy == ("dual_chunk_swap" if version >= "0.32.0" else "dual_chunk_swap_replicated")
    assert (pcp.keying, pcp.align_size, pcp.max_padding_factor) == ("local", 1, None)
    steps = pcp.citations()
    assert {"dispatch_count", "dispatch", "partition", "replay_key", "local_padded", "no_manager"} <= set(steps)
    assert ("decode_sharding" in steps) == (version >= "0.32.0")


# The lines the adapter's comments cite, where the glue is in those releases (replay_key: the statement defining the
# forward context's batch descriptor, replay_full: the FULL graph's run_fullgraph call, both run).
CITED = {
    "0.26.0": {"dispatch_count": 1174, "partition": 1053, "replay_key": 1333, "replay_full": 1330, "local_padded": 387, "no_manager": 660,
               "single_rank_padding": 878},
    "0.28.0": {"dispatch_count": 1440, "partition": 1301},
    "0.29.0": {"dispatch_count": 1551, "partition": 1362, "replay_key": 1746, "replay_full": 1743},
    "0.33.0": {"dispatch_count": 1813, "dispatch": 1832, "partition": 1592, "descriptor_padding": 484, "replay_key": 2062, "replay_full": 2059,
               "local_padded": 545, "no_manager": 903, "single_rank_padding": 1396, "decode_sharding": 916},
    "0.34.0": {"dispatch_count": 1875, "dispatch": 1894, "partition": 1662, "descriptor_padding": 472, "replay_key": 2130, "replay_full": 2127,
               "local_padded": 533, "no_manager": 910, "single_rank_padding": 1466, "decode_sharding": 923},
}


@pytest.mark.parametrize("version", sorted(CITED))
def test_the_glue_is_where_the_adapter_cites_it(policy: Callable[..., VllmPolicy], version: str) -> None:
    found = policy(version).citations()  # the dispatch steps from the statements run, the rest as located
    for step, line in CITED[version].items():
        assert found[step].endswith(f":{line}"), (version, step, found[step])


# -- (a) the layout ----------------------------------------------------------------------------------
@pytest.mark.parametrize("version", CONFORMANCE)
def test_dual_chunk_swap_loads_equal_the_releases_own_rows(policy: Callable[..., VllmPolicy], version: str) -> None:
    pcp = policy(version)
    mismatches = []
    for i, (p, lengths, prefilling) in enumerate(_random_batches(20_000 + CONFORMANCE.index(version), 10_000)):
        step = _step(pcp, p, lengths, prefilling, rank=i % p)
        order = step.order or tuple(range(len(lengths)))  # the release sorts the batch (gather_batch_req_state) first
        laid = tuple(lengths[j] for j in order), tuple(prefilling[j] for j in order)
        expected = rank_loads(laid[0], cp_size=p, strategy=pcp.strategy, is_prefilling=laid[1])
        if step.rows != tuple(expected):
            mismatches.append((p, lengths, prefilling, step.rows, expected))
        if pcp.family == LOCAL_DISPATCH and p > 1:
            assert step.count == max(step.rows), (p, lengths, prefilling, step)  # get_num_tokens_for_dispatch
    assert not mismatches, f"{len(mismatches)} of 10000 differ; first (P, lengths, is_prefilling, release, reference): {mismatches[0]}"


@pytest.mark.parametrize("version, strategy", [("0.26.0", "dual_chunk_swap_replicated"), ("0.30.0", "dual_chunk_swap_dcp"),
                                               ("0.33.0", "dual_chunk_swap_dcp")])
def test_with_decode_context_parallel_the_rows_follow_the_dcp_rule(policy: Callable[..., VllmPolicy], version: str, strategy: str) -> None:
    pcp = policy(version, dcp_size=2)
    assert pcp.strategy == strategy
    for p, lengths, prefilling in _random_batches(7, 1500):
        expected = rank_loads(lengths, cp_size=p, strategy=strategy, is_prefilling=prefilling)
        assert _step(pcp, p, lengths, prefilling).rows == tuple(expected), (p, lengths, prefilling)


def test_the_worked_layouts(policy: Callable[..., VllmPolicy]) -> None:
    for version in ("0.26.0", "0.33.0"):
        assert _step(policy(version), 4, (300,)).rows == (72, 76, 76, 76)
        assert _step(policy(version), 4, (3,)).rows == (1, 1, 1, 0)
    mixed = (3, 1, 1, 1), (True, False, False, False)
    assert _step(policy("0.31.0"), 4, *mixed).rows == (4, 4, 4, 3)  # decodes copied to every rank
    assert _step(policy("0.32.0"), 4, *mixed).rows == (2, 2, 2, 0)  # dealt round-robin


# -- (b) admission and replay --------------------------------------------------------------------------
@pytest.mark.parametrize("version", SHIPPED_BUG)
def test_the_shipped_bug_admits_one_size_and_replays_another(policy: Callable[..., VllmPolicy], version: str) -> None:
    pcp = policy(version)
    for lengths, (admitted, replayed, rows) in EXAMPLES.items():
        for rank in range(4):
            batch = _batch(lengths, 4, rank=rank)
            assert pcp.admit(**batch) is True
            assert pcp.admitted_bucket(**batch) == admitted and pcp.replay_bucket(**batch) == replayed != admitted
            assert pcp.local_rows(bucket=replayed, **batch) == rows
    assert 126 not in DEFAULT_SIZES and 112 in DEFAULT_SIZES  # replayed under a size never captured / a captured one


@pytest.mark.parametrize("version", FIXED)
def test_the_fixed_releases_replay_the_least_size_that_holds_the_rows(policy: Callable[..., VllmPolicy], version: str) -> None:
    pcp = policy(version)
    for lengths, (_, _, rows) in EXAMPLES.items():
        size = min(s for s in DEFAULT_SIZES if s >= max(rows))
        batch = _batch(lengths, 4)
        assert pcp.admitted_bucket(**batch) == pcp.replay_bucket(**batch) == size and pcp.local_rows(bucket=size, **batch) == rows
    eager = 0
    for p, lengths, prefilling in _random_batches(99, 1500):
        batch = _batch(lengths, p, is_prefilling=prefilling)
        if pcp.admit(**batch):
            replayed = pcp.replay_bucket(**batch)
            rows = pcp.local_rows(bucket=replayed, **batch)
            assert pcp.admitted_bucket(**batch) == replayed == min(s for s in DEFAULT_SIZES if s >= max(rows)), (p, lengths, prefilling)
        else:
            eager += 1
            rows = pcp.local_rows(bucket=0, **batch)  # eager: the layout as the release runs it, unpadded
            assert max(rows) > max(DEFAULT_SIZES), (p, lengths, prefilling, rows)
            assert pcp.admitted_bucket(**batch) is None
            with pytest.raises(RuntimeError, match="runs this batch eagerly"):
                pcp.replay_bucket(**batch)
    assert eager > 0  # the draw reaches above 512 rows
    big = _batch((600, 600, 600, 600), 2)  # 1200 rows a rank
    assert not pcp.admit(**big) and pcp.admitted_bucket(**big) is None


@pytest.mark.parametrize("version", RELEASES)
def test_one_rank_dispatches_the_global_count(policy: Callable[..., VllmPolicy], version: str) -> None:
    pcp = policy(version)
    assert pcp.replay_bucket(**_batch((100, 20), 1)) == pcp.admitted_bucket(**_batch((100, 20), 1)) == 120
    assert pcp.local_rows(bucket=120, **_batch((100, 20), 1)) == [120]
    assert not pcp.admit(**_batch((400, 200), 1))


def test_a_size_below_a_ranks_rows_is_refused_by_the_releases_layout(policy: Callable[..., VllmPolicy]) -> None:
    batch = _batch((170, 161, 153), 4)
    with pytest.raises(ValueError, match="PCP padded token count is smaller than the largest rank-local batch: 120 < 126"):
        policy("0.33.0").local_rows(**{**batch, "bucket": 120})


# -- (c) the planted regression ---------------------------------------------------------------------
def test_the_planted_pre_fix_glue_behaves_as_0_28(policy: Callable[..., VllmPolicy]) -> None:
    planted, shipped = policy("0.33.0", planted=True), policy("0.28.0")
    # planted in a copy of the source, whose partition the adapter then reads as 0.28's
    assert planted.planted == "pre_fix" and planted.family == GLOBAL_DISPATCH and planted.root != planted.origin
    for lengths, (admitted, replayed, rows) in EXAMPLES.items():
        batch = _batch(lengths, 4)
        assert (planted.admitted_bucket(**batch), planted.replay_bucket(**batch), planted.local_rows(bucket=replayed, **batch)) == (admitted, replayed, rows)
    for p, lengths, prefilling in _random_batches(5, 2000, decodes=False):  # decodes are placed differently
        a, b = _step(planted, p, lengths), _step(shipped, p, lengths)
        assert (a.admitted, a.dispatched, a.replay, a.rows) == (b.admitted, b.dispatched, b.replay, b.rows), (p, lengths)
    with pytest.raises(ValueError, match="ships the global dispatch already"):
        policy("0.28.0", planted=True)


def test_the_planted_global_dispatch_count_alone_wastes_sizes_but_replays_what_it_admits(policy: Callable[..., VllmPolicy]) -> None:
    planted, fixed = policy("0.33.0", planted="global_dispatch"), policy("0.33.0")
    batch = _batch((170, 161, 153), 4)
    assert planted.admitted_bucket(**batch) == planted.replay_bucket(**batch) == 496 > fixed.replay_bucket(**batch) == 128
    assert not planted.admit(**_batch((300, 300), 4)) and fixed.admit(**_batch((300, 300), 4))  # 600 global, 152 a rank


# -- the command line -----------------------------------------------------------------------------------
CHECKED = dict(cp_sizes=(1, 2, 4, 8), max_requests=4, max_cases=1500, workers=1, seed=0)


@pytest.mark.parametrize("version", SHIPPED_BUG)
def test_cpgraph_check_fails_the_releases_that_ship_the_split_with_admission_replay(
    policy: Callable[..., VllmPolicy], version: str
) -> None:
    report = check_policy(policy(version), **CHECKED)  # type: ignore[arg-type]
    assert not report.ok
    violation = report.violation("admission_replay")
    assert violation is not None, report.text()
    assert len(violation.batch.extend_seq_lens) <= 3, violation.text()  # minimised: a few requests
    admitted = {a.admitted for a in violation.answers if a.admit}
    replayed = {a.bucket for a in violation.answers if a.admit}
    assert admitted and replayed and admitted != replayed, violation.text()


@pytest.mark.parametrize("version", FIXED)
def test_cpgraph_check_passes_every_fixed_release(policy: Callable[..., VllmPolicy], version: str) -> None:
    report = check_policy(policy(version), **CHECKED)  # type: ignore[arg-type]
    assert report.ok, report.text()
    assert report.cases == CHECKED["max_cases"]


def test_cpgraph_check_fails_the_planted_regression_the_same_way(policy: Callable[..., VllmPolicy]) -> None:
    report = check_policy(policy("0.33.0", planted=True), **CHECKED)  # type: ignore[arg-type]
    assert report.violation("admission_replay") is not None, report.text()


def test_the_cli_checks_a_release_given_by_adapter_root(vllm_release: Callable[[str], Path]) -> None:
    for version, want in (("0.33.0", 0), ("0.28.0", 1)):
        done = subprocess.run(
            [sys.executable, "-m", "cpgraph", "check", "cpgraph.adapters.vllm:pcp", "--adapter-root", str(vllm_release(version)),
             "--cp-sizes", "2,4", "--max-cases", "400", "--no-graph-paths"],  # the prefill bucket (graph paths: test_vllm_graph_paths.py)
            capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == want, done.stdout[-2000:] + done.stderr[-2000:]
        if want:
            assert "admission_replay violated" in done.stdout
