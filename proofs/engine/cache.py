"""The proof cache: a solver verdict stored under the sha256 of the query's SMT-LIB text, solver, version and options."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

FORMAT = 1  # bumped whenever an entry's meaning or layout changes: every older entry is then a miss
MAX_ENTRIES = 200_000  # about 100 MB; past it a shard drops its oldest entries (by mtime, a hit renews it)
MODES = ("off", "on", "rebuild")  # off: neither read nor write; rebuild: solve everything, overwrite the entries
_SHARDS = 256  # two hex digits of the key name a folder
_SWEEP_EVERY = 64  # a process looks at a shard's size on its first store there and every 64th after

Value = int | bool


def default_root() -> Path:
    """``$CPGRAPH_PROOF_CACHE``, else ``$CPGRAPH_CACHE/proofs``; ``$CPGRAPH_CACHE`` defaults to ``~/.cache/cpgraph``, the
    root ``--release`` fetches into (the same lookup as cpgraph/adapters/releases.py ``cache_dir``, which proofs/ may
    not import: the layers run the other way)."""
    explicit = os.environ.get("CPGRAPH_PROOF_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("CPGRAPH_CACHE", str(Path.home() / ".cache" / "cpgraph"))) / "proofs"


@dataclass(frozen=True)
class Setting:
    """Whether the cache is read and written (``mode``, one of ``MODES``), where, and its bound in entries."""

    mode: str = "off"
    root: Path | None = None
    max_entries: int = MAX_ENTRIES

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"cache mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.max_entries < _SHARDS:
            raise ValueError(f"max_entries must be an int >= {_SHARDS}, got {self.max_entries}")

    @property
    def reads(self) -> bool:
        return self.mode == "on" and self.root is not None

    @property
    def writes(self) -> bool:
        return self.mode in ("on", "rebuild") and self.root is not None


@dataclass(frozen=True)
class Entry:
    """A stored verdict: ``unsat`` (a proof), ``sat`` with ``model`` (what the caller is given) and ``assignment``
    (every constant of the query, replayed before reuse), or ``determined`` (values fixed by the facts)."""

    key: str
    status: str
    model: dict[str, Value] = field(default_factory=dict)
    assignment: dict[str, Value] = field(default_factory=dict)


@dataclass(frozen=True)
class Tally:
    """Solver calls this process (and the workers it added) solved and reused from the cache."""

    solved: int = 0
    reused: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.solved + other.solved, self.reused + other.reused)

    def __sub__(self, other: Tally) -> Tally:
        return Tally(self.solved - other.solved, self.reused - other.reused)


_state: dict[str, object] = {"setting": Setting(), "tally": Tally(), "stores": {}, "folders": set()}


def configure(setting: Setting) -> None:
    """Use ``setting`` in this process (a pool's ``initializer`` passes the parent's to each worker)."""
    _state["setting"] = setting


def current() -> Setting:
    setting = _state["setting"]
    assert isinstance(setting, Setting)
    return setting


def tally() -> Tally:
    counts = _state["tally"]
    assert isinstance(counts, Tally)
    return counts


def count(*, reused: bool) -> None:
    """One solver call answered: from the cache (``reused``) or by the solver."""
    add(Tally(0, 1) if reused else Tally(1, 0))


def add(counts: Tally) -> None:
    """A worker's calls, added to this process's tally."""
    _state["tally"] = tally() + counts


_LET = re.compile(r"([?$]x\d+)")  # the printer's let names: ``?x`` (terms) and ``$x`` (formulas), then a term id
_BANG = re.compile(r"([^\s()|;]+!\d+)(?![\w!.])")  # ``name!N``: z3's fresh constants and skolems


def canonical(text: str) -> tuple[str, dict[str, str]]:
    """``text`` with z3's generated names renumbered in order of first appearance: the printer's ``?xN`` / ``$xN``
    let names (numbered by term id, which depends on what the process built before) and ``name!N`` (fresh
    constants, numbered by a process-wide counter); and the renaming (old to new). Alpha-renaming keeps every
    verdict. (Split on the names and renamed in one loop: a third of ``re.sub`` with a callback's time.)"""
    names: dict[str, str] = {}
    text = _renamed(_LET.split(text), names, let=True)
    return (_renamed(_BANG.split(text), names, let=False) if "!" in text else text), names


def _renamed(parts: list[str], names: dict[str, str], *, let: bool) -> str:
    """``parts`` (text, name, text, name, ..., text) joined with each name renamed: its head (``?x``, ``$x``, or
    all up to the last ``!``) and its number among ``names`` in order of first appearance."""
    for i in range(1, len(parts), 2):
        old = parts[i]
        new = names.get(old)
        if new is None:
            new = names[old] = f"{old[:2] if let else old[: old.rindex('!') + 1]}{len(names)}"
        parts[i] = new
    return "".join(parts)


def key(text: str, solver: str, version: str, options: str) -> str:
    """The sha256 of everything that decides the answer: the canonical query text, the solver, its version, the
    options, and the cache's format."""
    digest = hashlib.sha256()
    for part in (f"cpgraph-proof-cache {FORMAT}", solver, version, options, text):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _path(root: Path, name: str) -> Path:
    return root / name[:2] / f"{name}.json"


def _checksum(body: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _values(raw: object) -> dict[str, Value]:
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, bool)) for k, v in raw.items()
    ):
        raise ValueError("not a map of names to ints and bools")
    return dict(raw)


