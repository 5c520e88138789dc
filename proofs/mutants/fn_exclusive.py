"""Off by one at F*n: the window is taken as [n, F*n) so a batch whose only fit is F*n runs eagerly."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import protocol, selector

CAUGHT_AS: Final = "no_needless_fallback"

select = selector(stop=lambda bucket, batch: bucket >= batch["max_padding_factor"] * batch["num_tokens"])  # >=, not >

admit, replay_bucket = protocol(select)
