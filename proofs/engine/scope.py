"""Every theorem's scope, declared once as data: what `cpgraph prove` claims each theorem covers.

One ``Scope`` per theorem of proofs/registry.py: its cp sizes (every P up to --cp-max, a literal list, a
symbolic P, or none), strategies, keyings, capture-list lengths, request count, token range, padding factors
and what else its claim states (``note``), plus the ``edges`` its hypotheses must reach (the witnesses the
teeth pass asks for, proofs/engine/witness.py). The registry's scope strings (``Scope.text``), the scope
column of proofs/README.md's theorem catalogue (proofs/catalogue.py) and the scope sentences of README.md and
proofs/README.md are generated from this table (``python -m cpgraph.proofs.engine.scope --markdown`` rewrites the
marked blocks, ``python -m cpgraph.proofs.catalogue --markdown`` those and the catalogue; ``--check`` exits 1 on
drift, and unit tests do the same).

The cp sizes are written here as literals, independently of proofs/engine/parameters.py's ``SAMPLED_CP_SIZES`` and
``SMALL_CP_SIZES`` (which decide what runs): the declaration and the run are two statements, and the teeth
pass fails a theorem when the parameters it ran differ from the ones declared here (a size missing, or a
size run but not declared), naming the theorem and the size.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cpgraph.proofs.engine.parameters import EVERY_RANK_MAX_P, FOLD_CP_SIZES

CP_KINDS = ("every", "listed", "symbolic", "none")
REQUEST_KINDS = ("", "one", "up to", "any")
EDGE_KINDS = ("past", "requests", "last_bucket", "every_bucket", "large_p", "last_rank", "residue")
HUGE = 2**62  # "all lengths": a witness past it
MANY = 2**40  # "any number of requests": a witness with this many
LARGE_P = 2**20  # "every P": a witness at this P


@dataclass(frozen=True)
class CpSizes:
    """The cp sizes a theorem covers: ``every`` P = 1..cp_max, the ``listed`` ones (<= cp_max), every
    P >= ``least`` at once (``symbolic``), or ``none`` (the theorem has no P)."""

    kind: str
    listed: tuple[int, ...] = ()
    least: int = 1

    def __post_init__(self) -> None:
        if self.kind not in CP_KINDS:
            raise ValueError(f"kind must be one of {', '.join(CP_KINDS)}; got {self.kind!r}")
        if (self.kind == "listed") != bool(self.listed) or any(p < 1 for p in self.listed):
            raise ValueError(f"listed must be cp sizes >= 1 exactly when kind is 'listed'; got {self.listed!r}")
        if tuple(sorted(set(self.listed))) != self.listed:
            raise ValueError(f"listed must be strictly increasing; got {self.listed!r}")

    def sizes(self, cp_max: int) -> tuple[int, ...]:
        """The concrete cp sizes declared up to ``cp_max`` (none for a symbolic P or no P)."""
        if self.kind == "every":
            return tuple(range(1, cp_max + 1))
        return tuple(p for p in self.listed if p <= cp_max)

    def text(self, cp_max: int | None) -> str:
        if self.kind == "every":
            return f"P = 1..{cp_max if cp_max is not None else 64}"
        if self.kind == "listed":
            return "P in {" + _runs(self.sizes(cp_max if cp_max is not None else max(self.listed))) + "}"
        if self.kind == "symbolic":
            return f"every P >= {self.least} (symbolic)"
        return ""


@dataclass(frozen=True)
class Strategy:
    """A strategy in a theorem's scope, at every P or up to ``max_p``."""

    name: str
    max_p: int | None = None


@dataclass(frozen=True)
class Factor:
    """A padding factor F (as written, e.g. "3/2") in a theorem's scope, at every P or up to ``max_p``."""

    value: str
    max_p: int | None = None


@dataclass(frozen=True)
class Part:
    """A labelled part of a theorem's claim (a chain such as "captured capacities") that names queries at every
    P or up to ``max_p``: the scope witness fails a P it is declared at where no query is labelled with it."""

    name: str
    max_p: int | None = None
    min_p: int = 1  # and from this P on (a part that only exists from some P, such as a tightness query)


@dataclass(frozen=True)
class Lists:
    """Capture-list lengths: ``least``..``most`` buckets (``most`` None: every length, by a quantified
    argument); ``fixed`` when the list length is the theorem's own constant (not its parameter); a fixed
    length may add ``longer``-bucket lists at the cp sizes ``longer_at`` (every chain built there twice)."""

    least: int
    most: int | None
    fixed: bool = False
    longer: int = 0
    longer_at: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if bool(self.longer) != bool(self.longer_at) or (self.longer and not self.fixed):
            raise ValueError(f"longer and longer_at go together, on a fixed length; got {self.longer!r}, {self.longer_at!r}")
        if self.longer and (self.most is None or self.longer <= self.most):
            raise ValueError(f"longer must exceed most ({self.most!r}); got {self.longer!r}")

    def lengths(self, parameter: int) -> tuple[int, ...]:
        """The list lengths declared at ``parameter`` (a cp size for a fixed length, else the length itself)."""
        if self.most is None:
            return ()
        if not self.fixed:
            return (parameter,)
        return (self.most, self.longer) if parameter in self.longer_at else (self.most,)


