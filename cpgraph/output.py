"""One output layer for every subcommand: exit codes, --format/--json/--quiet flags, bounded numeric
flags, colour, progress on stderr, text/Markdown tables and JUnit XML.

Exit codes (the README's table):
    0 all hold / proved; 1 a violation or refutation; 2 usage error; 3 unknown (no verdict);
    4 internal error (a cpgraph bug); 130 interrupted.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

OK = 0
FOUND = 1
USAGE = 2
UNKNOWN = 3
INTERNAL = 4
INTERRUPTED = 130

EXIT_CODES = (
    (OK, "every invariant holds / every theorem proved / no design crashes"),
    (FOUND, "a violation, refutation or crash was found (the counterexample is shown)"),
    (USAGE, "usage error: bad flag or value, unreadable or invalid file, policy that breaks the protocol"),
    (UNKNOWN, "unknown: the solver gave up or a budget ran out before a required verdict"),
    (INTERNAL, "internal error: a bug in cpgraph (one line; the traceback with --debug)"),
    (INTERRUPTED, "interrupted (Ctrl-C)"),
)

FORMATS = ("text", "json", "md", "junit")


class _Interrupt:
    """Set by the command line's SIGINT handler: a real Ctrl-C, told apart from a KeyboardInterrupt
    that a policy raises (cpgraph/check/calls.py reads it)."""

    real = False


INTERRUPT = _Interrupt()


class _Process:
    """``standalone``: this process is the ``cpgraph`` command itself (``main()`` with no argv), so a
    subcommand may fork a supervisor that outlives it (cpgraph/check/calls.py supervise())."""

    standalone = False


PROCESS = _Process()


class UsageError(Exception):
    """A bad command line or input file: printed as one line, exit 2."""


def solver_leaves_ctrl_c_to_python() -> None:
    """z3 catches SIGINT during a check by default (it cancels the query and answers unknown, and the
    Ctrl-C is lost); with this the interrupt reaches Python as soon as the running query returns, and
    the command exits 130."""
    import z3

    z3.set_param("ctrl_c", False)


def bounded_int(flag: str, low: int, high: int, why: str = "") -> Callable[[str], int]:
    """An argparse type: an int in low..high, else one line naming the flag (argparse adds
    'argument FLAG:'), the value and the limit."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an int in {low}..{high}, got {text!r}") from None
        if not low <= value <= high:
            shown = text if len(text) <= 24 else text[:21] + "..."
            raise argparse.ArgumentTypeError(
                f"must be an int in {low}..{high}{f' ({why})' if why else ''}, got {shown}"
            )
        return value

    return parse


