"""Regression test for the dealt-decode FULL-graph miss under prefill context parallel (PCP), Model Runner V2.

With ``pcp_shard_decode_requests`` (the default from 0.32.0 when decode context parallel is 1) PCP deals a
uniform decode step's requests round-robin, one rank each, so a rank runs only its share of them. The model
runner dispatched the step with the global request count, and ``_is_compatible`` then refused the FULL decode
graph that holds each rank's share (``desc.num_reqs >= num_reqs``): vLLM 0.32.0-0.34.0 ran PIECEWISE under
FULL_AND_PIECEWISE (and, DP ranks disagreeing on the count, different modes on different DP ranks) or eager
under FULL_DECODE_ONLY. The fix dispatches with the largest rank-local request count
(``PCPManager.get_num_reqs_for_dispatch``, passed as ``dispatch_num_reqs``), while the DP ranks still agree on
the global count.

Needs torch and vLLM (Model Runner V2's modules import on a CPU build); no GPU, no model, no distributed init:
the CudaGraphManager is built from the few config fields it reads and marked captured, so dispatch can pick
among its descriptors.
"""

import types

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (a CPU build is enough)")
cudagraph_utils = pytest.importorskip(
    "vllm.v1.worker.gpu.cudagraph_utils", reason="needs vLLM with Model Runner V2 (vllm.v1.worker.gpu)"
)
from vllm.config.compilation import CUDAGraphMode  # noqa: E402
from vllm.v1.worker.gpu import dp_utils, pcp_manager  # noqa: E402

PCP_SIZE = 2
NUM_SCHEDULED_TOKENS = np.array([1, 1], dtype=np.int32)  # two one-token decodes
IS_PREFILLING = np.zeros(2, dtype=np.bool_)


def _captured_manager(monkeypatch: pytest.MonkeyPatch, mode: CUDAGraphMode) -> "cudagraph_utils.CudaGraphManager":
    """vLLM's CudaGraphManager with one FULL decode graph (1 request of 1 token) and, where the mode has
    them, one PIECEWISE graph of 1 token; marked captured (dispatch only needs the descriptors)."""
    monkeypatch.setattr(cudagraph_utils, "get_pp_group", lambda: types.SimpleNamespace(is_first_rank=True, is_last_rank=True))
    monkeypatch.setattr(cudagraph_utils, "current_platform", types.SimpleNamespace(get_global_graph_pool=lambda: None))
    compilation = types.SimpleNamespace(
        prefill_cudagraph_capture_token_sizes=[1],
        decode_cudagraph_capture_request_sizes=[1],
        cudagraph_capture_sizes=[1],
        max_cudagraph_capture_size=1,
        max_decode_cudagraph_capture_tokens=None,
        use_breakable_cudagraph=False,
    )
    vllm_config = types.SimpleNamespace(
        compilation_config=compilation,
        scheduler_config=types.SimpleNamespace(max_num_seqs=256),
        parallel_config=types.SimpleNamespace(tensor_parallel_size=1, data_parallel_size=1),
        cache_config=types.SimpleNamespace(use_kda_recoverssm=False),
        speculative_config=None,
        uniform_decode_query_len=1,
    )
    manager = cudagraph_utils.CudaGraphManager(vllm_config, torch.device("cpu"), mode, {1: 256})
    manager._graphs_captured = True
    return manager


@pytest.mark.parametrize("mode", ["FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"])
def test_dealt_decodes_run_the_full_decode_graph_that_holds_each_ranks_share(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    manager = _captured_manager(monkeypatch, CUDAGraphMode[mode])
    for rank in range(PCP_SIZE):
        pcp = pcp_manager.PCPManager(PCP_SIZE, rank, torch.device("cpu"), shard_decode_requests=True)
        # What execute_model hands dispatch under PCP: the largest rank-local rows and requests.
        num_tokens = pcp.get_num_tokens_for_dispatch(NUM_SCHEDULED_TOKENS, IS_PREFILLING)
        num_reqs = pcp.get_num_reqs_for_dispatch(NUM_SCHEDULED_TOKENS, IS_PREFILLING)
        desc, _ = dp_utils.dispatch_cg_and_sync_dp(
            manager, len(NUM_SCHEDULED_TOKENS), num_tokens, 1, 1, 0, max_query_len=1, dispatch_num_reqs=num_reqs
        )
        assert (num_tokens, num_reqs) == (1, 1), f"PCP deals one decode to each of the 2 ranks; rank {rank} was given {num_reqs} requests of {num_tokens} tokens"
        assert desc.cg_mode == CUDAGraphMode.FULL and desc.num_reqs == 1, (
            f"Two one-token decodes dealt over {PCP_SIZE} PCP ranks leave one on each rank, so the captured FULL "
            f"decode graph for 1 request holds every rank's share and must be run under {mode}; rank {rank} "
            f"dispatched {desc}"
        )
