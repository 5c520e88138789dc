"""Command-line values checked before any work: bounded numbers (argparse types whose errors name the value
and the limit) and output paths that must be writable (a UsageError naming the flag, the path and why)."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

from cpgraph.exits import UsageError


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
