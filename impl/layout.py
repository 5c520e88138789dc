"""Vectorised layouts in torch: where every packed token goes (rank, row), and the per-row request id and position.

No Python loop over tokens: every index is a closed form of (request, offset-in-request) evaluated on int64
tensors, by impl's own index builder for the strategy (``BUILDERS``, keyed by the strategy ids; an unknown id is a
ValueError). Row order matches ``cpgraph.reference.build_layout``: on a rank, request by request; for zigzag and
dual_chunk_swap, block (chunk) r before block 2P-1-r. Padding rows past a rank's rows carry request id -1 and
position 0.

Decodes (``is_prefilling`` False, for the dual_chunk_swap rows only) and dual_chunk_swap_dcp's short prefills are
copied whole: to every rank (replicated, dcp) or to rank k mod P for the k-th non-empty copied request (dealt
round-robin). A token copied to several ranks has one row per copy; its output is read from its first copy
(``dest``), the others are ``copy_token`` / ``copy_dest``. Attention sees each key of a replicated request once per
rank, every one of them equally often, which leaves the softmax unchanged.
This module only builds indices; it does not own buffers (impl/runner.py does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import torch
from torch import Tensor

from cpgraph.impl.checks import STRATEGY_IDS, check_cp_size, check_int, check_strategy
from cpgraph.impl.formulas import DECODE_STRATEGIES
from cpgraph.impl.lengths import accept_is_prefilling, accept_lengths, lengths_tuple


@dataclass(frozen=True, eq=False)
class TorchLayout:
    """A batch of ``extend_seq_lens`` on ``cp_size`` ranks of ``rows`` physical rows each."""

    extend_seq_lens: tuple[int, ...]
    cp_size: int
    rows: int
    strategy: str
    loads: tuple[int, ...]  # rows each rank occupies: its tokens, a copied request's on every rank it is copied to
    dest: Tensor  # [n] int64: flat row rank*rows + row of each packed token (its first copy), in packed order
    request_id: Tensor  # [P, rows] int64: request of each row, -1 for padding
    position: Tensor  # [P, rows] int64: offset of each row's token inside its request, 0 for padding
    copy_token: Tensor  # [m] int64: packed index of the token of every further copy (empty: nothing copied twice)
    copy_dest: Tensor  # [m] int64: flat row of that copy
    is_prefilling: tuple[bool, ...] | None = None  # as accepted: None when every request is a prefill

    @property
    def num_tokens(self) -> int:
        return sum(self.extend_seq_lens)

    @property
    def copies(self) -> int:
        """Rows that hold a further copy of a token (replicated requests on ranks past their first)."""
        return int(self.copy_token.shape[0])


# An index builder: (lengths [R], request of each packed token [n], offset inside its request [n], P, decode [R] bool
# or None) -> (rank of each token's first copy [n], its row on that rank [n], rows each rank occupies [P], packed
# index of every further copy [m], its rank [m], its row [m]).
Placed = tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]
Builder = Callable[[Tensor, Tensor, Tensor, int, "Tensor | None"], Placed]


def _no_copies(lens: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    empty = torch.zeros(0, dtype=torch.long, device=lens.device)
    return empty, empty, empty


def _placed(per_req: Tensor, req: Tensor, rank: Tensor, row_in_request: Tensor) -> Placed:
    """Rows before request i on each rank, from [R, P] rows per request: the token's row is that plus its own."""
    offsets = torch.cumsum(per_req, 0) - per_req
    return (rank, offsets[req, rank] + row_in_request, per_req.sum(0), *_no_copies(per_req))


def _zigzag(lens: Tensor, req: Tensor, k: Tensor, p: int, decode: Tensor | None) -> Placed:
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


