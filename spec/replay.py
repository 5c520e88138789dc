"""Replay: pad the batch to a bucket and lay it out in that bucket's static buffers (upstream's load_batch,
vLLM's _build_batch_layout).

Replay is its own function, built with its own variables: it lays out the batch it is given (the live
lengths, never the padded count), calls the selector for that layout under the rank's keying, and succeeds
only when every rank's rows of its layout fit the chosen bucket's capacity (the runner's tripwire: the
recorded capacity under ``global``, the size itself under ``local``, where vLLM raises ValueError for a
size below a rank's rows). It shares no term with admission (spec/admission.py); proofs/theorems/end_to_end.py and
proofs/theorems/end_to_end_local.py prove the two agree.

    replay = (bucket, ok) where bucket = the keyed scan over the loads l' of replay_layout(batch),
             ok = every l'_r <= capacity(bucket)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cpgraph.spec.logic import And
from cpgraph.spec.admission import Decision, RankSetup, gate, rank_decision
from cpgraph.spec.batch import LiveBatch
from cpgraph.spec.keying import keying
from cpgraph.spec.selection import CaptureList, Selection
from cpgraph.spec.terms import BoolTerm, IntLike, IntTerm, Loads, all_of, any_of

ReplayLayout = Callable[[LiveBatch, IntLike, str], LiveBatch]
# The selector call replay makes: (loads, rank, setup, num_tokens, name) -> its Decision.
Decide = Callable[[Loads, IntLike, RankSetup, IntLike, str], Decision]


def live_layout(batch: LiveBatch, num_tokens: IntLike, name: str) -> LiveBatch:
    """The batch replay lays out: the live lengths themselves (padding to the bucket adds rows past every
    rank's load, it is never folded into a request)."""
    del num_tokens, name
    return batch


@dataclass(frozen=True)
class Replay:
    """Replay of one batch on one rank: the bucket it pads to, whether it ran (``succeeded``: a bucket was
    chosen and its layout fits), the rows its layout occupies on every rank, and the defining facts."""

    selection: Selection
    succeeded: BoolTerm
    layout_loads: tuple[IntTerm, ...]
    required: IntTerm  # the rows replay's own layout needs (what its selector call was given)
    holds: BoolTerm
    key: IntTerm  # the key its selector call compared (global: n; local: the busiest rank's rows of its layout)


def capacity_of(capture: CaptureList, bucket: IntTerm, rows: IntLike) -> BoolTerm:
    """``bucket`` is listed with a recorded capacity >= ``rows``."""
    return any_of(
        And(bucket == b, rec, c >= rows) for b, c, rec in zip(capture.buckets, capture.capacities, capture.recorded)
    )


def tripwire(capture: CaptureList, bucket: IntTerm, loads: tuple[IntTerm, ...]) -> BoolTerm:
    """The runner's check before it replays: every rank's rows fit ``bucket``'s capacity in ``capture`` (pass
    the keyed capacity table: spec.keying's ``capacities``)."""
    return all_of(capacity_of(capture, bucket, load) for load in loads)


def replay(
    batch: LiveBatch,
    num_tokens: IntLike,
    setup: RankSetup,
    rank: IntLike,
    name: str,
    *,
    layout: ReplayLayout = live_layout,
    decide: Decide = rank_decision,
) -> Replay:
    """Rank ``rank``'s replay of ``batch`` with ``num_tokens`` tokens (variables under ``name``). ``decide``
    is the selector call (the spec's keyed scan; proofs/theorems/end_to_end.py passes an arbitrary decision to show
    the tripwire alone keeps replay within a listed bucket's room, whatever the selector chose). The spec's
    ``decide`` makes a literal ``rank`` outside 0..P-1 a ValueError."""
    laid_out = layout(batch, num_tokens, f"{name}.layout")
    loads: Loads = laid_out.layout_loads(setup.strategy, f"{name}.layout")
    chosen = decide(loads, rank, setup, num_tokens, name)
    selection = chosen.gated(gate(batch, num_tokens, setup))
    fits = tripwire(keying(setup.keying).capacities(setup.capture), selection.bucket, loads.loads)
    return Replay(  # the decision's facts hold the loads' own
        selection, And(selection.admitted, fits), loads.loads, chosen.required, And(laid_out.holds, chosen.holds), chosen.key
    )
