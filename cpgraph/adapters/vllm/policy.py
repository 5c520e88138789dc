"""vLLM's prefill context parallel (Model Runner V2) under PIECEWISE CUDA graphs, as a ``cpgraph check`` policy.

    cpgraph check cpgraph.adapters.vllm:pcp                      # the installed vLLM
    cpgraph check cpgraph.adapters.vllm:pcp --adapter-root DIR   # an unpacked wheel (its .py files)

What is real. The policy runs the release's own code, loaded from its files in an import sandbox
(cpgraph/adapters/shim.py): ``PCPManager`` (vllm/v1/worker/gpu/pcp_manager.py: ``_build_batch_layout``
lays the batch out on every rank and, from 0.29, refuses a padded size below a rank's rows;
``get_num_tokens_for_dispatch``, 0.29 on), ``CudaGraphManager`` (cudagraph_utils.py: built by its own
``__init__`` and ``_init_candidates`` from ``cudagraph_capture_sizes``, marked as if every candidate had
been captured; ``dispatch``) and ``dispatch_cg_and_sync_dp`` (dp_utils.py, one DP rank). ``CUDAGraphMode``
(vllm/config/compilation.py) and ``ParallelConfig.pcp_shard_decode_requests`` (vllm/config/parallel.py,
0.32 on) are compiled from their own source. numpy is real.

What is stubbed. torch, triton, the rest of vLLM (the sandbox hands out falsy stubs: the tensors the
layout copies to the GPU, the logger, the distributed groups) and the configuration (stand-ins in
cpgraph/adapters/vllm/stand_ins.py: the capture sizes, max_num_seqs 256, one DP and TP rank, no LoRA, no
speculative decoding, cudagraph_mode PIECEWISE, the one mode PCP supports for prefills).

Every graph path. Beside the prefill bucket (the protocol below), ``graph_path_drivers`` drives the
release's decode paths: each CUDA-graph mode it runs under PCP, each decode placement (dcp), DP ranks agreed
by its own sync over a simulated all-reduce (cpgraph/adapters/vllm/paths.py). Not modelled: LoRA,
microbatching (DBO), adaptive (varlen) verification, the order the model runner sorts requests into (the
batch's order is taken as given), real collectives (the DP all-reduce is simulated).

What is run of the model runner. execute_model's statements that reach ``dispatch_cg_and_sync_dp`` (its
backward slice, with ``gather_batch_req_state`` and the rest it calls) are compiled from the tree's
model_runner.py and run (cpgraph/adapters/vllm/execute.py, over cpgraph/adapters/follow.py), and so is the
way to the partition: what ``prepare_inputs`` hands it, the wrapper, and ``PCPManager.partition_batch`` up
to the local batch's ``num_tokens_after_padding`` (the PIECEWISE replay key) and ``num_reqs_after_padding``
(cpgraph/adapters/vllm/partition.py), and execute_model after ``prepare_inputs`` up to the call that replays
(``run_fullgraph(descriptor)`` or the forward context's ``batch_descriptor``: execute.py), whose key is
recorded. ``policy.citations()`` cites the statements run; a finding's ``decided_at`` cites the statements
that ran on its witness, those changed from the release as released first (cpgraph/adapters/vllm/cited.py). The family is read from the code's shape (does
the partition read the descriptor's size, does PCPManager take ``shard_decode_requests``), not from the
version string; it names the report and gates ``planted=``, and decides no value judged (the padded size
is read from the partition's own call of ``_build_batch_layout``). docs/adapters/vllm.md
lists what runs, what is stood in for, what is refused.

| release | family | dispatched (admission) | replayed under | decodes | strategy |
| --- | --- | --- | --- | --- | --- |
| 0.26.0-0.28.0 | global_dispatch | least size >= the global count n | max per-rank rows, unpadded | copied to every rank | dual_chunk_swap_replicated |
| 0.29.0 | local_dispatch | least size >= the largest rank-local rows m | the dispatched size | copied to every rank | dual_chunk_swap_replicated |
| 0.30.0-0.31.0 | local_dispatch | as 0.29 | as 0.29 | copied (dcp > 1: short prefills too) | dual_chunk_swap_replicated (dcp > 1: dual_chunk_swap_dcp) |
| 0.32.0-0.33.0 | local_dispatch | as 0.29 | as 0.29 | dealt round-robin (dcp > 1: copied, short prefills too) | dual_chunk_swap (dcp > 1: dual_chunk_swap_dcp) |
| 0.34.0 | split_capture | as 0.29 | as 0.29 | as 0.32 | as 0.32 |

0.34.0 split the capture sizes (``prefill_cudagraph_capture_token_sizes`` for the token-keyed graphs,
``decode_cudagraph_capture_request_sizes`` for uniform decode graphs indexed by request count, which
``dispatch`` tries first) and CudaGraphManager takes ``decode_query_lens`` (query length -> most requests);
the adapter fills the prefill sizes from the capture list and captures no decode graphs (PIECEWISE has none).
The families and the releases each was read against are ``FAMILY_TABLE`` (cpgraph/adapters/vllm/release.py):
the support range comes from it. Before the first batch the adapter checks what its glue assumes of the
release (``assumptions``: signatures, the attributes it sets on the CudaGraphManager, the configuration
fields it fills) against the release's files (cpgraph/adapters/glue.py); a mismatch, or an exception the
release's own code did not raise by design, is a GlueError (exit 2), never a violation.

Citations (model_runner.py unless named): the dispatched count at :1174 (0.26.0), :1440 (0.28.0), :1551
(0.29.0), :1813 (0.33.0); the partition at :1053 (0.26.0, no padded size, so pcp_manager.py:387 pads to
max(per_rank_num_tokens)), :1362 (0.29.0, padded_num_tokens=batch_desc.num_tokens), :1592 (0.33.0, the
descriptor; pcp_manager.py:484 pads to batch_desc.num_tokens unless eager); the replay key
``batch_descriptor = BatchDescriptor(`` at :1333 (0.26.0), :1746 (0.29.0), :2062 (0.33.0), run; one rank
builds no PCPManager (pcp_manager.py:660 in 0.26.0, :903 in 0.33.0).

So 0.26.0-0.28.0 admit by one size and replay under another (P = 4, [170, 161, 153]: dispatched 496,
replayed under 126, a size never captured; [64] * 7: dispatched 448, replayed under 112, which is
captured), fixed in 0.29.0 (vLLM PR #53515).

The protocol. ``admit``: the dispatched descriptor's cg_mode is not NONE. ``admitted_bucket``: its
num_tokens (None when eager). ``replay_bucket``: the key the release replays under (0.29 on: the
dispatched size, once the release's own ``_build_batch_layout`` accepted it as ``padded_num_tokens``;
0.26-0.28: the largest per-rank rows of the partition); raises when not admitted, or when the layout
refuses the size. ``local_rows``: the per-rank rows ``_build_batch_layout`` returns. ``num_tokens`` is the
global count the model runner dispatches in 0.26-0.28 and at cp_size 1; ``bucket_local_tokens``,
``max_padding_factor`` and ``align_size`` are ignored (vLLM has no capacity table, no padding window and
no alignment: a size s holds s rows on every rank). ``is_prefilling`` (one bool per request, default all
True) says which requests are prefills; the rest are decodes. Requests are in the batch order the model
runner hands PCPManager (it sorts them first), which is where round-robin decodes are dealt. At cp_size 1
vLLM builds no PCPManager: the global count is dispatched and the only rank holds every token.
Declared knobs: ``keying = 'local'``, ``strategy`` (above), ``align_size = 1``, ``max_padding_factor =
None``.

``dcp_size`` (default 1) sets decode context parallel: the strategy follows (table above).
``planted=True`` (or ``'pre_fix'``) plants the 0.28 glue into a copy of a 0.29+ release's source
(cpgraph/adapters/vllm/plants.py: the global count handed to dispatch, the partition unpadded), for tests: it
fails as 0.28 does. ``planted='global_dispatch'`` plants only the global dispatch count: the layout is still
padded to the dispatched size, so admission and replay agree, and the regression shows as wasted sizes
(minimal_bucket) and needless eager batches (no_needless_fallback) instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cpgraph.adapters import AdapterError
from cpgraph.adapters.follow import FollowError
from cpgraph.adapters.glue import check_release, classify, raised_by_release
from cpgraph.adapters.shim import Sandbox, StubModule
from cpgraph.adapters.vllm.execute import Dispatched, Execute
from cpgraph.adapters.vllm.partition import (
    GlobalBatch,
    Layouts,
    Partition,
    Partitioned,
    forget_layout,
    install_host_copies,
    laid_out,
    layout_indices,
    observed_layout,
)
from cpgraph.adapters.vllm.plants import PLANTS, planted_copy
from cpgraph.adapters.vllm.release import (
    ADAPTER,
    CUDAGRAPH_UTILS,
    DP_UTILS,
    FAMILIES,
    FAMILY_TABLE,
    GLOBAL_DISPATCH,
    LOCAL_DISPATCH,
    MODEL_RUNNER,
    NEWEST,
    OUTSIDE,
    PACKAGE,
    PCP_FILE,
    PCP_MANAGER,
    READ_AGAINST,
    REAL_MODULES,
    SPLIT_CAPTURE,
    SPLIT_SIZES,
    Citation,
    Family,
    Glue,
    VllmAdapterError,
    VllmGlueError,
    assumptions,
    capture_api,
    check_root,
    compilation_functions,
    cuda_graph_mode,
    family_of,
    installed_root,
    mark_captured,
    read_against,
    read_glue,
    release_version,
    shard_decode_rule,
)
from cpgraph.adapters.vllm.stand_ins import MAX_NUM_SEQS, ScheduledBatch, parallel_config, vllm_config

__all__ = [
    "FAMILIES", "FAMILY_TABLE", "GLOBAL_DISPATCH", "LOCAL_DISPATCH", "NEWEST", "PACKAGE", "PLANTS", "POLICIES", "READ_AGAINST",
    "REAL_MODULES", "SPLIT_CAPTURE", "Citation", "Family", "Glue", "Step", "VllmAdapterError", "VllmGlueError", "VllmPolicy",
    "installed_root", "policy_from",
]

POLICIES = ("pcp",)  # the module's policies (built from the installed vLLM on first use)
STRATEGY_OF_DECODES = {"replicated": "dual_chunk_swap_replicated", "round_robin": "dual_chunk_swap", "dcp": "dual_chunk_swap_dcp"}
_CACHE = 4096  # decided batches kept per policy (a rank asks admit, replay_bucket and local_rows of one batch)
_MANAGERS = 64  # CudaGraphManagers kept per policy, one per capture list


@dataclass(frozen=True)
class Step:
    """What the release does with one batch on one rank. ``count``: what the model runner dispatches;
    ``mode``: the descriptor's cg_mode name; ``dispatched``: its num_tokens; ``padded``: the size handed
    to the layout (None: none); ``replay``: the key replayed under (None when eager, or when the layout
    refused the size, ``refusal`` its error); ``rows``: the layout's real rows on every rank."""

    count: int
    mode: str
    admitted: bool
    dispatched: int
    padded: int | None
    replay: int | None
    refusal: str | None
    rows: tuple[int, ...]
    order: tuple[int, ...] = ()  # the batch's requests in the order the release lays them out (empty: as given)
    # (gather, restore, query starts) the partition's layout set for a replayed step; "unset": none (local_layout reads them)
    indices: Any = field(default=None, compare=False, repr=False)


