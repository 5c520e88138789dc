"""The partition and the replay key, run from the tree's own source: how ``prepare_inputs`` hands the
dispatched descriptor to the partition, the wrapper in between (0.26-0.29: ``pcp.maybe_partition_pcp_batch``)
and ``PCPManager.partition_batch`` up to the local batch it returns, whose ``num_tokens_after_padding`` is
the key execute_model replays the PIECEWISE graph under (``BatchDescriptor(num_tokens=...)``) and whose
``num_reqs_after_padding`` a FULL graph must hold.

Each hop is an ``Evaluation`` (cpgraph/adapters/follow.py): the function's backward slice from the arguments
it hands the next hop (the last hop: from the two keywords of the ``replace(...)`` that makes the local
batch), compiled from the file with its line numbers and run; the call itself is not run (it would copy
the batch into GPU buffers). What is stood in for: the global batch prepare_inputs builds (its CPU arrays
from the batch in the release's order: ``GlobalBatch``); the model runner's ``self`` (execute.PROVIDED).
What is found by name (and refused, exit 2, when absent): the partition call (``maybe_partition_pcp_batch``
or ``partition_batch``), its batch parameter (``input_batch``), the ``replace(...)`` keywords.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cpgraph.adapters.follow import Evaluation, FollowError, Site, Tally
from cpgraph.adapters.shim import Stub
from cpgraph.adapters.vllm.execute import ALLOWED_STUBS, PROVIDED
from cpgraph.adapters.vllm.release import PCP_FILE
from cpgraph.reference.laid_out import LaidOut

CALLS = ("maybe_partition_pcp_batch", "partition_batch")
BATCH = "input_batch"
KEYS = ("num_tokens_after_padding", "num_reqs_after_padding", "num_tokens")


@dataclass(frozen=True, eq=False)
class GlobalBatch:
    """The global InputBatch prepare_inputs hands the partition: the fields the partition's slice reads, from
    the batch in the order the release lays it out (nothing computed; ``num_draft_tokens``: the speculative
    decodes' draft tokens, as the scheduler's output has them)."""

    num_scheduled_tokens: np.ndarray[Any, Any]
    num_computed_tokens_np: np.ndarray[Any, Any]
    is_prefilling_np: np.ndarray[Any, Any]
    query_start_loc_np: np.ndarray[Any, Any]
    has_prefill: bool
    num_reqs: int
    num_tokens: int
    num_draft_tokens: int = 0

    @classmethod
    def of(cls, lengths: Sequence[int] | np.ndarray[Any, Any], prefilling: Sequence[bool] | np.ndarray[Any, Any],
           drafts: int = 0) -> GlobalBatch:
        tokens = np.asarray(lengths, dtype=np.int32)
        starts = np.zeros(len(lengths) + 1, dtype=np.int32)
        np.cumsum(tokens, out=starts[1:])
        flags = np.asarray(prefilling, dtype=np.bool_)
        return cls(tokens, np.zeros(len(lengths), dtype=np.int32), flags, starts, bool(flags.any()), len(lengths), int(tokens.sum()),
                   int(drafts))


@dataclass(frozen=True)
class Partitioned:
    """The local batch's padded token count, padded request count (None: the release's local batch has no such
    field) and real token count (None: not set there), as the tree's statements computed them."""

    num_tokens_after_padding: int
    num_reqs_after_padding: int | None
    num_tokens: int | None = None


def _call(function: ast.FunctionDef, names: Sequence[str]) -> ast.Call | None:
    found = [c for c in ast.walk(function) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in names]
    return min(found, key=lambda c: c.lineno) if found else None


