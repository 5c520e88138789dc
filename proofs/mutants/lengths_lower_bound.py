"""Takes the window's lower end from the lengths (sum(extend_seq_lens)) instead of n: when n is padded
(upstream's n is len(input_ids), padded for DP/CP), a bucket in [sum, n) is replayed, smaller than the
padded batch."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import protocol, selector

CAUGHT_AS: Final = "padding_limit"

# the bug: the live count, not the padded n the graph must hold
select = selector(skip=lambda bucket, batch: bucket < sum(batch["extend_seq_lens"]))

admit, replay_bucket = protocol(select)
