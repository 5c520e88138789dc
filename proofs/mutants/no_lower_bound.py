"""Forgets the lower end of the padding window: a bucket below n (a graph too small for the batch) is taken."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import never, protocol, selector

CAUGHT_AS: Final = "padding_limit"

select = selector(skip=never)  # the bug: no bucket is skipped for being below n

admit, replay_bucket = protocol(select)
