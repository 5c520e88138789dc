"""Off by one at n: the window is taken as (n, F*n], so a bucket of exactly n is never replayed."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import protocol, selector

CAUGHT_AS: Final = "minimal_bucket"

select = selector(skip=lambda bucket, batch: bucket <= batch["num_tokens"])  # <=, not <

admit, replay_bucket = protocol(select)
