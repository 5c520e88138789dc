"""Render a review as text (terminal), md (paste into a pull-request review) or json (machines)."""

from __future__ import annotations

import json
from fractions import Fraction
from dataclasses import asdict, is_dataclass
from typing import Any

from cpgraph.design.diff import Diff
from cpgraph.design.efficiency import Efficiency
from cpgraph.design.report import Review
from cpgraph.design.review import DESCRIPTIONS, InvariantResult, Witness
from cpgraph.design.schema import Design
from cpgraph.formats import WIDTH, wrap
from cpgraph.reference.lists import compact

MARK = {"proved": "PROVED", "refuted": "REFUTED", "bounded": "BOUNDED", "unknown": "UNKNOWN"}
_UNDER = " " * 11  # a verdict's details start under its invariant's name; every text line fits WIDTH


def summary(design: Design) -> str:
    buckets = design.buckets
    listed = ", ".join(str(b) for b in buckets[:4]) + (f", ... {buckets[-1]}" if len(buckets) > 4 else "")
    if not design.keyed.windowed:  # local keying: none of the global keying's knobs
        split = f" admission={design.admits_by}" if design.split else ""
        return (
            f"{design.strategy} P={design.cp_size} keying={design.keying} (key {design.keyed.key_name}, a size s "
            f"holds s rows){split} selector={design.selector} sizes={len(buckets)} [{listed}]"
        )
    rule = design.capacity_rule + (f" R={design.max_requests}" if design.capacity_rule == "headroom" else "")
    return (
        f"{design.strategy} P={design.cp_size} A={design.align_size} F={design.max_padding_factor} "
        f"selector={design.selector} layout={design.layout_basis} capacity={rule} "
        f"buckets={len(buckets)} [{listed}]"
    )


def witness_lines(w: Witness, width: int = WIDTH - len(_UNDER)) -> list[str]:
    """The witness (its lengths compact: ``[9] * 107 + [8]``), what the design does with it and the
    reference's replay, in lines of at most ``width`` characters (the text report indents them by 11)."""
    o = w.outcome
    if o.key is not None:  # local keying: the key m, the size admitted and the one replayed
        return _keyed_witness_lines(w)
    where = "eager" if o.bucket is None else f"bucket {o.bucket}"
    cap = "" if o.capacity[0] is None else f", capacity {o.capacity[0]} rows"
    rows = "" if o.replay_rows[0] is None else f", replay needs {o.replay_rows[0]} rows"
    batch = f"extend_seq_lens={compact(list(w.extend_seq_lens))}"
    buckets = compact(list(o.buckets))
    return wrap(
        f"{batch} (n={w.num_tokens}, {len(w.extend_seq_lens)} requests): "
        f"{where}{cap}{rows}; live required_local_tokens={o.required_local_tokens}", width, keep=(batch,),
    ) + wrap(f"per-rank buckets {buckets}; reference replay: {w.replay}", width, keep=(buckets,))


def _keyed_witness_lines(w: Witness) -> list[str]:
    o = w.outcome
    if o.bucket is None:
        where = "eager"
    elif o.replayed_bucket != o.bucket:
        where = f"admitted size {o.bucket}, replay keyed by {o.replayed_bucket}"
    else:
        where = f"size {o.bucket} ({o.capacity[0]} rows per rank)"
    return [
        f"extend_seq_lens={list(w.extend_seq_lens)} (n={w.num_tokens}, {len(w.extend_seq_lens)} requests): "
        f"largest rank-local rows m={o.key}; {where}",
        f"per-rank sizes admitted {list(o.buckets)}" + (f", replayed {list(o.replayed)}" if o.replayed else "")
        + f"; reference replay: {w.replay}",
    ]


def _invariant_text(r: InvariantResult) -> list[str]:
    out = wrap(f"  {MARK[r.status]:8} {r.invariant:21} {r.scope}  ({r.seconds:.1f} s)", indent=_UNDER)
    if r.witness is not None:
        out += [_UNDER + line for line in witness_lines(r.witness)]
    if r.note:
        out += wrap(f"{_UNDER}note: {r.note}", indent=_UNDER + "  ")
    return out


def _ranges(pairs: tuple[tuple[int, int], ...], limit: int = 4) -> str:
    if not pairs:
        return "none"
    text = ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in pairs[:limit])
    return text + (f" (+{len(pairs) - limit} more)" if len(pairs) > limit else "")


