"""Takes the window's upper end (F*n) from the lengths instead of n: with a padded n the cap is F*sum,
so a bucket in (F*sum, F*n] that fits is never tried and the batch runs eagerly needlessly."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import protocol, selector

CAUGHT_AS: Final = "no_needless_fallback"

# the bug: F * the live count, not F * n
select = selector(stop=lambda bucket, batch: bucket > batch["max_padding_factor"] * sum(batch["extend_seq_lens"]))

admit, replay_bucket = protocol(select)