def load(name: str, setting: Setting | None = None) -> Entry | None:
    """The entry stored under ``name``, or None: absent, unreadable, not JSON, another key, a checksum that does not
    match (a truncated or altered file) or an unknown status are all misses, never trusted."""
    setting = setting or current()
    if not setting.reads or setting.root is None:
        return None
    body = read(_path(setting.root, name), name)
    if body is None or body.get("status") not in ("unsat", "sat", "determined"):
        return None
    try:
        return Entry(name, str(body["status"]), _values(body["model"]), _values(body["assignment"]))
    except (ValueError, KeyError):
        return None


def store(entry: Entry, setting: Setting | None = None) -> None:
    """Write ``entry`` (``write``: atomically, a failed write dropped), then keep its shard within the bound."""
    setting = setting or current()
    if not setting.writes or setting.root is None:
        return
    path = _path(setting.root, entry.key)
    if write(path, entry.key, {"status": entry.status, "model": entry.model, "assignment": entry.assignment}):
        _bound(path.parent, setting)


def read(path: Path, name: str) -> dict[str, object] | None:
    """The document at ``path`` written by ``write`` under the key ``name``, or None when it is absent, unreadable,
    not JSON, of another format, under another key or fails its checksum (truncated, altered). A hit renews the
    file's mtime: the size bound drops the entries not used longest."""
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            return None
        checksum = data.pop("checksum")
        if checksum != _checksum(data) or data.get("format") != FORMAT or data.get("key") != name:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.utime(path)
    except OSError:
        pass
    return data


def write(path: Path, name: str, body: dict[str, object]) -> bool:
    """Write ``body`` with the format, the key ``name`` and a checksum as JSON at ``path``, atomically (a temporary
    file of this process in the same folder, then ``os.replace``): a reader sees the whole old document or the
    whole new one, never half, however many processes write at once. False when the write failed (dropped)."""
    document = {**body, "format": FORMAT, "key": name}
    made = _state["folders"]
    assert isinstance(made, set)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        data = json.dumps({**document, "checksum": _checksum(document)}, sort_keys=True).encode()
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except FileNotFoundError:  # the folder went away since (another process cleared the cache): once more
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(temp, path)
    except (OSError, TypeError, ValueError):
        try:
            temp.unlink(missing_ok=True)
        except OSError:
            pass
        return False
    return True


def _bound(shard: Path, setting: Setting) -> None:
    """Keep ``shard`` at most its share of ``max_entries``, dropping the oldest (mtime) first; looked at on this
    process's first store in the shard and every ``_SWEEP_EVERY``-th after, so the bound costs a listing now and then."""
    stores = _state["stores"]
    assert isinstance(stores, dict)
    seen = stores.get(shard, 0)
    stores[shard] = seen + 1
    if seen % _SWEEP_EVERY:
        return
    cap = setting.max_entries // _SHARDS
    try:
        files = [(e.stat().st_mtime, e.path) for e in os.scandir(shard) if e.name.endswith(".json")]
    except OSError:
        return
    if len(files) <= cap:
        return
    files.sort()
    for _, old in files[: len(files) - cap * 9 // 10]:  # down to 90%: the next sweep is not at once
        try:
            os.unlink(old)
        except OSError:
            pass


def usable(root: Path) -> str:
    """"" when ``root`` can hold the cache (created if absent and writable), else why not."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create {root}: {exc.strerror or exc}"
    if not os.access(root, os.W_OK | os.X_OK):
        return f"cannot write {root}"
    return ""
