"""Every graph path of a vLLM release under prefill context parallel, driven through its own code: the
CUDA-graph mode (PIECEWISE, FULL_AND_PIECEWISE, FULL_DECODE_ONLY), the uniform decode graphs beside the
token-keyed ones, decodes dealt round-robin or copied (from the decode context parallel size), and
speculative decoding's uniform query length 1 + k.

``VllmPaths(policy)`` drives one release (a ``VllmPolicy``). ``captured(config)`` builds the release's
CudaGraphManager for a ``reference.graph_paths.GraphConfig`` (its own ``__init__`` and ``_init_candidates``)
and lists the descriptors it captures; ``answers(step, config)`` is what each rank does with a step, run
from the tree: execute_model's statements up to ``dispatch_cg_and_sync_dp`` (execute.py: the request and
token counts, the uniform decode count, the query-length bound, the DP sync and re-dispatch), then the
partition (partition.py: what prepare_inputs hands it, ``partition_batch`` padding the layout and resolving a
FULL graph's requests, the local batch's padded counts), then execute_model on from ``prepare_inputs`` to the
call that replays (execute.py: ``run_fullgraph(descriptor)`` for a FULL step, the forward context's mode and
``batch_descriptor`` otherwise), whose recorded key is the graph replayed. The answers are judged by
``reference.graph_paths.judge``.

Which modes a release runs under PCP is read from its code: FULL graphs need the partition to pad requests
(``PCPManager._resolve_num_reqs_after_padding``, 0.30 on); before that only PIECEWISE. DP ranks agree through
the release's own sync over a simulated all-reduce (``_Collective``). Not driven: LoRA, microbatching,
adaptive (varlen) verification.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from cpgraph.adapters.glue import GlueError
from cpgraph.adapters.vllm.partition import laid_out, layout_indices, observed_layout
from cpgraph.adapters.vllm.release import SPLIT_SIZES, mark_captured
from cpgraph.adapters.vllm.stand_ins import ScheduledBatch, vllm_config
from cpgraph.reference.graph_paths import Graph, GraphConfig, GraphStep, PathAnswer

MODES = ("PIECEWISE", "FULL_AND_PIECEWISE", "FULL_DECODE_ONLY")  # the modes PCP runs (FULL alone: no mixed prefill graphs)
PLACEMENT_OF_DECODES = {"replicated": "dual_chunk_swap_replicated", "round_robin": "dual_chunk_swap", "dcp": "dual_chunk_swap_dcp"}
_MANAGERS = 32


class VllmPaths:
    """One vLLM release's graph paths (see the module docstring)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.version: str = policy.version
        self.dcp_size: int = policy.dcp_size
        manager = policy.pcp.PCPManager
        self.pads_requests = callable(getattr(manager, "_resolve_num_reqs_after_padding", None))
        self.modes = MODES if self.pads_requests else MODES[:1]
        self._managers: dict[tuple[object, ...], Any] = {}

    def placement(self, cp_size: int) -> str:
        """Where this release puts decodes at ``cp_size`` ranks and the policy's dcp size (a strategy row)."""
        return PLACEMENT_OF_DECODES[self.policy._decodes(cp_size)]

    def _config(self, config: GraphConfig) -> Any:
        split = self.policy.capture == SPLIT_SIZES
        cfg = vllm_config(config.token_sizes, max_num_seqs=config.max_num_seqs, split=split)
        q = max(config.query_lens)
        cfg.uniform_decode_query_len = q
        if split:
            cfg.compilation_config.decode_cudagraph_capture_request_sizes = list(config.decode_request_sizes)
        return cfg

    def manager(self, config: GraphConfig) -> Any:
        """The release's CudaGraphManager for ``config``, built by its own __init__ and marked as captured."""
        if config.cudagraph_mode not in self.modes:
            raise ValueError(f"vLLM {self.version} runs PCP under {', '.join(self.modes)}; got cudagraph_mode {config.cudagraph_mode!r}")
        key = (config,)
        if key not in self._managers:
            if len(self._managers) >= _MANAGERS:
                self._managers.clear()
            mode = self.policy.mode[config.cudagraph_mode]
            q = max(config.query_lens)
            decode = {ql: config.max_num_seqs for ql in config.query_lens} if self.policy.capture == SPLIT_SIZES else q
            with self.policy.sandbox:
                try:
                    built = self.policy.graphs.CudaGraphManager(self._config(config), "cpu", mode, decode)
                except Exception as exc:
                    raise self.policy._classified(exc) from None
            self._managers[key] = mark_captured(built)
        return self._managers[key]

    def captured(self, config: GraphConfig) -> tuple[Graph, ...]:
        """Every descriptor the release captures for ``config``, as reference Graphs."""
        built = self.manager(config)
        out = {_graph(d) for descs in built._capture_descs.values() for d in descs if d.num_active_loras == 0 and getattr(d, "num_ubatches", 1) == 1}
        return tuple(sorted(g for g in out if g is not None))

    def answers(self, step: GraphStep, config: GraphConfig) -> tuple[PathAnswer, ...]:
        """What every rank does with ``step`` (laid out as this release places decodes) under ``config``."""
        return self.answers_dp((step,), config)[0]

    def answers_dp(self, steps: Sequence[GraphStep], config: GraphConfig) -> tuple[tuple[PathAnswer, ...], ...]:
        """What every rank of every DP rank does, DP rank d running ``steps[d]``: each proposes its descriptor,
        the release's ``dispatch_cg_and_sync_dp`` agrees them over a simulated all-reduce of the DP ranks'
        proposals (cpgraph's stand-in for the collective: every DP rank's column, summed), and each replays
        what was agreed. One step: no collective (dp_size 1)."""
        built = self.manager(config)
        q = max(config.query_lens)  # the uniform decode query length, 1 + speculative tokens
        if not steps:
            raise ValueError("answers_dp needs one step per DP rank, got none")
        self.policy.witness[0] = (self, tuple(steps), config)  # the case a finding's citations re-run (cited.py)
        try:
            with self.policy.sandbox, _Collective(self.policy.dp, len(steps)) as collective:
                if len(steps) > 1:  # first each DP rank's proposal, as the release writes it into its column
                    for d, step in enumerate(steps):
                        collective.collect(d, lambda: self._rank(built, step, 0, len(steps), d, q))
                return tuple(tuple(self._rank(built, step, rank, len(steps), d, q) for rank in range(step.cp_size))
                             for d, step in enumerate(steps))
        except GlueError:
            raise
        except Exception as exc:
            raise self.policy._classified(exc) from None

    def _rank(self, built: Any, step: GraphStep, rank: int, dp_size: int = 1, dp_rank: int = 0, query_len: int = 1) -> PathAnswer:
        lengths, prefilling = step.lengths, step.prefilling
        # execute_model's own statements up to dispatch_cg_and_sync_dp (execute.py): the request and token counts,
        # the uniform decode count and the query-length bound it hands dispatch, the DP sync inside it
        manager = self.policy._manager(step.cp_size, rank) if step.cp_size > 1 else None
        found = self.policy.execute.run(graphs=built, pcp_manager=manager, lengths=lengths, prefilling=prefilling,
                                        total=sum(lengths), dp_size=dp_size, dp_rank=dp_rank, query_len=query_len)
        desc = found.desc
        batch = ScheduledBatch.of([lengths[i] for i in found.order], [prefilling[i] for i in found.order])
        dispatched = _graph(desc)
        if manager is None:  # one rank: no PCPManager; prepare_inputs pads the batch as its own statements say (run)
            rows, requests = sum(lengths), len(lengths)
            if dispatched is None:
                return PathAnswer(rank, None, None, rows, requests)
            built_batch = self.policy.partition.run_single(found.runner, found.handed)
            return PathAnswer(rank, dispatched, self._replayed(found, dispatched, built_batch), rows, requests)
        # the partition, run from the tree (partition.py): the layout padded as the tree pads it, a FULL descriptor's
        # requests resolved against the rank's (0.30 on), and the local batch whose num_tokens_after_padding a
        # PIECEWISE step replays under; what the release raises by design is the step's refusal
        drafts = sum(query_len - 1 for n, pre in zip(lengths, prefilling) if not pre and query_len > 1 and n == query_len)
        made = self.policy._partitioned(found, manager, batch, max((*_sizes(built), sum(lengths))), drafts)
        indices = layout_indices(manager)  # the gather and restore indices this partition's layout set (None: none)
        segments, real = laid_out(manager, batch)  # the real rows and segments on every rank
        rows, requests = int(real[rank]), max(1, len(segments[rank]))  # an empty rank runs one dummy segment
        if dispatched is None:
            return PathAnswer(rank, None, None, rows, requests)
        if isinstance(made, Exception):
            return PathAnswer(rank, dispatched, None, rows, requests, f"{type(made).__name__}: {made}")
        # execute_model on from prepare_inputs (handing back the local batch) to the call that replays: a FULL step's
        # run_fullgraph(descriptor), a PIECEWISE one's forward context (its batch_descriptor), run (execute.py)
        replayed = self._replayed(found, dispatched, made)
        padded = getattr(made, "num_reqs_after_padding", None) if replayed is not None and replayed.requests is not None else None
        layout = None
        if replayed is not None:  # the layout the replay runs on, read from the release's own indices (partition.py)
            if indices is None:
                raise self.policy.unset_layout()
            layout = observed_layout(*indices, batch.query_start_loc, [int(r) for r in real], found.order)
        return PathAnswer(rank, dispatched, replayed, rows, requests, padded_requests=None if padded is None else int(padded),
                          layout=layout)

    def _replayed(self, found: Any, dispatched: Graph, made: Any) -> Graph | None:
        """The graph execute_model replays (run from its call of prepare_inputs to its replay call): a FULL
        descriptor as run_fullgraph gets it, else the forward context's mode and batch descriptor's size."""
        replayed = self.policy.execute.replay(found, made)
        if replayed.via == "FULL":
            return _graph(replayed.key)
        if replayed.mode == "NONE":
            return None
        return Graph(replayed.mode, replayed.num_tokens, dispatched.requests, dispatched.query_len)


