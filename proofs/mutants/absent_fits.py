"""Takes a bucket with no recorded capacity as a fit (``get(b) is None or ...``)."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants._kit import protocol, selector

CAUGHT_AS: Final = "captured_bucket"

select = selector(fit=lambda rows, required: rows is None or rows >= required)  # the bug: `rows is None or`

admit, replay_bucket = protocol(select)