def residue_form(form: str) -> tuple[int, int]:
    """(a, b) of a residue edge's form "aP+b" ("P+1" -> (1, 1), "2P-1" -> (2, -1), "0" -> (0, 0)); ValueError
    naming the form otherwise."""
    text = form.replace(" ", "")
    match = re.fullmatch(r"(\d*)P([+-]\d+)?", text) or re.fullmatch(r"()([+-]?\d+)", text)
    if match is None:
        raise ValueError(f"a residue edge's form must read aP+b, aP or b (\"P+1\", \"2P-1\", \"0\"); got {form!r}")
    a = (int(match.group(1)) if match.group(1) else 1) if "P" in text else 0
    return a, int(match.group(2)) if match.group(2) else 0


@dataclass(frozen=True)
class Edge:
    """A witness the hypotheses must admit at every declared parameter: ``past`` (``var`` > 2**62: an
    unbounded length), ``requests`` (the most requests the batch form allows: ``var`` names the batch and
    ``form`` its kind, classes / requests / any), ``last_bucket`` (the capture list ``var`` at its longest,
    its last bucket past 2**62 and chosen by the key ``key``), ``every_bucket`` (every bucket and every
    capacity of the list ``var`` past 2**62: no value of the list is bounded), ``large_p`` (the symbolic P at
    2**20), ``last_rank`` or ``residue`` (``var`` mod 2P is the declared ``form``, "P+1": a statement about one
    remainder class must hold there, not at another)."""

    kind: str
    var: str = ""
    form: str = ""
    key: str = ""
    count: int = 0  # a requests batch's requests
    where: str = ""  # only the queries (chains) whose label contains this
    max_p: int | None = None  # only at cp sizes up to this (a strategy declared up to it)

    def __post_init__(self) -> None:
        if self.kind not in EDGE_KINDS:
            raise ValueError(f"kind must be one of {', '.join(EDGE_KINDS)}; got {self.kind!r}")
        if self.kind == "residue":
            residue_form(self.form)  # refused when declared, not when first witnessed

    @property
    def name(self) -> str:
        where = f" ({self.where} queries)" if self.where else ""
        if self.kind == "past":
            return f"{self.var} past 2**62 (unbounded){where}"
        if self.kind == "requests":
            most = {"classes": "2**40 requests in every remainder class", "any": "2**40 requests, every load l0..l(P-1) past 2**62",
                    "requests": "every request present, past 2**62"}
            return f"{self.var}: {most.get(self.form, self.form)} ({self.form} batch)"
        if self.kind == "last_bucket":
            return f"last bucket of {self.var} chosen by {self.key}, past 2**62"
        if self.kind == "every_bucket":
            return f"every bucket and capacity of {self.var} past 2**62"
        if self.kind == "last_rank":
            return f"{self.var} = P-1 (the last rank)"
        if self.kind == "residue":
            return f"{self.var} mod 2P = {self.form}"
        return "P = 2**20 (every P)"