def _efficiency_text(e: Efficiency, design: Design) -> list[str]:
    scope = "any number of requests" if e.request_bound == 0 else f"1..{e.request_bound} requests"
    if not e.computed:
        return [f"Efficiency: {e.note}"] + _static_text(e, design)
    labels = ("global padding ratio B/n", "CP-local padding ratio P*rows/n")
    if e.keyed_locally:
        out = [f"Efficiency (exact over every batch of {scope}; keyed by the largest rank-local rows m):"]
        labels = ("size over key s/m", "CP-local padding ratio P*s/n")
    else:
        out = [f"Efficiency (exact over CP-active batches of {scope}):"]
    unit = "size" if e.keyed_locally else "bucket"
    for label, x in zip(labels, (e.worst_global, e.worst_local)):
        if x is None:
            out.append(f"  worst {label}: no batch is admitted")
        else:
            example = compact(list(x.extend_seq_lens))
            out += wrap(
                f"  worst {label}: {x.ratio:.3f} at n={x.num_tokens} ({x.requests} requests, {unit} {x.bucket}), "
                f"e.g. {example}", WIDTH, keep=(example,), indent="    ",
            )
    out.append(f"  eager fallback by request count (token ranges; n > {e.top} always runs eagerly):")
    for region in e.regions:
        share = region.eager_points / region.points if region.points else 0.0
        label = "any R" if region.requests == 0 else f"R={region.requests}"
        out += wrap(
            f"    {label}: some batches eager at n in {_ranges(region.some_eager)}; "
            f"every batch eager at n in {_ranges(region.all_eager)} ({share:.1%} of token counts n)", indent="      ",
        )
    if e.note:
        out.append(f"  note: {e.note}")
    return out + _static_text(e, design)


def _static_text(e: Efficiency, design: Design) -> list[str]:
    out = [f"  static rows per rank per bucket (x {design.bytes_per_row} bytes/row):"]
    cells = []
    for b in e.buckets:
        extra = f" (+{b.extra_rows})" if b.extra_rows else ""
        cells.append(f"{b.bucket}:{'-' if b.rows is None else b.rows}{extra}")
    for i in range(0, len(cells), 8):
        out.append("    " + "  ".join(cells[i : i + 8]))
    extra_total = sum(b.extra_rows or 0 for b in e.buckets)
    out.append(
        f"  total {e.static_rows} rows/rank = {e.static_bytes / 2**20:.1f} MiB/rank over {len(e.buckets)} buckets"
        + (f"; {extra_total} rows over the single-request rule (+n in brackets)" if extra_total else "")
    )
    return out


def _diff_text(d: Diff) -> list[str]:
    out = wrap(
        f"Semantic diff {d.old.name} -> {d.new.name} (solver-found classes and minimal witnesses; "
        "R= lines: exact token ranges by request count)"
    )
    for c in d.classes:
        if c.status != "found":
            out += wrap(f"  {c.kind:9} {c.status}: {c.note}", indent=" " * 12)
            continue
        region = f"n in [{c.region[0]}, {c.region[1]}] ({c.note})" if c.region else ""
        out += wrap(f"  {c.kind:9} found: {region}", indent=" " * 12)
        for requests, ranges in c.ranges:
            label = "any R" if requests == 0 else f"R={requests}"
            out += wrap(f"            {label}: n in {_ranges(ranges, 5)}", indent=" " * 14)
        for ch in c.changes:
            batch = f"extend_seq_lens={compact(list(ch.extend_seq_lens))} (n={sum(ch.extend_seq_lens)})"
            out += ["            " + line for line in wrap(f"{ch.old} -> {ch.new}: {batch}", WIDTH - 12, keep=(batch,))]
        if c.more:
            out.append("            ... more decision changes of this class exist")
    return out


def render_text(r: Review) -> str:
    d = r.design
    out = wrap(f"Design {d.name} ({d.source or 'inline'}): {summary(d)}") + [""]
    out.append("Lemmas (the any-number-of-requests argument):")
    out += [line for x in r.lemmas for line in wrap(f"  {MARK.get(x.status, x.status):8} {x.name}: {x.statement}", indent=_UNDER)]
    out += ["", f"Invariants of {d.name}:"]
    for inv in r.invariants:
        out += _invariant_text(inv)
    out += [""] + _efficiency_text(r.efficiency, d)
    if r.old is not None:
        old, results = r.old
        out += [""] + wrap(f"Old design {old.name} ({old.source or 'inline'}): {summary(old)}")
        for inv in results:
            out += _invariant_text(inv)
    if r.diff is not None:
        out += [""] + _diff_text(r.diff)
    verdict = {0: "SAFE: every invariant proved", 1: "REFUTED", 3: "UNKNOWN: " + "; ".join(r.unknowns)}[r.exit_code]
    refuted = [x.invariant for x in r.invariants if x.status == "refuted"]
    out += [""] + wrap(f"Verdict for {d.name}: {verdict}" + (f" ({', '.join(refuted)})" if refuted else "") + f"  [{r.seconds:.1f} s]")
    return "\n".join(out) + "\n"


