"""Which lines of a checked tree differ from the release it claims to be, as released.

A regression planted in, or a fix patched into, a release is cited at its own lines first (issue #44: "the
planted line cited"; a fix never "reported as the old bug" at lines it did not change). ``Pristine(root,
package, version)`` compares a file of ``root`` against the same file of that release unpacked in cpgraph's
cache (``releases.cache_dir()/<package>/<version>``, or a partial unpack ``<version>-*``); it never
downloads. When no pristine copy is cached, or ``root`` is that copy, nothing is changed.

Changed means replaced or inserted (difflib's line matching): a deleted line has no line in ``root`` to cite.
A statement is changed when one of its lines is, unless its lines occur whole in the released file
(``unchanged_block``: difflib may align a repeated block, such as a call copied below itself, to the copy).
"""

from __future__ import annotations

import difflib
import os

from cpgraph.adapters.releases import cache_dir


def pristine_roots(package: str, version: str) -> tuple[str, ...]:
    """The pristine unpacks of ``package`` ``version`` in cpgraph's cache (never fetched here): the folder
    ``version`` and any ``version-*`` (a partial unpack), each holding the ``WHEEL-FILE`` an unpack writes."""
    base = os.path.join(str(cache_dir()), package)
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return ()
    return tuple(os.path.join(base, name) for name in names
                 if (name == version or name.startswith(version + "-")) and os.path.isfile(os.path.join(base, name, "WHEEL-FILE")))


def released(root: str, pristine: tuple[str, ...], rel: str) -> list[str] | None:
    """The lines of ``rel`` as released (the first of ``pristine`` that has it); None when none has it or
    ``root`` is that unpack."""
    source = next((folder for folder in pristine if os.path.isfile(os.path.join(folder, rel))), None)
    if source is None or os.path.realpath(source) == os.path.realpath(root):
        return None
    try:
        with open(os.path.join(source, rel), encoding="utf-8") as handle:
            return handle.read().splitlines()
    except OSError:
        return None


def changed_in(root: str, pristine: tuple[str, ...], rel: str) -> frozenset[int]:
    """The line numbers (1-based) of ``root``/``rel`` replaced or inserted relative to the same file in the
    first of ``pristine`` that has it. Empty when none has it, ``root`` is that unpack, or a file is unreadable."""
    source = next((folder for folder in pristine if os.path.isfile(os.path.join(folder, rel))), None)
    if source is None or os.path.realpath(source) == os.path.realpath(root):
        return frozenset()
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as handle:
            mine = handle.read().splitlines()
        with open(os.path.join(source, rel), encoding="utf-8") as handle:
            theirs = handle.read().splitlines()
    except OSError:
        return frozenset()
    if mine == theirs:
        return frozenset()
    out: set[int] = set()
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, theirs, mine, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            out.update(range(j1 + 1, j2 + 1))
    return frozenset(out)


class Pristine:
    """The lines of one checked tree that differ from ``package`` ``version`` as released (module docstring),
    per file, computed once."""

    def __init__(self, root: str, package: str, version: str) -> None:
        self.root, self.package, self.version = root, package, version
        self.roots = pristine_roots(package, version)
        self._files: dict[str, frozenset[int]] = {}
        self._texts: dict[str, str | None] = {}

    def changed(self, rel: str) -> frozenset[int]:
        """The lines of ``rel`` (a path inside the tree) replaced or inserted relative to the release."""
        if rel not in self._files:
            self._files[rel] = changed_in(self.root, self.roots, rel)
        return self._files[rel]

    def unchanged_block(self, rel: str, first: int, last: int) -> bool:
        """Whether lines ``first``..``last`` of ``rel`` occur, whole and in order, in the release's file: a
        statement difflib's line matching marks changed only because an edit repeats its lines nearby (a
        statement copied below it) is not changed."""
        if rel not in self._texts:
            theirs = released(self.root, self.roots, rel)
            self._texts[rel] = None if theirs is None else "\n" + "\n".join(line.strip() for line in theirs) + "\n"
        text = self._texts[rel]
        if text is None:
            return False
        try:
            with open(os.path.join(self.root, rel), encoding="utf-8") as handle:
                mine = handle.read().splitlines()[first - 1:last]
        except OSError:
            return False
        return ("\n" + "\n".join(line.strip() for line in mine) + "\n") in text

    def mark(self, stack: str) -> str:
        """How a report marks a changed line: ``(changed from <stack> <version> as released)``."""
        return f"(changed from {stack} {self.version} as released)"
