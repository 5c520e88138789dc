"""impl/model.py: causal per-request attention from request ids and positions; config validation."""

from __future__ import annotations

import pytest
import torch

from cpgraph.impl.layout import packed_layout
from cpgraph.impl.model import ModelConfig, attention_mask, build_model

CONFIG = ModelConfig(hidden=16, heads=2, layers=2)


def _run(hidden: torch.Tensor, lengths: tuple[int, ...]) -> torch.Tensor:
    model = build_model(CONFIG, seed=0)
    packed = packed_layout(lengths)
    with torch.no_grad():
        out: torch.Tensor = model(hidden[None], packed.request_id, packed.position)[0]
    return out


def test_a_token_sees_only_earlier_tokens_of_its_own_request() -> None:
    lengths = (5, 7)
    hidden = torch.randn(12, CONFIG.hidden, generator=torch.Generator().manual_seed(0))
    base = _run(hidden, lengths)
    later = hidden.clone()
    later[3] += 1.0  # token 3 of request 0
    changed = (_run(later, lengths) - base).abs().amax(-1) > 0
    assert changed.tolist() == [False, False, False, True, True] + [False] * 7


def test_mask_lets_padding_rows_see_only_padding() -> None:
    request_id = torch.tensor([[0, 0, -1], [1, -1, -1]])
    position = torch.tensor([[0, 1, 0], [0, 0, 0]])
    mask = attention_mask(request_id, position, request_id.reshape(-1), position.reshape(-1))
    assert mask.shape == (2, 1, 3, 6)
    assert mask[0, 0, 1].tolist() == [True, True, False, False, False, False]
    assert mask[0, 0, 2].tolist() == [False, False, True, False, True, True]  # padding: itself and padding only
    assert mask[1, 0, 0].tolist() == [False, False, False, True, False, False]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(hidden=30, heads=4), ValueError, "hidden=30 must be a multiple of heads=4"),
        (dict(hidden=0), ValueError, "hidden must be an int >= 1, got 0"),
        (dict(layers=0), ValueError, "layers must be an int >= 1, got 0"),
        (dict(heads=1.5), TypeError, "heads must be an int >= 1"),
    ],
)
def test_model_config_rejects_bad_values(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        ModelConfig(**kwargs)  # type: ignore[arg-type]
