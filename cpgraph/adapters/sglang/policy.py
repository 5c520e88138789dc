"""sglang's own prefill-CP CUDA-graph path as a ``cpgraph check`` policy.

    cpgraph check cpgraph.adapters.sglang:zigzag --padding-factors 2
    cpgraph check cpgraph.adapters.sglang:interleave --strategy interleave --padding-factors 2

The policies run the release's code from its files, not a restatement of it (cpgraph/adapters/sglang/path.py):
``admit`` is whether the model runner's ``forward`` (into ``_forward_raw``) takes the prefill CUDA-graph path on
the batch (its whole condition: ``can_run_graph``, ``_prefill_cuda_graph_allows_context_parallel`` where the
release has it, the rest); ``replay_bucket`` is the bucket the graph runner's ``execute`` replays (``load_batch``, the CP-BCG
input's ``prepare`` and its row guards, up to the captured backend's ``replay``; when the release's own guard
in ``prepare`` stops the replay, the bucket it was preparing, whose overflow ``replay_guard`` raises);
``local_rows`` is ``prepare_cp_forward``'s ``per_rank_actual_token``; ``local_layout`` (zigzag) is the layout the
CP metadata on the replayed forward batch describes, on every rank as its own ``build_metadata`` built it, read
back as that rank's gather restores it (layout.py). The release's objects are built without
their constructors and given only what the release itself sets (state.py, strict.py): a read of anything
else, a branch on an undeclared sglang helper (helpers.py) or a name the release never defines is refused
with exit 2 at the release's line, never answered by the adapter. What a server would hand the release is
stand_ins.py; EXECUTED and STOOD_IN (the package's __init__) list both.

Knobs the release fixes are declared on the policy, so the check honours them: ``max_padding_factor`` is the
release's ``_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR`` and ``align_size`` its CP alignment (2P for zigzag, P
for interleave); ``strategy`` names the layout. cp_size 1 runs no CP graph (admit False).

``policy_from(root, strategy)`` builds a policy from any folder holding an ``sglang`` package (an unpacked
wheel); ``zigzag`` and ``interleave`` (module attributes, built on first use) come from the installed
sglang. ``planted_prefix=True`` plants the pre-fix bug (the capacity is never read) into the release's own
bucket scan, for tests. ``decided_at(invariant, batch)`` names the release's lines that decided a batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from types import SimpleNamespace
from typing import Any

from cpgraph.adapters.glue import check_release, classify
from cpgraph.adapters.releases import release_version
from cpgraph.adapters.shim import Sandbox, Stub
from cpgraph.adapters.sglang.release import (
    ADAPTER,
    ASSUMPTIONS,
    MODEL_RUNNER_FILE,
    NEWEST,
    READ_AGAINST,
    PACKAGE,
    REAL_MODULES,
    RUNNER,
    STRATEGIES,
    SglangAdapterError,
    SglangGlueError,
    installed_root,
    plant_prefix,
    read_against,
)
from cpgraph.adapters.sglang.helpers import driving, strict_helpers
from cpgraph.adapters.sglang.layout import ZigzagRank, missing_fields, read_zigzag, zigzag_laid_out
from cpgraph.adapters.sglang.trace import (
    BUCKET_SIDE,
    CHOOSING,
    DECIDING,
    LAYING_OUT,
    changed_lines,
    pristine_roots,
    traced,
)
from cpgraph.adapters.sglang.path import ACCESSORS, FORWARD_BATCH_INFO, MODEL_RUNNER, PATH_MODULES, ForwardPath, Outcome
from cpgraph.adapters.sglang.stand_ins import TENSOR_WORK, cp_split, no_override
from cpgraph.adapters.sglang.state import ENVIRON_FILES, ENVIRONMENT, assigned, given
from cpgraph.adapters.sglang.strict import strict
from cpgraph.reference.laid_out import LaidOut

__all__ = [
    "MODEL_RUNNER_FILE", "NEWEST", "PACKAGE", "READ_AGAINST", "REAL_MODULES", "RUNNER", "STRATEGIES", "SglangAdapterError",
    "SglangGlueError", "SglangPolicy", "installed_root", "policy_from",
]


_CACHE = 4096  # driven outcomes kept per policy (a rank asks admit, replay_bucket and local_layout of one batch)


class SglangPolicy:
    """One strategy of one sglang release, driven through its own forward path (see the module docstring).
    ``local_layout`` is present for zigzag only: interleave's metadata holds no per-token index (its shard and
    restore are tensor reshapes over the rank and size, which torch's stub does not run)."""

    local_layout: Callable[..., LaidOut | None]

    def __init__(self, root: str, strategy: str = "zigzag", *, planted_prefix: bool = False) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
        self.root = os.path.abspath(root)
        self.strategy = strategy
        self.align_size = STRATEGIES[strategy][1]
        if not os.path.isdir(os.path.join(self.root, PACKAGE)):
            raise SglangAdapterError(f"no sglang package under {self.root}")
        self.config: Any = strict(object, "server_args", {})
        model = strict(object, "get_model()", {"override": no_override})
        runtime: dict[str, object] = {name: _returning(strict(object, f"{name}()", {})) for name in ACCESSORS}
        runtime.update({
            "get_parallel": lambda: self.config,
            "get_server_args": lambda: self.config,
            "get_device": lambda: SimpleNamespace(device="cpu"),
            "uses_mla_backend": lambda: False,
            "get_model": lambda: model,
            "get_global_dwdp_manager": lambda: None,
        })
        overrides: dict[str, dict[str, object]] = {
            "sglang.srt.runtime_context": runtime,
            "sglang.srt.environ": {"envs": strict(object, "envs", given(ENVIRONMENT, assigned(self.root, ENVIRON_FILES)))},
        }
        self.sandbox = strict_helpers(Sandbox(self.root, PACKAGE, REAL_MODULES + PATH_MODULES, overrides))
        missing = [m for m in (RUNNER, "sglang.srt.layers.cp.utils", MODEL_RUNNER, FORWARD_BATCH_INFO) if m not in self.sandbox.real]
        if missing:
            raise SglangAdapterError(f"this sglang has no prefill-CP CUDA-graph runner: missing {', '.join(missing)} under {self.root}")
        self.version = release_version(self.root, PACKAGE)
        check_release(ADAPTER, f"sglang {self.version}", self.root, ASSUMPTIONS, read_against())
        try:
            self.runner_module = self.sandbox.load(RUNNER)
            self.utils = self.sandbox.load("sglang.srt.layers.cp.utils")
            self.base = self.sandbox.load("sglang.srt.layers.cp.base")
            self.input_type = self.released_input_type = self._input_type()
            self.path = ForwardPath(self.root, self.sandbox, self.config, lambda: self.input_type)
        except Exception as exc:
            raise self._classified(exc) from None
        self.planted_prefix = planted_prefix
        if planted_prefix:
            self.input_type = plant_prefix(self.input_type)
        work = dict(TENSOR_WORK, cp_split_before_forward=cp_split(lambda: int(self.config.attn_cp_rank)))
        for cls in self.released_input_type.__mro__:
            if "prepare" in vars(cls):  # the tensor work of each prepare on the way, where its module calls it
                scope = vars(cls)["prepare"].__globals__
                scope.update({name: fn for name, fn in work.items() if name in scope})
        factor = getattr(self.runner_module, "_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR", None)
        if not isinstance(factor, int):
            raise SglangAdapterError(f"{RUNNER} has no int _MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR (got {factor!r})")
        self.max_padding_factor = factor
        self.prepare_cp_forward = self.utils.prepare_cp_forward
        self.__name__ = f"sglang:{strategy}@{self.root}"
        self._changes: dict[str, frozenset[str]] = {}  # file inside the tree -> its lines changed from the pristine release
        # one rank's batch (frozen keywords) -> where ModelRunner.forward ended / where the replay asked of it ended
        self._forwards: dict[tuple[object, ...], Outcome] = {}
        self._replays: dict[tuple[object, ...], Outcome] = {}
        if strategy == "zigzag":
            self.local_layout = self._zigzag_layout

    # -- the release's classes and functions -------------------------------------------------------
    def _input_type(self) -> type:
        name, _ = STRATEGIES[self.strategy]
        for module in ("sglang.srt.layers.cp.bcg.zigzag_bcg" if self.strategy == "zigzag" else "sglang.srt.layers.cp.bcg.interleave_bcg",):
            if module in self.sandbox.real:
                found = getattr(self.sandbox.load(module), name, None)
                if isinstance(found, type):
                    return found
        if self.strategy != "zigzag":
            raise SglangAdapterError(f"this sglang has no {self.strategy} CP CUDA-graph input ({name}); only zigzag is captured")
        bcg = self.sandbox.load("sglang.srt.layers.cp.bcg")
        found = getattr(bcg, "PrefillCPBCGInput", None)
        if not isinstance(found, type):
            raise SglangAdapterError("this sglang has no PrefillCPBCGInput in sglang.srt.layers.cp.bcg")
        return found

    def code_files(self) -> dict[str, str]:
        """The file each driven function's code object comes from (for provenance checks), for the functions
        the release has under their 0.5.17-0.5.23 names. With the planted pre-fix bug, the scan listed is the
        release's own, which the plant calls."""
        runner = self.runner_module.PrefillCudaGraphRunner
        found = {
            "forward": getattr(self.path.model_runner_module.ModelRunner, "forward", None),
            "_forward_raw": getattr(self.path.model_runner_module.ModelRunner, "_forward_raw", None),
            "_prefill_cuda_graph_allows_context_parallel":
                getattr(self.path.model_runner_module, "_prefill_cuda_graph_allows_context_parallel", None),
            "can_run_graph": getattr(runner, "can_run_graph", None),
            "execute": getattr(runner, "execute", None),
            "load_batch": getattr(runner, "load_batch", None),
            "prepare": getattr(self.released_input_type, "prepare", None),
            "select_replay_bucket": getattr(self.released_input_type, "select_replay_bucket", None),
            "prepare_cp_forward": self.prepare_cp_forward,
        }
        return {name: fn.__code__.co_filename for name, fn in found.items() if hasattr(fn, "__code__")}

    def citations(self) -> dict[str, str]:
        """Where each driven step is defined in the release (file:line)."""
        out: dict[str, str] = {}
        runner = self.runner_module.PrefillCudaGraphRunner
        for name, fn in (("forward", getattr(self.path.model_runner_module.ModelRunner, "forward", None)),
                         ("_forward_raw", getattr(self.path.model_runner_module.ModelRunner, "_forward_raw", None)),
                         ("can_run_graph", getattr(runner, "can_run_graph", None)),
                         ("execute", getattr(runner, "execute", None)), ("load_batch", getattr(runner, "load_batch", None))):
            code = getattr(fn, "__code__", None)
            if code is not None:
                out[name] = f"{os.path.relpath(code.co_filename, self.root)}:{code.co_firstlineno}"
        return out

    def decided_at(self, invariant: str, batch: Mapping[str, object] | None = None) -> tuple[str, ...]:
        """Where the release decided ``batch`` (one rank's keyword arguments, as ``admit`` takes them), for a
        finding of ``invariant``: the release's lines (file:line, in the order first run) that ran on it in
        the functions that decide it (``DECIDING``: the model runner's graph condition, can_run_graph, the
        CP bucket scan, load_batch and the CP input's prepare). Narrowed to the lines that differ from the
        pristine release of the same version (``pristine_changes``) when that release is unpacked in the
        cache and some of them ran: a regression planted in, or patched into, a release is cited at its
        own lines; so is one in the functions that build the CP layout the replay reads (``LAYING_OUT``:
        the strategy's ``build_metadata``), whose lines are cited only there. Otherwise every line that ran
        in ``DECIDING`` (a tracer, not a slice), for an invariant judged on the
        replayed bucket (``BUCKET_SIDE``) those of the functions that choose and lay out the bucket
        (``CHOOSING``: load_batch, the CP bucket scan, the CP input's prepare) first. No batch: nothing ran, ()."""
        if batch is None:
            return ()
        laid = self.functions_run(batch, DECIDING | LAYING_OUT)
        changed = self.pristine_changes({line.rpartition(":")[0] for line in laid})
        narrowed = tuple(line for line in laid if line in changed)
        if narrowed:
            return narrowed
        ran = {line: name for line, name in laid.items() if name in DECIDING}
        lines = tuple(ran)
        if invariant in BUCKET_SIDE:
            return tuple(sorted(lines, key=lambda line: ran[line] not in CHOOSING))  # stable: run order kept within each
        return lines

    def lines_run(self, batch: Mapping[str, object]) -> tuple[str, ...]:
        """Every line of the release (file:line, in the order first run) that ran on ``batch`` in ``DECIDING``."""
        return tuple(self.functions_run(batch))

    def functions_run(self, batch: Mapping[str, object], functions: frozenset[str] = DECIDING) -> dict[str, str]:
        """``lines_run``'s lines, each with the name of the deciding function it ran in (or of ``functions``)."""
        lines: dict[str, str] = {}
        with traced(self.root, functions, lines):
            try:
                self._outcome(dict(batch), replay=True)
            except Exception:
                pass  # a refusal or the release's own exception: the lines that ran up to it are the answer
        return lines

    def pristine_changes(self, files: Iterable[str]) -> frozenset[str]:
        """The lines (file:line) of ``files`` (paths inside this tree) that differ from the same version's
        pristine release unpacked in the cache (``trace.pristine_roots``; never fetched here): lines
        replaced or inserted. Empty when this tree is that release or no pristine copy is cached."""
        pristine = pristine_roots(PACKAGE, self.version)
        out: set[str] = set()
        for rel in sorted(set(files)):
            if rel not in self._changes:
                self._changes[rel] = changed_lines(self.root, pristine, rel)
            out |= self._changes[rel]
        return frozenset(out)

    def _set_config(self, cp_size: int, cp_rank: int) -> None:
        seq_split = self.strategy == "zigzag"
        values = dict(
            attn_cp_size=cp_size, attn_cp_rank=cp_rank, tp_size=cp_size, enable_prefill_cp=True,
            enable_prefill_context_parallel=True, enable_dsa_prefill_context_parallel=False, cp_strategy=self.strategy,
            prefill_cp_mode="in-seq-split" if seq_split else "round-robin-split", dsa_prefill_cp_mode=None,
            enable_cp_tp_group_sharing=False, enable_dsa_cache_layer_split=False, enable_cp_decode_attn_tp=False,
        )
        self.config.__dict__.clear()
        self.config.__dict__.update(self.path.server_args(values))

    def _objects(self, batch: dict[str, Any]) -> tuple[Any, Any, Any]:
        """The model runner, CP graph runner and forward batch of this release for ``batch`` (in the sandbox)."""
        self._set_config(batch["cp_size"], batch["cp_rank"])
        if hasattr(self.base, "_STRATEGY"):
            setattr(self.base, "_STRATEGY", None)  # the strategy singleton is rebuilt for this batch's cp_size
        capacities = {int(b): int(r) for b, r in batch["bucket_local_tokens"].items() if r is not None}
        return self.path.objects(batch, capacities)

    def _outcome(self, batch: dict[str, Any], *, replay: bool) -> Outcome:
        try:
            with self.sandbox, driving():
                model_runner, runner, fb = self._objects(batch)
                outcome = self.path.forward(model_runner, fb)
                if replay and not outcome.graph:
                    outcome = self.path.replay(runner, self.path.forward_batch(batch))
        except Exception as exc:
            raise self._classified(exc) from None
        return outcome

    def _forward(self, batch: dict[str, Any]) -> Outcome:
        """Where ``ModelRunner.forward`` ends on ``batch`` (one rank's keywords), run once per batch."""
        key = _frozen(batch)
        found = self._forwards.get(key)
        if found is None:
            found = self._outcome(batch, replay=False)
            if len(self._forwards) >= _CACHE:
                self._forwards.clear()
            self._forwards[key] = found
        return found

    def _replayed(self, batch: dict[str, Any]) -> Outcome:
        """Where the replay of ``batch`` ends: the forward path's own when it took the graph (what ``_outcome``
        with ``replay=True`` returns then), else ``execute`` asked directly, run once per batch."""
        forward = self._forward(batch)
        if forward.graph:
            return forward
        key = _frozen(batch)
        found = self._replays.get(key)
        if found is None:
            found = self._outcome(batch, replay=True)
            if len(self._replays) >= _CACHE:
                self._replays.clear()
            self._replays[key] = found
        return found

    # -- the protocol ----------------------------------------------------------------------------
    def admit(self, **batch: Any) -> bool:
        """The release's own decision: did ``ModelRunner.forward`` take the prefill graph path?"""
        if batch["cp_size"] < 2:
            return False  # cp_size 1: no CP graph is captured
        return self._forward(batch).graph

    def replay_bucket(self, **batch: Any) -> object:
        """The bucket the runner's ``execute`` replays (through the forward path; asked directly when the
        model runner would not take the graph path), or the release's own exception on the way."""
        outcome = self._replayed(batch)
        if outcome.raised is None:
            return outcome.bucket
        error = self._classified(outcome.raised)
        if error is outcome.raised and outcome.preparing is not None:
            return outcome.preparing  # the release's own guard stopped the replay of this bucket (see replay_guard)
        raise error

    def local_rows(self, *, bucket: int, **batch: Any) -> list[int]:
        try:
            with self.sandbox, driving():
                _, _, fb = self._objects(batch)
                self.prepare_cp_forward(fb)
                metadata: Any = fb.attn_cp_metadata
                rows = metadata.per_rank_actual_token
            return [int(r) for r in rows]
        except Exception as exc:
            raise self._classified(exc) from None

    def _zigzag_layout(self, *, bucket: int, **batch: Any) -> LaidOut | None:
        """``local_layout`` (zigzag): the layout the release built for the replayed step, as a cpgraph LaidOut.
        Every rank's rows are read from the CP metadata its own run put on the forward batch handed to the
        captured backend's ``replay`` (``split_list`` and that rank's ``zigzag_index``, as its
        ``shard_hidden_states`` consumes them), and ``restored`` from this rank's own (``reverse_split_len``,
        ``cp_reverse_index`` and its gathered row counts, as its ``gather_hidden_states`` consumes them):
        layout.py, which computes no layout itself. None where nothing was laid out for a replay on every
        rank: one rank, or a rank whose replay did not reach the backend (its own guard raised, the release
        raised, no CP metadata). Metadata without the fields read (``layout.FIELDS``) is refused (exit 2)
        naming the strategy's ``build_metadata``. The tensor work itself (the split, the all-gather, the cat)
        is not run (torch is stubbed)."""
        size = int(batch["cp_size"])
        if size < 2:
            return None
        ranks: list[ZigzagRank] = []
        for q in range(size):
            outcome = self._replayed(dict(batch, cp_rank=q))
            if outcome.raised is not None or outcome.bucket is None or outcome.metadata is None:
                return None
            missing = missing_fields(outcome.metadata)
            if missing:
                raise SglangGlueError(
                    f"{ADAPTER} cannot read sglang {self.version}'s zigzag layout under {self.root}: the CP metadata its "
                    f"build_metadata ({self._build_metadata_line()}) returned for the replay has no {', '.join(missing)}; "
                    f"the adapter reads each rank's rows and the restore from them ({read_against()})"
                )
            try:
                ranks.append(read_zigzag(outcome.metadata))
            except (TypeError, ValueError) as exc:  # cpgraph's own reading failed: a usage error, not a finding
                raise SglangGlueError(
                    f"{ADAPTER} cannot read sglang {self.version}'s zigzag layout under {self.root}: the CP metadata its "
                    f"build_metadata ({self._build_metadata_line()}) returned for the replay does not read as int lists "
                    f"({type(exc).__name__}: {exc})"
                ) from None
        return zigzag_laid_out(ranks, int(batch["cp_rank"]), [int(n) for n in batch["extend_seq_lens"]])

    def _build_metadata_line(self) -> str:
        """file:line of the zigzag strategy's build_metadata in the tree checked."""
        try:
            strategy = self.sandbox.load("sglang.srt.layers.cp.zigzag").ZigzagCPStrategy
            code = strategy.build_metadata.__code__
            return f"{os.path.relpath(code.co_filename, self.root)}:{code.co_firstlineno}"
        except Exception:
            return "sglang/srt/layers/cp/zigzag.py"

    def _classified(self, exc: BaseException) -> Exception:
        """``exc`` when the release raised it by design (its own guard); else the GlueError it stands for."""
        if not isinstance(exc, Exception):
            raise exc
        return classify(exc, ADAPTER, f"sglang {self.version}", self.root, read_against())

    def replay_guard(self, **batch: Any) -> None:
        """Run the release's CP-local replay preparation (``PrefillCPBCGInput.prepare``) for
        ``batch['bucket']``: raises its RuntimeError ('Live batch needs N local CP rows ...') when the live
        layout overflows the bucket's capture."""
        bucket = batch.pop("bucket")
        try:
            with self.sandbox, driving():
                _, runner, fb = self._objects(batch)
                runner.prefill_cp_bcg_input.prepare(runner, fb, static_num_tokens=bucket, capture=False)
        except Exception as exc:
            raise self._classified(exc) from None


def _frozen(batch: Mapping[str, Any]) -> tuple[object, ...]:
    """One rank's keywords as a hashable key (mappings and sequences as tuples)."""

    def frozen(value: object) -> object:
        if isinstance(value, Mapping):
            return tuple(sorted((frozen(k), frozen(v)) for k, v in value.items()))
        if isinstance(value, (list, tuple)):
            return tuple(frozen(v) for v in value)
        return value

    return tuple(sorted((name, frozen(value)) for name, value in batch.items()))


def _returning(value: object) -> Callable[[], object]:
    return lambda: value


def policy_from(root: str, strategy: str = "zigzag", *, planted_prefix: bool = False) -> SglangPolicy:
    """The ``strategy`` selector of the sglang package found under ``root`` (an unpacked wheel)."""
    return SglangPolicy(root, strategy, planted_prefix=planted_prefix)
