"""Admission and replay use different selectors: admission ignores capacity (the pre-fix check), replay
uses the fixed selector and refuses, so an admitted batch crashes at replay."""

from __future__ import annotations

from typing import Final

from cpgraph.proofs.mutants import ignore_capacity
from cpgraph.proofs.mutants._kit import correct_select, protocol

CAUGHT_AS: Final = "admission_replay"

admit = protocol(ignore_capacity.select)[0]
replay_bucket = protocol(correct_select)[1]