def _dual_chunk_swap(deal: str) -> Builder:
    """vLLM's DualChunkSwap with copied requests placed as ``deal`` says ('round_robin', 'replicated', 'dcp')."""

    def build(lens: Tensor, req: Tensor, k: Tensor, p: int, decode: Tensor | None) -> Placed:
        s = 2 * p
        dev = lens.device
        c = (lens + s - 1) // s  # [R] chunk size ceil(L/2P)
        r = torch.arange(p, device=dev)
        early = (lens[:, None] - r * c[:, None]).clamp(min=0).minimum(c[:, None])  # [R, P] chunk r
        late = (lens[:, None] - (s - 1 - r) * c[:, None]).clamp(min=0).minimum(c[:, None])  # chunk 2P-1-r
        split = early + late
        copied = torch.zeros_like(lens, dtype=torch.bool) if decode is None else decode.clone()
        if deal == "dcp":
            copied |= (s - 1) * c >= lens  # too short to fill 2P chunks
        copied &= lens > 0
        if not bool(copied.any()):
            return _split_tokens(split, early, c, req, k, p)
        if deal == "round_robin":
            owner = (torch.cumsum(copied.long(), 0) - 1) % p  # the k-th copied request on rank k mod P
            whole = lens[:, None] * (r[None, :] == owner[:, None]).long()
        else:
            owner = torch.zeros_like(lens)  # replicated: its first copy on rank 0
            whole = lens[:, None].expand(-1, p)
        per_req = torch.where(copied[:, None], whole, split)  # [R, P]
        offsets = torch.cumsum(per_req, 0) - per_req
        rank, within = _chunk_of(early, c, req, k, p)
        tok_copied = copied[req]
        rank = torch.where(tok_copied, owner[req], rank)
        within = torch.where(tok_copied, k, within)
        row = offsets[req, rank] + within
        if deal == "round_robin" or p == 1:
            return (rank, row, per_req.sum(0), *_no_copies(lens))
        token = torch.nonzero(tok_copied).flatten()  # every copied token again on ranks 1..P-1
        copy_token = token.repeat(p - 1)
        copy_rank = torch.arange(1, p, device=dev).repeat_interleave(token.shape[0])
        copy_row = offsets[req[copy_token], copy_rank] + k[copy_token]
        return rank, row, per_req.sum(0), copy_token, copy_rank, copy_row

    return build


def _chunk_of(early: Tensor, c: Tensor, req: Tensor, k: Tensor, p: int) -> tuple[Tensor, Tensor]:
    """Each token's rank and row within its request's rows there: chunk j = k // c, rank j or 2P-1-j, the late
    chunk after the rank's early chunk."""
    ci = c[req].clamp(min=1)
    j = k // ci
    late = j >= p
    rank = torch.where(late, 2 * p - 1 - j, j)
    return rank, k - j * ci + torch.where(late, early[req, rank], torch.zeros_like(k))


def _split_tokens(split: Tensor, early: Tensor, c: Tensor, req: Tensor, k: Tensor, p: int) -> Placed:
    rank, within = _chunk_of(early, c, req, k, p)
    return _placed(split, req, rank, within)


