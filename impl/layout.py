"""Vectorised layouts in torch: where every packed token goes (rank, row), and the per-row request id and position.

No Python loop over tokens: every index is a closed form of (request, offset-in-request) evaluated on int64
tensors. Row order matches ``cpgraph.reference.build_layout``: on a rank, request by request; for zigzag, block r
before block 2P-1-r. Padding rows carry request id -1 and position 0.
This module only builds indices; it does not own buffers (impl/runner.py does).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from cpgraph.impl.checks import check_int, check_lengths, check_strategy


@dataclass(frozen=True, eq=False)
class TorchLayout:
    """A batch of ``extend_seq_lens`` on ``cp_size`` ranks of ``rows`` physical rows each."""

    extend_seq_lens: tuple[int, ...]
    cp_size: int
    rows: int
    strategy: str
    loads: tuple[int, ...]  # real rows per rank
    dest: Tensor  # [n] int64: flat row rank*rows + row of each packed token, in packed order
    request_id: Tensor  # [P, rows] int64: request of each row, -1 for padding
    position: Tensor  # [P, rows] int64: offset of each row's token inside its request, 0 for padding

    @property
    def num_tokens(self) -> int:
        return sum(self.extend_seq_lens)


def _request_loads(lengths: Tensor, p: int, strategy: str) -> Tensor:
    """[R, P] tokens of each request held by each rank (zigzag and contiguous)."""
    r = torch.arange(p, device=lengths.device)
    L = lengths[:, None]
    if strategy == "zigzag":
        s = 2 * p
        q, m = L // s, L % s
        return 2 * q + (r < m).long() + ((s - 1 - r) < m).long()
    return (L * (r + 1)) // p - (L * r) // p


def build_torch_layout(
    extend_seq_lens: object,
    *,
    cp_size: object,
    rows: object = None,
    strategy: object = "zigzag",
    device: torch.device | str = "cpu",
) -> TorchLayout:
    """Lay the batch out on P ranks padded to ``rows`` (default: the busiest rank's load).

    Raises ValueError naming rows needed and rows available when ``rows`` is below the busiest rank's load:
    a layout is refused, never truncated.
    """
    lengths = check_lengths("extend_seq_lens", extend_seq_lens)
    p = check_int("cp_size", cp_size, minimum=1)
    kind = check_strategy(strategy)
    dev = torch.device(device)
    lens = torch.tensor(lengths, dtype=torch.long, device=dev)
    n = sum(lengths)
    num_req = len(lengths)
    req = torch.repeat_interleave(torch.arange(num_req, device=dev), lens)  # [n] request of each packed token
    starts = torch.cumsum(lens, 0) - lens
    k = torch.arange(n, device=dev) - starts[req]  # [n] offset inside its request

    if kind == "interleave":
        t = torch.arange(n, device=dev)
        rank, row = t % p, t // p
        loads_t = torch.bincount(rank, minlength=p)
    else:
        per_req = _request_loads(lens, p, kind)  # [R, P]
        offsets = torch.cumsum(per_req, 0) - per_req  # rows before request i on each rank
        loads_t = per_req.sum(0)
        L = lens[req]
        if kind == "zigzag":
            s = 2 * p
            q, m = L // s, L % s
            big = q + 1
            boundary = m * big  # the first m blocks have q+1 tokens, the rest q
            j = torch.where(k < boundary, k // big, m + (k - boundary) // q.clamp(min=1))
            block_start = j * q + torch.minimum(j, m)
            late = j >= p
            rank = torch.where(late, s - 1 - j, j)
            early_size = q + (rank < m).long()  # block r precedes block 2P-1-r on rank r
            row = offsets[req, rank] + (k - block_start) + torch.where(late, early_size, torch.zeros_like(q))
        else:
            rank = (p * (k + 1) + L - 1) // L - 1
            row = offsets[req, rank] + k - (L * rank) // p
    loads = tuple(int(x) for x in loads_t.tolist())
    busiest = max(loads)
    physical = busiest if rows is None else check_int("rows", rows, minimum=0)
    if physical < busiest:
        raise ValueError(
            f"layout needs {busiest} rows on rank {loads.index(busiest)} (loads {loads}) but {physical} rows are "
            f"available; extend_seq_lens={lengths} cp_size={p} strategy={kind}: refused, never truncated"
        )
    dest = rank * physical + row
    request_id = torch.full((p * physical,), -1, dtype=torch.long, device=dev)
    position = torch.zeros(p * physical, dtype=torch.long, device=dev)
    request_id[dest] = req
    position[dest] = k
    return TorchLayout(
        extend_seq_lens=lengths,
        cp_size=p,
        rows=physical,
        strategy=kind,
        loads=loads,
        dest=dest,
        request_id=request_id.view(p, physical),
        position=position.view(p, physical),
    )


def packed_layout(extend_seq_lens: tuple[int, ...], *, device: torch.device | str = "cpu") -> TorchLayout:
    """The batch without context parallelism: one rank, rows in packed order (the eager control's layout)."""
    return build_torch_layout(extend_seq_lens, cp_size=1, strategy="contiguous", device=device)


def shard(hidden: Tensor, layout: TorchLayout, out: Tensor | None = None) -> Tensor:
    """Packed [n, H] -> per-rank rows [P, rows, H], padding rows zero. Writes into ``out`` in place if given."""
    n, h = hidden.shape
    if n != layout.num_tokens:
        raise ValueError(f"hidden has {n} rows but the layout holds {layout.num_tokens} tokens")
    if out is None:
        out = hidden.new_zeros(layout.cp_size, layout.rows, h)
    else:
        out.zero_()
    out.view(-1, h).index_copy_(0, layout.dest, hidden)
    return out


def gather(per_rank: Tensor, layout: TorchLayout) -> Tensor:
    """Per-rank rows [P, rows, H] -> packed [n, H] in the original token order (a new tensor)."""
    return per_rank.reshape(layout.cp_size * layout.rows, per_rank.shape[-1]).index_select(0, layout.dest)
