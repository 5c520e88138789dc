"""A small transformer whose attention runs rank-locally: each rank's query rows attend to every rank's keys.

The math never knows whether it is captured or on how many devices it runs: the caller passes ``all_gather``,
which maps the G locally held ranks' rows [G, C, ...] to every rank's rows [P*C, ...] (a reshape when all
ranks live on one device, a collective across processes). The causal, per-request mask is derived from the
per-row request id and position, so one captured graph serves every layout that fits its rows. Padding rows
(request id -1) are invisible to real rows: a real query only sees keys of its own request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from cpgraph.impl.checks import check_int

AllGather = Callable[[Tensor], Tensor]  # [G, C, *rest] -> [P*C, *rest]


def one_device_all_gather(x: Tensor) -> Tensor:
    """All ranks on one device: the all-gather is a reshape of [P, C, ...] to [P*C, ...]."""
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


@dataclass(frozen=True)
class ModelConfig:
    hidden: int = 32
    heads: int = 4
    layers: int = 1
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        check_int("hidden", self.hidden, minimum=1)
        check_int("heads", self.heads, minimum=1)
        check_int("layers", self.layers, minimum=1)
        check_int("mlp_ratio", self.mlp_ratio, minimum=1)
        if self.hidden % self.heads:
            raise ValueError(f"hidden={self.hidden} must be a multiple of heads={self.heads}")


def attention_mask(request_id: Tensor, position: Tensor, all_request_id: Tensor, all_position: Tensor) -> Tensor:
    """[G, 1, C, P*C] bool, True where query row may attend key row: same request and key not later.

    Padding queries (id -1) see only padding keys, at least themselves, so their softmax stays finite.
    """
    same = request_id[:, :, None] == all_request_id[None, None, :]
    causal = position[:, :, None] >= all_position[None, None, :]
    return (same & causal)[:, None]


class Block(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        h = config.hidden
        self.heads = config.heads
        self.norm1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.norm2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, config.mlp_ratio * h)
        self.fc2 = nn.Linear(config.mlp_ratio * h, h)

    def forward(self, x: Tensor, mask: Tensor, all_gather: AllGather) -> Tensor:
        g, c, h = x.shape  # G local ranks, C rows each
        nh, d = self.heads, h // self.heads
        q, k, v = self.qkv(self.norm1(x)).view(g, c, 3, nh, d).unbind(2)  # each [G, C, nh, d]
        k_all = all_gather(k.contiguous()).transpose(0, 1)  # [nh, P*C, d]
        v_all = all_gather(v.contiguous()).transpose(0, 1)
        pc = k_all.shape[1]
        y = F.scaled_dot_product_attention(
            q.transpose(1, 2),  # [G, nh, C, d]
            k_all[None].expand(g, nh, pc, d),
            v_all[None].expand(g, nh, pc, d),
            attn_mask=mask,
        )
        x = x + self.proj(y.transpose(1, 2).reshape(g, c, h))
        out: Tensor = x + self.fc2(F.gelu(self.fc1(self.norm2(x))))
        return out


class CPTransformer(nn.Module):
    """``layers`` blocks over per-rank rows: hidden [G, C, H], request_id and position [G, C] -> [G, C, H]."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))

    def forward(
        self,
        hidden: Tensor,
        request_id: Tensor,
        position: Tensor,
        all_gather: AllGather = one_device_all_gather,
    ) -> Tensor:
        mask = attention_mask(request_id, position, all_gather(request_id), all_gather(position))
        x = hidden
        for block in self.blocks:
            x = block(x, mask, all_gather)
        assert isinstance(x, Tensor)
        return x


def build_model(config: ModelConfig, seed: int, device: torch.device | str = "cpu") -> CPTransformer:
    """The same weights in every process: seeded construction, eval mode."""
    torch.manual_seed(check_int("seed", seed, minimum=0))
    return CPTransformer(config).to(device).eval()


def batch_hidden(lengths: tuple[int, ...] | list[int], hidden: int, seed: int, index: int) -> Tensor:
    """Deterministic packed inputs [sum(lengths), hidden] for batch ``index`` (identical in every process)."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + index)
    return torch.randn(sum(lengths), hidden, generator=gen)
