"""Minimal counterexamples, checked by the teeth pass: a refuted query's counterexample is shrunk on the
query's ``size`` (proofs/engine/counterexample.py ``minimise``: fewest requests first, then fewest tokens, then the
least padding), and for a few wrong variants the minimal one is known. Pinned here, it is checked like a
variant's verdict: a size measure that no longer orders counterexamples that way (requests weighted down,
padding dropped) proves every theorem still, but prints counterexamples that are not minimal.

Each entry: the variant (by name and theorem), the shown terms of its minimal counterexample at the
variant's own parameter, and how its replay through the reference begins (a counterexample replayed as the
wrong kind of batch, or not at all, prints no regression test: the chain's replay builder is checked too).
"""

from __future__ import annotations

from dataclasses import dataclass

from cpgraph.proofs.engine.results import Bite
from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.run import run_queries
from cpgraph.proofs.teeth.variants.catalogue import VARIANTS


@dataclass(frozen=True)
class Pinned:
    """The minimal counterexample of variant ``name`` of ``theorem``: its shown terms (as printed)."""

    name: str
    theorem: str
    shown: tuple[tuple[str, str], ...]
    replay: str = ""  # the start of its replay's text ("" for a theorem whose queries carry no replay)


PINNED = (
    # vLLM 0.26-0.28 at P = 4: one prefill of 2 tokens (DualChunkSwap loads (1, 1, 0, 0)): admitted under the
    # least size >= 2, replayed under 1 (a requests batch: padding counted after requests and tokens, so n = 2
    # with its 2 tokens, not one token padded to 2).
    Pinned("vllm_0_28_split", "local_admitted_batches_replay_the_admitted_size",
           (("n", "2"), ("tokens", "2"), ("requests", "1"), ("admitted", "2"), ("replayed", "1")),
           "reference at P=4 (dual_chunk_swap, local keying): lengths (2,), n=2"),
    # sglang 0.5.17's admission at P = 4: one request of 8 tokens, admitted to bucket 8 whose 8 rows are
    # one request's zigzag rows aligned to A = 8 (a class batch: requests, then tokens).
    Pinned("prefix_admission", "admitted_batches_fit_every_rank", (("n", "8"), ("requests", "1")),
           "reference plan for (8,) (n=8) at P=4 (zigzag, F=2)"),
    # The scan relation reporting one above its bucket, on a 3-bucket list: the least list shows a decision
    # that admitted (shown as 1) bucket 2, one above the listed 1.
    Pinned("off_list_bucket", "scan_selects_a_captured_bucket", (("admitted", "1"), ("bucket", "2"))),
)


def minimal_bite(pinned: Pinned) -> Bite:
    """The variant refuted and shrunk: a passing bite when its minimal counterexample shows ``pinned.shown``."""
    variant = next((v for v in VARIANTS if v.name == pinned.name and v.theorem == pinned.theorem), None)
    what = f"minimal counterexample of {pinned.name}"
    if variant is None:
        return Bite(pinned.theorem, what, "no such variant in proofs/teeth/variants/catalogue.py", 0, Status.PROVED, Status.REFUTED)
    result = run_queries(variant.theorem, variant.parameter, variant.build(variant.parameter), "variant", shrink=True)
    if result.failure is None or result.failure.verdict.status is not Status.REFUTED:
        return Bite(pinned.theorem, what, "the variant is no longer refuted", variant.parameter, Status.PROVED, Status.REFUTED)
    shown = dict(result.failure.shown)
    got = ", ".join(f"{k}={shown.get(k)}" for k, _ in pinned.shown)
    want = ", ".join(f"{k}={v}" for k, v in pinned.shown)
    replayed = result.failure.replay.startswith(pinned.replay)
    detail = f"shrunk to {got}" + ("" if got == want else f", not the minimal {want}")
    if not replayed:
        first = result.failure.replay.splitlines()[0] if result.failure.replay else "no replay"
        detail += f"; replayed as {first!r}, not {pinned.replay!r}..."
    return Bite(pinned.theorem, what, detail, variant.parameter, Status.PROVED,
                Status.PROVED if got == want and replayed else Status.REFUTED)