class _Collected(Exception):
    """Raised by the simulated collective once it has a DP rank's proposal (the first pass)."""


class _NumpyTorch:
    """The few torch calls the release's DP sync makes on its small CPU int tensor, on numpy (torch is stubbed
    in the sandbox): zeros, all, full_like, int32; a name the sync reads beyond these is a glue error."""

    int32 = np.int32

    @staticmethod
    def zeros(*shape: int, dtype: Any = None, device: Any = None) -> Any:
        return np.zeros(shape, dtype=dtype or np.int32)

    @staticmethod
    def all(values: Any) -> Any:
        return np.all(values)

    @staticmethod
    def full_like(values: Any, fill: int) -> Any:
        return np.full_like(values, fill)


class _Collective:
    """The DP group's all-reduce, simulated: in its first pass (``collect``) it records each DP rank's column
    as the release wrote it and stops the sync; then every sync's tensor becomes the columns side by side (a
    sum over DP ranks whose other columns are zero). Patches the release's dp_utils module for the duration:
    its ``torch`` (numpy), ``dist.all_reduce`` and ``get_dp_group().cpu_all_reduce_`` (the two forms releases
    use) and ``should_skip_dp_coordination`` (False: the ranks coordinate)."""

    def __init__(self, module: Any, dp_size: int) -> None:
        self.module = module
        self.dp_size = dp_size
        self.columns: dict[int, Any] = {}
        self.rank: int | None = None
        self._saved: dict[str, Any] = {}

    def collect(self, dp_rank: int, run: Any) -> None:
        self.rank = dp_rank
        try:
            run()
        except _Collected:
            pass
        finally:
            self.rank = None
        if dp_rank not in self.columns:
            raise GlueError(f"vLLM's dispatch_cg_and_sync_dp made no DP all-reduce for DP rank {dp_rank} of {self.dp_size}; "
                            "the adapter's simulated collective does not fit this release")

    def all_reduce(self, tensor: Any, *args: Any, **kwargs: Any) -> None:
        if self.rank is not None:
            self.columns[self.rank] = np.array(tensor[:, self.rank])
            raise _Collected()
        for d, column in self.columns.items():
            tensor[:, d] = column

    def __enter__(self) -> _Collective:
        if self.dp_size == 1:
            return self  # no collective runs
        group = SimpleNamespace(cpu_group="dp", cpu_all_reduce_=self.all_reduce, dead_dp_ranks=())
        patches = {"torch": _NumpyTorch, "dist": SimpleNamespace(all_reduce=self.all_reduce, barrier=lambda *a, **k: None),
                   "get_dp_group": lambda: group, "should_skip_dp_coordination": lambda: False}
        for name, value in patches.items():
            self._saved[name] = self.module.__dict__.get(name)
            setattr(self.module, name, value)
        return self

    def __exit__(self, *exc: object) -> None:
        for name, value in self._saved.items():
            if value is None:
                delattr(self.module, name)
            else:
                setattr(self.module, name, value)
        self._saved.clear()