@dataclass(frozen=True)
class Scope:
    """One theorem's scope (see the module docstring)."""

    cp: CpSizes
    strategies: tuple[Strategy, ...] = ()
    keyings: tuple[str, ...] = ()
    lists: Lists | None = None
    requests: str = ""  # "" (not a batch claim), "one", "up to" (``most``), "any"
    most_requests: int = 0
    unbounded: bool = True  # lengths, tokens, buckets and capacities unbounded
    factors: tuple[Factor, ...] = ()
    note: str = ""
    edges: tuple[Edge, ...] = ()
    labelled: bool = True  # every declared strategy, F and part names queries at each P it is declared at
    parts: tuple[Part, ...] = ()
    every_rank_max_p: int = 0  # > 0: ranks compared with rank 0, every one up to this P, then 0, P/2, P-1

    def ranks(self, cp_size: int) -> tuple[int, ...]:
        """The ranks whose decisions the theorem compares with rank 0's at ``cp_size`` (rank 0 itself at
        P = 1, where it is the only rank); none without a per-rank claim."""
        if not self.every_rank_max_p:
            return ()
        if cp_size <= self.every_rank_max_p:
            return tuple(range(1, cp_size)) or (0,)
        return (cp_size // 2, cp_size - 1)

    def __post_init__(self) -> None:
        if self.requests not in REQUEST_KINDS:
            raise ValueError(f"requests must be one of {', '.join(map(repr, REQUEST_KINDS))}; got {self.requests!r}")
        if (self.requests == "up to") != (self.most_requests > 0):
            raise ValueError(f"most_requests must be > 0 exactly when requests is 'up to'; got {self.most_requests}")

    def parameters(self, cp_max: int) -> tuple[int, ...]:
        """The parameters the run must cover: the declared cp sizes, else the list lengths a list-length
        theorem is run at, else the one symbolic run (0)."""
        if self.cp.kind in ("every", "listed"):
            return self.cp.sizes(cp_max)
        if self.lists is not None and self.lists.most is not None and not self.lists.fixed:
            return tuple(range(self.lists.least, self.lists.most + 1))
        return (0,)

    def text(self, cp_max: int | None = None) -> str:
        """The scope as a sentence (cp sizes up to ``cp_max``; None: the whole declaration, P = 1..64)."""
        parts = [self.cp.text(cp_max)]
        if self.strategies:
            parts.append(_strategies(self.strategies))
        if self.keyings:
            parts.append(" and ".join(self.keyings) + " keying")
        if self.requests:
            parts.append({"one": "one request", "any": "any number of requests",
                          "up to": f"up to {self.most_requests} requests"}[self.requests])
        parts.append("every length (unbounded)" if self.unbounded else "bounded lengths")
        if self.lists is not None:
            parts.append(_lists(self.lists))
        if self.factors:
            parts.append(_factors(self.factors))
        if self.parts:
            parts.append(", ".join(_part(part) for part in self.parts))
        if self.note:
            parts.append(self.note)
        return "; ".join(p for p in parts if p)

    def short(self, cp_max: int | None = None) -> str:
        """The cp sizes and capture-list lengths alone: the prove table's scope column."""
        parts = [self.cp.text(cp_max)]
        if self.lists is not None:
            longer = f" ({self.lists.longer} at {_longer_at(self.lists)})" if self.lists.longer else ""
            parts.append(f"{self.lists.most}-bucket lists{longer}" if self.lists.fixed else
                         f"lists of {self.lists.least}..{self.lists.most}" if self.lists.most else "lists of every length")
        return ", ".join(p for p in parts if p)

    def data(self, cp_max: int | None = None) -> dict[str, Any]:
        """The scope as JSON-ready data (``cpgraph prove --json``)."""
        return {
            "cp_sizes": {"kind": self.cp.kind, "sizes": list(self.cp.sizes(cp_max if cp_max is not None else 64)),
                         **({"least": self.cp.least} if self.cp.kind == "symbolic" else {})},
            "strategies": [{"name": s.name, "max_cp_size": s.max_p} for s in self.strategies],
            "keyings": list(self.keyings),
            "capture_list_lengths": None if self.lists is None else {
                "least": self.lists.least, "most": self.lists.most,
                **({"longer": {"most": self.lists.longer, "cp_sizes": list(self.lists.longer_at)}} if self.lists.longer else {}),
            },
            "requests": {"kind": self.requests or "none", **({"most": self.most_requests} if self.most_requests else {})},
            "tokens": "unbounded" if self.unbounded else "bounded",
            "factors": [{"F": f.value, "max_cp_size": f.max_p} for f in self.factors],
            "parts": [{"name": p.name, "min_cp_size": p.min_p, "max_cp_size": p.max_p} for p in self.parts],
            "note": self.note,
            "edges": [e.name for e in self.edges],
        }


def _runs(values: tuple[int, ...]) -> str:
    """1, 2, 3, 5 -> "1..3, 5"."""
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(f"{values[i]}..{values[j]}" if j - i >= 2 else ", ".join(str(v) for v in values[i:j + 1]))
        i = j + 1
    return ", ".join(out)


def _part(part: Part) -> str:
    """"captured capacities (P <= 8)", "tight below dual_chunk_swap (P >= 2)"."""
    bounds = ([f"P >= {part.min_p}"] if part.min_p > 1 else []) + ([f"P <= {part.max_p}"] if part.max_p is not None else [])
    return part.name + (f" ({', '.join(bounds)})" if bounds else " (every P)")


def _strategies(strategies: tuple[Strategy, ...]) -> str:
    by_bound: dict[int | None, list[str]] = {}
    for s in strategies:
        by_bound.setdefault(s.max_p, []).append(s.name)
    return ", ".join(", ".join(names) + (" (every P)" if bound is None else f" (P <= {bound})")
                     for bound, names in by_bound.items())


def _lists(lists: Lists) -> str:
    if lists.most is None:
        return f"sorted capture lists of every length >= {lists.least} (quantified)"
    if lists.least == lists.most:
        longer = f" (and {lists.longer}-bucket lists at {_longer_at(lists)})" if lists.longer else ""
        return f"sorted {lists.most}-bucket lists{longer}, any capacities"
    return f"sorted capture lists of {lists.least}..{lists.most} buckets"


def _longer_at(lists: Lists) -> str:
    """Where a fixed length's longer lists are declared: "P = 2", "P in {2, 4}"."""
    at = lists.longer_at
    return f"P = {at[0]}" if len(at) == 1 else "P in {" + _runs(at) + "}"


def _factors(factors: tuple[Factor, ...]) -> str:
    every = [f.value for f in factors if f.max_p is None]
    bounded = [f for f in factors if f.max_p is not None]
    text = "F in {" + ", ".join(f.value for f in factors) + "}" if len(factors) > 1 else f"F = {factors[0].value}"
    if bounded:
        text += f" (F = {', '.join(every)} above P = {bounded[0].max_p})"
    return text


@dataclass(frozen=True)
class Witnessed:
    """One scope check at one parameter (proofs/engine/witness.py): ``what`` (an edge's name, the hypotheses'
    satisfiability, a list-length check), whether it held, and why not (the chain, the solver's answer)."""

    what: str
    ok: bool
    detail: str = ""


# -- the table -------------------------------------------------------------------------------------------------

_SAMPLED = CpSizes("listed", (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32))  # the end-to-end theorems' P
_SMALL = CpSizes("listed", (1, 2, 3, 4, 5, 6, 7, 8, 12, 16))  # DualChunkSwap's per-request theorems
_EVERY = CpSizes("every")
_NONE = CpSizes("none")
_ALL_STRATEGIES = tuple(Strategy(s) for s in ("zigzag", "interleave", "contiguous", "dual_chunk_swap",
                                              "dual_chunk_swap_replicated", "dual_chunk_swap_dcp"))
_CLASS = (Strategy("zigzag"), Strategy("interleave", 8), Strategy("contiguous", 8))
_DCS = (Strategy("dual_chunk_swap"), Strategy("dual_chunk_swap_dcp"))
_LIST_LENGTH = 3  # buckets per capture list in the end-to-end theorems (proofs/theorems/setting.py LIST_LENGTH)
_LONG_LISTS = (32, (2,))  # and this many at these P (proofs/theorems/setting.py LONG_LIST_LENGTH, LONG_LIST_CP_SIZES)


def _past(*names: str) -> tuple[Edge, ...]:
    return tuple(Edge("past", n) for n in names)


def _symbolic(least: int = 1) -> CpSizes:
    return CpSizes("symbolic", least=least)


_LARGE_P = (Edge("large_p", "P"),)
_LAST_RANK = Edge("last_rank", "r")
_SCAN = Scope(_NONE, lists=Lists(1, 32), note="unbounded values and capacities, some missing; every n, F, required",
              edges=(*_past("n", "high", "required"), Edge("last_bucket", "cap", key="n"), Edge("every_bucket", "cap")))
_E2E_EDGES = (*_past("n", "batch.Q"), Edge("requests", "batch", form="classes"),
              Edge("last_bucket", "cap", key="n"), Edge("every_bucket", "cap"))
_E2E = Scope(
    _SAMPLED, _CLASS, ("global",), Lists(_LIST_LENGTH, _LIST_LENGTH, True, *_LONG_LISTS), "any",
    factors=(Factor("2"), Factor("3/2", 8)), note="any padded n, A = default", edges=_E2E_EDGES,
)
_LOCAL = Scope(
    _SAMPLED, (Strategy("any layout"), *(Strategy(s.name, 8) for s in _DCS)), ("local",),
    Lists(_LIST_LENGTH, _LIST_LENGTH, True, *_LONG_LISTS), "any",
    note="any layout: free per-rank loads (every strategy, any number of requests); DualChunkSwap's own loads: up to 2 "
    "prefills; any n",
    edges=(*_past("n", "batch.N"), Edge("requests", "batch", form="any"), Edge("requests", "batch", form="requests", count=2, max_p=8),
           Edge("last_bucket", "cap", key="batch.l0"), Edge("every_bucket", "cap")),
)


_PLACEMENTS = _DCS[:1] + (Strategy("dual_chunk_swap_replicated"),) + _DCS[1:]  # where a uniform decode step's decodes go
_DECODE_MODES = (Part("FULL_DECODE_ONLY"), Part("FULL_AND_PIECEWISE"))
_QUERY_LENS = (Part("q=1"), Part("q=2"))
_DECODE_NOTE = ("a uniform decode step of any R >= 1 decodes of q tokens; any sorted 3 decode graphs (request counts) and 3 "
                "token-keyed sizes")
_DECODE_EDGES = (*_past("R", "dec.n0"), Edge("past", "tok.t0"))
_DECODE = Scope(_SMALL, _PLACEMENTS, requests="any", parts=(*_DECODE_MODES, *_QUERY_LENS), note=_DECODE_NOTE, edges=_DECODE_EDGES)


def _e2e(**changes: Any) -> Scope:
    return dataclasses.replace(_E2E, **changes)


def _local(**changes: Any) -> Scope:
    return dataclasses.replace(_LOCAL, **changes)


SCOPE: dict[str, Scope] = {
    "divmod_quotient_and_remainder_are_unique": Scope(_NONE, note="every divisor S >= 1 (symbolic); every integer",
                                                      edges=_past("L", "S")),
    "folded_literals_equal_their_terms": Scope(_SAMPLED, _ALL_STRATEGIES, unbounded=False, labelled=False,
                                               note="L at every clause edge up to 4P, A in {P, 2P}"),
    "align_up_is_least_multiple_at_or_above": Scope(_NONE, note="every A >= 1 (symbolic); every value >= 0",
                                                    edges=_past("v", "A")),
    "zigzag_loads_sum_to_tokens": Scope(_EVERY, requests="any", note="request lemma + induction step", edges=_past("L", "N")),
    "contiguous_loads_sum_to_tokens": Scope(_EVERY, requests="any", note="request lemma + induction step", edges=_past("L", "N")),
    "interleave_loads_sum_to_tokens": Scope(_EVERY, requests="any", note="loads depend on N only", edges=_past("L")),
    "table_batch_loads_sum_to_tokens": Scope(
        _SAMPLED, (*_ALL_STRATEGIES[:3], *(Strategy(s.name, 8) for s in _ALL_STRATEGIES[3:])), requests="up to",
        most_requests=2, note="through the table's batch_loads (dual_chunk_swap_dcp: short prefills on every rank)",
        edges=_past("L0", "L1")),
    "zigzag_busiest_rank_holds_ceil_share": Scope(_EVERY, requests="one", edges=(*_past("L"), _LAST_RANK)),
    "contiguous_busiest_rank_holds_ceil_share": Scope(_EVERY, requests="one", edges=_past("L")),
    "dual_chunk_swap_loads_sum_to_tokens": Scope(_SMALL, _DCS[:1], requests="any", note="request lemma + induction step",
                                                 edges=_past("L", "N"), labelled=False),
    "dual_chunk_swap_long_requests_split_by_remainder": Scope(
        _SMALL, _DCS, requests="one", note="L div 2P >= 2P-2 (dual_chunk_swap) or >= 2P-1 (dual_chunk_swap_dcp)",
        edges=_past("L"), parts=(Part("tight below dual_chunk_swap", min_p=2), Part("tight below dual_chunk_swap_dcp", min_p=2))),
    "dual_chunk_swap_request_excess_is_tight": Scope(_SMALL, _DCS, requests="one", note="one length reaches the bound",
                                                     edges=(Edge("past", "L", where="bound"),)),
    "dual_chunk_swap_dcp_copies_exactly_the_short_prefills": Scope(_SMALL, _DCS[1:], requests="one", edges=_past("L"),
                                                                   labelled=False),
    "interleave_busiest_rank_holds_ceil_share": Scope(_EVERY, requests="any", note="every batch of N >= 0 tokens",
                                                      edges=(*_past("L"), _LAST_RANK)),
    "zigzag_ownership_partitions_blocks_for_symbolic_cp_size": Scope(_symbolic(), note="every block j >= 0",
                                                                     edges=(*_LARGE_P, _LAST_RANK)),
    "busiest_rank_holds_ceil_share_for_symbolic_cp_size": Scope(_symbolic(), requests="one",
                                                                edges=(*_LARGE_P, *_past("L"), _LAST_RANK)),
    "per_request_headroom_bound_holds_for_symbolic_cp_size": Scope(_symbolic(), requests="one",
                                                                   edges=(*_LARGE_P, *_past("L"), _LAST_RANK)),
    "headroom_bound_holds_for_symbolic_cp_size": Scope(
        _symbolic(), requests="any", note="request lemma, base, step and bound in one chain; every R (R = 0 too)",
        edges=(*_LARGE_P, *_past("L", "N", "R"), _LAST_RANK)),
    "headroom_bound_is_tight_for_symbolic_cp_size": Scope(_symbolic(2), requests="one", note="every L with L mod 2P = P+1",
                                                          edges=(*_LARGE_P, *_past("q"), Edge("residue", "L", form="P+1"))),
    "headroom_bound_holds_for_any_number_of_requests": Scope(_EVERY, requests="any", note="every R >= 1",
                                                             edges=(*_past("L", "N", "R"), _LAST_RANK)),
    "headroom_bound_is_tight": Scope(_EVERY, requests="any", note="every length with L mod 2P = P+1",
                                     edges=_past("L", "N", "k")),
    "capture_capacity_is_aligned_ceil_share": Scope(_EVERY, (Strategy("zigzag"), Strategy("interleave")),
                                                    note="every bucket B >= 1; A = 2P (zigzag), P (interleave)",
                                                    edges=_past("B")),
    "headroom_capture_fits_first_bucket_at_or_above_n": Scope(
        _EVERY, requests="any", note="A = 2P; <= R requests (headroom form), every N <= n <= B, every R >= 1",
        edges=_past("n", "B", "N", "R")),
    "scan_selects_least_fitting_bucket": _SCAN,
    "scan_selects_least_fitting_bucket_for_any_list_length": Scope(
        _NONE, lists=Lists(1, None), note="unbounded values and capacities; every n, F, required",
        edges=_past("n", "high", "head.bucket", "required")),
    "scan_select_is_the_step_folded_over_the_whole_list": dataclasses.replace(
        _SCAN, note=_SCAN.note + "; the fold admission and replay call, and admission's decision and replay's tripwire at P in {1..4, 8}, both "
                             "keyings (with the step theorems: induction over the list)"),
    "scan_selects_a_captured_bucket": _SCAN,
    "scan_respects_padding_limit": _SCAN,
    "scan_bucket_has_room_for_required_rows": _SCAN,
    "scan_selects_minimal_bucket": _SCAN,
    "scan_never_falls_back_when_a_bucket_fits": _SCAN,
    "least_fitting_bucket_is_unique": _SCAN,
    "scan_selects_first_bucket_at_or_above_n_when_it_has_room": _SCAN,
    "local_scan_meets_every_invariant": Scope(
        _NONE, keyings=("local",), lists=Lists(1, 32), note="every key m >= 0; spec/invariants.py's claims",
        edges=(*_past("key"), Edge("last_bucket", "cap", key="key"), Edge("every_bucket", "cap"))),
    "padding_window_holds_n_for_every_factor": Scope(_NONE, note="every F >= 1 and n >= 1 (symbolic)", edges=_past("n", "F")),
    "class_loads_track_request_loads": Scope(
        _SAMPLED, (Strategy("zigzag"), Strategy("contiguous", 8)), requests="any",
        note="base + step; the class-encodable rows (interleave: by its total; not the DualChunkSwap rows)",
        edges=(*_past("L", "state.Q"), Edge("requests", "state", form="classes"))),
    "ranks_sharing_their_capture_state_agree": dataclasses.replace(_E2E, every_rank_max_p=8),
    "admitted_batches_replay_the_admitted_bucket": _E2E,
    "admitted_bucket_is_captured": _E2E,
    "admitted_bucket_is_within_padding_limit": _e2e(factors=tuple(Factor(f) for f in ("1", "5/4", "3/2", "2", "4"))),
    "admitted_batches_fit_every_rank": _e2e(parts=(Part("any capacities"), Part("captured capacities", 8)),
                                            note="any padded n, A = default; the capture rule's capacities on 3-bucket "
                                                 "lists (on 32: any capacities include them)"),
    "replay_runs_only_into_a_listed_bucket_with_room": _e2e(factors=(Factor("2"),),
                                                            note="any padded n, A = default; any decision of replay's selector"),
    "admitted_bucket_is_the_least_that_fits": _E2E,
    "active_batches_that_fit_are_admitted": _E2E,
    "local_ranks_sharing_their_sizes_agree": dataclasses.replace(_LOCAL, every_rank_max_p=8),
    "local_admitted_batches_replay_the_admitted_size": _LOCAL,
    "local_admitted_size_is_captured": _LOCAL,
    "local_admitted_size_is_at_or_above_the_key": _LOCAL,
    "local_admitted_batches_fit_every_rank": _LOCAL,
    "local_replay_runs_only_into_a_listed_size_holding_every_rank": _local(note=_LOCAL.note + "; any decision of replay's selector"),
    "local_admitted_size_is_the_least_that_fits": _LOCAL,
    "local_batches_that_fit_are_admitted": _LOCAL,
    "admission_and_replay_read_the_whole_list": Scope(
        _SAMPLED, (*_CLASS, Strategy("any layout"), *(Strategy(s.name, 8) for s in _DCS)), ("global", "local"),
        Lists(_LONG_LISTS[0], _LONG_LISTS[0], True), "any",
        factors=(Factor("2"),), parts=(Part("admission's decision"), Part("replay's decision"), Part("replay's tripwire"),
               Part("rows as on the short list"), Part("rows agree"), Part("keys agree"), Part("rank_consensus")),
        every_rank_max_p=8,
        note="rank 0's decision on each side, for its own rows, is the least fitting bucket of the whole keyed list, "
             "replay's tripwire reads the whole list (global: class batches, any padded n; local: any layout, and up to "
             "P = 8 DualChunkSwap's own loads of up to 2 prefills), the rows and replay's layout are those of the 3-bucket "
             "list (class batches and any layout), and every other rank (each up to P = 8, then "
             "P/2 and P-1) admits and replays as rank 0 does (any layout, both keyings)",
        edges=(*_past("n"), Edge("requests", "batch", form="classes"), Edge("requests", "batch", form="any", where="local"),
               Edge("requests", "batch", form="requests", count=2, max_p=8),
               Edge("last_bucket", "cap", key="n", where="F=2"), Edge("last_bucket", "cap", key="batch.l0", where="local"),
               Edge("every_bucket", "cap"))),
}


SCOPE.update({
    "dispatched_graph_holds_every_rank": dataclasses.replace(_DECODE, parts=(Part("release"), Part("local"), *_DECODE.parts)),
    "local_dispatch_takes_a_decode_graph_whenever_one_fits": dataclasses.replace(_DECODE, parts=(Part("local"), *_DECODE.parts)),
    "release_dispatch_takes_a_decode_graph_whenever_one_fits_if_decodes_are_copied": dataclasses.replace(
        _DECODE, strategies=(Strategy("dual_chunk_swap", 1), *_PLACEMENTS[1:]), parts=(Part("release"), *_DECODE.parts),
        note=_DECODE_NOTE + "; dual_chunk_swap (dealt) at P = 1 only"),
    "release_dispatch_passes_over_a_fitting_decode_graph_when_decodes_are_dealt": Scope(
        _SMALL, _PLACEMENTS[:1], requests="any",
        parts=(Part("release"), *_DECODE_MODES, *_QUERY_LENS, Part("witness", min_p=2), Part("fewer requests", min_p=2),
               Part("no witness at P = 1", max_p=1)),
        note="at P >= 2 a witness: R = 2 decodes and a least decode graph of 1 request (the other 2 graphs and 3 sizes "
             "any), and no R < 2 is one; at P = 1 no R >= 1 is one",
        edges=(Edge("past", "dec.n2"), Edge("past", "tok.t0"), Edge("past", "R", max_p=1))),
    "local_dispatch_takes_the_least_fitting_decode_graph": dataclasses.replace(_DECODE, parts=(Part("local"), *_DECODE.parts)),
    "graph_dispatch_is_the_same_on_every_rank": dataclasses.replace(
        _DECODE, parts=(Part("release"), Part("local"), Part("FULL_AND_PIECEWISE"), *_QUERY_LENS),
        note=_DECODE_NOTE + "; each rank builds the step under its own names", every_rank_max_p=8),
    # Megatron-Core's EP ranks (proofs/theorems/ep_graphs.py): no P; EP sizes, graph lists and MTP tokens per query
    "synced_dimensions_give_consensus": Scope(
        _NONE, parts=(Part("strict"), Part("loose"), Part("EP 2"), Part("EP 3"), Part("EP 8")),
        note="any steps, any list of 3 captured graphs (free dimensions); directly at EP 2, through the synced "
             "dimensions' agreement at EP 2..8"),
    "decode_steps_synced_by_tokens_agree": Scope(
        _NONE, parts=(Part("strict"), Part("loose"), Part("k=1"), Part("k=4"), Part("EP 4")),
        note="decode-only steps of k = 1..4 tokens per decode, decode-only lists of 3 graphs with T <= D * k, EP 2..4"),
    "syncing_tokens_alone_breaks_consensus_under_strict_matching": Scope(
        _NONE, parts=(Part("witness"),), note="a witness at EP 2 (the 0.16.0 minimal counterexample)"),
})


def scope_of(theorem: str) -> Scope:
    """The declared scope of ``theorem``; KeyError naming it when the table has none."""
    if theorem not in SCOPE:
        raise KeyError(f"theorem {theorem!r} has no declared scope in proofs/engine/scope.py SCOPE")
    return SCOPE[theorem]


# -- the generated docs ----------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]  # the repository: proofs/engine/scope.py
BEGIN, END = "<!-- scope:{} -->", "<!-- /scope:{} -->"  # a block generated from the table


def _sizes(scope: Scope) -> str:
    """The declared cp sizes as the docs write them: "1..8, 12, 16, 24, 32"."""
    return _runs(scope.cp.listed)


def _bounded_global() -> str:
    e2e = SCOPE["admitted_batches_fit_every_rank"]
    limit = SCOPE["admitted_bucket_is_within_padding_limit"]
    assert e2e.lists is not None and e2e.lists.most is not None
    bound = max(s.max_p or 0 for s in e2e.strategies)
    every = " and ".join(s.name for s in e2e.strategies if s.max_p is None)
    others = " and ".join(s.name for s in e2e.strategies if s.max_p is not None)
    factors = " and ".join(f.value for f in e2e.factors)
    above = " and ".join(f.value for f in e2e.factors if f.max_p is None)
    extra = [f.value for f in limit.factors if f.value not in {g.value for g in e2e.factors}]
    return (
        f"at P in {{{_sizes(e2e)}}}, with {every} at every one of them and {others} up to P = {bound}, "
        f"{e2e.lists.most}-bucket capture lists (every chain of every end-to-end theorem also on {e2e.lists.longer}-bucket "
        f"lists at {_longer_at(e2e.lists)}), and F {factors} ({above} only above P = {bound}; the padding limit "
        f"also {', '.join(extra[:-1])} and {extra[-1]})"
    )


def _local_sentence() -> str:
    local = SCOPE["local_admitted_batches_fit_every_rank"]
    assert local.lists is not None
    bound = max(s.max_p or 0 for s in local.strategies)
    return (f"at cp_size {_sizes(local)} with {local.lists.most}-size lists ({local.lists.longer}-size lists too at "
            f"{_longer_at(local.lists)}), and instantiated with DualChunkSwap's own "
            f"loads for up to 2 prefills at P <= {bound}")


def _bullet(text: str) -> str:
    """A Markdown bullet wrapped at 108 columns, its continuation lines indented under it."""
    return textwrap.fill(text, 108, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


def blocks() -> dict[str, dict[str, str]]:
    """Each README's generated blocks (name -> text), from the table."""
    scan = SCOPE["scan_selects_minimal_bucket"].lists
    assert scan is not None
    e2e = SCOPE["admitted_batches_fit_every_rank"]
    assert e2e.lists is not None
    whole = SCOPE["admission_and_replay_read_the_whole_list"]
    assert whole.lists is not None
    bound = max(s.max_p or 0 for s in e2e.strategies)
    return {
        "README.md": {
            "bounded": _bullet(
                "- Some scopes are bounded and say so: the end-to-end theorems (one per invariant, any number of requests, "
                "padded n) run by default " + _bounded_global() + "; every theorem's scope, and what is argued rather "
                "than solved, is in `proofs/README.md` (declared in `proofs/engine/scope.py`; the teeth pass fails a "
                "theorem whose run or hypotheses fall short of its declaration)."
            ),
            "local": _local_sentence(),
        },
        "proofs/README.md": {
            "bounded": _bullet(
                "- **Bounded, and said so** (every theorem's scope is declared in `proofs/engine/scope.py`; the teeth pass checks "
                "that each declared P ran and that the hypotheses reach the scope's edges there). The end-to-end "
                "theorems and the class lemma run " + _bounded_global() + " (`SAMPLED_CP_SIZES` runs them; interleave "
                "and contiguous are the class-encodable rows besides zigzag: the DualChunkSwap rows are not, see "
                f"below, and are covered by the local keying's any-layout theorems, P <= {bound} for their own loads). "
                f"Longer capture lists: at {_longer_at(e2e.lists)} every chain of every end-to-end theorem (both keyings, "
                f"every strategy, F and batch form run there, the every-rank chains too) is also built and proved on "
                f"{e2e.lists.longer}-bucket lists (`LONG_LIST_CP_SIZES`; about 10x a 3-bucket chain's cost, so not at "
                "every P): `admission_of_the_first_8_buckets` and `replay_of_the_first_8_buckets` (and the local "
                "keying's `..._sizes`), sides handed only the first 8 buckets, prove on 3-bucket lists and are refuted "
                f"there. At every P, the decision admission and replay take is the scan step folded over the whole "
                "list (`scan_select_is_the_step_folded_over_the_whole_list`) and the step meets the relation on every "
                f"list of {scan.least}..{scan.most} buckets (`scan_selects_least_fitting_bucket`): by induction the "
                "end-to-end chains' one use of the scan, its decision, is the least fitting bucket on those lists "
                "(`scan_of_the_first_8_buckets`, a scan that stops early, is refuted at K = 9), and replay's tripwire reads "
                "the whole list, both keyings (`tripwire_of_the_first_8_buckets` is refuted at K = 9). That admission's "
                f"decision is this scan over its whole keyed list, and the tripwire, are checked at P in {{{_runs(FOLD_CP_SIZES)}}}"
                " on those lists (`decision_of_the_first_8_buckets_from_p_4` and `tripwire_of_the_first_8_buckets_from_p_4`, "
                "early stops taken only from P = 4 on, are refuted at K = 9). Inside admission and replay themselves, at "
                f"every P in {{{_sizes(whole)}}}, both keyings, on {whole.lists.most}-bucket lists: "
                "`admission_and_replay_read_the_whole_list` (each side's decision, for the rows it computed, is the least "
                "fitting bucket of the whole keyed list; replay's tripwire reads the whole list; the rows and replay's "
                "layout are those the same side computes on the 3-bucket list of the same batch; every other rank, each "
                f"up to P = {EVERY_RANK_MAX_P} and P/2 and P-1 above, admits and replays as rank 0 on that list, any layout; "
                "`admission_of_the_first_8_buckets_from_p_4`, `replay_of_the_first_8_buckets_from_p_4`, "
                "`replay_tripwire_of_the_first_8_buckets_from_p_4`, the local keying's `..._sizes_from_p_4`, "
                "`admission_aligned_twice_on_long_lists_from_p_4` / `replay_...` and "
                "`middle_rank_admission_of_the_first_8_buckets_from_p_4` / `middle_rank_replay_...` (rank 0 reads the "
                "whole list, the ranks between the ends stop at 8) are refuted at P = 4; up to P = 8 the local keying's "
                "decisions and tripwire also run on DualChunkSwap's own loads, so `dcp_admission_of_the_first_8_sizes_from_p_3`"
                " / `dcp_replay_...`, early stops taken only under the dcp layout's name, are refuted too). Ranks: each theorem is "
                f"stated at rank 0; the consensus theorems prove every rank (all up to P = {EVERY_RANK_MAX_P}; 0, P/2 "
                "and P-1 above) computes the same rows and decides and replays as rank 0, on any layout. The builders take any P: the pre-fix variants are refuted "
                "at P = 64 too (`tests/quality`), but a full proof at P = 64 costs about 25 s of CPU per theorem, so it "
                "is not in the default run."
            ),
            "small": "P in {" + _sizes(SCOPE["dual_chunk_swap_request_excess_is_tight"]) + "}",
        },
    }


def render(text: str, block: str, body: str, begin: str = "", end: str = "") -> str:
    """``text`` with the marked ``block`` replaced by ``body`` (on lines of their own when the markers are);
    the markers are ``begin`` and ``end`` where given, else the scope block's; ValueError when they are missing."""
    begin, end = begin or BEGIN.format(block), end or END.format(block)
    if begin not in text or end not in text:
        raise ValueError(f"block {block!r}: markers {begin!r} ... {end!r} not found")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    own_line = head.endswith("\n") and tail.startswith("\n")
    return head + begin + ("\n" + body + "\n" if own_line else body) + end + tail


def generated() -> dict[Path, str]:
    """Each generated file's text as the table makes it."""
    out = {}
    for name, parts in blocks().items():
        path = ROOT / name
        text = path.read_text()
        for block, body in parts.items():
            text = render(text, block, body)
        out[path] = text
    return out


def generated_files_main(argv: list[str] | None, prog: str, description: str, texts: Callable[[], dict[Path, str]],
                         what: str, command: str) -> int:
    """``--markdown`` rewrites the generated files whose text differs from ``texts()``; ``--check`` names each
    stale one (``what`` differs; run ``command``) and exits 1."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--markdown", action="store_true", help="rewrite the generated blocks")
    mode.add_argument("--check", action="store_true", help="exit 1 when a generated block differs from its source")
    args = parser.parse_args(argv)
    wanted = texts()
    stale = [path for path, text in wanted.items() if path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path}: {what} (run {command})")
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"rewrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return generated_files_main(argv, "python -m cpgraph.proofs.engine.scope", (__doc__ or "").splitlines()[0], generated,
                                "scope blocks differ from proofs/engine/scope.py", "python -m cpgraph.proofs.engine.scope --markdown")

if __name__ == "__main__":
    sys.exit(main())
