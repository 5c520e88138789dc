"""Stand-ins for the sglang runtime objects the selector reads, made from the protocol's keywords: the CP
configuration, the buffer registry where ``load_batch`` stops, an extend forward mode and the ForwardBatch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any


class Parallel(SimpleNamespace):
    """``get_parallel()`` / ``get_server_args()``: the batch's CP configuration."""


@dataclass
class Recorded(Exception):
    """Raised by the stand-in buffer registry: ``load_batch`` reached its static buffers with this bucket."""

    bucket: object


class BufferRegistry:
    """load_batch's buffer registry: the first write names the padded bucket, and the replay stops there."""

    def fill_from(self, *args: object, padded_num_tokens: object = None, **kwargs: object) -> None:
        raise Recorded(padded_num_tokens)


class ExtendMode:
    """An EXTEND forward mode (the prefill CP graphs serve extend batches)."""

    def is_context_parallel_extend(self, *args: object, **kwargs: object) -> bool:
        return True

    def is_extend(self, *args: object, **kwargs: object) -> bool:
        return True

    def is_target_verify(self) -> bool:
        return False

    def is_split_prefill(self) -> bool:
        return False


class ForwardBatch:
    """The ForwardBatch fields the selector reads, made from the protocol's keywords: ``input_ids`` of
    length num_tokens (possibly padded), ``extend_seq_lens_cpu`` the live lengths, no prefix, no
    multimodal input, no DP; any other field is None."""

    def __init__(self, lengths: Sequence[int], num_tokens: int) -> None:
        self.input_ids = range(num_tokens)
        self.extend_seq_lens_cpu = list(lengths)
        self.seq_lens_cpu = list(lengths)
        self.extend_prefix_lens_cpu = [0] * len(lengths)
        self.extend_num_tokens = sum(lengths)
        self.batch_size = len(lengths)
        self.forward_mode = ExtendMode()
        self.return_logprob = False
        self.attn_cp_metadata = None

    def contains_mm_inputs(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return None
