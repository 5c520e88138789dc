"""--emit-test: a ready pytest regression test that replays one counterexample against MODULE:ATTR."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile

from cpgraph.check.release import ENV, INSTALLED, Release
from cpgraph.check.finding import Violation
from cpgraph.reference.invariants import INVARIANT_TABLE
from cpgraph.reference.lists import compact


def _name(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_").lower() or "policy"


def _is_path(module: str) -> bool:
    return module.endswith(".py") or os.sep in module or (os.altsep is not None and os.altsep in module)


def importable_anywhere(module: str) -> bool:
    """Can ``module`` be imported by name from a directory other than this one (installed, or on
    PYTHONPATH)? Asked of a fresh interpreter started in an empty temporary directory."""
    top = module.split(".")[0]
    with tempfile.TemporaryDirectory() as empty:
        result = subprocess.run(
            [sys.executable, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec({top!r}) is None)"],
            cwd=empty, capture_output=True, timeout=60,
        )
    return result.returncode == 0


def _module_root(module: str) -> str | None:
    """The sys.path entry ``module`` was imported from (its file less the dotted parts), or None."""
    loaded = sys.modules.get(module)
    origin = getattr(loaded, "__file__", None)
    if origin is None:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
    if not origin:
        return None
    path = os.path.abspath(origin)
    parts = module.split(".")
    if os.path.basename(path) == "__init__.py":
        path = os.path.dirname(path)
    else:
        path = os.path.splitext(path)[0]
    for _ in parts:
        path = os.path.dirname(path)
    return path


def policy_import(target: str, test_dir: str) -> tuple[list[str], str]:
    """The emitted test's lines that make the policy importable, and the POLICY expression: by module
    name when it imports from anywhere; else by a path relative to the test file (never absolute)."""
    module, sep, attr = target.partition(":")
    if _is_path(module):
        rel = os.path.relpath(os.path.abspath(module), test_dir)
        return [], f"os.path.join(HERE, {rel!r}){f' + {sep + attr!r}' if sep else ''}"
    if importable_anywhere(module):
        return [], repr(target)
    root = _module_root(module)
    if root is None:
        return [], repr(target)
    rel = os.path.relpath(root, test_dir)
    lines = [
        f"ROOT = os.path.normpath(os.path.join(HERE, {rel!r}))  # where {module} imports from, relative to this file",
        "if ROOT not in sys.path:",
        "    sys.path.insert(0, ROOT)",
    ]
    return lines, repr(target)


def _test_stem(target: str) -> str:
    module, _, attr = target.partition(":")
    if attr:
        return _name(attr.split(".")[-1] if attr not in ("policy", "selector") else f"{_stem(module)}_{attr}")
    return _name(_stem(module))


def _stem(module: str) -> str:
    return os.path.splitext(os.path.basename(module))[0] if _is_path(module) else module.split(".")[-1]


def regression_test(
    target: str, violations: tuple[Violation, ...], *, strategy: str = "zigzag", test_path: str | None = None,
    keying: str = "global", release: Release | None = None,
) -> str:
    """Source of a pytest module with one test per violation. Each imports the policy ``target``
    (MODULE:ATTR) by module name when that imports from anywhere, else by a path relative to the test
    file (``test_path``, default ./test_regression.py), and asserts the invariant on the minimised batch:
    it fails while the bug is there and passes once the policy is fixed. No absolute path is written.

    With ``release`` (an adapter's policy over a release of its stack), the test carries the release: it
    runs against that version, unpacked where the check found it (a path relative to the test) or fetched
    from the package index when that folder is not there, and against the installed stack with
    CPGRAPH_RELEASE=installed (a maintainer's own checkout)."""
    if not violations:
        raise ValueError("regression_test needs at least one violation; the policy passed, there is nothing to pin")
    test_dir = os.path.dirname(os.path.abspath(test_path if test_path is not None else "test_regression.py"))
    setup, policy_expr = policy_import(target, test_dir)
    shown = target if not _is_path(target.partition(":")[0]) else os.path.basename(target)
    head = f"Regression tests emitted by `cpgraph check {shown}`: one minimised counterexample per broken invariant."
    loading = ["from cpgraph.check import Batch, ask, judge, load_policy  # noqa: E402"]
    policy_lines = ["    policy = load_policy(POLICY)"]
    release_lines: list[str] = []
    if release is not None:
        head += (
            f"\n\nFound in {release.label}. The tests run against that release: unpacked under RELEASE_ROOT when it is "
            f"there, else fetched\nfrom the package index (only its .py files, cached). With {ENV}={INSTALLED} they run "
            f"against the installed\n{release.package} instead (in your own checkout: `{ENV}={INSTALLED} pytest THIS_FILE`)."
        )
        loading = ["from cpgraph.check import Batch, ask, judge  # noqa: E402",
                   "from cpgraph.check.release import release_policy  # noqa: E402"]
        rel_root = os.path.relpath(release.root, test_dir)
        release_lines = [
            f"RELEASE = {release.version!r}  # the {release.package} release the counterexamples came from",
            f"RELEASE_ROOT = os.path.normpath(os.path.join(HERE, {rel_root!r}))  # where it was unpacked, relative to this file",
        ]
        policy_lines = ["    policy = release_policy(POLICY, RELEASE, RELEASE_ROOT)"]
    lines = [
        f'"""{head}"""',
        "",
        "import os",
        "import sys",
        "from fractions import Fraction  # noqa: F401 (a rational max_padding_factor is written as one)",
        "",
        "HERE = os.path.dirname(os.path.abspath(__file__))",
        *setup,
        "",
        *loading,
        "",
        f"POLICY = {policy_expr}",
        *release_lines,
        f"STRATEGY = {strategy!r}",
        f"KEYING = {keying!r}",
        "",
        "",
        "def _broken(batch: Batch, invariant: str) -> str:",
        '    """Why the policy breaks ``invariant`` on ``batch`` (every rank asked), or "" when it keeps it."""',
        *policy_lines,
        "    answers = ask(policy, batch)",
        "    found = judge(batch, answers, strategy=STRATEGY, invariants=frozenset((invariant,)), keying=KEYING)",
        '    ranks = "\\n".join(f"  rank {a.rank}: {a.describe()}" for a in answers)',
        '    return f"{found[0].why}\\n{ranks}" if found else ""',
    ]
    for v in violations:
        b = v.batch
        table = "(" + ", ".join(f"({k}, {r})" for k, r in b.bucket_local_tokens) + ("," if len(b.bucket_local_tokens) == 1 else "") + ")"
        lines += [
            "",
            "",
            f"def test_{_test_stem(target)}_keeps_{v.invariant}() -> None:",
            f'    """{v.invariant}: {INVARIANT_TABLE[v.invariant].stated(v.spec.keying)}."""',
            "    batch = Batch(",
            f"        cp_size={b.cp_size},",
            f"        align_size={b.align_size},",
            f"        num_tokens={b.num_tokens},",
            f"        extend_seq_lens={compact(b.extend_seq_lens)},",
            f"        capture_num_tokens={b.capture_num_tokens!r},",
            f"        bucket_local_tokens={table},  # (bucket, rows); a bucket not listed has no capacity",
            f"        max_padding_factor={b.max_padding_factor!r},  # an int, or an exact Fraction",
            f"        table={b.table!r},",
            *([] if b.is_prefilling is None else [f"        is_prefilling={b.is_prefilling!r},  # False: a decode"]),
            "    )",
            f"    # spec: {v.spec.describe(b).removeprefix('spec: ')}",
            f"    why = _broken(batch, {v.invariant!r})",
            f'    assert not why, f"{v.invariant} broken: {{why}}"',
        ]
    return "\n".join(lines) + "\n"


def write_regression_test(
    path: str, target: str, violations: tuple[Violation, ...], *, strategy: str = "zigzag", keying: str = "global",
    release: Release | None = None,
) -> str:
    """Write the regression test to ``path`` (parent folders created); returns the path."""
    source = regression_test(target, violations, strategy=strategy, test_path=path, keying=keying, release=release)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    return path
