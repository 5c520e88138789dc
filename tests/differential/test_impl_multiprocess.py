"""One process per rank over gloo (CPU): the same outputs as one device, and the consensus guard (a strict
minority is named; a tie blames no rank). Fault injection lives in tests/multirank.

One spawn per cp_size serves every test of that group (module-scoped fixture); the model is tiny.
Tolerance against the one-device runner and the non-CP eager model: float32, atol = rtol = 1e-5.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from cpgraph.impl.launch import SpawnError, spawn
from cpgraph.impl.model import ModelConfig, batch_hidden, build_model
from cpgraph.impl.workers import PrefillJob, prefill_worker
from cpgraph.impl.runner import PrefillGraphRunner

pytestmark = pytest.mark.multiprocess

CONFIG = ModelConfig(hidden=32, heads=4, layers=2)
BUCKETS = (16, 32, 64, 128, 256)
BATCHES = ((40, 30), (100,), (20, 20, 20), (9, 9, 9, 9, 9, 9, 9), (3, 60), (120, 100), (16, 16), (30, 30))
ODD = 2  # batch index fed differently to the last rank
TIE = 7  # batch index fed differently to the upper half of the ranks


def job(p: int) -> PrefillJob:
    upper = tuple((TIE, r, (30, 31)) for r in range(p // 2, p))
    return PrefillJob(CONFIG, seed=p, capture_num_tokens=BUCKETS, batches=BATCHES,
                      overrides=((ODD, p - 1, (20, 20, 21)), *upper), capture_rule="headroom", max_requests=8)


@pytest.fixture(scope="module", params=[2, 4], ids=["P2", "P4"])
def group(request: pytest.FixtureRequest) -> tuple[int, list[list[dict[str, Any]]]]:
    p: int = request.param
    return p, [r["batches"] for r in spawn(prefill_worker, p, job(p), timeout_s=180)]


def test_every_rank_returns_the_one_device_outputs(group: tuple[int, list[list[dict[str, Any]]]]) -> None:
    p, results = group
    one = PrefillGraphRunner(build_model(CONFIG, seed=p), cp_size=p, capture_num_tokens=BUCKETS,
                             capture_rule="headroom", max_requests=8)
    replays = 0
    for i, lengths in enumerate(BATCHES):
        if i in (ODD, TIE):
            continue
        hidden = batch_hidden(lengths, CONFIG.hidden, p, i)
        local = one.run(hidden, lengths)
        eager = one.run_eager(hidden, lengths)
        for rank in range(p):
            record = results[rank][i]
            assert "error" not in record, record
            assert (record["bucket"], record["reason"]) == (local.plan.bucket, local.reason), (rank, i)
            assert record["mode"] == ("emulation" if local.plan.admitted else "eager")
            out = torch.tensor(record["output"])
            torch.testing.assert_close(out, local.output, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(out, eager, atol=1e-5, rtol=1e-5)
        replays += local.plan.admitted
    assert replays >= 4


def test_consensus_guard_names_the_rank_fed_a_different_batch(group: tuple[int, list[list[dict[str, Any]]]]) -> None:
    p, results = group
    for rank in range(p):
        message = results[rank][ODD].get("error", "")
        if p == 2:  # one rank against one: a tie, nobody is blamed
            assert "ranks disagree on the plan (no majority, so no rank is blamed)" in message, message
            assert "rank 0: extend_seq_lens=(20, 20, 20)" in message and "rank 1: extend_seq_lens=(20, 20, 21)" in message
        else:
            assert f"ranks [{p - 1}] disagree with ranks {list(range(p - 1))}" in message, message
            assert "extend_seq_lens=(20, 20, 21)" in message and "extend_seq_lens=(20, 20, 20)" in message
    # The group stays usable after a refusal: the next batch replays on every rank.
    assert all("output" in results[rank][ODD + 1] for rank in range(p))


def test_a_tie_reports_ranks_disagree_with_each_ranks_plan(group: tuple[int, list[list[dict[str, Any]]]]) -> None:
    p, results = group
    for rank in range(p):
        message = results[rank][TIE].get("error", "")
        assert "ranks disagree on the plan (no majority, so no rank is blamed)" in message, message
        for r in range(p):
            assert f"rank {r}: extend_seq_lens={(30, 30) if r < p // 2 else (30, 31)}" in message, message


def test_local_keying_with_replicated_decodes_across_processes() -> None:
    """vLLM's keying and layout with one rank per process: each process fills only its rank's rows, a replicated
    decode's copy included; every rank returns the one-device runner's outputs and the reference's size."""
    from cpgraph import reference

    p, sizes = 2, (1, 2, 4, 8, 16, 32, 64)
    batches = ((40, 1, 30), (3, 1, 1), (60,), (5, 2, 9, 1))
    flags: tuple[tuple[bool, ...] | None, ...] = (
        (True, False, True), (True, False, False), None, (True, False, True, False))
    strategy = "dual_chunk_swap_replicated"
    work = PrefillJob(CONFIG, seed=3, capture_num_tokens=sizes, batches=batches, strategy=strategy, keying="local",
                      is_prefilling=flags)
    results = [r["batches"] for r in spawn(prefill_worker, p, work, timeout_s=180)]
    one = PrefillGraphRunner(build_model(CONFIG, seed=3), cp_size=p, capture_num_tokens=sizes, strategy=strategy,
                             keying="local")
    for i, lengths in enumerate(batches):
        hidden = batch_hidden(lengths, CONFIG.hidden, 3, i)
        local = one.run(hidden, lengths, is_prefilling=flags[i])
        key = max(reference.rank_loads(lengths, cp_size=p, strategy=strategy, is_prefilling=flags[i]))
        assert local.plan.bucket == min(s for s in sizes if s >= key)
        for rank in range(p):
            record = results[rank][i]
            assert "error" not in record, record
            assert (record["bucket"], record["mode"]) == (local.plan.bucket, "emulation"), (rank, i)
            out = torch.tensor(record["output"])
            torch.testing.assert_close(out, local.output, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(out, one.run_eager(hidden, lengths), atol=1e-5, rtol=1e-5)


def test_spawn_reports_each_failed_rank_with_its_error() -> None:
    bad = PrefillJob(CONFIG, seed=0, capture_num_tokens=(1, 2), batches=((8,),))
    with pytest.raises(SpawnError, match=r"(?s)rank 0 raised StartupError: start-up refused on every rank: invalid "
                                         r"arguments on rank 0: ValueError: .*has no bucket >= 2\*cp_size = 4.*rank 1: "):
        spawn(prefill_worker, 2, bad, timeout_s=120)
