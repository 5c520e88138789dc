"""One fault on one rank, over gloo (CPU): every fault ends on every rank with an error naming the rank and the
cause, or with an agreed fallback; never a gloo abort, a hang or a bare queue.Empty; good batches after a bad
one succeed on every rank. Run alone with ``pytest -m multirank``.

Faults are injected by ``cpgraph.impl.workers.Fault`` inside the rank itself (a rank SIGKILLs or SIGSTOPs
itself at a chosen batch), so every test is deterministic. Each spawn uses 2 ranks (a 2-rank disagreement is
also the smallest tie) and short timeouts.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from cpgraph.impl.launch import SpawnError, spawn
from cpgraph.impl.model import ModelConfig, batch_hidden
from cpgraph.impl.runner import PrefillGraphRunner
from cpgraph.impl.workers import Fault, PrefillJob, RaisesWhileCapturing, prefill_worker

pytestmark = [pytest.mark.multirank, pytest.mark.multiprocess]

CONFIG = ModelConfig(hidden=16, heads=2)
BUCKETS = (16, 32, 64, 128)  # P = 2, captured rule: 8, 16, 32 and 64 rows per rank
GOOD = (100,)  # replays bucket 128 on every rank


def job(*faults: Fault, batches: tuple[tuple[int, ...], ...] = (GOOD, GOOD, GOOD),
        overrides: tuple[tuple[int, int, tuple[int, ...]], ...] = ()) -> PrefillJob:
    return PrefillJob(CONFIG, seed=5, capture_num_tokens=BUCKETS, batches=batches, overrides=overrides, faults=faults)


def failed(*faults: Fault, **kwargs: Any) -> SpawnError:
    with pytest.raises(SpawnError) as info:
        spawn(prefill_worker, 2, job(*faults), **{"timeout_s": 60, **kwargs})
    assert "Empty" not in str(info.value)
    return info.value


@pytest.mark.parametrize(("fault", "shown"), [
    (Fault("capture_list", rank=1, value=(16, 64)), "capture_num_tokens=(16, 64)"),
    (Fault("align_size", rank=1, value=(8,)), "align_size=8"),
], ids=["capture_list", "align_size"])
def test_a_rank_with_another_capture_list_or_alignment_is_named_before_any_capture(fault: Fault, shown: str) -> None:
    error = failed(fault)
    assert set(error.outcomes) == {0, 1}
    for rank in (0, 1):
        line = error.outcomes[rank]
        assert line.startswith(f"rank {rank} raised ConsensusError: ranks disagree on the runner configuration"), line
        assert "rank 0: cp_size=2 capture_num_tokens=(16, 32, 64, 128) align_size=4" in line, line
        assert shown in line.split("rank 1: ", 1)[1], line


def test_a_capture_failure_on_one_rank_drops_that_bucket_everywhere_then_bad_batches_fail_alike() -> None:
    """Capture of bucket 64 (32 rows) raises on rank 1 only: both ranks drop it and fall back alike. Then a bad
    hidden on rank 1, bad lengths on rank 0 and a tie each fail that batch on both ranks, and every good batch
    after them replays on both ranks with the one-device outputs."""
    batches = ((30, 20), GOOD, (40, 30), GOOD, (12, 12), (20, 10), (20, 10), GOOD)
    faults = (Fault("capture_raises", rank=1, value=(32,)), Fault("bad_hidden", rank=1, batch=2),
              Fault("bad_lengths", rank=0, batch=4))
    results = spawn(prefill_worker, 2, job(*faults, batches=batches, overrides=((6, 1, (20, 11)),)), timeout_s=60)
    for rank in (0, 1):
        assert results[rank]["bucket_local_tokens"] == {16: 8, 32: 16, 128: 64}
        assert results[rank]["dropped"] == {64: "rank 1: RuntimeError: injected capture failure at 32 rows per rank"}
    records = [r["batches"] for r in results]
    torch.manual_seed(5)  # build_model's weights, failing the same capture on one device
    model = RaisesWhileCapturing(CONFIG, rows=32).eval()
    one = PrefillGraphRunner(model, cp_size=2, capture_num_tokens=BUCKETS)
    model.armed = False
    assert set(one.dropped) == {64}
    for i in (0, 1, 3, 5, 7):
        hidden = batch_hidden(batches[i], CONFIG.hidden, 5, i)
        want = one.run(hidden, batches[i])
        for rank in (0, 1):
            got = records[rank][i]
            assert (got.get("bucket"), got.get("reason")) == (want.plan.bucket, want.reason), (rank, i, got)
            torch.testing.assert_close(torch.tensor(got["output"]), want.output, atol=1e-5, rtol=1e-5)
    assert records[0][0]["reason"] == "no_capacity_within_padding_limit" and records[0][1]["bucket"] == 128
    for rank in (0, 1):
        bad_hidden, bad_lengths, tie = records[rank][2], records[rank][4], records[rank][6]
        assert bad_hidden["type"] == "BatchRejectedError", bad_hidden
        assert "input rejected on rank 1: ValueError: hidden has shape (69, 16) but extend_seq_lens=(40, 30) " \
               "needs (70, 16)" in bad_hidden["error"], bad_hidden
        assert "input rejected on rank 0: ValueError: extend_seq_lens[0] must be an int >= 0, got -1" \
               in bad_lengths["error"], bad_lengths
        assert "ranks disagree on the plan (no majority, so no rank is blamed): rank 0: extend_seq_lens=(20, 10)" \
               in tie["error"] and "rank 1: extend_seq_lens=(20, 11)" in tie["error"], tie


def test_a_capture_failure_of_every_bucket_on_one_rank_stops_start_up_on_every_rank() -> None:
    """Rank 1 fails between collectives (after 3 all-gathers of each capture): rank 0, waiting in the next one,
    is released by the start-up guard instead of hanging or receiving a mismatched collective."""
    error = failed(Fault("capture_raises", rank=1, value=(0, 3)))
    for rank in (0, 1):
        line = error.outcomes[rank]
        assert line.startswith(f"rank {rank} raised StartupError: no bucket could be captured"), line
        assert "bucket 16 (8 rows per rank): rank 1: RuntimeError: injected capture failure at 8 rows per rank, " \
               "after 3 all-gathers" in line, line


def test_kill_9_of_one_rank_stops_the_rest_and_names_the_signal() -> None:
    error = failed(Fault("kill", rank=1, batch=1))
    assert error.outcomes[1] == "rank 1 died: killed by signal SIGKILL"
    assert error.outcomes[0].startswith("rank 0 raised "), error.outcomes  # its collective lost the peer


def test_sigstop_of_one_rank_times_out_the_others_and_names_the_stopped_rank() -> None:
    error = failed(Fault("stop", rank=1, batch=1), pg_timeout_s=5)  # 5 s: slack for start-up skew
    assert error.outcomes[0].startswith("rank 0 raised "), error.outcomes  # the gloo timeout
    assert error.outcomes[1] == "rank 1 was still running 2 s after the first failure; spawn killed it " \
                                "(it was stopped (SIGSTOP))", error.outcomes


def test_a_rank_raising_outside_the_runner_stops_the_rest_naming_its_error() -> None:
    error = failed(Fault("raise", rank=0, batch=1), pg_timeout_s=10)
    assert error.outcomes[0] == "rank 0 raised RuntimeError: injected failure on rank 0 at batch 1"
    assert error.outcomes[1].startswith("rank 1 "), error.outcomes


def test_every_rank_stopped_ends_at_timeout_s_naming_each_rank_state() -> None:
    error = failed(Fault("stop", rank=0, batch=1), Fault("stop", rank=1, batch=1), timeout_s=10)
    for rank in (0, 1):
        assert error.outcomes[rank] == f"rank {rank} did not finish within timeout_s=10; spawn killed it " \
                                       "(it was stopped (SIGSTOP))", error.outcomes