def _md_invariants(results: tuple[InvariantResult, ...]) -> list[str]:
    out = ["| invariant | verdict | scope | counterexample |", "| --- | --- | --- | --- |"]
    for x in results:
        cex = ""
        if x.witness is not None and x.witness.outcome.key is not None:
            o = x.witness.outcome
            where = "eager" if o.bucket is None else (
                f"admitted size {o.bucket}, replay keyed by {o.replayed_bucket}" if o.replayed_bucket != o.bucket
                else f"size {o.bucket}"
            )
            cex = f"`extend_seq_lens={list(x.witness.extend_seq_lens)}` n={x.witness.num_tokens}: m={o.key}, {where}"
        elif x.witness is not None:
            o = x.witness.outcome
            cex = (
                f"`extend_seq_lens={compact(list(x.witness.extend_seq_lens))}` n={x.witness.num_tokens}: bucket {o.bucket}, "
                f"capacity {o.capacity[0]}, needs {o.replay_rows[0]} rows"
            )
        out.append(f"| `{x.invariant}` | **{x.status}** | {x.scope} | {cex} |")
    return out


def render_md(r: Review) -> str:
    d = r.design
    refuted = [x.invariant for x in r.invariants if x.status == "refuted"]
    verdict = "✅ every invariant proved" if r.exit_code == 0 else (
        f"❌ refuted: {', '.join(refuted)}" if refuted else "⚠️ not proved for every batch"
    )
    out = [f"### cpgraph review: `{d.name}` — {verdict}", "", f"`{summary(d)}`", ""]
    out += _md_invariants(r.invariants)
    for x in r.invariants:
        if x.witness is not None:
            out += ["", f"<details><summary><code>{x.invariant}</code> replay</summary>", "", "```"]
            out += witness_lines(x.witness) + ["```", "</details>"]
    out += ["", "#### Efficiency", "", "```"] + _efficiency_text(r.efficiency, d) + ["```"]
    if r.old is not None:
        old, results = r.old
        out += ["", f"#### Old design `{old.name}`", "", f"`{summary(old)}`", ""] + _md_invariants(results)
    if r.diff is not None:
        out += ["", f"#### Semantic diff `{r.diff.old.name}` → `{r.diff.new.name}`", "", "```"]
        out += _diff_text(r.diff) + ["```"]
    out += ["", f"<sub>{len(r.invariants)} invariants, {r.seconds:.1f} s, z3 + reference replay</sub>"]
    return "\n".join(out) + "\n"


def _plain(value: Any) -> Any:
    if isinstance(value, Fraction):  # a rational padding factor: 2, or "3/2" as written in a design file
        return int(value) if value.denominator == 1 else str(value)
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def render_json(r: Review) -> str:
    data = {
        "design": _plain(r.design),
        "exit_code": r.exit_code,
        "seconds": round(r.seconds, 3),
        "lemmas": _plain(r.lemmas),
        "invariants": [dict(_plain(x), description=DESCRIPTIONS[x.invariant]) for x in r.invariants],
        "efficiency": {
            **{k: v for k, v in _plain(r.efficiency).items() if k != "curve"},  # the curve is for --plot
            "static_rows": r.efficiency.static_rows,
            "static_bytes": r.efficiency.static_bytes,
        },
        "old": None if r.old is None else {"design": _plain(r.old[0]), "invariants": _plain(r.old[1])},
        "diff": None if r.diff is None else {"old": r.diff.old.name, "new": r.diff.new.name, "classes": _plain(r.diff.classes)},
    }
    return json.dumps(data, indent=2) + "\n"


def render_junit(r: Review) -> str:
    """JUnit XML: one testcase per invariant of the design (refuted -> failure with the replayed
    counterexample; bounded/unknown -> error: no verdict), and one error per diff class left unknown."""
    from cpgraph.output import JUnitCase, junit

    cases = []
    for x in r.invariants:
        outcome = {"proved": "passed", "refuted": "failure"}.get(x.status, "error")
        detail = "\n".join(witness_lines(x.witness)) if x.witness is not None else (x.note or "")
        message = "" if outcome == "passed" else f"{x.status}: {x.note or DESCRIPTIONS[x.invariant]}"
        cases.append(JUnitCase(x.invariant, f"cpgraph.review.{r.design.name}", outcome, x.seconds, message, detail))
    if r.diff is not None:
        for c in r.diff.classes:
            if c.status == "unknown":
                cases.append(JUnitCase(f"diff_{c.kind}", f"cpgraph.review.{r.diff.old.name}->{r.diff.new.name}", "error", 0.0,
                                  f"unknown: {c.note}"))
    return junit(f"cpgraph review {r.design.name}", cases, seconds=r.seconds, properties={"design": summary(r.design)})


RENDERERS = {"text": render_text, "md": render_md, "json": render_json, "junit": render_junit}