class _Hop:
    """One function on the way to the partition: its slice up to the call of the next, evaluating the
    arguments it hands over (all but the batch)."""

    def __init__(self, root: str, rel: str, qualname: str, next_names: Sequence[str], callee_params: Sequence[str] | None,
                 namespace: dict[str, Any], provided: Sequence[str] | None) -> None:
        self.call: ast.Call | None = None
        self.slots: list[tuple[str | int, ast.expr]] = []  # (keyword or position, argument) handed over
        self.batch_slot: str | int | None = None

        def targets(function: ast.FunctionDef) -> list[ast.expr]:
            call = _call(function, next_names)
            if call is None:
                raise FollowError(f"{rel}:{function.lineno}: {qualname} calls none of {', '.join(next_names)}")
            self.call = call
            params = list(callee_params or ())
            for i, arg in enumerate(call.args):
                name = params[i] if i < len(params) else None
                if name == BATCH or (name is None and isinstance(arg, ast.Name) and arg.id == BATCH):
                    self.batch_slot = i
                else:
                    self.slots.append((i, arg))
            for keyword in call.keywords:
                if keyword.arg is None:
                    raise FollowError(f"{rel}:{call.lineno}: {qualname} hands the partition **{ast.unparse(keyword.value)}")
                if keyword.arg == BATCH:
                    self.batch_slot = keyword.arg
                else:
                    self.slots.append((keyword.arg, keyword.value))
            receiver = call.func.value if isinstance(call.func, ast.Attribute) else call.func
            return [arg for _, arg in self.slots] or [receiver]  # (nothing handed over but the batch)

        self.evaluation = Evaluation(root, rel, qualname, targets, namespace=namespace, provided=provided, allowed_stubs=ALLOWED_STUBS)
        if self.batch_slot is None:
            assert self.call is not None
            raise FollowError(f"{rel}:{self.call.lineno}: {qualname} hands the partition no {BATCH}")

    @property
    def callee(self) -> str:
        assert self.call is not None and isinstance(self.call.func, ast.Attribute)
        return self.call.func.attr

    def handed(self, values: tuple[Any, ...], batch: Any) -> tuple[list[Any], dict[str, Any]]:
        """The next call's positional and keyword arguments, the batch in its slot."""
        by_slot: dict[str | int, Any] = {slot: v for (slot, _), v in zip(self.slots, values)}
        assert self.batch_slot is not None
        by_slot[self.batch_slot] = batch
        positions = sorted(k for k in by_slot if isinstance(k, int))
        return [by_slot[i] for i in positions], {k: v for k, v in by_slot.items() if isinstance(k, str)}


def _params(root: str, rel: str, qualname: str) -> list[str]:
    from cpgraph.adapters.glue import find, tree_of

    tree = tree_of(root, rel)
    node = find(tree, qualname) if tree is not None else None
    if not isinstance(node, ast.FunctionDef):
        raise FollowError(f"{rel}: no {qualname}")
    names = [a.arg for a in node.args.posonlyargs + node.args.args]
    return names[1:] if names[:1] == ["self"] else names


