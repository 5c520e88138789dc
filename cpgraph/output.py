"""One output layer for every subcommand: where a subcommand writes (``Output``: the result on stdout in its
--format, notes and progress on stderr) and the --format/--json/--quiet flags. Its parts, every name
importable from here: exit codes, usage errors and Ctrl-C (cpgraph/exits.py), bounded numeric flags and
writable paths (cpgraph/flags.py), colour and progress (cpgraph/terminal.py), text/Markdown tables, JUnit
XML and JSON (cpgraph/formats.py).

Exit codes (the README's table):
    0 all hold / proved; 1 a violation or refutation; 2 usage error; 3 unknown (no verdict);
    4 internal error (a cpgraph bug); 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from cpgraph.exits import (
    EXIT_CODES,
    FOUND,
    INTERNAL,
    INTERRUPT,
    INTERRUPTED,
    OK,
    PROCESS,
    UNKNOWN,
    USAGE,
    UsageError,
    solver_leaves_ctrl_c_to_python,
)
from cpgraph.flags import bounded_int, bounded_seconds, writable_dir, writable_file
from cpgraph.formats import WIDTH, JUnitCase, json_dumps, junit, md_table, text_table, wrap
from cpgraph.terminal import Progress, highlight, paint, use_colour

__all__ = [
    "EXIT_CODES", "FORMATS", "FOUND", "INTERNAL", "INTERRUPT", "INTERRUPTED", "OK", "PROCESS", "UNKNOWN", "USAGE",
    "JUnitCase", "Output", "Progress", "UsageError", "add_output_flags", "bounded_int", "bounded_seconds", "highlight",
    "json_dumps", "junit", "md_table", "paint", "solver_leaves_ctrl_c_to_python", "text_table", "use_colour",
    "writable_dir", "writable_file", "WIDTH", "wrap",
]

FORMATS = ("text", "json", "md", "junit")


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