def _sizes(built: Any) -> tuple[int, ...]:
    """The token counts a CudaGraphManager captures (the scheduler's token budget is at least the largest)."""
    return tuple(int(d.num_tokens) for descs in built._capture_descs.values() for d in descs)


def _graph(desc: Any) -> Graph | None:
    """A release's BatchExecutionDescriptor as a reference Graph (None: eager)."""
    mode = desc.cg_mode.name
    if mode == "NONE":
        return None
    requests = None if desc.num_reqs is None or mode == "PIECEWISE" else int(desc.num_reqs)
    q = getattr(desc, "uniform_token_count", None)
    return Graph(mode, int(desc.num_tokens), requests, None if q is None else int(q))


def default_config(mode: str, *, spec_tokens: int = 0, max_num_seqs: int = 256,
                   token_sizes: Sequence[int] | None = None, decode_request_sizes: Sequence[int] | None = None) -> GraphConfig:
    """vLLM's default capture sizes (token sizes 1, 2, 4, then every 8 to 256 and every 16 to 512; decode
    request counts every count to 8, then every 8 to 256) under ``mode``, with uniform decodes of 1 +
    ``spec_tokens`` tokens."""
    tokens = tuple(token_sizes) if token_sizes is not None else (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))
    decodes = tuple(decode_request_sizes) if decode_request_sizes is not None else (*range(1, 9), *range(16, max_num_seqs + 1, 8))
    return GraphConfig(mode, tokens, decodes, (1 + spec_tokens,), max_num_seqs)


