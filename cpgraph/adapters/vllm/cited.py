"""Where a vLLM tree decided a finding: the statements that ran on its witness (issue #44, "the planted line
cited").

``Citer(policy)`` re-runs one witness (a prefill step on one rank, or a graph-path case on every rank) with a
line tracer (follow.run_traced) and cites, as ``file:line `first line of the statement``` (role, when it has
one):

- first, every statement that ran and differs from the release of the same version as released
  (pristine.py: the pristine unpack in cpgraph's cache; none cached, or the tree is that unpack: none),
  each marked ``(changed from vLLM X.Y.Z as released)``, wherever it ran: the compiled slices or the code
  run whole (PCPManager, CudaGraphManager, dp_utils);
- for ``admission_replay``, the replay calls' keys execute_model made;
- then the statements of the slices that ran (execute_model and the methods it calls up to dispatch, the
  partition's slices, execute_model on to its replay call), control headers included (an ``if`` whose test
  ran is cited: its outcome decided the way taken), in the order first run: first those with a role (the
  counts handed to dispatch, the dispatch call, the local batch the partition makes, the replay keys),
  then the rest;
- for a graph-path finding only, the decode-path explanations, where they ran on the witness (with the
  roles): the decode table's index, ``_is_compatible``'s request check, the DP re-dispatch, the partition's
  request contract.

Without a witness (``static``) the role lines of paths.decision_lines are cited, the changed ones first.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterable
from typing import Any

from cpgraph.adapters.follow import Ran, code_objects, run_traced, statements_at
from cpgraph.adapters.pristine import Pristine
from cpgraph.adapters.vllm.release import PACKAGE

STACK = "vLLM"


class Citer:
    """One policy's citations from what ran (module docstring)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.root: str = policy.root
        self.pristine = Pristine(self.root, PACKAGE, policy.version)
        self._texts: dict[str, list[str]] = {}
        self._sliced: frozenset[Any] | None = None

    # -- what is a slice, what a statement says ------------------------------------------------------------
    def sliced(self) -> frozenset[Any]:
        """The code objects of the compiled slices (execute_model's, the methods it follows, the partition's)."""
        if self._sliced is None:
            program, partition = self.policy.execute.program, self.policy.partition
            functions: list[Any] = [f for f in vars(program.runner_class).values() if callable(f)]
            if program.resume_function is not None:
                functions.append(program.resume_function)
            functions += [hop.evaluation.function_object for hop in partition.hops]
            functions += [partition.last.function_object, partition.single.function_object]
            self._sliced = code_objects(functions)
        return self._sliced

    def text(self, rel: str, line: int) -> str:
        if rel not in self._texts:
            try:
                with open(os.path.join(self.root, rel), encoding="utf-8") as handle:
                    self._texts[rel] = handle.read().splitlines()
            except OSError:
                self._texts[rel] = []
        lines = self._texts[rel]
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    def statement(self, rel: str, line: int) -> ast.stmt | None:
        try:
            return statements_at(os.path.join(self.root, rel)).get(line)
        except (OSError, SyntaxError, ValueError):
            return None

    def changed(self, rel: str, stmt: ast.stmt) -> bool:
        """Whether a line of ``stmt`` that is its own (a compound statement's header) differs from the release."""
        changed = self.pristine.changed(rel)
        if not changed:
            return False
        owned = statements_at(os.path.join(self.root, rel))
        lines = [n for n in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1) if owned.get(n) is stmt]
        return any(n in changed for n in lines) and not self.pristine.unchanged_block(rel, lines[0], lines[-1])

    # -- the roles a cited statement may carry --------------------------------------------------------------
    def roles(self, graph: bool) -> dict[tuple[str, int], tuple[int, str]]:
        """(file, statement line) -> the line cited (the role's own, inside a statement of several lines) and
        what the statement does on the way to the graph; the decode-path ones only for a graph-path finding."""
        from cpgraph.adapters.vllm.paths import decode_roles, glue_roles

        out: dict[tuple[str, int], tuple[int, str]] = {}
        sink, made = self.policy.execute.sink(), self.policy.partition.sites()
        extra = [(sink.file, sink.line, "the call that dispatches: dispatch_cg_and_sync_dp")]
        if made:
            extra.append((made[-1].file, made[-1].line, "the local batch the partition makes"))
        for rel, line, role in [*(decode_roles(self.root) if graph else []), *glue_roles(self.policy), *extra]:
            stmt = self.statement(rel, line)
            out.setdefault((rel, stmt.lineno if stmt is not None else line), (line, role))
        return out

    # -- citations ----------------------------------------------------------------------------------------
    def traced(self, call: Callable[[], Any]) -> list[Ran]:
        ran, _ = run_traced(self.root, self.sliced(), call)
        return ran

    def cite(self, ran: Iterable[Ran], *, graph: bool, first_replay: bool) -> tuple[str, ...]:
        """The citations of what ran (module docstring)."""
        roles = self.roles(graph)
        decode = set(roles) - set(self.roles(False)) if graph else set()  # the decode-path lines of the code run whole
        replay = {(s.file, s.line) for s in self.policy.execute.replay_sites()}
        order: dict[tuple[str, int], bool] = {}  # statement -> ran in a slice
        for r in ran:
            stmt = self.statement(r.file, r.line)
            if stmt is None:
                continue
            key = (r.file, stmt.lineno)
            order[key] = order.get(key, False) or r.sliced
        changed: list[str] = []
        first: list[str] = []
        roled: list[str] = []
        rest: list[str] = []
        for key, in_slice in order.items():
            stmt = self.statement(*key)
            if stmt is not None and self.changed(key[0], stmt):
                changed.append(self._line(key, roles.get(key), True))
            elif first_replay and key in replay:
                first.append(self._line(key, roles.get(key), False))
            elif in_slice or key in decode:
                (roled if key in roles else rest).append(self._line(key, roles.get(key), False))
        return tuple(changed + first[::-1] + roled + rest)

    def _line(self, key: tuple[str, int], role: tuple[int, str] | None, changed: bool) -> str:
        rel, line = key
        if role is not None:
            line = role[0]
        out = f"{rel}:{line} `{self.text(rel, line)}`"
        if role is not None:
            out += f" ({role[1]})"
        if changed:
            out += f" {self.pristine.mark(STACK)}"
        return out

    def ordered(self, lines: Iterable[str]) -> tuple[str, ...]:
        """Static role lines (``file:line `text` (role)``), those of changed statements first and marked."""
        changed, rest = [], []
        for line in lines:
            where = line.split(" ", 1)[0]
            rel, _, number = where.rpartition(":")
            stmt = self.statement(rel, int(number)) if number.isdigit() else None
            if stmt is not None and self.changed(rel, stmt):
                changed.append(f"{line} {self.pristine.mark(STACK)}")
            else:
                rest.append(line)
        return tuple(changed + rest)
