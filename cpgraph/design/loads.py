"""Which busiest-rank loads a CP-active batch of n tokens and R requests can have, exactly, by enumeration.

Per request L = S*q + m (0 <= m < S) the loads are c*q + e(m)_r: zigzag S = 2P, c = 2, e_r(m) =
[r < m] + [2P-1-r < m], q >= 1; contiguous S = P, c = 1, e_r(m) = floor(m(r+1)/P) - floor(mr/P), q >= 2
(every length >= 2P). A batch is then n = S*Q + s with s the sum of remainders and busiest load
c*Q + max_r E_r. Enumerating remainder multisets once per R gives every achievable busiest load for every
n, which efficiency reports, simulations of the whole input space and brute-force tests read.
"""

from __future__ import annotations

import functools
import itertools


def _excess(strategy: str, cp_size: int, m: int) -> tuple[int, ...]:
    p = cp_size
    if strategy == "zigzag":
        return tuple(int(r < m) + int(2 * p - 1 - r < m) for r in range(p))
    return tuple((m * (r + 1)) // p - (m * r) // p for r in range(p))


@functools.lru_cache(maxsize=64)
def _offsets(strategy: str, cp_size: int, requests: int) -> dict[int, dict[int, int]]:
    """class s mod S -> {offset d = maxE - c*j: least j} where s = S*j + class."""
    blocks = 2 * cp_size if strategy == "zigzag" else cp_size
    mult = 2 if strategy == "zigzag" else 1
    excess = [_excess(strategy, cp_size, m) for m in range(blocks)]
    out: dict[int, dict[int, int]] = {}
    for combo in itertools.combinations_with_replacement(range(blocks), requests):
        s = sum(combo)
        top = max(sum(excess[m][r] for m in combo) for r in range(cp_size))
        j, cls = divmod(s, blocks)
        d = top - mult * j
        slot = out.setdefault(cls, {})
        if d not in slot or j < slot[d]:
            slot[d] = j
    return out


def busiest_loads(num_tokens: int, requests: int, *, cp_size: int, strategy: str = "zigzag") -> tuple[int, ...]:
    """Every max_r l_r over CP-active batches of exactly ``requests`` requests and ``num_tokens`` tokens."""
    p, n, r = cp_size, num_tokens, requests
    if r < 1 or n < 2 * p * r:
        return ()
    if strategy == "interleave":
        return (-(-n // p),)
    blocks = 2 * p if strategy == "zigzag" else p
    mult, qmin = (2, 1) if strategy == "zigzag" else (1, 2)
    k, cls = divmod(n, blocks)
    found = {mult * k + d for d, j in _offsets(strategy, p, r).get(cls, {}).items() if k - j >= r * qmin}
    return tuple(sorted(found))


def example_batch(
    num_tokens: int, requests: int, busiest: int, *, cp_size: int, strategy: str = "zigzag"
) -> tuple[int, ...] | None:
    """Some lengths with these tokens, requests and busiest load (None if there are none)."""
    p, n = cp_size, num_tokens
    if strategy == "interleave":
        if requests < 1 or n < 2 * p * requests or busiest != -(-n // p):
            return None
        return (n - 2 * p * (requests - 1),) + (2 * p,) * (requests - 1)
    blocks = 2 * p if strategy == "zigzag" else p
    mult, qmin = (2, 1) if strategy == "zigzag" else (1, 2)
    excess = [_excess(strategy, p, m) for m in range(blocks)]
    for combo in itertools.combinations_with_replacement(range(blocks), requests):
        s = sum(combo)
        if (n - s) % blocks:
            continue
        q_total = (n - s) // blocks
        if q_total < requests * qmin:
            continue
        top = max(sum(excess[m][r] for m in combo) for r in range(p))
        if mult * q_total + top != busiest:
            continue
        qs = [qmin] * requests
        qs[0] += q_total - requests * qmin
        return tuple(blocks * q + m for q, m in zip(qs, combo))
    return None
