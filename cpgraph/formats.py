"""Result documents: text and Markdown tables, wrapped text lines, JUnit XML (the schema CI test reporters
read) and JSON."""

from __future__ import annotations

import re
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


WIDTH = 100  # a line that shows a batch fits a terminal this wide (a batch too long for it stays whole)
_GLUE = "\ue000"  # stands for a space inside a kept piece while wrapping
_NUMBERS = re.compile(r"\[[-\d, ]*\]|\([-\d, ]*\)")  # a list or tuple of ints: never split


def wrap(text: str, width: int = WIDTH, *, keep: Sequence[str] = (), indent: str = "  ") -> list[str]:
    """``text`` in lines of at most ``width`` characters, continuation lines indented by ``indent``; never
    broken inside one of ``keep`` (a batch such as ``extend_seq_lens=[9] * 107 + [8]`` stays one piece, so
    it still pastes) or inside a bracketed list of numbers, and a leading indent of ``text`` is kept on
    its first line. A piece longer than ``width`` gets a line of its own."""
    for piece in keep:
        text = text.replace(piece, piece.replace(" ", _GLUE))
    text = _NUMBERS.sub(lambda m: m.group(0).replace(" ", _GLUE), text)
    lines = textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
    return [line.replace(_GLUE, " ") for line in lines] or [""]


def text_table(rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, a rule under the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def md_table(rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table (pipes in cells escaped)."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(cell(c) for c in rows[0]) + " |", "|" + " --- |" * len(rows[0])]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows[1:]]
    return "\n".join(out)


@dataclass(frozen=True)
class JUnitCase:
    """One JUnit testcase: an invariant or theorem. ``outcome``: passed, failure (refuted/violated),
    error (unknown: no verdict) or skipped."""

    name: str
    classname: str
    outcome: str = "passed"
    seconds: float = 0.0
    message: str = ""
    detail: str = ""


_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _clean(text: str) -> str:
    return _XML_BAD.sub("?", re.sub(r"\033\[[0-9;]*m", "", text))


def junit(suite: str, cases: Sequence[JUnitCase], *, seconds: float = 0.0, properties: dict[str, str] | None = None) -> str:
    """JUnit XML (the schema Jenkins, GitLab and GitHub test reporters read): one testsuite, one
    testcase per case."""
    if any(c.outcome not in ("passed", "failure", "error", "skipped") for c in cases):
        raise ValueError(f"JUnit outcomes are passed, failure, error, skipped; got {sorted({c.outcome for c in cases})}")
    failures = sum(c.outcome == "failure" for c in cases)
    errors = sum(c.outcome == "error" for c in cases)
    skipped = sum(c.outcome == "skipped" for c in cases)
    root = ET.Element("testsuites", name="cpgraph", tests=str(len(cases)), failures=str(failures), errors=str(errors),
                      time=f"{seconds:.3f}")
    node = ET.SubElement(root, "testsuite", name=_clean(suite), tests=str(len(cases)), failures=str(failures),
                         errors=str(errors), skipped=str(skipped), time=f"{seconds:.3f}")
    if properties:
        props = ET.SubElement(node, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", name=key, value=_clean(value))
    for c in cases:
        case = ET.SubElement(node, "testcase", name=_clean(c.name), classname=_clean(c.classname), time=f"{c.seconds:.3f}")
        if c.outcome != "passed":
            tag = {"failure": "failure", "error": "error", "skipped": "skipped"}[c.outcome]
            child = ET.SubElement(case, tag, message=_clean(c.message), type=tag)
            if c.detail:
                child.text = _clean(c.detail)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def json_dumps(data: Any) -> str:
    import json

    return json.dumps(data, indent=2)
