"""The graph-path subject: every CUDA-graph mode and decode placement a policy's path drivers run (decode
graphs keyed by request count and query length, mixed graphs keyed by tokens, DP agreement), over steps in the
proportions a server sees, passed through the pipeline's stages once each.

A path driver (``PathDriver``, the public protocol: the vLLM adapter's ``VllmPaths`` and a user's own decode
dispatcher alike) has ``version``, ``modes`` (the configured ``cudagraph_mode`` values it runs),
``dcp_size``, ``placement(cp_size)`` (a DualChunkSwap strategy row: where decodes go),
``captured(config)`` (the graphs a configuration captures) and ``answers_dp(steps, config)`` (what each rank
of each DP rank dispatches and replays, DP rank d running ``steps[d]``), and may say where it decides
(``decided_at(invariant)``: file:line citations). At DP size D every case runs D steps, one per DP rank.

The stages, per path (mode, placement, dcp, DP size):

1. generate (``random_step``, ``random_config``; seeded, the same on every machine): six steps in ten a
   uniform decode (every request a decode of q = 1 + ``spec_tokens`` tokens, 1 to 64 requests, most of them
   few), two in ten a mixed step (one to three prefills of 1 to 600 tokens beside up to eight decodes), two in
   ten speculative decoding's ragged step (decodes of 1 to q tokens); capture lists: vLLM's defaults, or one
   case in three a random short list of token sizes and decode request counts;
2. call the driver under supervision (``supervised``: calls.py's bounded call, so ``--call-timeout-s``, a
   driver that exits, and an answer of the wrong shape stop the check exactly as on the batch subject; a
   driver that raises is an answer: ``admission_replay``, it could not run the step);
3. judge against ``reference.graph_paths.judge_dp``;
4. minimise the first violation of each invariant (shrink.py, with ``smaller``: fewest requests, then fewest
   tokens, then the smallest cp_size, then the fewest captured sizes; then a step and a capture list together);
5. report it as the one violation record (finding.py, a ``PathWitness``) in the one report (report.py); 6. emit a test (emit_paths.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Protocol, runtime_checkable

from cpgraph.adapters.glue import GlueError
from cpgraph.check.options import CheckOptions
from cpgraph.check.shrink import shrink
from cpgraph.check.subjects.path_calls import supervised
from cpgraph.check.subjects.path_violation import PathRun, PathsRun, PathViolation, Steps, path_violation
from cpgraph.reference.graph_paths import Graph, GraphConfig, GraphStep, PathAnswer, PathFinding, fastest, held_by, judge_dp

DEFAULT_TOKEN_SIZES = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))
MAX_DECODES = 64


@runtime_checkable
class PathDriver(Protocol):
    """The graph-path protocol (module docstring): what a policy's ``graph_path_drivers(dcp_sizes)`` returns,
    one driver per decode context parallel size. Every call is by keyword (``captured(config=...)``,
    ``answers_dp(steps=..., config=...)``), as the prefill protocol's."""

    version: str
    modes: tuple[str, ...]
    dcp_size: int

    def placement(self, cp_size: int) -> str: ...

    def captured(self, config: GraphConfig) -> Sequence[Graph]: ...

    def answers_dp(self, steps: Sequence[GraphStep], config: GraphConfig) -> Sequence[Sequence[PathAnswer]]: ...


@dataclass(frozen=True)
class Case:
    """One case of the subject: the steps (one per DP rank) and the captured configuration."""

    steps: Steps
    config: GraphConfig


@dataclass(frozen=True)
class Judged:
    """A case judged: what broke, every rank's answers and the graphs captured."""

    found: tuple[PathFinding, ...]
    answers: tuple[tuple[PathAnswer, ...], ...]
    graphs: tuple[Graph, ...]


def random_step(rng: random.Random, cp_size: int, placement: str, query_len: int) -> GraphStep:
    """One step in the proportions the module docstring gives."""
    kind = rng.random()
    if kind < 0.6:
        n = min(MAX_DECODES, int(rng.expovariate(1 / 8)) + 1)
        return GraphStep((query_len,) * n, (False,) * n, cp_size, placement)
    if kind < 0.8:
        prefills = [rng.randint(1, 600) for _ in range(rng.randint(1, 3))]
        decodes = [rng.randint(1, query_len) for _ in range(rng.randint(0, 8))]
        flags = [True] * len(prefills) + [False] * len(decodes)
        order = list(range(len(flags)))
        rng.shuffle(order)
        return GraphStep(tuple((prefills + decodes)[i] for i in order), tuple(flags[i] for i in order), cp_size, placement)
    n = rng.randint(1, 16)
    return GraphStep(tuple(rng.randint(1, query_len) for _ in range(n)), (False,) * n, cp_size, placement)


def random_config(rng: random.Random, mode: str, query_len: int, max_num_seqs: int) -> GraphConfig:
    """vLLM's default capture sizes, or one case in three a random short list of each."""
    if rng.random() < 2 / 3:
        decodes = (*range(1, 9), *range(16, max_num_seqs + 1, 8))
        return GraphConfig(mode, DEFAULT_TOKEN_SIZES, decodes, (query_len,), max_num_seqs)
    tokens = tuple(sorted(rng.sample(range(1, 1025), rng.randint(1, 6))))
    decodes = tuple(sorted(rng.sample(range(1, MAX_DECODES + 1), rng.randint(1, 6))))
    return GraphConfig(mode, tokens, decodes, (query_len,), max_num_seqs)