class Partition:
    """One tree's way from the dispatched descriptor to the partition's local batch (see the module docstring)."""

    def __init__(self, root: str, runner_file: str, pcp_file: str, runner_namespace: dict[str, Any], pcp_module: Any) -> None:
        pcp_namespace = dict(vars(pcp_module))
        names = list(CALLS)
        self.keys: list[str] = []
        self.made: ast.Call | None = None
        first = _Hop(root, runner_file, "GPUModelRunner.prepare_inputs", names, None, runner_namespace, tuple(PROVIDED))
        self.hops = [first]
        if first.callee == "maybe_partition_pcp_batch":
            params = _params(root, pcp_file, "maybe_partition_pcp_batch")
            first = _Hop(root, runner_file, "GPUModelRunner.prepare_inputs", names, params, runner_namespace, tuple(PROVIDED))
            wrapper = _Hop(root, pcp_file, "maybe_partition_pcp_batch", ["partition_batch"],
                           _params(root, pcp_file, "PCPManager.partition_batch"), pcp_namespace, None)
            self.hops = [first, wrapper]
        else:
            first = _Hop(root, runner_file, "GPUModelRunner.prepare_inputs", names,
                         _params(root, pcp_file, "PCPManager.partition_batch"), runner_namespace, tuple(PROVIDED))
            self.hops = [first]

        def keys(function: ast.FunctionDef) -> list[ast.expr]:
            made = [c for c in ast.walk(function) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "replace"
                    and any(k.arg == KEYS[0] for k in c.keywords)]
            if not made:
                return []
            self.made = made[-1]
            found = {k.arg: k.value for k in self.made.keywords if k.arg in KEYS}
            self.keys = [k for k in KEYS if k in found]
            return [found[k] for k in self.keys]

        self.last = Evaluation(root, pcp_file, "PCPManager.partition_batch", keys, namespace=pcp_namespace, allowed_stubs=ALLOWED_STUBS)

        def built(function: ast.FunctionDef) -> list[ast.expr]:  # InputBatch(..., num_tokens_after_padding=..., num_tokens=...)
            calls = [c for c in ast.walk(function) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "InputBatch"
                     and any(k.arg == KEYS[0] for k in c.keywords)]
            if not calls:
                return []
            words = {k.arg: k.value for k in calls[0].keywords}
            self.single_keys[:] = [k for k in (KEYS[0], KEYS[2]) if k in words]
            return [words[k] for k in self.single_keys]

        self.single_keys: list[str] = []

        # one rank builds no PCPManager: the batch prepare_inputs builds is the one replayed (its own padding)
        self.single = Evaluation(root, runner_file, "GPUModelRunner.prepare_inputs", built, namespace=runner_namespace,
                                 provided=tuple(PROVIDED), allowed_stubs=ALLOWED_STUBS)

    def run(self, runner: Any, manager: Any, batch: GlobalBatch, handed: tuple[tuple[Any, ...], dict[str, Any]] | None,
            budget: int = 0) -> Partitioned:
        """The local batch's padded counts: prepare_inputs run on ``runner`` with what execute_model ``handed``
        it (its own slice evaluated those arguments), the wrapper and partition_batch on the rank's real
        ``manager``; raises what the release raises (a size below a rank's rows, a FULL graph short of the
        rank's requests)."""
        if handed is None:
            raise FollowError("execute_model did not reach prepare_inputs on this batch")
        serving(manager, 2 * int(runner.max_num_reqs), max(budget, batch.num_tokens))
        args, kwargs = self.hops[0].handed(self.hops[0].evaluation.run(runner, *handed[0], **handed[1]), batch)
        for hop in self.hops[1:]:  # the wrapper (0.26-0.29): a module function handed the manager first
            args, kwargs = hop.handed(hop.evaluation.run(*args, **kwargs), batch)
        values = dict(zip(self.keys, self.last.run(manager, *args, **kwargs)))
        requests, tokens = values.get(KEYS[1]), values.get(KEYS[2])
        return Partitioned(int(values[KEYS[0]]), None if requests is None else int(requests), None if tokens is None else int(tokens))

    def run_single(self, runner: Any, handed: tuple[tuple[Any, ...], dict[str, Any]] | None) -> Partitioned:
        """The num_tokens_after_padding (and num_tokens) of the batch prepare_inputs builds (one rank: nothing
        partitions it)."""
        if handed is None:
            raise FollowError("execute_model did not reach prepare_inputs on this batch")
        values = dict(zip(self.single_keys, self.single.run(runner, *handed[0], **handed[1])))
        tokens = values.get(KEYS[2])
        return Partitioned(int(values[KEYS[0]]), None, None if tokens is None else int(tokens))

    def sites(self) -> tuple[Site, ...]:
        """The calls handed over and the local batch made, in the tree checked."""
        out = [hop.evaluation.site(hop.call) for hop in self.hops if hop.call is not None]
        if self.made is not None:
            out.append(self.last.site(self.made))
        return tuple(out)

    def tally(self) -> tuple[Tally, ...]:
        return tuple(h.evaluation.tally() for h in self.hops) + (self.last.tally(), self.single.tally())


@dataclass(frozen=True)
class Buffers:
    """The sizes of a PCPManager's input buffers (InputBuffers, allocated at start-up), which the partition's
    guards compare the local batch against."""

    max_num_reqs: int
    max_num_tokens: int


SERVING = ("_req_states", "_padded_gather_idx", "_local_req_idx")  # set by a server's manager before partition_batch


