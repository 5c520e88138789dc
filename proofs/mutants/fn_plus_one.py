"""Off by one the other way: the window is taken as [n, F*n + 1], so a bucket one past F*n is replayed."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import protocol, selector

CAUGHT_AS: Final = "padding_limit"

select = selector(stop=lambda bucket, batch: bucket > batch["max_padding_factor"] * batch["num_tokens"] + 1)  # + 1

admit, replay_bucket = protocol(select)
