"""The scan stops (``break``) at a bucket below n instead of skipping it, so it falls back needlessly."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import below_n, never, past_fn, protocol, selector

CAUGHT_AS: Final = "no_needless_fallback"

# the bug: a bucket below n ends the scan (``break``) instead of being skipped
select = selector(skip=never, stop=lambda bucket, batch: below_n(bucket, batch) or past_fn(bucket, batch))

admit, replay_bucket = protocol(select)