def bounded_seconds(flag: str, high: float) -> Callable[[str], float]:
    """An argparse type: seconds in (0, high], finite."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number of seconds in (0, {high:g}], got {text!r}") from None
        if not (math.isfinite(value) and 0 < value <= high):
            raise argparse.ArgumentTypeError(f"must be a number of seconds in (0, {high:g}], got {text}")
        return value

    return parse


def add_output_flags(parser: argparse.ArgumentParser, *, default: str = "text") -> None:
    """--format text|json|md|junit, --json (alias of --format json), --quiet."""
    parser.add_argument("--format", choices=FORMATS, default=default,
                        help="output on stdout: text (default), json, md (Markdown) or junit (JUnit XML for CI)")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="alias of --format json")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or notes on stderr (errors still print)")


@dataclass(frozen=True)
class Output:
    """Where a subcommand writes: the result on stdout in ``format``; notes and progress on stderr."""

    command: str
    format: str = "text"
    quiet: bool = False

    @staticmethod
    def of(args: argparse.Namespace, command: str) -> Output:
        return Output(command, getattr(args, "format", "text") or "text", bool(getattr(args, "quiet", False)))

    @property
    def machine(self) -> bool:
        """json/junit: stdout carries exactly one document."""
        return self.format in ("json", "junit")

    def note(self, message: str) -> None:
        if not self.quiet:
            print(f"cpgraph {self.command}: {message}", file=sys.stderr, flush=True)

    def error(self, message: str) -> None:
        print(f"cpgraph {self.command}: error: {message}", file=sys.stderr, flush=True)

    def result(self, text: str) -> None:
        """The result document on stdout (text gets colour on a terminal)."""
        if self.format == "text":
            text = highlight(text, sys.stdout)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()

    def progress(self, label: str = "") -> Progress:
        return Progress(f"cpgraph {self.command}" + (f" {label}" if label else ""), enabled=not self.quiet)


class Progress:
    """A status line on stderr: rewritten in place on a terminal; on a pipe one line at most every
    ``every_s`` seconds (and the last one), so logs stay short."""

    def __init__(self, prefix: str, *, enabled: bool = True, stream: IO[str] | None = None, every_s: float = 5.0) -> None:
        self.prefix = prefix
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _isatty(self.stream)
        self.every_s = every_s
        self.last = 0.0
        self.open = False

    def __call__(self, message: str, *, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r\033[K" + f"{self.prefix}: {message}"[:200])
            self.open = True
            if final:
                self.stream.write("\n")
                self.open = False
        elif final or now - self.last >= self.every_s:
            self.stream.write(f"{self.prefix}: {message}\n")
            self.last = now
        self.stream.flush()

    def done(self) -> None:
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
            self.open = False


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def use_colour(stream: IO[str]) -> bool:
    """Colour only on a terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb."""
    return _isatty(stream) and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


_PAINT = {"red": "31;1", "green": "32;1", "yellow": "33;1"}
_WORDS = re.compile(
    r"\b(PROVED|SAFE|OK|all proved|REFUTED|FAILED|NOT all proved|violated|refuted|UNKNOWN|BOUNDED|NOT PROVED|unknown|proved)\b"
)
_COLOUR_OF = {
    "PROVED": "green", "SAFE": "green", "OK": "green", "all proved": "green", "proved": "green",
    "REFUTED": "red", "FAILED": "red", "NOT all proved": "red", "violated": "red", "refuted": "red",
    "UNKNOWN": "yellow", "BOUNDED": "yellow", "NOT PROVED": "yellow", "unknown": "yellow",
}


def paint(text: str, colour: str, stream: IO[str] | None = None) -> str:
    if not use_colour(stream if stream is not None else sys.stdout):
        return text
    return f"\033[{_PAINT[colour]}m{text}\033[0m"


def highlight(text: str, stream: IO[str]) -> str:
    """Verdict words coloured (green/red/yellow) when ``stream`` is a terminal; unchanged otherwise."""
    if not use_colour(stream):
        return text
    return _WORDS.sub(lambda m: f"\033[{_PAINT[_COLOUR_OF[m.group(1)]]}m{m.group(1)}\033[0m", text)


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
class Case:
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


def junit(suite: str, cases: Sequence[Case], *, seconds: float = 0.0, properties: dict[str, str] | None = None) -> str:
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


def writable_file(flag: str, path: str) -> str:
    """Check before any work that ``path`` can be written as a file (its folder is created as needed);
    raises UsageError naming the flag, the path and the reason."""
    if not path:
        raise UsageError(f"{flag} needs a file path, got ''")
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path!r} is a directory; give a file path")
    folder = os.path.dirname(os.path.abspath(path))
    _writable_dir(flag, folder, path)
    if os.path.exists(path):
        try:
            with open(path, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise UsageError(f"{flag} {path!r} cannot be written: {exc.strerror or exc}") from None
    return path


def writable_dir(flag: str, path: str) -> str:
    """Check that ``path`` is (or can be made) a writable directory; raises UsageError."""
    if not path:
        raise UsageError(f"{flag} needs a directory, got ''")
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path!r} exists and is not a directory; give a directory (PNGs are written into it)")
    _writable_dir(flag, os.path.abspath(path), path)
    return path


def _writable_dir(flag: str, folder: str, shown: str) -> None:
    probe = folder
    while not os.path.exists(probe):  # the nearest existing ancestor decides whether it can be created
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        raise UsageError(f"{flag} {shown!r}: {probe!r} is not a directory")
    import tempfile

    try:  # a real probe: permission bits do not tell (root, read-only mounts, /proc)
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".cpgraph-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{flag} {shown!r}: cannot create a file in {probe!r} ({exc.strerror or exc})") from None


def json_dumps(data: Any) -> str:
    import json

    return json.dumps(data, indent=2)