def serving(manager: Any, max_num_reqs: int, max_num_tokens: int) -> None:
    """Give the rank's real PCPManager the state a serving one holds when partition_batch runs, so that the
    partition's guards run (``assert self._req_states is not None``, the input buffers' size checks): its
    input buffers' sizes (``max_num_reqs``: twice the scheduler's requests, as PCPManager.__init__ sizes them;
    ``max_num_tokens``: the scheduler's token budget), and markers for the request states and GPU index
    tensors it holds (stubs: computing with one is a glue error)."""
    manager._input_buffers = Buffers(max_num_reqs, max_num_tokens)
    for name in SERVING:
        if getattr(manager, name, None) is None:
            setattr(manager, name, Stub(f"PCPManager.{name}"))


class Layouts:
    """A PCPManager's own ``_build_batch_layout``, keeping its last layout and the padded size it was handed: the
    segments and real rows do not depend on the padded size, so the adapter reads the rows of the layout the
    partition just made instead of laying the batch out again, and whether (and to what) the tree's partition
    padded the layout is read from that call, not from the partition's shape."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.last: tuple[tuple[bytes, bytes], Any] | None = None
        self.padded: int | None = None  # the padded size the last caller handed it (None: none)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.last = None
        padded = kwargs.get("padded_num_tokens", args[4] if len(args) > 4 else None)
        self.padded = None if padded is None else int(padded)
        found = self.real(*args, **kwargs)
        self.last = ((bytes(args[0].tobytes()), bytes(args[2].tobytes())), found)
        return found


def laid_out(manager: Any, batch: Any) -> Any:
    """The release's layout of ``batch`` (segments and real rows on every rank): the one the partition just
    made of the same batch, else laid out afresh, unpadded."""
    layouts = manager._build_batch_layout
    key = (bytes(batch.num_scheduled_tokens.tobytes()), bytes(batch.is_prefilling.tobytes()))
    if isinstance(layouts, Layouts) and layouts.last is not None and layouts.last[0] == key:
        return layouts.last[1]
    return layouts(*batch.layout_args())


HOST_COPIES = ("async_copy_to_gpu", "async_tensor_h2d")  # the pcp module's host-to-device copies (0.26-0.29, 0.30 on)
LAYOUT_INDICES = ("_padded_gather_idx", "_hidden_restore_idx")  # what _build_batch_layout leaves on the manager


def host_copy(data: Any, *args: Any, out: Any = None, **kwargs: Any) -> Any:
    """Stand-in for the pcp module's host-to-device copy: the array stays on the host, copied, so the gather and
    restore indices ``_build_batch_layout`` hands to the GPU can be read back (``out=``: the GPU buffer, stood
    in, is returned as the real copy returns it)."""
    if out is not None:
        return out
    return np.array(data, copy=True)


def install_host_copies(pcp_module: Any) -> None:
    """Put ``host_copy`` where the release's pcp module names its host-to-device copy."""
    for name in HOST_COPIES:
        if name in vars(pcp_module):
            setattr(pcp_module, name, host_copy)


def forget_layout(manager: Any) -> None:
    """Clear the indices a previous step's layout left on ``manager``, so a partition that sets none is seen."""
    for name in LAYOUT_INDICES:
        setattr(manager, name, None)


