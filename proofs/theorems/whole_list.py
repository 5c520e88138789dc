"""Admission and replay read the whole capture list, at every sampled cp_size.

The end-to-end chains run on 3-bucket capture lists at every P, and on ``LONG_LIST_LENGTH``-bucket lists at
``LONG_LIST_CP_SIZES`` only (a long chain costs about 10x a short one). A side that stops reading the list
early at some other P (inside ``admit`` or ``replay``, before or after it calls the decision) is what neither
sees. This theorem closes that gap cheaply: at every sampled P, both keyings, on a ``LONG_LIST_LENGTH``-bucket
list, the decision each side takes, for the rows it computed itself, is the least fitting bucket of the
WHOLE keyed list (restated from the definitions in proofs/theorems/claims.py, not from spec/selection.py), and replay's
tripwire passes exactly when that bucket is listed with room for every rank's rows of replay's layout. The
rows themselves are the chains' business (every P, 3-bucket lists); a fourth check proves that the rows each
side computes on the long list, and replay's layout, are the ones it computes on the chains' short list of the
same batch (built under other names), so what the chains prove about them holds on the long list too. The
steps from there to each invariant (proofs/theorems/end_to_end.py) read the list only through the decision and the
tripwire, which the first three checks pin to the whole list. Those checks are rank 0's; a fifth part proves,
on the same long list, that every other rank (each up to P = 8, then P/2 and P-1) computes the same rows and
key and admits and replays as rank 0 does, for any per-rank loads, so a rank that stops early is refuted too.
Up to P = 8 the local keying also runs DualChunkSwap's own loads (its two instances, real requests; decisions and
tripwire, not the rows check), so a side that stops early only under one layout's name is refuted there as well.
"""

from __future__ import annotations

import z3

from cpgraph.proofs.theorems.claims import bucket_fits, is_active, is_listed_with_room, size_fits, sizes_holding_themselves
from cpgraph.proofs.theorems.end_to_end_local import ANY_LAYOUT, FACTOR, INSTANCE_MAX_P, INSTANCES
from cpgraph.proofs.engine.obligation import Query
from cpgraph.proofs.theorems.setting import (
    FACTORS,
    LIST_LENGTH,
    LONG_LIST_LENGTH,
    LONG_RLIMIT,
    Admit,
    ReplayFn,
    Setting,
    every_rank_alike,
    setting,
    strategies_at,
)
from cpgraph.spec.admission import admit
from cpgraph.spec.logic import And, Implies
from cpgraph.spec.replay import live_layout, replay
from cpgraph.spec.selection import Selection
from cpgraph.spec.terms import BoolTerm, IntTerm, all_of, any_of

def _short(s: Setting) -> Setting:
    """The same batch, n and strategy on the end-to-end chains' own ``LIST_LENGTH``-bucket list (its buckets
    are the first of the long list's: the same variables)."""
    return setting(s.cp_size, s.strategy, s.factor, keying=s.keying, form=s.form, list_length=LIST_LENGTH)


def whole_list_settings(cp_size: int) -> list[Setting]:
    """The settings at ``cp_size``, every one on a ``LONG_LIST_LENGTH``-bucket list: every class-encodable
    strategy there under the global keying (F = 2: the window reads F, the list read does not), and under the
    local keying, up to P = 8, DualChunkSwap's own loads (its two instances: real requests, so an early stop
    taken only under one of their names is refuted), then any layout."""
    out = [setting(cp_size, s, FACTORS[0], list_length=LONG_LIST_LENGTH) for s in strategies_at(cp_size)]
    out += [setting(cp_size, sid, FACTOR, keying="local", form="requests", list_length=LONG_LIST_LENGTH)
            for sid in INSTANCES if cp_size <= INSTANCE_MAX_P]
    out.append(setting(cp_size, ANY_LAYOUT, FACTOR, keying="local", form="any", list_length=LONG_LIST_LENGTH))
    return out


def every_rank_settings(cp_size: int) -> list[Setting]:
    """The settings of the every-rank part, on a ``LONG_LIST_LENGTH``-bucket list: any layout (free per-rank
    loads, A = 1) under each keying. The rows' alignment is the consensus theorems' business (every P, 3-bucket
    lists); here, under A = 2P, z3 takes seconds per rank at P = 32 to see that equal aligned rows leave the same
    decision (measured: 7 s against 0.02 s)."""
    return [setting(cp_size, ANY_LAYOUT, FACTORS[0], keying=keying, form="any", list_length=LONG_LIST_LENGTH)
            for keying in ("global", "local")]