def glue_roles(policy: Any) -> list[tuple[str, int, str]]:
    """The model runner's statements that decide a step's graph, each with its role (file, line, role): the
    replay calls' keys execute_model makes after the partition (the FULL graph's descriptor, the forward
    context's batch descriptor), the definitions of the request and token counts it hands dispatch (where
    they reach the call), those of a request count handed by keyword (``dispatch_num_reqs=``)."""
    import ast

    execute = policy.execute
    out: list[tuple[str, int, str]] = []
    for site, call in zip(execute.replay_sites(), execute.program.replay_sinks):
        kind = call[1].func.attr if isinstance(call[1].func, ast.Attribute) else getattr(call[1].func, "id", "")
        role = ("a FULL step replays this descriptor" if kind == "run_fullgraph"
                else "the key execute_model replays a PIECEWISE step under: the forward context's batch_descriptor")
        out.append((site.file, site.line, f"{role}, run"))
    for site in execute.deciding("num_reqs"):
        out.append((site.file, site.line, "the request count execute_model hands dispatch_cg_and_sync_dp as num_reqs"))
    for site in execute.deciding("num_tokens"):
        out.append((site.file, site.line, "the token count execute_model hands dispatch_cg_and_sync_dp"))
    for keyword in execute.program.sink_call.keywords:
        if keyword.arg is not None and "num_reqs" in keyword.arg:
            for site in execute.program.deciding(keyword.value):
                out.append((site.file, site.line, f"handed to dispatch_cg_and_sync_dp as {keyword.arg}"))
    return out