def judged(driver: PathDriver, case: Case) -> Judged:
    """The judge stage: every rank of every DP rank asked (through the driver, supervised when bound), and
    ``reference.graph_paths.judge_dp`` over the answers. A driver that raises could not run the step: that is
    ``admission_replay``, with the exception as its why."""
    try:
        graphs = tuple(driver.captured(config=case.config))
        answers = tuple(tuple(group) for group in driver.answers_dp(steps=case.steps, config=case.config))
    except GlueError:
        raise  # an adapter that cannot drive its release: no finding about the release (a usage error)
    except Exception as exc:  # an answer: the dispatcher cannot run this step (a stop is a BaseException)
        why = f"the driver raised {type(exc).__name__}: {exc}"
        return Judged((PathFinding("admission_replay", why, "correctness"),), (), ())
    return Judged(tuple(judge_dp(list(zip(case.steps, answers)), graphs)), answers, graphs)


def _smaller_step(step: GraphStep) -> list[GraphStep]:
    """A request fewer, or a prefill shorter."""
    out: list[GraphStep] = []
    n = len(step.lengths)
    for i in range(n):
        if n > 1:
            out.append(replace(step, lengths=step.lengths[:i] + step.lengths[i + 1:], prefilling=step.prefilling[:i] + step.prefilling[i + 1:]))
    for i, (length, prefill) in enumerate(zip(step.lengths, step.prefilling)):
        if prefill and length > 1:
            for shorter in sorted({length // 2, length - 1}):
                if shorter >= 1:
                    out.append(replace(step, lengths=step.lengths[:i] + (shorter,) + step.lengths[i + 1:]))
    return out


def _fewer_or_smaller(sizes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """A capture list with one size fewer, or one size halved or one less (sorted, without repeats)."""
    out = [sizes[:i] + sizes[i + 1:] for i in range(len(sizes)) if len(sizes) > 1]
    for i, size in enumerate(sizes):
        for smaller in sorted({size // 2, size - 1}):
            if smaller >= 1:
                out.append(tuple(sorted(set(sizes[:i] + (smaller,) + sizes[i + 1:]))))
    return out


def smaller(case: Case, cp_sizes: Sequence[int], placement: Callable[[int], str]) -> list[Case]:
    """The subject's "smaller" moves, one move each: a DP rank's step a request fewer or a prefill shorter, a
    smaller cp_size (every DP rank's), a captured size fewer or smaller."""
    steps, config = case.steps, case.config
    out: list[Case] = []
    for d, step in enumerate(steps):
        out += [Case(steps[:d] + (s,) + steps[d + 1:], config) for s in _smaller_step(step)]
    for p in sorted(cp_sizes):
        if p < steps[0].cp_size:
            out.append(Case(tuple(replace(s, cp_size=p, placement=placement(p)) for s in steps), config))
    for tokens in _fewer_or_smaller(config.token_sizes):
        out.append(Case(steps, replace(config, token_sizes=tokens)))
    for decodes in _fewer_or_smaller(config.decode_request_sizes):
        out.append(Case(steps, replace(config, decode_request_sizes=decodes)))
    return out


def _together(moves: list[Case], case: Case) -> Iterator[Case]:
    """The second tier: a step move and a configuration move at once (a request fewer needs a smaller graph
    too when the violation sits at a graph's edge)."""
    for step_move in (m for m in moves if m.config == case.config):
        for config_move in (m for m in moves if m.steps == case.steps):
            yield Case(step_move.steps, config_move.config)


def minimise(driver: PathDriver, case: Case, invariant: str, cp_sizes: Sequence[int], placement: Callable[[int], str]) -> Case:
    """``case`` shrunk (shrink.py) while ``invariant`` stays broken."""
    def broken(c: Case) -> bool:
        return any(f.invariant == invariant for f in judged(driver, c).found)

    return shrink(case, (lambda c: smaller(c, cp_sizes, placement),
                         lambda c: _together(smaller(c, cp_sizes, placement), c)), broken)


def check_paths(
    drivers: Sequence[PathDriver], *, cp_sizes: Sequence[int], modes: Sequence[str] | None = None, spec_tokens: int = 0,
    cases: int = 1000, seed: int = 0, max_num_seqs: int = 256, progress: Callable[[str], None] | None = None,
    decided_at: Callable[[str], tuple[str, ...]] | None = None, dp_sizes: Sequence[int] = (1,),
) -> PathsRun:
    """Check ``cases`` cases on every mode each driver runs (``modes`` narrows them) at every DP size, each case
    at a cp size drawn from ``cp_sizes`` with one step per DP rank: the first violation of each invariant per
    path, minimised. Calls are supervised when the drivers were bound (``supervised``) inside a session."""
    if not drivers:
        raise ValueError("check_paths needs at least one path driver")
    if type(spec_tokens) is not int or not 0 <= spec_tokens <= 16:
        raise ValueError(f"spec_tokens must be an int in 0..16, got {spec_tokens!r}")
    if type(cases) is not int or cases < 1:
        raise ValueError(f"cases must be an int >= 1, got {cases!r}")
    if not dp_sizes or not all(type(d) is int and 1 <= d <= 64 for d in dp_sizes):
        raise ValueError(f"dp_sizes must be ints in 1..64, got {dp_sizes!r}")
    q = 1 + spec_tokens
    runs: list[PathRun] = []
    violations: list[PathViolation] = []
    for driver in drivers:
        for mode in driver.modes:
            if modes is not None and mode not in modes:
                continue
            placement = driver.placement(max(cp_sizes))
            for dp in dp_sizes:
                run = PathRun(mode, placement, driver.dcp_size, dp, cases)
                rng = random.Random(f"{seed}:{mode}:{placement}:{dp}")
                seen: set[str] = set()
                for count in range(1, cases + 1):
                    p = rng.choice(list(cp_sizes))
                    case = Case(tuple(random_step(rng, p, driver.placement(p), q) for _ in range(dp)),
                                random_config(rng, mode, q, max_num_seqs))
                    for finding in judged(driver, case).found:
                        if finding.invariant in seen:
                            continue
                        seen.add(finding.invariant)
                        violations.append(_reported(driver, run, case, finding.invariant, count, cp_sizes, decided_at))
                        if progress is not None:
                            progress(f"graph paths: {finding.invariant} violated on {run.name}, after {count} cases")
                runs.append(run)
                if progress is not None:
                    progress(f"graph paths: {run.name}: {cases} cases checked")
    return PathsRun(drivers[0].version, tuple(runs), tuple(violations))


def _reported(driver: PathDriver, run: PathRun, case: Case, invariant: str, count: int, cp_sizes: Sequence[int],
              decided_at: Callable[[str], tuple[str, ...]] | None) -> PathViolation:
    """The minimise and report stages of one finding."""
    small = minimise(driver, case, invariant, cp_sizes, driver.placement)
    again = judged(driver, small)
    final = next(f for f in again.found if f.invariant == invariant)
    should = fastest(again.graphs, held_by(list(zip(small.steps, again.answers)))) if again.answers else None
    return path_violation(
        final.invariant, final.why, run.mode, small.steps[0].placement, small.steps, small.config,
        again.answers, should, decided_at(invariant) if decided_at is not None else (), count, driver.dcp_size,
    )


def drivers_of(obj: object, dcp_sizes: Sequence[int]) -> tuple[PathDriver, ...] | None:
    """The path drivers ``obj`` offers: ``graph_path_drivers(dcp_sizes)``, or ``obj`` itself when it is a
    driver (one dcp size: its own); None when it offers none."""
    offered = getattr(obj, "graph_path_drivers", None)
    if callable(offered):
        return tuple(offered(tuple(dcp_sizes)))
    if all(callable(getattr(obj, name, None)) for name in ("answers_dp", "captured", "placement")) and hasattr(obj, "modes"):
        return (obj,)  # type: ignore[return-value]  # checked by shape: the protocol's attributes are read at use
    return None


def decided_at_of(obj: object) -> Callable[[str], tuple[str, ...]] | None:
    """``obj.decided_at`` when it has one (file:line citations of where it decides an invariant)."""
    found: Any = getattr(obj, "decided_at", None)
    return found if callable(found) else None


class GraphPaths:
    """The graph-path subject as the pipeline runs it (subjects/__init__.py's ``Subject``)."""

    key = "graph_paths"
    column = "graph_path"

    def offered(self, obj: object, options: CheckOptions) -> tuple[PathDriver, ...] | None:
        """The drivers ``obj`` offers at ``options.dcp_sizes`` (None: none, or ``graph_paths=False``);
        ValueError when ``options.cudagraph_modes`` names a mode no driver runs."""
        if options.graph_paths is False:
            return None
        drivers = drivers_of(obj, options.dcp_sizes)
        if not drivers:
            return None
        runs = {m for d in drivers for m in d.modes}
        if options.cudagraph_modes is not None and not set(options.cudagraph_modes) <= runs:
            raise ValueError(f"--cudagraph-modes {','.join(options.cudagraph_modes)}: this release runs "
                             f"{', '.join(sorted(runs))} under PCP (the modes its graph-path drivers run)")
        return drivers

    def check(self, obj: object, offered: Sequence[Any], options: CheckOptions, name: str,
              progress: Callable[[str], None] | None) -> PathsRun:
        drivers = supervised(offered, name)
        told = None if progress is None else (lambda line: progress(f"cpgraph check {name}: {line}"))
        return check_paths(
            drivers, cp_sizes=options.cp_sizes, modes=options.cudagraph_modes, spec_tokens=options.spec_tokens,
            cases=options.path_cases, seed=options.seed, progress=told, decided_at=decided_at_of(obj) or decided_at_of(offered[0]),
            dp_sizes=options.dp_sizes,
        )


GRAPH_PATHS: Final = GraphPaths()
