"""Helpers shared by test files (importable as ``helpers``: tests/ is on sys.path through tests/conftest.py)."""

from __future__ import annotations

from typing import Any


def seed_batch(**overrides: object) -> dict[str, Any]:
    """docs/semantics.md's worked example as the protocol's keyword arguments (rank 0 of 4; the busiest rank
    needs 520 rows, so 2304 is replayed), with ``overrides`` replacing any of them."""
    batch: dict[str, Any] = dict(
        cp_rank=0, cp_size=4, align_size=8, num_tokens=2048, extend_seq_lens=(1534, 161, 353),
        capture_num_tokens=(2048, 2304, 2560), bucket_local_tokens={2048: 512, 2304: 576, 2560: 640},
        max_padding_factor=2,
    )
    batch.update(overrides)
    return batch


def run_printed_regression(replay: str, name: str) -> None:
    """Runs the regression test a failure prints (its text from ``from cpgraph.reference`` on, defining the
    test function ``name``): it must be valid Python and pass on the (correct) reference."""
    snippet = replay[replay.index("from cpgraph.reference"):]
    namespace: dict[str, object] = {}
    exec(snippet, namespace)  # noqa: S102 - our own generated test text
    test = namespace[name]
    assert callable(test)
    test()


class PickedPolicy:
    """admit/replay_bucket over one ``_pick`` (a subclass writes it); replay raises LookupError when the
    pick is None (the batch runs eagerly)."""

    def _pick(self, **b: Any) -> int | None:
        raise NotImplementedError

    def admit(self, **b: Any) -> bool:
        return self._pick(**b) is not None

    def replay_bucket(self, **b: Any) -> int:
        bucket = self._pick(**b)
        if bucket is None:
            raise LookupError("eager")
        return bucket
