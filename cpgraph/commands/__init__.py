"""The subcommands (cpgraph/cli.py registers each module's ``add_parser``) and what they share."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypeVar

from cpgraph.output import UsageError

T = TypeVar("T")


def command_parser(subparsers: Any, name: str, help: str, doc: str | None) -> argparse.ArgumentParser:
    """The subcommand's parser: ``help`` in the command list, the module docstring after its first line
    (``doc``: the usage line) as the description, its line breaks kept."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help,
        description=(doc or "").split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def read_or_usage(what: str, ref: str, read: Callable[[str], T], invalid: type[Exception], encoding: str) -> T:
    """``read(ref)``; its own ``invalid`` error, a file not in UTF-8 (``encoding`` names the file's kind)
    or one that cannot be read is a usage error naming ``what`` and ``ref``."""
    try:
        return read(ref)
    except invalid as exc:
        raise UsageError(str(exc)) from None
    except UnicodeDecodeError:
        raise UsageError(f"{what} {ref!r}: not a UTF-8 {encoding} file") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{what} {ref!r}: cannot be read: {exc}") from None
