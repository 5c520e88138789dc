"""Wrong EP syncs and graph lists substituted into the EP theorems (proofs/theorems/ep_graphs.py), each with the
verdict it must get: Megatron-Core 0.16's sync first.

``tokens_only_sync``: the ranks sync the token count alone and keep their own request counts (0.16.0/0.16.1);
under strict matching two ranks then match graphs of different token counts (Megatron-LM PR #3033), refuted,
and the counterexample replays through 0.16.0's own matching (tests/quality/test_megatron_proofs.py).
``tokens_only_sync_loose``: the same under loose matching (0.16's dense models; 0.17 raised the token count
to the smallest non-decode graph there instead), refuted. ``decode_graphs_any_width``: the 0.18 form on decode
graphs of more tokens than D * k (what the generator never builds), refuted. ``prefill_sync_only``: the MAX of
the prefill count dropped from the synced form, refuted. ``witness_under_the_synced_form``: the PR #3033 witness
under the synced form, where the ranks agree, refuted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import z3

from cpgraph.proofs.engine.check import Status
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.theorems import ep_graphs as theorems
from cpgraph.spec.ep_graphs import Dims, sync_all

REFUTED = Status.REFUTED


def _without_prefill(steps: Sequence[Dims]) -> list[Dims]:
    """The synced form with each rank's own prefill count kept."""
    return [Dims(s.tokens, own.prefill, s.decode) for s, own in zip(sync_all(steps), steps)]


def variants() -> tuple[tuple[str, str, str, int, Status, Callable[[int], tuple[Query, ...]]], ...]:
    """(name, theorem, description, parameter, expected verdict, builder) for every EP variant."""
    t = theorems
    consensus = "synced_dimensions_give_consensus"
    return (
        ("tokens_only_sync", consensus, "Megatron-Core 0.16: the token count synced alone, strict matching (PR #3033)", 0,
         REFUTED, functools.partial(t.synced_dimensions_give_consensus, sync="tokens", matchings=("strict",))),
        ("tokens_only_sync_loose", consensus, "the token count synced alone, loose matching", 0, REFUTED,
         functools.partial(t.synced_dimensions_give_consensus, sync="tokens", matchings=("loose",))),
        ("prefill_sync_only", consensus, "the synced form without the prefill count's MAX", 0, REFUTED,
         functools.partial(t.synced_dimensions_give_consensus, sync=_without_prefill, matchings=("strict",))),
        ("witness_under_the_synced_form", "syncing_tokens_alone_breaks_consensus_under_strict_matching",
         "the witness with every dimension synced (0.17): the two ranks agree", 0, REFUTED,
         functools.partial(t.syncing_tokens_alone_breaks_consensus_under_strict_matching, sync="all")),
        ("decode_graphs_any_width", "decode_steps_synced_by_tokens_agree",
         "decode-only graphs of any token count (more than D * k)", 0, REFUTED,
         functools.partial(t.decode_steps_synced_by_tokens_agree,
                           graph_facts_of=lambda graphs, k: z3.And([g.prefill == 0 for g in graphs]))),
    )

