"""Vectorised layouts in torch: where every packed token goes (rank, row), and the per-row request id and position.

No Python loop over tokens: every index is a closed form of (request, offset-in-request) evaluated on int64
tensors, by impl's own index builder for the strategy (``BUILDERS``, keyed by the strategy ids; an unknown id is a
ValueError). Row order matches ``cpgraph.reference.build_layout``: on a rank, request by request; for zigzag and
zigzag_pad, block r before block 2P-1-r. Padding rows (alignment padding past a rank's rows, and zigzag_pad's
in-layout padding of each request up to a multiple of 2P) carry request id -1 and position 0.
This module only builds indices; it does not own buffers (impl/runner.py does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import torch
from torch import Tensor

from cpgraph.impl.checks import STRATEGY_IDS, check_cp_size, check_int, check_strategy
from cpgraph.impl.lengths import accept_lengths, lengths_tuple


@dataclass(frozen=True, eq=False)
class TorchLayout:
    """A batch of ``extend_seq_lens`` on ``cp_size`` ranks of ``rows`` physical rows each."""

    extend_seq_lens: tuple[int, ...]
    cp_size: int
    rows: int
    strategy: str
    loads: tuple[int, ...]  # rows each rank occupies: its tokens, plus zigzag_pad's in-layout padding
    dest: Tensor  # [n] int64: flat row rank*rows + row of each packed token, in packed order
    request_id: Tensor  # [P, rows] int64: request of each row, -1 for padding
    position: Tensor  # [P, rows] int64: offset of each row's token inside its request, 0 for padding

    @property
    def num_tokens(self) -> int:
        return sum(self.extend_seq_lens)


# An index builder: (lengths [R], request of each packed token [n], offset inside its request [n], P) ->
# (rank of each token [n], row on that rank [n], rows each rank occupies [P], in-layout padding included).
Builder = Callable[[Tensor, Tensor, Tensor, int], tuple[Tensor, Tensor, Tensor]]


def _placed(per_req: Tensor, req: Tensor, rank: Tensor, row_in_request: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Rows before request i on each rank, from [R, P] rows per request: the token's row is that plus its own."""
    offsets = torch.cumsum(per_req, 0) - per_req
    return rank, offsets[req, rank] + row_in_request, per_req.sum(0)


def _zigzag(lens: Tensor, req: Tensor, k: Tensor, p: int) -> tuple[Tensor, Tensor, Tensor]:
    s = 2 * p
    r = torch.arange(p, device=lens.device)
    q_r, m_r = lens[:, None] // s, lens[:, None] % s
    per_req = 2 * q_r + (r < m_r).long() + ((s - 1 - r) < m_r).long()  # [R, P]
    L = lens[req]
    q, m = L // s, L % s
    big = q + 1
    boundary = m * big  # the first m blocks have q+1 tokens, the rest q
    j = torch.where(k < boundary, k // big, m + (k - boundary) // q.clamp(min=1))
    block_start = j * q + torch.minimum(j, m)
    late = j >= p
    rank = torch.where(late, s - 1 - j, j)
    early_size = q + (rank < m).long()  # block r precedes block 2P-1-r on rank r
    return _placed(per_req, req, rank, (k - block_start) + torch.where(late, early_size, torch.zeros_like(q)))


def _zigzag_pad(lens: Tensor, req: Tensor, k: Tensor, p: int) -> tuple[Tensor, Tensor, Tensor]:
    # Each request padded to 2P*c tokens (c = ceil(L/2P)); block j = [j*c, (j+1)*c); positions >= L are padding
    # rows, left out of ``dest`` (so they stay request -1). Every rank holds 2c rows of every request.
    s = 2 * p
    c_req = (lens + s - 1) // s
    per_req = (2 * c_req)[:, None].expand(-1, p)  # [R, P]
    c = c_req[req]
    j = k // c  # c >= 1 for every request that has a token
    late = j >= p
    rank = torch.where(late, s - 1 - j, j)
    return _placed(per_req, req, rank, (k - j * c) + torch.where(late, c, torch.zeros_like(c)))


def _contiguous(lens: Tensor, req: Tensor, k: Tensor, p: int) -> tuple[Tensor, Tensor, Tensor]:
    r = torch.arange(p, device=lens.device)
    per_req = (lens[:, None] * (r + 1)) // p - (lens[:, None] * r) // p  # [R, P]
    L = lens[req]
    rank = (p * (k + 1) + L - 1) // L - 1
    return _placed(per_req, req, rank, k - (L * rank) // p)


def _interleave(lens: Tensor, req: Tensor, k: Tensor, p: int) -> tuple[Tensor, Tensor, Tensor]:
    t = torch.arange(req.shape[0], device=lens.device)  # request boundaries do not matter
    rank = t % p
    return rank, t // p, torch.bincount(rank, minlength=p)


# impl's index builders, one per strategy id (the same ids as impl/decision.py FORMULAS); no default.
BUILDERS: Mapping[str, Builder] = MappingProxyType(
    {"zigzag": _zigzag, "interleave": _interleave, "contiguous": _contiguous, "zigzag_pad": _zigzag_pad}
)
if tuple(BUILDERS) != STRATEGY_IDS:  # pragma: no cover - an import-time guard for contributors
    raise ImportError(f"impl.layout.BUILDERS {tuple(BUILDERS)} must cover exactly {STRATEGY_IDS}")


def build_torch_layout(
    extend_seq_lens: object,
    *,
    cp_size: object,
    rows: object = None,
    strategy: object = "zigzag",
    device: torch.device | str = "cpu",
) -> TorchLayout:
    """Lay the batch out on P ranks padded to ``rows`` (default: the busiest rank's occupied rows).

    Raises ValueError naming rows needed and rows available when ``rows`` is below the busiest rank's rows:
    a layout is refused, never truncated. An unknown strategy is a ValueError naming the allowed ids.
    """
    lengths = lengths_tuple(accept_lengths(extend_seq_lens))
    p = check_cp_size("cp_size", cp_size)
    kind = check_strategy(strategy)
    dev = torch.device(device)
    lens = torch.tensor(lengths, dtype=torch.long, device=dev)
    n = sum(lengths)
    req = torch.repeat_interleave(torch.arange(len(lengths), device=dev), lens)  # [n] request of each token
    starts = torch.cumsum(lens, 0) - lens
    k = torch.arange(n, device=dev) - starts[req]  # [n] offset inside its request
    rank, row, loads_t = BUILDERS[kind](lens, req, k, p)
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