def decode_roles(root: str) -> list[tuple[str, int, str]]:
    """Where the release's code run whole decides a decode step's graph (file, line, role): the decode table's
    index (0.34 on), the request check of ``_is_compatible``, the DP re-dispatch, the partition's own request
    contract. A line the release does not have is left out."""
    import ast

    from cpgraph.adapters.glue import find, tree_of
    from cpgraph.adapters.vllm.release import CUDAGRAPH_FILE, PCP_FILE

    out: list[tuple[str, int, str]] = []
    graphs = tree_of(root, CUDAGRAPH_FILE)
    dispatch = find(graphs, "CudaGraphManager.dispatch") if graphs is not None else None
    if dispatch is not None:
        index = [n for n in ast.walk(dispatch) if isinstance(n, ast.Assign) and "cdiv(num_tokens, uniform_token_count)" in ast.unparse(n.value)]
        if index:
            out.append((CUDAGRAPH_FILE, index[0].lineno, "the decode graph is looked up by the rank-local rows' request count"))
    compatible = find(graphs, "_is_compatible") if graphs is not None else None
    if compatible is not None:
        checks = [n for n in ast.walk(compatible) if isinstance(n, ast.Compare) and "desc.num_reqs >= num_reqs" in ast.unparse(n)]
        if checks:
            out.append((CUDAGRAPH_FILE, checks[0].lineno, "a graph must hold num_reqs, the global count, though a rank holds its own share"))
    sync_file = "vllm/v1/worker/gpu/dp_utils.py"
    dp = tree_of(root, sync_file)
    sync = find(dp, "sync_cudagraph_and_dp_padding") if dp is not None else None
    if sync is not None:
        redispatch = [n for n in ast.walk(sync) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "synced_desc"
                      and ".dispatch(" in ast.unparse(n.value) and "num_reqs" in ast.unparse(n.value)]
        if redispatch:
            out.append((sync_file, redispatch[-1].lineno, "after the DP ranks agree the slowest mode, each re-dispatches with its own request count"))
    manager = tree_of(root, PCP_FILE)
    resolve = find(manager, "PCPManager._resolve_num_reqs_after_padding") if manager is not None else None
    if resolve is not None:
        asserts = [n for n in ast.walk(resolve) if isinstance(n, ast.Assert)]
        if asserts:
            out.append((PCP_FILE, asserts[0].lineno, "the partition needs the graph to hold the rank-local requests only"))
    return out


def decision_lines(policy: Any, first_replay: bool = False) -> tuple[str, ...]:
    """Where a release decides a step's graph when no witness ran (the static roles), as ``file:line `source`
    (role)``: the counts execute_model hands dispatch (glue_roles), the decode-path lines of the code run whole
    (decode_roles) and the replay calls' keys (last, or first when ``first_replay``)."""
    root: str = policy.root

    def line(rel: str, number: int, role: str) -> str:
        with open(f"{root}/{rel}", encoding="utf-8") as handle:
            text = handle.read().splitlines()[number - 1].strip()
        return f"{rel}:{number} `{text}` ({role})"

    glue = glue_roles(policy)
    replays = len(policy.execute.replay_sites())
    replay = [line(*r) for r in glue[:replays]]
    out = replay[::-1] if first_replay else []
    out += [line(*r) for r in glue[replays:]] + [line(*r) for r in decode_roles(root)]
    if not first_replay:
        out += replay
    return tuple(out)