def _ints(name: str, values: object, low: int) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of ints >= {low}, got {values!r}")
    if all(type(v) is int and v >= low for v in values):
        return tuple(values)
    out = []
    for v in values:
        if isinstance(v, bool) or not hasattr(v, "__index__") or int(v) < low:
            raise ValueError(f"{name} must hold ints >= {low}, got {v!r} in {values!r}")
        out.append(int(v))
    return tuple(out)


def _int(name: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__") or int(value) < low or (high is not None and int(value) > high):
        allowed = f"an int >= {low}" if high is None else f"an int in {low}..{high}"
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return int(value)


def _prefilling(value: object, count: int) -> tuple[bool, ...]:
    if value is None:
        return (True,) * count
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != count:
        raise ValueError(f"is_prefilling must be None or one bool per request ({count}), got {value!r}")
    if not all(isinstance(v, bool) or type(v).__name__ == "bool_" for v in value):
        raise ValueError(f"is_prefilling must hold bools, got {value!r}")
    return tuple(bool(v) for v in value)


class VllmPolicy:
    """One vLLM release's PCP dispatch, layout and replay key (see the module docstring)."""

    keying = "local"
    align_size = 1
    max_padding_factor = None

    def __init__(
        self, root: str, *, planted: bool | str = False, dcp_size: int = 1, max_num_seqs: int = MAX_NUM_SEQS
    ) -> None:
        plant = "pre_fix" if planted is True else planted or None
        if plant is not None and plant not in PLANTS:
            raise ValueError(f"planted must be False, True (= 'pre_fix') or one of {', '.join(PLANTS)}; got {planted!r}")
        self.dcp_size = _int("dcp_size", dcp_size, 1)
        self.max_num_seqs = _int("max_num_seqs", max_num_seqs, 1)
        self.origin = check_root(root)  # the release as given (a plant is made in a copy of it)
        self.version = release_version(self.origin)
        if plant is not None and read_glue(self.origin).family != LOCAL_DISPATCH:
            raise ValueError(
                f"planted={planted!r} plants the pre-fix glue into a release that dispatches by rank-local rows "
                f"(0.29.0 on); vLLM {self.version} ships the global dispatch already"
            )
        self.root = self.origin if plant is None else planted_copy(self.origin, plant)
        self.glue: Glue = read_glue(self.root)
        self.capture = capture_api(self.root)
        family: Family = family_of(self.glue, self.capture, self.root)
        check_release(ADAPTER, f"vLLM {self.version}", self.root, assumptions(family, self.root), read_against())
        self.family = family.name
        self.local = family.dispatch == "local"  # the partition padded to the dispatched size (0.29 on)
        self.planted = plant
        self.mode = cuda_graph_mode(self.root)
        self.sandbox = Sandbox(self.root, PACKAGE, REAL_MODULES, outside=OUTSIDE)
        for name in ("vllm.config", "vllm.config.compilation"):  # stubbed modules, with the real enum in them
            module = StubModule(name)
            setattr(module, "CUDAGraphMode", self.mode)
            for function_name, function in compilation_functions(self.root).items():
                setattr(module, function_name, function)
            self.sandbox.modules[name] = module
        try:
            self.pcp = self.sandbox.load(PCP_MANAGER)
            self.graphs = self.sandbox.load(CUDAGRAPH_UTILS)
            self.dp = self.sandbox.load(DP_UTILS)
        except ImportError as exc:
            raise VllmAdapterError(f"numpy is needed to run vLLM's PCP code (pip install numpy): {exc}") from exc
        install_host_copies(self.pcp)  # the layout's gather and restore indices stay readable (partition.host_copy)
        try:  # execute_model, sliced back from dispatch_cg_and_sync_dp, and the partition, compiled from the tree's files
            self.execute = Execute(self.root, MODEL_RUNNER, self.sandbox, self.max_num_seqs)
            self.partition = Partition(self.root, MODEL_RUNNER, PCP_FILE, self.execute.program.namespace, self.pcp)
        except FollowError as exc:
            raise VllmGlueError(
                f"{ADAPTER} cannot drive vLLM {self.version} under {self.root}: {exc}. The adapter runs the model runner's "
                f"statements that reach dispatch and refuses what it cannot run (read against {read_against()}); this is a "
                f"limit of cpgraph's adapter, not a finding about the release"
            ) from None
        manager = self.pcp.PCPManager
        self._manager_params = frozenset(inspect.signature(manager.__init__).parameters)
        pads = "padded_num_tokens" in inspect.signature(manager._build_batch_layout).parameters
        if self.local and not pads:
            raise VllmGlueError(
                f"vLLM {self.version} under {self.root}: the model runner's partition ({self.family}) does not match its "
                f"PCPManager (_build_batch_layout(padded_num_tokens=...): {pads})"
            )
        self.shard_rule = shard_decode_rule(self.root) if "shard_decode_requests" in self._manager_params else None
        if "shard_decode_requests" in self._manager_params and self.shard_rule is None:
            raise VllmGlueError(
                f"{ADAPTER} cannot drive vLLM {self.version} under {self.root}: PCPManager takes shard_decode_requests "
                f"but ParallelConfig has no pcp_shard_decode_requests (read against {read_against()})"
            )
        self.decodes = self._decodes(2)
        self.strategy = STRATEGY_OF_DECODES[self.decodes]
        self._managers: dict[tuple[int, int], Any] = {}
        self._graph_managers: dict[tuple[int, ...], Any] = {}
        self._steps: dict[tuple[object, ...], Step] = {}
        self._paths: Any = None
        self.witness: list[Any] = [None]  # the graph-path case last answered (shared with the sibling policies)
        self._citer: Any = None
        self.__name__ = f"vllm:pcp@{self.version}" + (f"+planted:{plant}" if plant else "")

    # -- the release's objects -------------------------------------------------------------------
    def _decodes(self, cp_size: int) -> str:
        """Where this release, at ``cp_size`` ranks and this dcp_size, puts decodes (and dcp's short prefills)."""
        if self.shard_rule is not None and self.shard_rule(parallel_config(cp_size, self.dcp_size)):
            return "round_robin"  # PCPManager(shard_decode_requests=...): pcp_manager.py:916 in 0.33.0
        if self.dcp_size > 1 and callable(getattr(self.pcp.PCPManager, "replicated_requests", None)):
            return "dcp"  # replicated_requests: a prefill too short for 2P chunks is copied (0.30 on)
        return "replicated"

    def _manager(self, cp_size: int, cp_rank: int) -> Any:
        """PCPManager for one rank, built by its own __init__ as maybe_build_pcp_manager does (no buffers:
        only the layout is asked of it)."""
        key = (cp_size, cp_rank)
        if key not in self._managers:
            kw: dict[str, object] = {"pcp_world_size": cp_size, "pcp_rank": cp_rank, "device": "cpu", "dcp_world_size": self.dcp_size}
            if self.shard_rule is not None:
                kw["shard_decode_requests"] = bool(self.shard_rule(parallel_config(cp_size, self.dcp_size)))
            manager = self.pcp.PCPManager(**{k: v for k, v in kw.items() if k in self._manager_params})
            manager._build_batch_layout = Layouts(manager._build_batch_layout)  # keeps its last layout (see _Layouts)
            self._managers[key] = manager
        return self._managers[key]

    def _graph_manager(self, sizes: tuple[int, ...]) -> Any:
        """CudaGraphManager for a capture list, PIECEWISE, built by its own __init__ (so ``_init_candidates``
        reads ``cudagraph_capture_sizes``) and marked as captured, every candidate with a graph."""
        if sizes not in self._graph_managers:
            if len(self._graph_managers) >= _MANAGERS:
                self._graph_managers.clear()
            config = vllm_config(sizes, max_num_seqs=self.max_num_seqs, split=self.capture == SPLIT_SIZES)
            # the 4th argument: decode_query_len 1 (no speculative decoding), or from 0.34 decode_query_lens, the
            # query length 1 mapped to the most requests a batch has (VllmConfig.get_decode_cudagraph_query_lens)
            decode = {1: self.max_num_seqs} if self.capture == SPLIT_SIZES else 1
            manager = self.graphs.CudaGraphManager(config, "cpu", self.mode.PIECEWISE, decode)  # type: ignore[attr-defined]
            self._graph_managers[sizes] = mark_captured(manager)
        return self._graph_managers[sizes]

    def _follow(self, sizes: tuple[int, ...], lengths: tuple[int, ...], prefilling: tuple[bool, ...], n: int,
                manager: Any) -> Dispatched:
        """execute_model's own statements up to dispatch_cg_and_sync_dp at one DP rank (execute.py): the counts
        handed to dispatch and the descriptor it returns, with ``n`` as the scheduler's total."""
        return self.execute.run(graphs=self._graph_manager(sizes), pcp_manager=manager, lengths=lengths,
                                prefilling=prefilling, total=n)

    # -- one step: the dispatch, the partition and the replay key, each run from the release --------------------
    def step(
        self, *, cp_rank: int, cp_size: int, num_tokens: int, extend_seq_lens: Sequence[int],
        capture_num_tokens: Sequence[int], is_prefilling: Sequence[bool] | None = None,
    ) -> Step:
        """What the release does with this batch on rank ``cp_rank``: execute_model's dispatch, the
        partition's layout and the replay key (cached per batch)."""
        size = _int("cp_size", cp_size, 1)
        rank = _int("cp_rank", cp_rank, 0, size - 1)
        lengths = _ints("extend_seq_lens", extend_seq_lens, 0)
        count_n = _int("num_tokens", num_tokens, 0)
        sizes = _ints("capture_num_tokens", capture_num_tokens, 1)
        prefilling = _prefilling(is_prefilling, len(lengths))
        key = (size, rank, lengths, prefilling, count_n, sizes)
        found = self._steps.get(key)
        if found is not None:
            return found
        try:
            with self.sandbox:
                step = self._single(sizes, lengths, prefilling, count_n) if size == 1 else self._ranks(size, rank, sizes, lengths, prefilling, count_n)
        except Exception as exc:
            raise self._classified(exc) from None
        if len(self._steps) >= _CACHE:
            self._steps.clear()
        self._steps[key] = step
        return step

    def _single(self, sizes: tuple[int, ...], lengths: tuple[int, ...], prefilling: tuple[bool, ...], n: int) -> Step:
        # One rank: maybe_build_pcp_manager returns None (pcp_manager.py:660 in 0.26.0, :903 in 0.33.0), execute_model
        # dispatches what its own statements count, and prepare_inputs pads the batch as its own statements say
        # (num_tokens_after_padding, run: partition.py), the key a PIECEWISE step replays under.
        found = self._follow(sizes, lengths, prefilling, n, None)
        desc = found.desc
        admitted = desc.cg_mode != self.mode.NONE  # type: ignore[attr-defined]
        replay, refusal = None, None
        if admitted:  # execute_model on from prepare_inputs to the call that replays (execute.py)
            replay, refusal = self._replayed(found, self.partition.run_single(found.runner, found.handed))
        return Step(found.num_tokens, desc.cg_mode.name, admitted, desc.num_tokens, None, replay, refusal, (sum(lengths),))

    def _ranks(
        self, size: int, rank: int, sizes: tuple[int, ...], lengths: tuple[int, ...], prefilling: tuple[bool, ...], n: int
    ) -> Step:
        manager = self._manager(size, rank)
        found = self._follow(sizes, lengths, prefilling, n, manager)
        order = found.order
        batch = ScheduledBatch.of([lengths[i] for i in order], [prefilling[i] for i in order])
        count, desc = found.num_tokens, found.desc
        admitted = desc.cg_mode != self.mode.NONE  # type: ignore[attr-defined]
        # The partition, run from the tree (partition.py): prepare_inputs hands the descriptor over, the partition
        # lays the batch out (the release's _build_batch_layout, which raises below a rank's rows, 0.29 on) and
        # makes the local batch whose num_tokens_after_padding execute_model replays under
        # (BatchDescriptor(num_tokens=input_batch.num_tokens_after_padding)).
        refusal = self._partitioned(found, manager, batch, max((*sizes, n)))
        laid = layout_indices(manager)  # the gather and restore indices this partition's layout set (None: none)
        indices = "unset" if laid is None else (*laid, batch.query_start_loc)
        # the size the tree's partition handed its layout (None: laid out unpadded), as the call was made (run)
        layouts = manager._build_batch_layout
        padded = layouts.padded if isinstance(layouts, Layouts) else None
        _, rows = laid_out(manager, batch)  # the real rows on every rank
        real = tuple(int(r) for r in rows)
        if isinstance(refusal, Exception):
            return Step(count, desc.cg_mode.name, admitted, desc.num_tokens, padded, None, str(refusal), real, order)
        if not admitted:  # eager: the layout is run, no graph is replayed
            return Step(count, desc.cg_mode.name, admitted, desc.num_tokens, padded, None, None, real, order)
        replay, eager = self._replayed(found, refusal)
        return Step(count, desc.cg_mode.name, admitted, desc.num_tokens, padded, replay, eager, real, order, indices)

    def _replayed(self, found: Dispatched, made: Partitioned) -> tuple[int | None, str | None]:
        """The key execute_model replays the admitted step under, run from prepare_inputs' return to its replay
        call (execute.py), or (None, why) when it runs the step eagerly there."""
        replayed = self.execute.replay(found, made)
        if replayed.mode == "NONE":
            return None, f"{replayed.site} `{replayed.site.text}`: execute_model runs the admitted step eagerly"
        return replayed.num_tokens, None

    def _partitioned(self, found: Dispatched, manager: Any, batch: ScheduledBatch, budget: int = 0,
                     drafts: int = 0) -> Partitioned | Exception:
        """The tree's partition of ``found``'s batch on this rank (partition.py), or what the release raised by
        design (a size below a rank's rows, a FULL graph short of the rank's requests)."""
        laid = GlobalBatch.of(batch.num_scheduled_tokens, batch.is_prefilling, drafts)
        if isinstance(manager._build_batch_layout, Layouts):
            manager._build_batch_layout.padded = None  # what this run's partition hands its layout, if it gets there
        forget_layout(manager)  # a layout that sets no gather index this step is seen, not read from the last one
        try:
            return self.partition.run(found.runner, manager, laid, found.handed, budget)
        except Exception as exc:
            if isinstance(exc, AdapterError) or not raised_by_release(exc, self.root):
                raise
            return exc

    # -- the protocol ----------------------------------------------------------------------------
    def admit(
        self, *, cp_rank: int, cp_size: int, align_size: object, num_tokens: int, extend_seq_lens: Sequence[int],
        capture_num_tokens: Sequence[int], bucket_local_tokens: object, max_padding_factor: object,
        is_prefilling: Sequence[bool] | None = None,
    ) -> bool:
        """The dispatched descriptor runs a graph (its cg_mode is not NONE)."""
        return self.step(cp_rank=cp_rank, cp_size=cp_size, num_tokens=num_tokens, extend_seq_lens=extend_seq_lens,
                         capture_num_tokens=capture_num_tokens, is_prefilling=is_prefilling).admitted

    def admitted_bucket(
        self, *, cp_rank: int, cp_size: int, align_size: object, num_tokens: int, extend_seq_lens: Sequence[int],
        capture_num_tokens: Sequence[int], bucket_local_tokens: object, max_padding_factor: object,
        is_prefilling: Sequence[bool] | None = None,
    ) -> int | None:
        """The size admission dispatched (the descriptor's num_tokens), or None when it runs eagerly."""
        step = self.step(cp_rank=cp_rank, cp_size=cp_size, num_tokens=num_tokens, extend_seq_lens=extend_seq_lens,
                         capture_num_tokens=capture_num_tokens, is_prefilling=is_prefilling)
        return step.dispatched if step.admitted else None

    def replay_bucket(
        self, *, cp_rank: int, cp_size: int, align_size: object, num_tokens: int, extend_seq_lens: Sequence[int],
        capture_num_tokens: Sequence[int], bucket_local_tokens: object, max_padding_factor: object,
        is_prefilling: Sequence[bool] | None = None,
    ) -> int:
        """The key the release replays this batch's PIECEWISE graph under; raises when it runs eagerly or
        its layout refuses the dispatched size."""
        step = self.step(cp_rank=cp_rank, cp_size=cp_size, num_tokens=num_tokens, extend_seq_lens=extend_seq_lens,
                         capture_num_tokens=capture_num_tokens, is_prefilling=is_prefilling)
        if not step.admitted:
            raise RuntimeError(f"vLLM {self.version} runs this batch eagerly (dispatched {step.count}: cg_mode {step.mode})")
        if step.replay is None:
            raise ValueError(step.refusal)
        return step.replay

    def local_rows(
        self, *, bucket: int, cp_rank: int, cp_size: int, align_size: object, num_tokens: int,
        extend_seq_lens: Sequence[int], capture_num_tokens: Sequence[int], bucket_local_tokens: object,
        max_padding_factor: object, is_prefilling: Sequence[bool] | None = None,
    ) -> list[int]:
        """The real rows on every rank, as the release's ``_build_batch_layout`` returns them: laid out for
        ``bucket`` where the release pads the layout to the replayed size (it raises below a rank's rows),
        else (and for an eager batch) as the release lays it out."""
        step = self.step(cp_rank=cp_rank, cp_size=cp_size, num_tokens=num_tokens, extend_seq_lens=extend_seq_lens,
                         capture_num_tokens=capture_num_tokens, is_prefilling=is_prefilling)
        size = _int("bucket", bucket, 0)
        if size == step.replay or step.padded is None or not step.admitted or cp_size == 1:
            return list(step.rows)
        lengths = _ints("extend_seq_lens", extend_seq_lens, 0)
        try:
            with self.sandbox:
                flags = _prefilling(is_prefilling, len(lengths))
                order = step.order or tuple(range(len(lengths)))
                scheduled = ScheduledBatch.of([lengths[i] for i in order], [flags[i] for i in order])
                _, rows = self._manager(cp_size, cp_rank)._build_batch_layout(*scheduled.layout_args(), padded_num_tokens=size)
        except Exception as exc:
            raise self._classified(exc) from None
        return [int(r) for r in rows]

    def local_layout(
        self, *, bucket: int, cp_rank: int, cp_size: int, align_size: object, num_tokens: int,
        extend_seq_lens: Sequence[int], capture_num_tokens: Sequence[int], bucket_local_tokens: object,
        max_padding_factor: object, is_prefilling: Sequence[bool] | None = None,
    ) -> Any:
        """The layout the release's partition built for this replayed step, read from the gather and restore
        indices its ``_build_batch_layout`` hands the GPU (a reference.laid_out.LaidOut: each rank's rows and
        where each token is read back from), or None where nothing is laid out (one rank, an eager step)."""
        step = self.step(cp_rank=cp_rank, cp_size=cp_size, num_tokens=num_tokens, extend_seq_lens=extend_seq_lens,
                         capture_num_tokens=capture_num_tokens, is_prefilling=is_prefilling)
        _int("bucket", bucket, 0)
        if cp_size == 1 or not step.admitted or step.replay is None or step.indices is None:
            return None
        if step.indices == "unset":
            raise self.unset_layout()
        gather, restore, starts = step.indices
        return observed_layout(gather, restore, starts, step.rows, step.order)

    def unset_layout(self) -> VllmGlueError:
        """The refusal of a step whose partition's layout set no gather and restore indices (named at its line)."""
        return VllmGlueError(
            f"{ADAPTER} cannot read vLLM {self.version}'s layout under {self.root}: PCPManager._build_batch_layout "
            f"({self._layout_line()}) set no gather and restore indices (_padded_gather_idx, _hidden_restore_idx) "
            f"for this step; the adapter reads each rank's rows from them"
        )

    def _layout_line(self) -> str:
        """file:line of PCPManager._build_batch_layout in the tree checked."""
        code = getattr(getattr(self.pcp.PCPManager, "_build_batch_layout", None), "__code__", None)
        return f"{PCP_FILE}:{code.co_firstlineno}" if code is not None else PCP_FILE

    def _classified(self, exc: Exception) -> Exception:
        """``exc`` when the release raised it by design; else the GlueError it stands for (glue.classify)."""
        return classify(exc, ADAPTER, f"vLLM {self.version}", self.root, read_against())

    # -- every graph path (decode graphs, modes, placements) -----------------------------------------
    def graph_paths(self) -> Any:
        """The release's graph paths beside the prefill bucket (cpgraph/adapters/vllm/paths.py), built on
        first use."""
        if self._paths is None:
            from cpgraph.adapters.vllm.paths import VllmPaths

            self._paths = VllmPaths(self)
        return self._paths

    def graph_path_drivers(self, dcp_sizes: Sequence[int] = (1,)) -> tuple[Any, ...]:
        """One graph-path driver per decode context parallel size (each places decodes its own way): this
        policy's for its own dcp size, a sibling policy over the same release for another."""
        out = []
        for dcp in dcp_sizes:
            size = _int("dcp_size", dcp, 1)
            sibling = self if size == self.dcp_size else VllmPolicy(self.origin, planted=self.planted or False, dcp_size=size,
                                                                   max_num_seqs=self.max_num_seqs)
            sibling.witness = self.witness  # a finding on any of them is cited from the case it last answered
            out.append(sibling.graph_paths())
        return tuple(out)

    def decided_at(self, invariant: str, batch: Mapping[str, object] | None = None) -> tuple[str, ...]:
        """Where this release decided a finding (file:line citations, cited.py): with ``batch`` (one rank's
        keyword arguments, as ``admit`` takes them) the statements that ran on that prefill step; without it,
        those that ran on the graph-path case last answered (the minimised witness the check has just judged
        again), the decode-path explanations among them where they ran. Either way the statements changed from
        the release as released come first, marked. With neither, the static roles (paths.decision_lines)."""
        from cpgraph.adapters.vllm.cited import Citer
        from cpgraph.adapters.vllm.paths import decision_lines

        if self._citer is None:
            self._citer = Citer(self)
        citer: Citer = self._citer
        first_replay = invariant == "admission_replay"
        if batch is not None:
            kw = {k: batch[k] for k in ("cp_rank", "cp_size", "num_tokens", "extend_seq_lens", "capture_num_tokens",
                                        "is_prefilling") if k in batch}
            return citer.cite(citer.traced(lambda: self._stepped(**kw)), graph=False, first_replay=first_replay)  # type: ignore[arg-type]
        witness = self.witness[0]
        if witness is not None:
            paths, steps, config = witness
            return citer.cite(citer.traced(lambda: paths.answers_dp(steps, config)), graph=True, first_replay=first_replay)
        # one dispatch decides every path invariant; admission against replay is decided by the replay key too
        return citer.ordered(decision_lines(self, first_replay=first_replay))

    def _stepped(self, *, cp_rank: int, cp_size: int, num_tokens: int, extend_seq_lens: Sequence[int],
                 capture_num_tokens: Sequence[int], is_prefilling: Sequence[bool] | None = None) -> Step:
        """``step`` run afresh (not from its cache), for the lines it runs."""
        size = _int("cp_size", cp_size, 1)
        rank = _int("cp_rank", cp_rank, 0, size - 1)
        lengths = _ints("extend_seq_lens", extend_seq_lens, 0)
        sizes = _ints("capture_num_tokens", capture_num_tokens, 1)
        prefilling = _prefilling(is_prefilling, len(lengths))
        n = _int("num_tokens", num_tokens, 0)
        with self.sandbox:
            return self._single(sizes, lengths, prefilling, n) if size == 1 else self._ranks(size, rank, sizes, lengths, prefilling, n)

    # -- provenance --------------------------------------------------------------------------------
    def citations(self) -> dict[str, str]:
        """Where each step of the model runner's glue is in the tree checked (file:line): the statements run
        that define the counts handed to dispatch (where they reach the call) and the call, the partition steps
        as located (release.read_glue), the local batch the partition makes and the replay key and call, run."""
        out = {"dispatch_count": str(self.execute.deciding("num_tokens")[-1]),
               "dispatch_requests": str(self.execute.deciding("num_reqs")[-1]), "dispatch": str(self.execute.sink())}
        out.update({name: str(cite) for name, cite in self.glue.steps})
        out["local_batch"] = str(self.partition.sites()[-1])  # the local batch the partition makes, run (partition.py)
        # where execute_model's replay key is defined on its way to the forward context (run: execute.py), and the
        # FULL graph's replay call
        sites = self.execute.replay_sites()
        out["replay_key"] = str(sites[-1])
        out["replay_full"] = str(sites[0])
        return out

    def code_files(self) -> dict[str, str]:
        """The file each function the policy runs comes from (for provenance checks)."""
        manager, graphs = self.pcp.PCPManager, self.graphs.CudaGraphManager
        out = {
            **{f"{name} (sliced)": self.execute.program.path for name in self.execute.program.slices},
            "_build_batch_layout": manager._build_batch_layout.__code__.co_filename,
            "CudaGraphManager.__init__": graphs.__init__.__code__.co_filename,
            "_init_candidates": graphs._init_candidates.__code__.co_filename,
            "dispatch": graphs.dispatch.__code__.co_filename,
            "dispatch_cg_and_sync_dp": self.dp.dispatch_cg_and_sync_dp.__code__.co_filename,
            "CUDAGraphMode": self.mode.decode_mode.__code__.co_filename,  # type: ignore[attr-defined]
        }
        if self.local:
            out["get_num_tokens_for_dispatch"] = manager.get_num_tokens_for_dispatch.__code__.co_filename
        if self.shard_rule is not None:
            out["pcp_shard_decode_requests"] = self.shard_rule.__code__.co_filename
        return out


def policy_from(root: str, policy: str = "pcp", *, planted: bool | str = False, dcp_size: int = 1) -> VllmPolicy:
    """The ``policy`` of the vLLM release found under ``root`` (a folder holding an unpacked wheel's
    ``vllm`` package; only its .py files are needed)."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    return VllmPolicy(root, planted=planted, dcp_size=dcp_size)
