"""The terminal: a progress line on stderr, and colour only where a person reads it (a terminal, no NO_COLOR,
no TERM=dumb)."""

from __future__ import annotations

import os
import re
import sys
import time
from typing import IO


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