def _contiguous(lens: Tensor, req: Tensor, k: Tensor, p: int, decode: Tensor | None) -> Placed:
    r = torch.arange(p, device=lens.device)
    per_req = (lens[:, None] * (r + 1)) // p - (lens[:, None] * r) // p  # [R, P]
    L = lens[req]
    rank = (p * (k + 1) + L - 1) // L - 1
    return _placed(per_req, req, rank, k - (L * rank) // p)


def _interleave(lens: Tensor, req: Tensor, k: Tensor, p: int, decode: Tensor | None) -> Placed:
    t = torch.arange(req.shape[0], device=lens.device)  # request boundaries do not matter
    rank = t % p
    return (rank, t // p, torch.bincount(rank, minlength=p), *_no_copies(lens))


# impl's index builders, one per strategy id (the same ids as impl/formulas.py FORMULAS); no default.
BUILDERS: Mapping[str, Builder] = MappingProxyType(
    {
        "zigzag": _zigzag,
        "interleave": _interleave,
        "contiguous": _contiguous,
        "dual_chunk_swap": _dual_chunk_swap("round_robin"),
        "dual_chunk_swap_replicated": _dual_chunk_swap("replicated"),
        "dual_chunk_swap_dcp": _dual_chunk_swap("dcp"),
    }
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
    is_prefilling: object = None,
) -> TorchLayout:
    """Lay the batch out on P ranks padded to ``rows`` (default: the busiest rank's occupied rows).

    Raises ValueError naming rows needed and rows available when ``rows`` is below the busiest rank's rows:
    a layout is refused, never truncated. An unknown strategy is a ValueError naming the allowed ids.
    ``is_prefilling`` (one bool per request, None: all prefills) marks decodes, which only the dual_chunk_swap
    rows place (a decode under another strategy is a ValueError naming them).
    """
    lengths = lengths_tuple(accept_lengths(extend_seq_lens))
    p = check_cp_size("cp_size", cp_size)
    kind = check_strategy(strategy)
    prefilling = accept_is_prefilling(is_prefilling, len(lengths))
    if prefilling is not None and kind not in DECODE_STRATEGIES:
        raise ValueError(
            f"is_prefilling[{prefilling.index(False)}] is False but strategy {kind!r} lays out prefills only; "
            f"a batch with decodes needs one of {', '.join(DECODE_STRATEGIES)}"
        )
    dev = torch.device(device)
    lens = torch.tensor(lengths, dtype=torch.long, device=dev)
    n = sum(lengths)
    req = torch.repeat_interleave(torch.arange(len(lengths), device=dev), lens)  # [n] request of each token
    starts = torch.cumsum(lens, 0) - lens
    k = torch.arange(n, device=dev) - starts[req]  # [n] offset inside its request
    decode = None if prefilling is None else ~torch.tensor(prefilling, dtype=torch.bool, device=dev)
    rank, row, loads_t, copy_token, copy_rank, copy_row = BUILDERS[kind](lens, req, k, p, decode)
    loads = tuple(int(x) for x in loads_t.tolist())
    busiest = max(loads)
    physical = busiest if rows is None else check_int("rows", rows, minimum=0)
    if physical < busiest:
        raise ValueError(
            f"layout needs {busiest} rows on rank {loads.index(busiest)} (loads {loads}) but {physical} rows are "
            f"available; extend_seq_lens={lengths} cp_size={p} strategy={kind}: refused, never truncated"
        )
    dest = rank * physical + row
    copy_dest = copy_rank * physical + copy_row
    request_id = torch.full((p * physical,), -1, dtype=torch.long, device=dev)
    position = torch.zeros(p * physical, dtype=torch.long, device=dev)
    request_id[dest] = req
    position[dest] = k
    if copy_token.shape[0]:
        request_id[copy_dest] = req[copy_token]
        position[copy_dest] = k[copy_token]
    return TorchLayout(
        extend_seq_lens=lengths,
        cp_size=p,
        rows=physical,
        strategy=kind,
        loads=loads,
        dest=dest,
        request_id=request_id.view(p, physical),
        position=position.view(p, physical),
        copy_token=copy_token,
        copy_dest=copy_dest,
        is_prefilling=prefilling,
    )


def packed_layout(extend_seq_lens: tuple[int, ...], *, device: torch.device | str = "cpu") -> TorchLayout:
    """The batch without context parallelism: one rank, rows in packed order (the eager control's layout)."""
    return build_torch_layout(extend_seq_lens, cp_size=1, strategy="contiguous", device=device)


def shard(hidden: Tensor, layout: TorchLayout, out: Tensor | None = None) -> Tensor:
    """Packed [n, H] -> per-rank rows [P, rows, H], padding rows zero, a copied token in each of its rows. Writes
    into ``out`` in place if given."""
    n, h = hidden.shape
    if n != layout.num_tokens:
        raise ValueError(f"hidden has {n} rows but the layout holds {layout.num_tokens} tokens")
    if out is None:
        out = hidden.new_zeros(layout.cp_size, layout.rows, h)
    else:
        out.zero_()
    flat = out.view(-1, h)
    flat.index_copy_(0, layout.dest, hidden)
    if layout.copies:
        flat.index_copy_(0, layout.copy_dest, hidden.index_select(0, layout.copy_token))
    return out


def gather(per_rank: Tensor, layout: TorchLayout) -> Tensor:
    """Per-rank rows [P, rows, H] -> packed [n, H] in the original token order, each token from its first copy
    (a new tensor)."""
    return per_rank.reshape(layout.cp_size * layout.rows, per_rank.shape[-1]).index_select(0, layout.dest)