def layout_indices(manager: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """The gather and restore indices the partition's layout just set on ``manager`` (None: it set none)."""
    gather, restore = (getattr(manager, name, None) for name in LAYOUT_INDICES)
    if isinstance(gather, np.ndarray) and isinstance(restore, np.ndarray):
        return gather, restore
    return None


def observed_layout(gather: np.ndarray[Any, Any], restore: np.ndarray[Any, Any], starts: np.ndarray[Any, Any],
                    rows: Sequence[int], order: Sequence[int]) -> LaidOut:
    """The layout a rank's ``_build_batch_layout`` built, as reference.laid_out.LaidOut runs: rank q's rows are
    ``gather[q*S : q*S + rows[q]]`` (S = len(gather) / P, the padded rows per rank; each entry a token's index in
    the global batch), and token g is read back from row ``restore[g]`` of the gathered ranks. ``starts``: the
    global batch's query start offsets (release order); ``order[j]``: the checker's request at the release's
    position j."""
    key = (gather.tobytes(), restore.tobytes(), tuple(rows), tuple(order), np.asarray(starts).tobytes())
    found = _OBSERVED.get(key)  # every rank lays out the whole batch: the ranks of one step mostly share it
    if found is not None:
        return found
    try:
        laid = _observed(gather, restore, starts, rows, order)
    except Exception as exc:  # cpgraph's own reading of the indices failed: a usage error, never the release's finding
        raise FollowError(f"{PCP_FILE}: the layout's gather and restore indices could not be read "
                          f"({type(exc).__name__}: {exc}); the adapter reads each rank's rows from them") from exc
    if len(_OBSERVED) >= 256:
        _OBSERVED.clear()
    _OBSERVED[key] = laid
    return laid


def _observed(gather: np.ndarray[Any, Any], restore: np.ndarray[Any, Any], starts: np.ndarray[Any, Any],
              rows: Sequence[int], order: Sequence[int]) -> LaidOut:
    p = len(rows)
    per_rank = len(gather) // p if p else 0
    ends = np.asarray(starts, dtype=np.int64)
    held = np.arange(len(gather), dtype=np.int64)
    if per_rank:  # each rank's occupied rows [0, rows[q]): the rest of its per_rank rows are padding
        held = held[held % per_rank < np.repeat(np.asarray(rows, dtype=np.int64), per_rank)[: len(gather)]]
    ranks: list[list[tuple[int, int, int, int]]] = [[] for _ in range(p)]
    for request, first, stop, at in _runs(np.asarray(gather, dtype=np.int64)[held], ends, order, held, per_rank):
        q, row = divmod(at, per_rank)
        ranks[q].append((request, first, stop, row))
    tokens = np.arange(int(ends[-1]), dtype=np.int64)
    restored = tuple(
        (run[0], run[1], run[2], *divmod(run[3], per_rank)) if per_rank else (run[0], run[1], run[2], -1, run[3])
        for run in _runs(tokens, ends, order, np.asarray(restore, dtype=np.int64), per_rank)
    )
    return LaidOut(tuple(tuple(runs) for runs in ranks), restored, tuple(int(i) for i in order) if order else None)


_OBSERVED: dict[tuple[object, ...], LaidOut] = {}


def _runs(tokens: np.ndarray[Any, Any], ends: np.ndarray[Any, Any], order: Sequence[int], where: np.ndarray[Any, Any],
          per_rank: int) -> list[tuple[int, int, int, int]]:
    """Runs (request, first token, stop, first position) of global token indices ``tokens`` placed at positions
    ``where``: a run breaks where the request changes, the token or the position does not go up by one, or the
    position enters another rank's ``per_rank`` rows."""
    n = len(tokens)
    if n == 0:
        return []
    valid = (tokens >= 0) & (tokens < ends[-1])
    request = np.searchsorted(ends, np.where(valid, tokens, 0), side="right") - 1
    token = np.where(valid, tokens - ends[request], -1)
    brk = np.ones(n, dtype=np.bool_)
    brk[1:] = (request[1:] != request[:-1]) | (token[1:] != token[:-1] + 1) | (where[1:] != where[:-1] + 1) | ~valid[1:]
    if per_rank:
        brk[1:] |= (where[1:] // per_rank) != (where[:-1] // per_rank)
    firsts = np.flatnonzero(brk).tolist()
    out = []
    req, tok, pos = request.tolist(), token.tolist(), where.tolist()
    for b, e in zip(firsts, firsts[1:] + [n]):
        if tok[b] < 0:  # an index outside the batch: shown as request -1 (the judge names it)
            out.append((-1, 0, e - b, pos[b]))
            continue
        j = req[b]
        out.append((order[j] if order else j, tok[b], tok[e - 1] + 1, pos[b]))
    return out
