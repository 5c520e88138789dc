"""A planted bug in the decode dispatcher of dispatcher.py: each DP rank keys its graph by its own step and skips
the all-reduce across DP ranks. At DP size 1 it is the correct dispatcher; at DP size 2 two DP ranks holding
different decodes dispatch different graphs, and the collective that spans them needs one shape.

``cpgraph check examples/decode_dispatcher/wrong_dispatcher.py:policy`` exits 1 with ``rank_consensus`` on the
DP 2 paths, minimised to one decode on one DP rank and two on the other."""

from __future__ import annotations

from collections.abc import Sequence

from dispatcher import DecodeDispatcher

from cpgraph import GraphStep


class OwnStepDispatcher(DecodeDispatcher):
    version = "decode_dispatcher example, keyed by its own DP rank's step"

    def key_of(self, steps: Sequence[GraphStep], dp_rank: int) -> tuple[int, int, int | None]:
        return self.key(steps[dp_rank : dp_rank + 1])  # the bug: no agreement across DP ranks


policy = OwnStepDispatcher()