def _least_fitting(s: Setting, chosen: Selection, rows: IntTerm) -> BoolTerm:
    """``chosen`` is the keyed decision over the whole list for ``rows``: admitted exactly when the batch
    passes the keying's gate (global: CP-active, restated) and some bucket fits, and then the least fitting
    bucket. Global: a bucket fits when it is in [n, F*n], recorded, with capacity >= rows; local: a size fits
    when it is at or above the key m (= rows), every listed size holding itself."""
    n = len(s.capture)
    if s.keying == "global":
        fits = [bucket_fits(s.capture, i, s.n, s.factor, rows) for i in range(n)]
        gate: BoolTerm = is_active(s.batch, s.n, s.strategy)
    else:
        fits = [size_fits(s.capture, i, rows) for i in range(n)]
        gate = z3.BoolVal(True)  # the local keying has no gate
    b = s.capture.buckets
    member = any_of(And(f, chosen.bucket == b[i]) for i, f in enumerate(fits))
    least = all_of(Implies(f, chosen.bucket <= b[i]) for i, f in enumerate(fits))
    return And(chosen.admitted == And(gate, any_of(fits)), Implies(chosen.admitted, And(member, least)))


def admission_and_replay_read_the_whole_list(
    cp_size: int, *, admit_fn: Admit = admit, replay_fn: ReplayFn = replay
) -> tuple[Query, ...]:
    """At every sampled P, on a 32-bucket list, both keyings: admission's decision and replay's are the least
    fitting bucket of the whole keyed list for the rows each computed, replay's tripwire passes exactly when
    its bucket is listed with room for every rank's rows of its layout, those rows and that layout are the
    ones each side computes on the chains' 3-bucket list of the same batch, and every other rank admits and
    replays as rank 0 does on the long list."""
    # Every other deciding rank (each up to P = 8; P/2 and P-1 above) admits and replays as rank 0 does on the long
    # list, for any per-rank loads, under both keyings: the checks below are rank 0's, so a rank that stops reading
    # the list early (or reads it otherwise) is refuted here. First: its queries are the cheap ones (0.01 s each).
    out: list[Query] = []
    for every in every_rank_settings(cp_size):
        out += every_rank_alike("admission_and_replay_read_the_whole_list", every, admit_fn, replay_fn)
    for s in whole_list_settings(cp_size):
        a = s.admitted(admit_fn)
        r = s.replayed(replay_fn, layout=live_layout)
        keyed = s.capture if s.keying == "global" else sizes_holding_themselves(s.capture)
        shown = (("n", s.n), ("tokens", s.batch.tokens))
        checks: tuple[tuple[str, BoolTerm, BoolTerm, tuple[tuple[str, IntTerm], ...]], ...] = (
            ("admission's decision", _least_fitting(s, a.selection, a.required), a.holds,
             (("admitted", a.selection.bucket), ("rows", a.required))),
            ("replay's decision", _least_fitting(s, r.selection, r.required), r.holds,
             (("replayed", r.selection.bucket), ("rows", r.required))),
            ("replay's tripwire", r.succeeded == And(r.selection.admitted,
                                                     is_listed_with_room(keyed, r.selection.bucket, r.layout_loads)),
             r.holds, (("replayed", r.selection.bucket),)),
        )
        # The rows each side computes (and replay's layout) are the ones it computes on the chains' short list of
        # the same batch, built under other names: what the chains prove about the rows holds on the long list.
        # Not for DualChunkSwap's own requests: z3 takes minutes (274 s at P = 8) to see two builds of their
        # chunk sizes agree; the any-layout setting, named dual_chunk_swap, checks the local rows instead.
        if s.form != "requests":
            short = _short(s)
            a3 = short.admitted(admit_fn, "admit.short")
            r3 = short.replayed(replay_fn, "replay.short", layout=live_layout)
            rows = And(a.required == a3.required, r.required == r3.required,
                       all_of(x == y for x, y in zip(r.layout_loads, r3.layout_loads)))
            checks += (("rows as on the short list", rows, And(*short.hypotheses, a.holds, r.holds, a3.holds, r3.holds),
                        (("rows", a.required), ("short-list rows", a3.required))),)
        for part, claim, holds, more in checks:
            out.append(Query(f"{part} {s.label}", claim, (*s.hypotheses, holds), size=s.size, shown=(*shown, *more),
                             rlimit=LONG_RLIMIT))
    return tuple(out)
